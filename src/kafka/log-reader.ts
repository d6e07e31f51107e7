import type { KafkaClient, LedgerAdmin, LogRecord, ReadStats } from './port.js';
import { parseEventKey } from './partitioner.js';

/** A key `planId:seq` found in more than one record: the copies' offsets, oldest first, and whether their bytes are equal. */
export interface DuplicateRecord {
  readonly seq: number;
  readonly offsets: string[];
  readonly identical: boolean;
}

/**
 * Collects the copies of each key as records go by (tombstones aside); `duplicates()` lists the keys seen
 * more than once. The readers keep the last copy, as compaction will; this is what they would otherwise drop.
 */
export class CopyCounter {
  private readonly copies = new Map<number, { offsets: string[]; first: Buffer; identical: boolean }>();

  seen(seq: number, offset: string, value: Buffer | null): void {
    if (value === null) return void this.copies.delete(seq);
    const c = this.copies.get(seq);
    if (c === undefined) this.copies.set(seq, { offsets: [offset], first: value, identical: true });
    else {
      c.offsets.push(offset);
      c.identical &&= c.first.equals(value);
    }
  }

  duplicates(): DuplicateRecord[] {
    const out: DuplicateRecord[] = [];
    for (const [seq, c] of this.copies) if (c.offsets.length > 1) out.push({ seq, offsets: c.offsets, identical: c.identical });
    return out.sort((a, b) => a.seq - b.seq);
  }
}

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
  /**
   * A later offset where the plan's first event probably is (found by its exact creation time). The read
   * starts there and keeps what it read when that holds the plan's events from seq 1 on with no gap, up
   * to at least `seq`; otherwise it reads again from `from`. Not with `copies` (a count must see every copy).
   */
  start?: { tryFrom: string; seq: number };
  stats?: ReadStats;
  /** Gets every key's copies, so the caller can report the keys written more than once. */
  copies?: CopyCounter;
}): Promise<Array<LogRecord & { seq: number; value: Buffer }>> {
  const start = opts.start;
  if (start !== undefined && opts.copies === undefined && (opts.from === undefined || BigInt(start.tryFrom) > BigInt(opts.from))) {
    const read = await planRecordsFrom(opts, start.tryFrom);
    if (fromFirstSeq(read, start.seq)) return read;
  }
  return planRecordsFrom(opts, opts.from);
}

/** Whether the records (one plan's, latest per seq) are seqs 1..n with no gap, n ≥ `atLeast`. */
function fromFirstSeq(records: ReadonlyArray<{ seq: number }>, atLeast: number): boolean {
  const seqs = new Set(records.map((r) => r.seq));
  if (seqs.size < atLeast) return false;
  for (let seq = 1; seq <= seqs.size; seq++) if (!seqs.has(seq)) return false;
  return true;
}

async function planRecordsFrom(
  opts: { kafka: KafkaClient; topic: string; partition: number; planId: string; stats?: ReadStats; copies?: CopyCounter },
  from: string | undefined,
): Promise<Array<LogRecord & { seq: number; value: Buffer }>> {
  const bySeq = new Map<number, LogRecord & { seq: number; value: Buffer }>();
  await opts.kafka.readToEnd({
    topic: opts.topic,
    partitions: [opts.partition],
    ...(from !== undefined ? { from: new Map([[opts.partition, from]]) } : {}),
    ...(opts.stats ? { stats: opts.stats } : {}),
    onRecords: (records) => {
      for (const r of records) {
        const k = parseEventKey(r.key);
        if (k === null || k.planId !== opts.planId) continue;
        opts.copies?.seen(k.seq, r.offset, r.value);
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
  const o = (await admin.fetchLastStableOffsets(topic, [partition])).find((x) => x.partition === partition);
  if (o === undefined) throw new Error(`${topic} has no partition ${partition}`);
  return BigInt(o.offset);
}
