import type { Logger } from '../logging.js';
import type { LedgerConfig } from '../config.js';
import { connectWatched, routeLogs, type RdConfig } from './connection.js';
import { confluent } from './native.js';
import type { ConfluentAdmin } from './admin.js';
import type { LogRecord, PartitionTail, PartitionTailOptions, ReadToEndOptions } from './port.js';

type TopicPartitionOffset = { topic: string; partition: number; offset?: number };
/** librdkafka's consumer; the binding has these methods (lib/kafka-consumer.js) but its typings leave them out. */
export type NativeConsumer = InstanceType<ReturnType<typeof confluent>['KafkaConsumer']> & {
  incrementalAssign(assignments: TopicPartitionOffset[]): void;
  incrementalUnassign(assignments: TopicPartitionOffset[]): void;
  rebalanceProtocol(): 'NONE' | 'EAGER' | 'COOPERATIVE';
  assignmentLost(): boolean;
  commitCb(offsets: TopicPartitionOffset[], cb: (err: unknown) => void): void;
};

export interface NativeMessage {
  value: Buffer | null;
  key?: Buffer | string | null;
  topic: string;
  partition: number;
  offset: number;
  timestamp?: number;
  headers?: Array<Record<string, Buffer | string>>;
}

export interface ReaderContext {
  readonly rd: RdConfig;
  readonly logger: Logger;
  /** librdkafka wants a group id on every consumer; readers never join it, subscribe or commit. */
  readonly groupId: string;
  readonly config: LedgerConfig;
}

/** Records fetched per consume call. */
const CONSUME_BATCH = 1000;
/** How long a read waits for a first record (the records after it are taken as they are ready). */
const CONSUME_WAIT_MS = 100;

export function toLogRecord(m: NativeMessage): LogRecord {
  const headers: Record<string, string> = {};
  for (const h of m.headers ?? []) for (const [k, v] of Object.entries(h)) headers[k] = v === undefined || v === null ? '' : v.toString();
  const key = m.key === undefined || m.key === null ? null : Buffer.isBuffer(m.key) ? m.key : Buffer.from(m.key);
  return { topic: m.topic, partition: m.partition, offset: String(m.offset), key, value: m.value ?? null, timestamp: String(m.timestamp ?? 0), headers };
}

function consumeUpTo(c: NativeConsumer, n: number, timeoutMs: number): Promise<NativeMessage[]> {
  c.setDefaultConsumeTimeout(timeoutMs);
  return new Promise((resolve, reject) => c.consume(n, (err, messages) => (err ? reject(err) : resolve((messages ?? []) as unknown as NativeMessage[]))));
}

/**
 * The records ready now, up to `n`, after waiting up to {@link CONSUME_WAIT_MS} for the first. The
 * binding's `consume(n)` waits its timeout for *each* record until it has `n`, so one call for a batch
 * would hold every record that arrives alone for the whole timeout: a 100 ms hop on every command, event
 * and tail read. So: one record with the wait, then whatever else is ready without one.
 */
export async function consumeBatch(c: NativeConsumer, n = CONSUME_BATCH): Promise<NativeMessage[]> {
  const first = await consumeUpTo(c, 1, CONSUME_WAIT_MS);
  if (first.length === 0 || n <= 1) return first;
  const rest = await consumeUpTo(c, n - 1, 0);
  return rest.length ? first.concat(rest) : first;
}

/**
 * One batch for a consume loop, or null when the read failed: logged as a warning (unless `closing()`),
 * after a short pause so a loop on a broken connection does not spin.
 */
export async function consumeOrPause(c: NativeConsumer, logger: Logger, what: string, context: object, closing: () => boolean): Promise<NativeMessage[] | null> {
  try {
    return await consumeBatch(c);
  } catch (e) {
    if (closing()) return null;
    logger.warn({ err: e, ...context }, `${what} read failed; reading on`);
    await new Promise((r) => setTimeout(r, 200));
    return null;
  }
}

