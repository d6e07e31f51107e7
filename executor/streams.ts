// The executor's writer of stream records (`<prefix>.plan-streams`, docs/guides/agents.md#live-output): one
// idempotent producer per executor, no transaction per chunk. A running attempt gets an AttemptStream as
// `ctx.stream`; text deltas are coalesced (src/streams/coalesce.ts), records of one attempt go out in
// order, and the attempt's end marker rides in the transaction that records its result (item-scheduler.ts),
// so a reader sees `final` exactly when the result is committed. A stream is a view: a record that cannot
// be written is logged and dropped, never a reason to fail the tool.
import type { KafkaClient, LedgerAdmin, OutRecord, RecordWriter } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { DeltaCoalescer, DEFAULT_CHUNK_BYTES, DEFAULT_LINGER_MS } from '../src/streams/coalesce.js';
import { STREAM_BYTES_PER_ATTEMPT, decodeStreamRecord, encodeStreamRecord, isStreamKeyOf, streamKey, type StreamEnd, type StreamRecord } from '../src/streams/records.js';
import type { ToolStream } from '../src/tools.js';

/** Bytes of one attempt's records written but not yet acknowledged before `ctx.stream` calls wait. */
const MAX_UNACKED_BYTES = 1024 * 1024;
/** Largest `progress` value (its JSON); a larger one is dropped (counted). */
const MAX_PROGRESS_BYTES = 64 * 1024;
/** How far before a plan's creation the erasure sweep starts reading (clock skew between writers). */
const SWEEP_SKEW_MS = 60_000;

export interface StreamOptions {
  readonly chunkBytes?: number;
  readonly lingerMs?: number;
  readonly maxBytesPerAttempt?: number;
}

export interface AttemptStreamKey {
  readonly planId: string;
  readonly itemId: string;
  readonly attempt: number;
  /** The owner's fencing token. */
  readonly run: number;
  readonly partition: number;
  /** False once the plan is gone from the owner (erased): nothing more is written for it. */
  readonly alive: () => boolean;
}

export class StreamPublisher {
  private writer: Promise<RecordWriter> | undefined;
  private closed = false;

  constructor(
    private readonly kafka: KafkaClient,
    readonly topic: string,
    private readonly log: Logger,
    readonly opts: StreamOptions = {},
    private readonly now: () => number = Date.now,
  ) {}

  private connected(): Promise<RecordWriter> {
    this.writer ??= (async () => {
      const w = this.kafka.writer();
      await w.connect();
      return w;
    })();
    return this.writer;
  }

  /** Writes records (acks=all, idempotent); resolves once acknowledged. */
  async send(records: readonly OutRecord[]): Promise<void> {
    if (this.closed || records.length === 0) return;
    await (await this.connected()).send(this.topic, records);
  }

  /** The stream of one run of an attempt. */
  attempt(key: AttemptStreamKey): AttemptStream {
    return new AttemptStream(this, key, this.log.child({ planId: key.planId, itemId: key.itemId, attempt: key.attempt, run: key.run }), this.now);
  }

  record(key: AttemptStreamKey, seq: number, fields: Omit<StreamRecord, 'v' | 'planId' | 'itemId' | 'attempt' | 'run' | 'seq' | 'at'>): OutRecord {
    const r: StreamRecord = { v: 1, planId: key.planId, itemId: key.itemId, attempt: key.attempt, run: key.run, seq, ...fields, at: this.now() };
    return { key: streamKey(r), value: encodeStreamRecord(r), partition: key.partition };
  }

  /**
   * After an erasure: tombstones every stream record of the plan on its partition (read from a minute
   * before the plan was created to the end), so compaction removes them. Returns how many.
   */
  async erase(admin: LedgerAdmin, planId: string, partition: number, createdAt: number): Promise<number> {
    const from = (await admin.fetchTopicOffsetsByTimestamp(this.topic, Math.max(0, createdAt - SWEEP_SKEW_MS))).find((o) => o.partition === partition)?.offset;
    const keys = new Set<string>();
    await this.kafka.readToEnd({
      topic: this.topic,
      partitions: [partition],
      ...(from !== undefined ? { from: new Map([[partition, from]]) } : {}),
      onRecords: (records) => {
        for (const r of records) if (r.value !== null && isStreamKeyOf(r.key, planId) && decodeStreamRecord(r.value)?.planId === planId) keys.add(r.key!.toString('utf8'));
      },
    });
    const tombstones = [...keys].map((key) => ({ key, value: null, partition }));
    for (let i = 0; i < tombstones.length; i += 500) await this.send(tombstones.slice(i, i + 500));
    return tombstones.length;
  }

  async close(): Promise<void> {
    this.closed = true;
    const w = await this.writer?.catch(() => undefined);
    await w?.disconnect().catch(() => {});
  }
}

/**
 * One run of an attempt's stream (the tool's `ctx.stream`). Records are sent in order, in batches, by one
 * pump; a caller waits only while more than {@link MAX_UNACKED_BYTES} are unacknowledged (bounded memory
 * whatever the tool writes), and never sees a write error.
 */
