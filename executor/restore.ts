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
  eventsReplayed: number;
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
  let eventsReplayed = 0;
  await readToEnd({
    kafka: opts.kafka,
    admin: opts.admin,
    topic: topicNames(opts.config.topicPrefix).events,
    partitions: [opts.partition],
    groupPrefix: `${opts.config.topicPrefix}.restore`,
    onRecords: async (records) => {
      for (const r of records) {
        if (r.value === null) continue; // tombstone of an erased plan
        const keyPlan = planIdOfKey(r.key);
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
  return { plans, stalled, eventsReplayed };
}
