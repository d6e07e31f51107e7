import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logging.js';
import type { LedgerConfig } from '../config.js';
import { connectWatched, routeLogs, type RdConfig } from './connection.js';
import { confluent } from './native.js';
import type { ConfluentAdmin } from './admin.js';
import type { LogRecord, PartitionTail, PartitionTailOptions, ReadStats, ReadToEndOptions } from './port.js';

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
    await sleep(200);
    return null;
  }
}

/**
 * A `read_committed` consumer for assigned partitions: no subscription, no commits, end-of-partition events
 * on. `partitionFetchBytes`: librdkafka's `max.partition.fetch.bytes` (default 1 MiB).
 */
export async function openAssignedConsumer(ctx: ReaderContext, fetchWaitMs = CONSUME_WAIT_MS, prefetchKiB?: number, partitionFetchBytes?: number): Promise<NativeConsumer> {
  const { KafkaConsumer } = confluent();
  const c = new KafkaConsumer(
    {
      ...ctx.rd,
      'group.id': ctx.groupId,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'isolation.level': 'read_committed',
      'enable.partition.eof': true,
      'fetch.wait.max.ms': fetchWaitMs,
      'fetch.error.backoff.ms': 50,
      // A reader whose caller is busy between batches (decoding a large snapshot) lets librdkafka's queue
      // pass its threshold; the next fetch then waits this long (librdkafka's default: 1 s).
      'fetch.queue.backoff.ms': 10,
      ...(partitionFetchBytes !== undefined ? { 'max.partition.fetch.bytes': partitionFetchBytes } : {}),
      ...(prefetchKiB !== undefined ? { 'queued.max.messages.kbytes': prefetchKiB, 'fetch.max.bytes': Math.max(prefetchKiB * 1024, 1024 * 1024 + 1024), 'max.partition.fetch.bytes': 1024 * 1024 + 1024 } : {}),
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

/**
 * Where the application's reading of a partition has reached: the offset after the last record *or
 * transaction marker* the consumer has handed over (librdkafka moves it past the markers it swallows).
 * Undefined while the partition has no position (just assigned, nothing taken yet).
 */
export function consumedPosition(c: NativeConsumer, topic: string, partition: number): bigint | undefined {
  try {
    const [tp] = (c as unknown as { position(tps: Array<{ topic: string; partition: number }>): Array<{ offset?: number }> }).position([{ topic, partition }]);
    return tp?.offset !== undefined && tp.offset >= 0 ? BigInt(tp.offset) : undefined;
  } catch {
    return undefined; // not assigned (any more)
  }
}

/**
 * How long a pooled read waits for a first record per consume call, and the broker for data per fetch.
 * Short: a read loops only while it has partitions assigned, and the first fetch after an assignment goes
 * out on the consumer's next fetch round (a warm getPlan without a projector: 10.5 ms at 10, 5-7 ms at 2).
 */
const POOLED_WAIT_MS = 2;

/**
 * `max.partition.fetch.bytes` of a pooled consumer. A ranged read wants its records at once: with
 * librdkafka's 1 MiB a partition of large records (the snapshots of a plan of 20,000 items, 70 MB before
 * the cleaner has run) took one fetch round trip per MiB, ~45 ms of a new client's 240 ms getPlan beside
 * it. What a consumer holds stays bounded by `queued.max.messages.kbytes` and each fetch by
 * `fetch.max.bytes` (librdkafka's defaults, 64 MiB and 50 MiB).
 */
const POOLED_PARTITION_FETCH_BYTES = 16 * 1024 * 1024;

/**
 * How long a pooled consumer stays open with no read: a burst of reads (a CLI verb, a page of plans, a
 * caller polling) reuses it, and an idle client costs the broker nothing (measured: a client holding two
 * idle, unassigned consumers raised an otherwise idle broker's CPU by ~6 % of a core).
 */
const IDLE_CLOSE_MS = 5_000;

/**
 * Consumers kept open for ranged reads. Opening a consumer costs a connection and a metadata round trip
 * (about 30 ms on a quiet machine), and closing one as much again, which made every point read (a
 * `getPlan`) cost hundreds of milliseconds; a client's reads take one from here and give it back. A
 * read holds its consumer alone (assign → read → unassign); at most `max` are open, further reads wait.
 * A read that failed closes its consumer rather than returning it: the next read opens a fresh one.
 *
 * Pooled consumers fetch with a short `fetch.wait.max.ms`: a fetch at a partition's end waits that long
 * on the broker, and librdkafka keeps one fetch in flight per broker, so the next read's first fetch
 * would queue behind the last read's idle one. Between reads a consumer is unassigned and fetches nothing.
 */
export class ReaderPool {
  private readonly idle: NativeConsumer[] = [];
  /** Each idle consumer's closing timer: an idle consumer still costs the broker requests, so it is kept for a burst of reads only. */
  private readonly closing = new Map<NativeConsumer, NodeJS.Timeout>();
  private opened = 0;
  private waiters: Array<() => void> = [];
  private closed = false;

  constructor(
    private readonly ctx: ReaderContext,
    private readonly max = 4,
  ) {}

  async acquire(stats?: ReadStats): Promise<NativeConsumer> {
    for (;;) {
      if (this.closed) throw new Error('the reader pool is closed');
      const c = this.idle.pop();
      if (c !== undefined) {
        clearTimeout(this.closing.get(c));
        this.closing.delete(c);
        return c;
      }
      if (this.opened < this.max) {
        this.opened += 1;
        try {
          const fresh = await openAssignedConsumer(this.ctx, POOLED_WAIT_MS, undefined, POOLED_PARTITION_FETCH_BYTES);
          if (stats) stats.opened = (stats.opened ?? 0) + 1;
          // One consume call takes what is ready: it waits only for the first record.
          (fresh as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(on: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
          return fresh;
        } catch (e) {
          this.opened -= 1;
          this.wake();
          throw e;
        }
      }
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** Gives a consumer back (unassigned); `healthy: false` closes it instead. */
  release(c: NativeConsumer, healthy: boolean): void {
    if (healthy && !this.closed) {
      try {
        c.unassign();
        this.idle.push(c);
        this.closing.set(
          c,
          setTimeout(() => this.retire(c), IDLE_CLOSE_MS).unref(),
        );
        this.wake();
        return;
      } catch {
        // fall through: a consumer that cannot unassign is not reused
      }
    }
    this.opened -= 1;
    void disconnectConsumer(c);
    this.wake();
  }

  /** Closes a consumer that stayed idle for {@link IDLE_CLOSE_MS}. */
  private retire(c: NativeConsumer): void {
    const i = this.idle.indexOf(c);
    this.closing.delete(c);
    if (i < 0) return;
    this.idle.splice(i, 1);
    this.opened -= 1;
    void disconnectConsumer(c);
  }

  private wake(): void {
    this.waiters.shift()?.();
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiters.splice(0)) w();
    const idle = this.idle.splice(0);
    for (const t of this.closing.values()) clearTimeout(t);
    this.closing.clear();
    this.opened -= idle.length;
    await Promise.all(idle.map(disconnectConsumer));
  }
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
 * Where a ranged read starts and ends per partition: the caller's known ends (no request), or the brokers'
 * offsets (a live tail: the high watermarks; a ranged read: the stable ends as of now).
 */
async function endOffsets(admin: () => Promise<ConfluentAdmin>, opts: ReadToEndOptions): Promise<Array<{ partition: number; high: string; low: string }>> {
  if (opts.ends !== undefined && !opts.follow) {
    const asked = opts.partitions ?? [...opts.ends.keys()];
    return asked.flatMap((partition) => {
      const high = opts.ends!.get(partition);
      return high === undefined ? [] : [{ partition, high, low: '0' }];
    });
  }
  const a = await admin();
  return opts.follow ? a.fetchTopicOffsets(opts.topic, opts.partitions) : a.fetchStableEnds(opts.topic, opts.partitions);
}

/**
 * Reads partitions from a start offset up to their end offset as it was when the read began, and stops.
 * "End" is the last stable offset: transaction markers and compaction leave gaps, so the read stops when
 * the next offset to read reaches the end — known from the records read and from librdkafka's
 * end-of-partition events, which also cover a tail of markers — never by counting records.
 */
export async function readToEnd(ctx: ReaderContext, admin: () => Promise<ConfluentAdmin>, opts: ReadToEndOptions, pool?: ReaderPool): Promise<Map<number, string>> {
  opts.onPhase?.('offsets');
  const offsets = await endOffsets(admin, opts);
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
  opts.onPhase?.('records');
  // A live tail keeps its consumer for as long as it follows: one of its own. A ranged read borrows one.
  const pooled = follow === undefined ? pool : undefined;
  const c = pooled ? await pooled.acquire(opts.stats) : await openAssignedConsumer(ctx, CONSUME_WAIT_MS, opts.prefetchKiB);
  if (!pooled && opts.stats) opts.stats.opened = (opts.stats.opened ?? 0) + 1;
  let healthy = false;
  // Partitions this read has taken a record or an end-of-partition event of: only their position is this
  // read's own (a reused consumer's position may still be its last read's until librdkafka has stopped
  // that fetch and taken a record of this one).
  const taken = new Set<number>();
  const onEof = (ev: { topic: string; partition: number; offset: number }) => {
    if (ev.topic !== opts.topic || !next.has(ev.partition)) return;
    taken.add(ev.partition);
    const at = BigInt(ev.offset);
    if (at > next.get(ev.partition)!) next.set(ev.partition, at);
  };
  try {
    c.on('partition.eof', onEof);
    const reading = [...next].filter(([p]) => !partitionDone(p));
    c.assign(reading.map(([partition, offset]) => ({ topic: opts.topic, partition, offset: Number(offset) })));
    const timeout = opts.timeoutMs ?? 60_000;
    const deadline = follow ? Infinity : Date.now() + timeout;
    while (!done() && !follow?.aborted) {
      if (Date.now() > deadline) throw new Error(`reading ${opts.topic} to its end timed out after ${timeout} ms`);
      const messages = pooled ? await consumeUpTo(c, CONSUME_BATCH, POOLED_WAIT_MS) : await consumeBatch(c);
      for (const [p, list] of byPartition(messages)) {
        if (!wanted.has(p)) continue;
        taken.add(p);
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
      // Past the transaction markers too: a read whose last records are followed by a commit marker is
      // done once the consumer has swallowed it, without waiting for an end-of-partition event (a fetch
      // at the end, which the broker holds for fetch.wait.max.ms).
      if (!follow) {
        for (const [p] of reading) {
          if (!taken.has(p)) continue;
          const at = consumedPosition(c, opts.topic, p);
          if (at !== undefined && at > (next.get(p) ?? 0n)) next.set(p, at);
        }
      }
    }
    healthy = true;
  } finally {
    c.removeListener('partition.eof', onEof);
    if (pooled) pooled.release(c, healthy);
    else await disconnectConsumer(c);
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
        await sleep(CONSUME_WAIT_MS);
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
        // Past a commit marker that followed the batch too, when the consumer swallowed it in this read;
        // otherwise the position would wait for an end-of-partition event (a fetch the broker holds).
        const after = BigInt(list.at(-1)!.offset) + 1n;
        const swallowed = consumedPosition(this.c, this.opts.topic, p);
        this.opts.onPosition?.(p, swallowed !== undefined && swallowed > after ? swallowed : after);
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