export class AttemptStream implements ToolStream {
  private seq = 0;
  private readonly coalescer: DeltaCoalescer;
  private pending: OutRecord[] = [];
  private unacked = 0;
  private pumping: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private room: Array<() => void> = [];
  private written = 0;
  private broken = false;
  private ended = false;
  /** Records not written: past the attempt's bound, too large, or after a write failed. */
  dropped = 0;

  constructor(
    private readonly pub: StreamPublisher,
    readonly key: AttemptStreamKey,
    private readonly log: Logger,
    private readonly now: () => number,
  ) {
    this.coalescer = new DeltaCoalescer(pub.opts.chunkBytes ?? DEFAULT_CHUNK_BYTES, pub.opts.lingerMs ?? DEFAULT_LINGER_MS);
  }

  /** Whether this run wrote (or tried to write) anything: then its end is marked. */
  get used(): boolean {
    return this.seq > 0 || this.dropped > 0;
  }

  private get bound(): number {
    return this.pub.opts.maxBytesPerAttempt ?? STREAM_BYTES_PER_ATTEMPT;
  }

  text(delta: string): Promise<void> {
    if (typeof delta !== 'string' || delta.length === 0 || this.ended) return Promise.resolve();
    for (const chunk of this.coalescer.push(delta, this.now())) this.enqueue({ kind: 'text', text: chunk });
    this.arm();
    return this.waitForRoom();
  }

  toolCall(call: { toolCallId: string; toolName: string }): Promise<void> {
    return this.other({ kind: 'tool-call', toolCallId: String(call.toolCallId).slice(0, 256), toolName: String(call.toolName).slice(0, 256) });
  }

  usage(u: { inputTokens: number; outputTokens: number; totalTokens: number }): Promise<void> {
    return this.other({ kind: 'usage', usage: { inputTokens: u.inputTokens, outputTokens: u.outputTokens, totalTokens: u.totalTokens } });
  }

  write(data: unknown): Promise<void> {
    let json: string | undefined;
    try {
      json = JSON.stringify(data ?? null);
    } catch {
      json = undefined;
    }
    if (json === undefined || Buffer.byteLength(json, 'utf8') > MAX_PROGRESS_BYTES) {
      this.dropped++;
      return Promise.resolve();
    }
    return this.other({ kind: 'progress', data: JSON.parse(json) as unknown });
  }

  /** Any record but text: the text buffered before it goes first. */
  private other(fields: Parameters<StreamPublisher['record']>[2]): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.flushText();
    this.enqueue(fields);
    return this.waitForRoom();
  }

  private flushText(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const text = this.coalescer.take();
    if (text !== undefined) this.enqueue({ kind: 'text', text });
  }

  private arm(): void {
    const due = this.coalescer.dueAt();
    if (due === undefined || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.flushText();
    }, Math.max(0, due - this.now()));
    this.timer.unref();
  }

  private enqueue(fields: Parameters<StreamPublisher['record']>[2]): void {
    if (this.broken || !this.key.alive()) {
      this.dropped++;
      return;
    }
    const record = this.pub.record(this.key, this.seq + 1, fields);
    const bytes = Buffer.byteLength(record.value as string, 'utf8');
    if (this.written + bytes > this.bound) {
      this.dropped++;
      return;
    }
    this.seq++;
    this.written += bytes;
    this.unacked += bytes;
    this.pending.push(record);
    this.pumping ??= this.pump();
  }

  private async pump(): Promise<void> {
    try {
      while (this.pending.length) {
        const batch = this.pending;
        this.pending = [];
        const bytes = batch.reduce((n, r) => n + Buffer.byteLength(r.value as string, 'utf8'), 0);
        try {
          if (!this.broken) await this.pub.send(batch);
        } catch (e) {
          this.broken = true;
          this.dropped += batch.length;
          this.log.warn({ err: e }, 'a stream record could not be written; the rest of this stream is dropped (the recorded result is unaffected)');
        }
        this.unacked -= bytes;
        const waiting = this.room;
        this.room = [];
        for (const w of waiting) w();
      }
    } finally {
      this.pumping = undefined;
    }
  }

  private waitForRoom(): Promise<void> {
    if (this.unacked <= MAX_UNACKED_BYTES) return Promise.resolve();
    return new Promise((r) => this.room.push(r));
  }

  /** After the tool returned: the buffered text written and every record acknowledged. */
  async close(): Promise<void> {
    this.ended = true;
    this.flushText();
    while (this.pumping) await this.pumping;
  }

  /** A re-run after a takeover: marks every earlier run of this attempt superseded (written and acknowledged first). */
  async supersede(): Promise<void> {
    try {
      await this.pub.send([this.pub.record(this.key, 0, { kind: 'end', end: 'superseded', reason: `re-run by a new owner (run ${this.key.run})` })]);
    } catch (e) {
      this.log.warn({ err: e }, 'the superseded marker could not be written');
    }
  }

  /** The end marker of this run, to write in the transaction that records the attempt's result. */
  endRecord(end: StreamEnd, reason?: string): OutRecord {
    return this.pub.record(this.key, this.seq + 1, { kind: 'end', end, ...(reason !== undefined ? { reason: reason.slice(0, 512) } : {}), ...(this.dropped ? { dropped: this.dropped } : {}) });
  }
}