/** A `read_committed` consumer for assigned partitions: no subscription, no commits, end-of-partition events on. */
export async function openAssignedConsumer(ctx: ReaderContext): Promise<NativeConsumer> {
  const { KafkaConsumer } = confluent();
  const c = new KafkaConsumer(
    {
      ...ctx.rd,
      'group.id': ctx.groupId,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'isolation.level': 'read_committed',
      'enable.partition.eof': true,
      'fetch.wait.max.ms': CONSUME_WAIT_MS,
      'fetch.error.backoff.ms': 50,
    } as never,
    { 'auto.offset.reset': 'earliest' } as never,
  ) as NativeConsumer;
  const errors = routeLogs(c as never, ctx.logger, ctx.config.sasl?.password);
  const connecting = new Promise<void>((resolve, reject) => c.connect({ timeout: 30_000 } as never, (err) => (err ? reject(err) : resolve())));
  try {
    await connectWatched(errors, connecting, ctx.config);
  } catch (e) {
    // Closing a handle waits for its connect in flight: close it once that has given up, not now.
    void connecting.then(() => disconnectConsumer(c), () => {});
    throw e;
  }
  return c;
}

export function disconnectConsumer(c: NativeConsumer): Promise<void> {
  return new Promise<void>((resolve) => {
    try {
      c.disconnect(() => resolve());
    } catch {
      resolve();
    }
  });
}

/** Groups messages by partition, keeping offset order within each. */
function byPartition(messages: NativeMessage[]): Map<number, NativeMessage[]> {
  const out = new Map<number, NativeMessage[]>();
  for (const m of messages) {
    const list = out.get(m.partition);
    if (list) list.push(m);
    else out.set(m.partition, [m]);
  }
  return out;
}

/**
 * Reads partitions from a start offset up to their end offset as it was when the read began, and stops.
 * "End" is the last stable offset: transaction markers and compaction leave gaps, so the read stops when
 * the next offset to read reaches the end — known from the records read and from librdkafka's
 * end-of-partition events, which also cover a tail of markers — never by counting records.
 */
export async function readToEnd(ctx: ReaderContext, admin: ConfluentAdmin, opts: ReadToEndOptions): Promise<Map<number, string>> {
  const offsets = opts.follow ? await admin.fetchTopicOffsets(opts.topic) : await admin.fetchStableEnds(opts.topic, opts.partitions);
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
  const partitionDone = (p: number) => !follow && (next.get(p) ?? 0n) >= (end.get(p) ?? 0n);
  const done = () => opts.isComplete?.() === true || (!follow && [...end.keys()].every(partitionDone));
  const capped = () =>
    new Map(
      [...next].map(([p, o]) => {
        const e = end.get(p);
        return [p, (!follow && e !== undefined && o > e ? e : o).toString()];
      }),
    );
  if (done() || follow?.aborted) return capped();

  if (opts.stats) opts.stats.reads += 1;
  const c = await openAssignedConsumer(ctx);
  try {
    c.on('partition.eof', (ev: { topic: string; partition: number; offset: number }) => {
      if (ev.topic !== opts.topic || !next.has(ev.partition)) return;
      const at = BigInt(ev.offset);
      if (at > next.get(ev.partition)!) next.set(ev.partition, at);
    });
    c.assign([...next].filter(([p]) => !partitionDone(p)).map(([partition, offset]) => ({ topic: opts.topic, partition, offset: Number(offset) })));
    const timeout = opts.timeoutMs ?? 60_000;
    const deadline = follow ? Infinity : Date.now() + timeout;
    while (!done() && !follow?.aborted) {
      if (Date.now() > deadline) throw new Error(`reading ${opts.topic} to its end timed out after ${timeout} ms`);
      const messages = await consumeBatch(c);
      for (const [p, list] of byPartition(messages)) {
        if (!wanted.has(p)) continue;
        const stop = follow ? null : (end.get(p) ?? 0n);
        const first = startAt.get(p) ?? 0n;
        const records: LogRecord[] = [];
        for (const m of list) {
          const offset = BigInt(m.offset);
          if (offset < first) {
            if (opts.stats) opts.stats.skipped = (opts.stats.skipped ?? 0) + 1;
            continue;
          }
          if (offset + 1n > (next.get(p) ?? 0n)) next.set(p, offset + 1n);
          if (stop !== null && offset >= stop) continue;
          records.push(toLogRecord(m));
        }
        if (records.length) {
          if (opts.stats) opts.stats.records[opts.topic] = (opts.stats.records[opts.topic] ?? 0) + records.length;
          await opts.onRecords(records);
        }
        if (opts.isComplete?.() === true) break;
      }
    }
  } finally {
    await disconnectConsumer(c);
  }
  return capped();
}

