import { randomBytes } from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import { parseEventKey } from './partitioner.js';

export interface LogRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: string;
  readonly headers: Readonly<Record<string, string>>;
}

function headerStrings(h: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h ?? {})) {
    if (v === undefined) continue;
    out[k] = (Array.isArray(v) ? v.at(-1) : v)?.toString() ?? '';
  }
  return out;
}

export interface ReadToEndOptions {
  readonly kafka: Kafka;
  readonly admin: Admin;
  readonly topic: string;
  /** Partitions to read (default: all). */
  readonly partitions?: readonly number[];
  /** Offset to start at per partition (default: the earliest retained offset). */
  readonly from?: ReadonlyMap<number, string>;
  /** Offset to stop before per partition, when earlier than the partition's end (default: the end). */
  readonly until?: ReadonlyMap<number, string>;
  /** Prefix of the throw-away consumer group used for the read (it never commits offsets). */
  readonly groupPrefix: string;
  /**
   * Called for each fetched batch, in offset order per partition. A callback that works long on a batch
   * calls `heartbeat` now and then, so the reader's group does not drop it.
   */
  readonly onRecords: (records: LogRecord[], ctx: { heartbeat: () => Promise<void> }) => void | Promise<void>;
  readonly timeoutMs?: number;
  /**
   * Read on past the end (`until` is ignored, `timeoutMs` too) until this signal aborts: a live tail of
   * the partitions. The read then ends normally, returning the next offsets.
   */
  readonly follow?: AbortSignal;
  /** Stops the read early once this says so (checked after each batch), e.g. when what was sought is found. */
  readonly isComplete?: () => boolean;
  /** Counts what the read fetched (records handed to `onRecords`), e.g. to show a read follows the tail, not the history. */
  readonly stats?: ReadStats;
}

/** What reads fetched: one counter object may be shared by many reads. */
export interface ReadStats {
  /** Reads that started a consumer (a read with nothing to read starts none). */
  reads: number;
  /** Records handed to `onRecords`, per topic. */
  records: Record<string, number>;
  /** Records fetched below the start offset and dropped (a fetch that came before the reader's seek took effect). */
  skipped?: number;
  /** Records the ledger client's plan index read, per `topic/partition`. */
  indexed?: Record<string, number>;
}

export function newReadStats(): ReadStats {
  return { reads: 0, records: {} };
}

/**
 * `admin.fetchTopicOffsets`, retried while the error is retriable — right after a broker restart or a
 * leader change the partition answers NOT_LEADER / LEADER_NOT_AVAILABLE for a moment, and kafkajs's
 * admin does not retry ListOffsets by itself.
 */
