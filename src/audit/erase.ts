import type { EraseOutcome, Ledger } from '../client/api.js';
import { isLedgerError, LedgerError } from '../errors.js';
import type { LedgerLog } from './log.js';

export { auditTopic } from '../kafka/index.js';
export { ERASE_NEEDS_FORCE, erasureRecord, parseErasureRecord, type ErasureRecord } from './erasure-record.js';

export interface EraseOptions {
  force?: boolean;
  by: string;
  reason?: string;
  timeoutMs?: number;
}

/**
 * Erases a plan through the executor that owns it (the single writer of its partition): an `ErasePlan`
 * command, which that executor decides and carries out in one transaction — a tombstone (null value) for
 * every event key `planId:seq` and for the plan's snapshot, so compaction removes them, and an
 * {@link ErasureRecord} on `<prefix>.ledger-audit` — before forgetting the plan.
 *
 * `NOT_FOUND` for a plan the log does not hold (unknown or already erased; checked first, so nothing is
 * sent for it); `REJECTED` (`INVALID_STATE`) while the plan is approved or running unless `force`.
 */
export async function erasePlan(ledger: Ledger, log: LedgerLog, planId: string, opts: EraseOptions): Promise<EraseOutcome> {
  const records = await log.readPlan(planId);
  if (records.length === 0 || records.every((r) => r.event.type === 'CommandRejected')) {
    throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${log.config.topicPrefix}" (or already erased)`, { planId });
  }
  try {
    return await ledger.erase(planId, { force: opts.force, by: opts.by, reason: opts.reason, timeoutMs: opts.timeoutMs });
  } catch (e) {
    if (isLedgerError(e, 'REJECTED') && e.details.rejection === 'PLAN_NOT_FOUND') {
      throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${log.config.topicPrefix}" (or already erased)`, { planId }, { cause: e });
    }
    throw e;
  }
}
