import type { LedgerConfig } from '../src/config.js';
import type { LedgerCodec } from '../src/codec/index.js';
import type { KafkaClient } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import type { PlanState } from '../src/plan/index.js';
import { restorePartition, type ArchiveLoader } from '../src/projection/index.js';

export interface RestoredPartition {
  plans: Map<string, PlanState>;
  /** Plans that cannot advance, with the reason (an undecodable or inapplicable record). */
  stalled: Map<string, string>;
  /** Plans whose last records are tombstones: erased (until compaction removes the tombstones too). */
  erased: Set<string>;
  /** Highest seq among each plan's event keys (a stalled plan's records go past its state). */
  lastKeySeq: Map<string, number>;
  /** Plans seeded from a snapshot, and events replayed on top: restore cost follows the tail. */
  fromSnapshot: number;
  eventsReplayed: number;
  /**
   * Finished plans (completed, cancelled) left undecoded: planId → raw snapshot value. The owner decodes
   * one only when a command arrives for it, so restore cost does not grow with the plans ever run.
   */
  dormant: Map<string, Buffer>;
  /** Highest fencing token ever used on the partition (dormant plans included); the owner fences above it. */
  maxFencingToken: number;
  /**
   * The partition's archived (finished) plans, not read by the restore: the owner loads them before it
   * decides a command for a plan it does not hold, so restore cost follows the live plans.
   */
  archived?: ArchiveLoader;
  /** Each plan's trace context: the `traceparent` header of its last replayed event record, else of its snapshot record. */
  traceparents: Map<string, string>;
}

/** Statuses a plan cannot leave by running: the executor restores such plans dormant. */
export const DORMANT_STATUSES = ['completed', 'cancelled'] as const;

/**
 * Restores every plan of an owned partition the way every reader does (src/projection's
 * restorePartition): the latest snapshot per plan and the partition's watermark from the snapshots
 * topic, then only the events after the watermark, with stalls re-established from the DLQ. A record
 * that cannot be decoded or applied stalls its plan — never skipped silently — and the projector, the
 * reader of record, dead-letters it; the executor only refuses to run that plan. Completed and cancelled
 * plans stay undecoded until a command needs one: those the projector archived are not even read (the
 * owner loads the archive partition before it decides a command for a plan it does not hold), and those
 * whose snapshots are still in the snapshots topic come back raw (`dormant`).
 */
export async function restoreOwnedPartition(opts: {
  kafka: KafkaClient;
  codec: LedgerCodec;
  config: LedgerConfig;
  partition: number;
  logger: Logger;
  /** Told which read the restore is in, for the owner's "still waiting" warning. */
  onStep?: (step: string) => void;
}): Promise<RestoredPartition> {
  const log = opts.logger.child({ component: 'restore', partition: opts.partition });
  const r = await restorePartition({
    kafka: opts.kafka,
    codec: opts.codec,
    config: opts.config,
    partition: opts.partition,
    logger: log,
    dormantStatuses: DORMANT_STATUSES,
    archive: 'defer',
    ...(opts.onStep ? { onStep: opts.onStep } : {}),
    onPoison: (outcome, record) => {
      log.error({ offset: record.offset, planId: outcome.planId, reason: outcome.decision.reason }, `plan stalled: ${outcome.decision.message}`);
    },
  });
  const stalled = new Map<string, string>();
  for (const [planId, s] of r.stalled) stalled.set(planId, `${s.reason} at offset ${s.offset}: ${s.message}`);
  return {
    plans: r.plans,
    stalled,
    erased: new Set(r.erased),
    lastKeySeq: new Map(r.lastKeySeq),
    fromSnapshot: r.fromSnapshot,
    eventsReplayed: r.eventsReplayed,
    dormant: r.dormant,
    maxFencingToken: r.maxFencingToken,
    archived: r.archived,
    traceparents: r.traceparents,
  };
}
