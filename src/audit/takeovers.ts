import type { PlanEvent } from '../plan/index.js';
import { itemAttemptOf } from '../projection/audit.js';

/**
 * An attempt that an executor started and another one went on with after taking the plan over (the first
 * was killed, fenced or cut off). `invoked`: the new owner ran the tool again with the attempt's
 * idempotency key and committed its result; the first owner may have run it too, so the key is what
 * keeps the effect single. `settled`: the first owner had committed the result; the new owner only
 * settled it (completed, failed or scheduled a retry) and did not run the tool.
 */
export interface Takeover {
  itemId: string;
  attempt: number;
  idempotencyKey: string;
  kind: 'invoked' | 'settled';
  /** The executor that lost the attempt. */
  from: string;
  /** When it last acted on the attempt (its intent for `invoked`, its result for `settled`), ISO-8601. */
  fromAt: string;
  /** The executor that went on with it. */
  to: string;
  /** When the new owner's step was recorded, ISO-8601. */
  at: string;
  seq: number;
}

const SETTLEMENTS: ReadonlySet<PlanEvent['type']> = new Set(['ItemCompleted', 'ItemFailed', 'ItemRetryScheduled']);

/**
 * The take-overs in a plan's events (seq order). The intent and the result name their executor; a
 * settlement is the executor's own event, so its actor is the executor's id. An attempt's step by another
 * executor than the one before it is a take-over. Attempts without an intent (waits, inherited items, a
 * manual retry's attempt 0) have none.
 */
export function takeovers(events: readonly PlanEvent[]): Takeover[] {
  const attempts = new Map<string, { key: string; owner: string; ownerAt: number; committed: boolean }>();
  const found: Takeover[] = [];
  const iso = (ms: number) => new Date(ms).toISOString();
  for (const e of events) {
    const { itemId, attempt } = itemAttemptOf(e);
    if (itemId === null || attempt === null) continue;
    const k = `${itemId}\u0000${attempt}`;
    if (e.type === 'IntentRecorded') {
      attempts.set(k, { key: e.data.idempotencyKey, owner: e.data.executorId, ownerAt: e.occurredAt, committed: false });
      continue;
    }
    const a = attempts.get(k);
    if (a === undefined) continue;
    const by = e.type === 'ResultCommitted' ? e.data.executorId : SETTLEMENTS.has(e.type) && a.committed ? e.actor : a.owner;
    if (by !== a.owner) {
      found.push({ itemId, attempt, idempotencyKey: a.key, kind: e.type === 'ResultCommitted' ? 'invoked' : 'settled', from: a.owner, fromAt: iso(a.ownerAt), to: by, at: iso(e.occurredAt), seq: e.seq });
    }
    if (e.type === 'ResultCommitted' || by !== a.owner) {
      a.owner = by;
      a.ownerAt = e.occurredAt;
    }
    if (e.type === 'ResultCommitted') a.committed = true;
  }
  return found;
}
