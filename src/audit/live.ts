import type { LedgerLog, LoggedEvent } from './log.js';
import { verifyPlan, type PlanVerification } from './verify.js';

/**
 * Verifies a plan in the live ledger: the checks of {@link verifyPlan}, with the second rebuild fed by an
 * Avro round trip through the codec and every snapshot still on the snapshots topic compared with a replay.
 */
export async function verifyFromLog(log: LedgerLog, planId: string, records?: LoggedEvent[]): Promise<PlanVerification> {
  const recs = records ?? (await log.readPlan(planId));
  const roundTripped = await Promise.all(recs.map((r) => log.codec.decodeEvent(log.codec.encodeEvent(r.event))));
  const snapshots = await log.readSnapshots(planId);
  return verifyPlan({ planId, records: recs, roundTripped, snapshots });
}