/**
 * A live `read_committed` reader of chosen partitions of one topic, without a consumer group. Partitions
 * come and go with `add` / `drop`; records of a partition reach `onRecords` in offset order, one batch at
 * a time.
 */
class NativeTail implements PartitionTail {
  /** Partitions asked for, with the epoch of the latest ask. */
  private readonly assigned = new Map<number, number>();
  /** Asks (partition → start offset) for the read loop to carry out before its next read. */
  private readonly due = new Map<number, string>();
  /** Partitions librdkafka has assigned now. */
  private readonly held = new Set<number>();
  private epoch = 0;
  private closing = false;
  private loop: Promise<void> | undefined;
  /**
   * End-of-partition positions reported during the last read. The binding emits them before the read's
   * records are handed back, so they are applied after those records went to `onRecords`: a position must
   * never run ahead of the records below it (a command's caller would stop listening with some unseen).
   */
  private readonly eofs = new Map<number, bigint>();

  constructor(
    private readonly c: NativeConsumer,
    private readonly opts: PartitionTailOptions,
    private readonly logger: Logger,
  ) {
    c.on('partition.eof', (ev: { topic: string; partition: number; offset: number }) => {
      if (ev.topic !== opts.topic) return;
      const at = BigInt(ev.offset);
      if (at > (this.eofs.get(ev.partition) ?? -1n)) this.eofs.set(ev.partition, at);
    });
  }

  get partitions(): number[] {
    return [...this.assigned.keys()].sort((a, b) => a - b);
  }

  /**
   * Reads `partition` from `offset` on. The assignment is made by the read loop between two reads, never
   * during one: a read in flight then returns only records of the earlier start, which are dropped (an
   * assignment during a read could return records of the new start too, and dropping those would lose them).
   */
  async add(partition: number, offset: string): Promise<void> {
    if (this.closing) return;
    this.due.set(partition, offset);
    this.assigned.set(partition, ++this.epoch);
    this.loop ??= this.run();
  }

  async drop(partition: number): Promise<void> {
    this.due.delete(partition);
    if (!this.assigned.delete(partition)) return;
    this.unassign(partition);
  }

  private unassign(partition: number): void {
    if (this.held.delete(partition)) this.c.incrementalUnassign([{ topic: this.opts.topic, partition }] as never);
  }

  private applyDue(): void {
    for (const [partition, offset] of this.due) {
      this.unassign(partition);
      this.c.incrementalAssign([{ topic: this.opts.topic, partition, offset: Number(offset) }] as never);
      this.held.add(partition);
    }
    this.due.clear();
  }

  private async run(): Promise<void> {
    while (!this.closing) {
      if (this.assigned.size === 0) {
        await new Promise((r) => setTimeout(r, CONSUME_WAIT_MS));
        continue;
      }
      this.applyDue();
      const epochs = new Map(this.assigned);
      this.eofs.clear();
      const messages = await consumeOrPause(this.c, this.logger, 'tail', { topic: this.opts.topic }, () => this.closing);
      if (messages === null) continue;
      const eofs = new Map(this.eofs);
      this.eofs.clear();
      for (const [p, list] of byPartition(messages)) {
        // Fetched before the partition was dropped or restarted at another offset: not what was asked for
        // now. A partition added while the fetch ran was fetched from its new start.
        const was = epochs.get(p);
        if (this.closing || !this.assigned.has(p) || (was !== undefined && this.assigned.get(p) !== was)) continue;
        try {
          await this.opts.onRecords(p, list.map(toLogRecord));
        } catch (e) {
          this.logger.error({ err: e, topic: this.opts.topic, partition: p }, 'tail consumer refused records');
        }
        this.opts.onPosition?.(p, BigInt(list.at(-1)!.offset) + 1n);
      }
      for (const [p, at] of eofs) {
        const was = epochs.get(p);
        if (!this.closing && this.assigned.has(p) && (was === undefined || this.assigned.get(p) === was)) this.opts.onPosition?.(p, at);
      }
    }
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.loop?.catch(() => {});
    await disconnectConsumer(this.c);
  }
}

export async function openTail(ctx: ReaderContext, opts: PartitionTailOptions): Promise<PartitionTail> {
  return new NativeTail(await openAssignedConsumer(ctx), opts, ctx.logger);
}
