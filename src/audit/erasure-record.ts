import { stateDigest, type PlanState } from '../plan/index.js';

/** Statuses in which items may be running or about to run: erasing then needs `force`. */
export const ERASE_NEEDS_FORCE: ReadonlySet<string> = new Set(['approved', 'running']);

/**
 * The audit record of an erasure, appended (JSON, key = planId) to `<prefix>.ledger-audit` by the
 * executor that owns the plan, in the same transaction as the tombstones. It holds hashes and counts,
 * never the erased content.
 */
export interface ErasureRecord {
  type: 'PlanErased';
  planId: string;
  /** The ErasePlan command that caused the erasure. */
  commandId: string;
  erasedAt: string;
  by: string;
  reason: string;
  /** True when `force` overrode an approved or running status. */
  forced: boolean;
  statusAtErasure: string;
  partition: number;
  /** Events the plan had (its seq). */
  events: number;
  lastSeq: number;
  /** Hash of the last event: proves which history was erased without keeping it. */
  chainHead: string;
  stateDigest: string;
  /** The executor that wrote the tombstones. */
  executorId: string;
  tombstones: { events: number; snapshots: number };
  /**
   * Only for a child plan erased before it finished: the parent item it was delegated from, and the
   * ChildPlanFinished (status failed, error CHILD_ERASED) sent to it in the same transaction.
   */
  parentNotified?: { planId: string; itemId: string; commandId: string };
}

/** The erasure record of a plan erased from `state` (pure: time and ids come in as data). */
export function erasureRecord(
  state: PlanState,
  o: {
    commandId: string;
    by: string;
    reason: string;
    force: boolean;
    partition: number;
    now: number;
    executorId: string;
    lastSeq?: number;
    parentNotified?: ErasureRecord['parentNotified'];
  },
): ErasureRecord {
  const lastSeq = Math.max(state.seq, o.lastSeq ?? 0);
  return {
    type: 'PlanErased',
    planId: state.planId,
    commandId: o.commandId,
    erasedAt: new Date(o.now).toISOString(),
    by: o.by,
    reason: o.reason,
    forced: o.force && ERASE_NEEDS_FORCE.has(state.status),
    statusAtErasure: state.status,
    partition: o.partition,
    events: state.seq,
    lastSeq,
    chainHead: state.lastHash,
    stateDigest: stateDigest(state),
    executorId: o.executorId,
    tombstones: { events: lastSeq, snapshots: 1 },
    ...(o.parentNotified ? { parentNotified: o.parentNotified } : {}),
  };
}

/** Parses a ledger-audit record value; undefined for anything that is not an erasure record. */
export function parseErasureRecord(value: Buffer | null): ErasureRecord | undefined {
  if (!value) return undefined;
  try {
    const r = JSON.parse(value.toString('utf8')) as Partial<ErasureRecord>;
    return r && r.type === 'PlanErased' && typeof r.planId === 'string' ? (r as ErasureRecord) : undefined;
  } catch {
    return undefined;
  }
}
