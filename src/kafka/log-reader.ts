import type { KafkaClient, LedgerAdmin, LogRecord, ReadStats } from './port.js';
import { parseEventKey } from './partitioner.js';

export function newReadStats(): ReadStats {
  return { reads: 0, records: {} };
}

/**
 * The live records of one plan on its events partition, in log order: for each key `planId:seq` the
 * latest record, and nothing for a key whose latest record is a tombstone (an erasure compaction has
 * not removed yet) — exactly what compaction will leave. Callers decode the values their own way.
 */
export async function readPlanRecords(opts: {
  kafka: KafkaClient;
  topic: string;
  partition: number;
  planId: string;
  /**
   * Offset to start at (default: the earliest). Only correct when no live record of the plan sits before
   * it: e.g. the offset of its first event, or a watermark the plan's snapshot covers.
   */
  from?: string;
  stats?: ReadStats;
}): Promise<Array<LogRecord & { seq: number; value: Buffer }>> {
  const bySeq = new Map<number, LogRecord & { seq: number; value: Buffer }>();
  await opts.kafka.readToEnd({
    topic: opts.topic,
    partitions: [opts.partition],
    ...(opts.from !== undefined ? { from: new Map([[opts.partition, opts.from]]) } : {}),
    ...(opts.stats ? { stats: opts.stats } : {}),
    onRecords: (records) => {
      for (const r of records) {
        const k = parseEventKey(r.key);
        if (k === null || k.planId !== opts.planId) continue;
        bySeq.delete(k.seq); // a later record of a key replaces the earlier one, as compaction will
        if (r.value !== null) bySeq.set(k.seq, { ...r, seq: k.seq, value: r.value });
      }
    },
  });
  return [...bySeq.values()].sort((a, b) => Number(BigInt(a.offset) - BigInt(b.offset)));
}

/** The record at `offset` of a topic partition, if it is still there (compaction may have removed it). */
export async function readRecordAt(opts: { kafka: KafkaClient; topic: string; partition: number; offset: string; stats?: ReadStats }): Promise<LogRecord | undefined> {
  let found: LogRecord | undefined;
  await opts.kafka.readToEnd({
    topic: opts.topic,
    partitions: [opts.partition],
    from: new Map([[opts.partition, opts.offset]]),
    until: new Map([[opts.partition, (BigInt(opts.offset) + 1n).toString()]]),
    ...(opts.stats ? { stats: opts.stats } : {}),
    onRecords: (records) => {
      for (const r of records) if (r.offset === opts.offset) found = r;
    },
  });
  return found;
}

/** The last stable offset of one partition: what a `read_committed` reader can read up to now. */
export async function lastStableOffset(admin: LedgerAdmin, topic: string, partition: number): Promise<bigint> {
  const o = (await admin.fetchTopicOffsets(topic)).find((x) => x.partition === partition);
  if (o === undefined) throw new Error(`${topic} has no partition ${partition}`);
  return BigInt(o.high);
}
