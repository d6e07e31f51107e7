import type { PlanCommand } from '../src/plan/index.js';
import { toItemSpec } from '../src/plan-input.js';
import type { AttemptOutcome } from './item-runner.js';

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
