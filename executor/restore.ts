import type { Admin, Kafka } from 'kafkajs';
import { topicNames, type LedgerConfig } from '../src/config.js';
import type { LedgerCodec } from '../src/codec/index.js';
import { isLedgerError } from '../src/errors.js';
import { readToEnd } from '../src/kafka/log-reader.js';
import type { Logger } from '../src/logging.js';
import { evolve, type PlanState } from '../src/plan/index.js';

export interface RestoredPartition {
  plans: Map<string, PlanState>;
  stalled: Map<string, string>;
  /** Plans whose last records are tombstones: erased (until compaction removes the tombstones too). */
  erased: Set<string>;
  /** Highest seq among each plan's event keys (a stalled plan's records go past its state). */
  lastKeySeq: Map<string, number>;
  eventsReplayed: number;
}

function seqOfKey(key: Buffer | null): number | undefined {
  if (!key) return undefined;
  const s = key.toString('utf8');
  const n = Number(s.slice(s.lastIndexOf(':') + 1));
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

/** planId of an event key `planId:seq` (plan ids may themselves contain ':'). */
export function planIdOfKey(key: Buffer | null): string | undefined {
  if (!key) return undefined;
  const s = key.toString('utf8');
  const i = s.lastIndexOf(':');
  return i > 0 ? s.slice(0, i) : undefined;
}

/**
 * Rebuilds every plan of one partition from its events (read_committed, to the end offset). A record
 * that cannot be decoded or applied stalls its plan with the reason — it is never skipped silently,
 * and the other plans of the partition restore normally.
 *
 * A tombstone (`planId:seq` with a null value) is an erasure: the plan is dropped with everything it
 * had, exactly as compaction will drop its records, and remembered as erased. Records of the same id
 * after the tombstones (a new plan under the erased id) start from scratch.
 */
export async function restoreFromEvents(opts: {
  kafka: Kafka;
  admin: Admin;
  codec: LedgerCodec;
  config: LedgerConfig;
  partition: number;
  logger: Logger;
}): Promise<RestoredPartition> {
  const plans = new Map<string, PlanState>();
  const stalled = new Map<string, string>();
  const erased = new Set<string>();
  const lastKeySeq = new Map<string, number>();
  let eventsReplayed = 0;
  await readToEnd({
    kafka: opts.kafka,
    admin: opts.admin,
    topic: topicNames(opts.config.topicPrefix).events,
    partitions: [opts.partition],
    groupPrefix: `${opts.config.topicPrefix}.restore`,
    onRecords: async (records) => {
      for (const r of records) {
        const keyPlan = planIdOfKey(r.key);
        if (r.value === null) {
          // A tombstone: the plan was erased; forget all of it.
          if (keyPlan) {
            plans.delete(keyPlan);
            stalled.delete(keyPlan);
            lastKeySeq.delete(keyPlan);
            erased.add(keyPlan);
          }
          continue;
        }
        if (keyPlan) {
          erased.delete(keyPlan);
          const seq = seqOfKey(r.key);
          if (seq !== undefined && seq > (lastKeySeq.get(keyPlan) ?? 0)) lastKeySeq.set(keyPlan, seq);
        }
        if (keyPlan && stalled.has(keyPlan)) continue;
        try {
          const e = await opts.codec.decodeEvent(r.value);
          if (stalled.has(e.planId)) continue;
          plans.set(e.planId, evolve(plans.get(e.planId), e));
          eventsReplayed++;
        } catch (err) {
          if (isLedgerError(err, 'UNAVAILABLE')) throw err;
          const reason = `offset ${r.offset}: ${(err as Error).message}`;
          opts.logger.error({ partition: opts.partition, offset: r.offset, planId: keyPlan }, `plan stalled: ${reason}`);
          if (keyPlan) stalled.set(keyPlan, reason);
        }
      }
    },
  });
  return { plans, stalled, erased, lastKeySeq, eventsReplayed };
}
