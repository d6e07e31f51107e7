import type { LedgerCodec } from '../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../src/config.js';
import { readPlanRecords, type KafkaClient, type LedgerAdmin } from '../src/kafka/index.js';
import { evolveAll, type PlanEvent, type PlanState } from '../src/plan/index.js';

/**
 * How far before a plan's first event time the read starts. The time is the first event record's own
 * timestamp (its occurredAt), and Kafka answers the first offset stamped at or after the time asked, so
 * that record is found whatever the clocks of later writers (docs/concepts/item-protocol.md#clocks); the
 * margin covers a topic whose broker stamps records itself (LogAppendTime) with a clock a little behind the
 * owner's. Past it, the read finds the plan's events without their start and reads again from the
 * partition's start.
 */
const START_MARGIN_MS = 60_000;

/**
 * A finished plan the owner let go of (see DormantCache), read back from its own events: from the record
 * timestamp of its first event (less a margin), or from the partition's start when that is unknown. Only
 * the owner writes a plan's events and it wrote none since it let the plan go, so the fold is the state
 * it had. Undefined when the partition holds no event of the plan. A fold error (a gap, a broken chain)
 * throws the PlanError.
 */
export async function readPlanFromEvents(opts: {
  kafka: KafkaClient;
  admin: LedgerAdmin;
  codec: Pick<LedgerCodec, 'decodeEvent'>;
  config: LedgerConfig;
  partition: number;
  planId: string;
  since: number | null;
}): Promise<PlanState | undefined> {
  const topic = topicNames(opts.config.topicPrefix).events;
  let from: string | undefined;
  if (opts.since !== null) {
    const byTime = await opts.admin.fetchTopicOffsetsByTimestamp(topic, Math.max(0, opts.since - START_MARGIN_MS));
    const at = byTime.find((o) => o.partition === opts.partition)?.offset;
    if (at !== undefined && BigInt(at) >= 0n) {
      const low = (await opts.admin.fetchTopicOffsets(topic, [opts.partition])).find((o) => o.partition === opts.partition)?.low;
      from = low !== undefined && BigInt(low) > BigInt(at) ? low : at;
    }
  }
  const read = (start: string | undefined) =>
    readPlanRecords({ kafka: opts.kafka, topic, partition: opts.partition, planId: opts.planId, ...(start !== undefined ? { from: start } : {}) });
  let records = await read(from);
  // Located by time but without the plan's first event: the timestamps were not what the owner wrote.
  if (from !== undefined && records.length > 0 && !records.some((r) => r.seq === 1)) records = await read(undefined);
  const events: PlanEvent[] = [];
  for (const r of [...records].sort((a, b) => a.seq - b.seq)) {
    const e = await opts.codec.decodeEvent(r.value);
    if (e.planId === opts.planId) events.push(e);
  }
  return evolveAll(undefined, events);
}

/** When a plan's first event was written, as far as its state tells (null: unknown, read from the start). */
export function firstEventAt(state: PlanState): number | null {
  // Rejections before PlanCreated (commands sent before the plan existed) come first; once the state no
  // longer keeps every rejection, the first one may be gone.
  if (state.rejectionCount !== undefined) return null;
  const first = state.rejections[0];
  if (first !== undefined && first.seq === 1) return first.at;
  return state.createdAt;
}