export async function fetchTopicOffsetsRetrying(admin: Admin, topic: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (let delay = 100; ; delay = Math.min(delay * 2, 2000)) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (e) {
      const retriable = (e as { retriable?: boolean }).retriable === true || /leader|not available|connection|ECONNREFUSED/i.test((e as Error).message ?? '');
      if (!retriable || Date.now() + delay > deadline) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/**
 * Reads partitions from a start offset up to their end offset as it was when the read began, with
 * `read_committed` isolation, and stops. "End" is the last stable offset: transaction markers and
 * compaction leave gaps, so the read stops when the next offset to read reaches the end, never by
 * counting records. Returns the next offset of every partition read.
 */
export async function readToEnd(opts: ReadToEndOptions): Promise<Map<number, string>> {
  const offsets = await fetchTopicOffsetsRetrying(opts.admin, opts.topic);
  const wanted = new Set(opts.partitions ?? offsets.map((o) => o.partition));
  const end = new Map<number, bigint>();
  const next = new Map<number, bigint>();
  for (const o of offsets) {
    if (!wanted.has(o.partition)) continue;
    const until = opts.until?.get(o.partition);
    end.set(o.partition, until !== undefined && BigInt(until) < BigInt(o.high) ? BigInt(until) : BigInt(o.high));
    const start = opts.from?.get(o.partition);
    next.set(o.partition, start !== undefined && BigInt(start) > BigInt(o.low) ? BigInt(start) : BigInt(o.low));
  }
  const startAt = new Map(next);
  const follow = opts.follow;
  const done = () => opts.isComplete?.() === true || (!follow && [...end].every(([p, e]) => (next.get(p) ?? 0n) >= e));
  const result = () => new Map([...next].map(([p, o]) => [p, o.toString()]));
  if (done() || follow?.aborted) return result();

  if (opts.stats) opts.stats.reads += 1;
  const consumer = opts.kafka.consumer({
    groupId: `${opts.groupPrefix}.reader-${randomBytes(6).toString('hex')}`,
    readUncommitted: false,
    maxWaitTimeInMs: 100,
    sessionTimeout: 10_000,
    heartbeatInterval: 1000,
    retry: { retries: 5 },
  });
  let settle!: (e?: unknown) => void;
  const finished = new Promise<void>((resolve, reject) => {
    settle = (e?: unknown) => (e === undefined ? resolve() : reject(e));
  });
  const stopFollowing = () => settle();
  follow?.addEventListener('abort', stopFollowing, { once: true });
  // Control-record-only batches never reach eachBatch; END_BATCH_PROCESS reports every batch's last offset.
  consumer.on(consumer.events.END_BATCH_PROCESS, (ev) => {
    const p = ev.payload.partition;
    if (ev.payload.topic !== opts.topic || !wanted.has(p)) return;
    const last = BigInt(ev.payload.lastOffset) + 1n;
    if (last > (next.get(p) ?? 0n)) next.set(p, last);
    if (done()) settle();
  });
  // Start positions other than the earliest need a seek, which kafkajs accepts once the group is joined.
  const seeks = [...next].filter(([p, o]) => o > BigInt(offsets.find((x) => x.partition === p)?.low ?? '0'));
  // The reader's group holds every partition of the topic: pause those not asked for, or each reader of
  // one partition would fetch (and drop) the whole topic.
  const unwanted = offsets.map((o) => o.partition).filter((p) => !wanted.has(p));
  consumer.on(consumer.events.GROUP_JOIN, () => {
    if (unwanted.length) consumer.pause([{ topic: opts.topic, partitions: unwanted }]);
    for (const [p, o] of seeks) consumer.seek({ topic: opts.topic, partition: p, offset: o.toString() });
  });
  consumer.on(consumer.events.CRASH, (ev) => {
    if (!ev.payload.restart) settle(ev.payload.error);
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: opts.topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch, heartbeat }) => {
        if (!wanted.has(batch.partition)) return;
        const stop = follow ? null : (end.get(batch.partition) ?? 0n);
        const first = startAt.get(batch.partition) ?? 0n;
        const records: LogRecord[] = [];
        for (const m of batch.messages) {
          const offset = BigInt(m.offset);
          if (offset < first) {
            if (opts.stats) opts.stats.skipped = (opts.stats.skipped ?? 0) + 1;
            continue; // fetched before the seek took effect
          }
          if (stop !== null && offset >= stop) break;
          records.push({ topic: batch.topic, partition: batch.partition, offset: m.offset, key: m.key, value: m.value, timestamp: m.timestamp, headers: headerStrings(m.headers) });
        }
        if (records.length) {
          if (opts.stats) opts.stats.records[opts.topic] = (opts.stats.records[opts.topic] ?? 0) + records.length;
          try {
            await opts.onRecords(records, { heartbeat });
          } catch (e) {
            // The caller refused what it read: the read ends with its error. Thrown on to kafkajs, it would
            // restart the consumer and hand the same batch over again, until the read timed out.
            settle(e instanceof Error ? e : new Error(String(e)));
            return;
          }
        }
        if (opts.isComplete?.() === true) settle();
      },
    });
    if (follow) return await finished.then(result);
    const timeout = opts.timeoutMs ?? 60_000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      finished,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`reading ${opts.topic} to its end timed out after ${timeout} ms`)), timeout);
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    follow?.removeEventListener('abort', stopFollowing);
    await consumer.disconnect().catch(() => {});
  }
  // Offsets past the snapshot of "end" may have been fetched; report at most the end we aimed for.
  return new Map([...next].map(([p, o]) => { const e = end.get(p) ?? o; return [p, (o > e ? e : o).toString()]; }));
}

/**
 * The live records of one plan on its events partition, in log order: for each key `planId:seq` the
 * latest record, and nothing for a key whose latest record is a tombstone (an erasure compaction has
 * not removed yet) — exactly what compaction will leave. Callers decode the values their own way.
 */
export async function readPlanRecords(opts: {
  kafka: Kafka;
  admin: Admin;
  topic: string;
  partition: number;
  planId: string;
  groupPrefix: string;
  /**
   * Offset to start at (default: the earliest). Only correct when no live record of the plan sits before
   * it: e.g. the offset of its first event, or a watermark the plan's snapshot covers.
   */
  from?: string;
  stats?: ReadStats;
}): Promise<Array<LogRecord & { seq: number; value: Buffer }>> {
  const bySeq = new Map<number, LogRecord & { seq: number; value: Buffer }>();
  await readToEnd({
    kafka: opts.kafka,
    admin: opts.admin,
    topic: opts.topic,
    partitions: [opts.partition],
    groupPrefix: opts.groupPrefix,
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
export async function readRecordAt(opts: { kafka: Kafka; admin: Admin; topic: string; partition: number; offset: string; groupPrefix: string; stats?: ReadStats }): Promise<LogRecord | undefined> {
  let found: LogRecord | undefined;
  await readToEnd({
    kafka: opts.kafka,
    admin: opts.admin,
    topic: opts.topic,
    partitions: [opts.partition],
    from: new Map([[opts.partition, opts.offset]]),
    until: new Map([[opts.partition, (BigInt(opts.offset) + 1n).toString()]]),
    groupPrefix: opts.groupPrefix,
    ...(opts.stats ? { stats: opts.stats } : {}),
    onRecords: (records) => {
      for (const r of records) if (r.offset === opts.offset) found = r;
    },
  });
  return found;
}

/** The last stable offset of one partition: what a `read_committed` reader can read up to now. */
export async function lastStableOffset(admin: Admin, topic: string, partition: number): Promise<bigint> {
  const o = (await fetchTopicOffsetsRetrying(admin, topic)).find((x) => x.partition === partition);
  if (o === undefined) throw new Error(`${topic} has no partition ${partition}`);
  return BigInt(o.high);
}
