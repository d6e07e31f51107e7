import type { LedgerCodec } from '../src/codec/index.js';
import type { OutRecord } from '../src/kafka/index.js';
import type { PlanCommand } from '../src/plan/index.js';
import { toItemSpec } from '../src/plan-input.js';
import type { AttemptOutcome } from './item-runner.js';
import type { Decided, PartitionBook } from './partition-book.js';
import { commandMessage } from './records.js';
import type { AttemptTrace } from './tracing.js';

/**
 * The CreatePlan of the child plan an attempt hands its item to: the child is `<plan>.<item>.<attempt>`
 * (so a recovery that delegates again names the same child), runs in execute mode, and carries its parent
 * in `parent` and the `parentPlan` label. Items the ledger would refuse make it `ok: false` with the
 * reason: the attempt then fails as INVALID_DELEGATION.
 */
export function childPlanCommand(
  planId: string,
  itemId: string,
  attempt: number,
  delegate: Extract<AttemptOutcome, { kind: 'delegate' }>['delegate'],
  issuedAt: number,
  actor: string,
): { ok: true; childPlanId: string; command: PlanCommand } | { ok: false; childPlanId: string; error: Error } {
  const childPlanId = `${planId}.${itemId}.${attempt}`;
  let items;
  try {
    items = delegate.items.map((it, i) => toItemSpec(it, `delegate.items[${i}]`));
  } catch (e) {
    return { ok: false, childPlanId, error: e as Error };
  }
  return {
    ok: true,
    childPlanId,
    command: {
      type: 'CreatePlan',
      commandId: `create-child:${childPlanId}`,
      planId: childPlanId,
      issuedAt,
      actor,
      correlationId: planId,
      data: {
        goal: String(delegate.goal),
        mode: 'execute',
        labels: { ...(delegate.labels ?? {}), parentPlan: planId },
        parent: { planId, itemId },
        items,
      },
    },
  };
}

/** What an attempt that delegated records; see {@link decideDelegation}. */
export type DelegationStep =
  /** The child cannot be created (items the ledger would refuse, a CreatePlan that cannot be encoded): the attempt fails terminally as INVALID_DELEGATION with this reason. */
  | { kind: 'invalid'; error: Error }
  /** ItemDelegated, appended with the child's CreatePlan in the same transaction. */
  | { kind: 'delegated'; decided: Decided; message: OutRecord }
  /** Nothing to record (the item no longer waits for this attempt). */
  | { kind: 'none' };

/**
 * Decides (and applies to the book) what the attempt `key` that handed its item to a child plan records.
 * The child's CreatePlan is encoded before anything is decided: one that cannot be (a label that is not a
 * string) fails the attempt with a recorded reason, and the book never holds a delegation the log does not.
 */
export function decideDelegation(
  d: { book: PartitionBook; codec: LedgerCodec; partitions: number; executorId: string; now: number; span?: AttemptTrace },
  planId: string,
  itemId: string,
  attempt: number,
  key: string,
  ended: Extract<AttemptOutcome, { kind: 'delegate' }>,
): DelegationStep {
  const child = childPlanCommand(planId, itemId, attempt, ended.delegate, d.now, d.executorId);
  if (!child.ok) return { kind: 'invalid', error: child.error };
  let message: OutRecord;
  try {
    message = commandMessage(d.codec, d.partitions, child.command);
  } catch (e) {
    return { kind: 'invalid', error: new Error(`its CreatePlan cannot be encoded: ${(e as Error).message}`) };
  }
  const decided = d.book.decideAndApply(d.book.internal('DelegateItem', planId, `delegate:${key}`, { itemId, attempt, childPlanId: child.childPlanId }), false);
  if (!decided.events.length) return { kind: 'none' };
  // Traced: the child plan's trace continues from this attempt (its CreatePlan carries the traceparent).
  return { kind: 'delegated', decided, message: d.span !== undefined ? d.span.onCommand(message) : message };
}
