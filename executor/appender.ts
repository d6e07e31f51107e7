import { setTimeout as sleep } from 'node:timers/promises';
import { LedgerError } from '../src/errors.js';
import { isFencingError, MAX_RECORD_BYTES, type FencedTransaction, type FencedWriter, type GroupMember, type OutRecord } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { setting } from '../src/settings.js';
import { recordBytes } from './records.js';

/** One unit of work for the partition's next transaction. */
export interface AppendRequest {
  /** Records for the partition's events topic partition (already encoded). */
  readonly events: OutRecord[];
  /** Records for other topics/partitions that must commit atomically with the events (cross-partition commands). */
  readonly extra?: { topic: string; messages: OutRecord[] }[];
  /** The next commands-topic offset to commit for this partition (last processed + 1). */
  readonly commitOffset?: string;
}

export interface AppenderOptions {
  /**
   * The partition's fenced writers, all connected by their owner. Transactions take turns on them, so one
   * starts while the previous one's commit markers are still being written (a writer's next transaction
   * waits for its own markers: CONCURRENT_TRANSACTIONS). A transaction that commits consumer offsets
   * always goes on the first, so offset commits stay in one writer's order.
   */
  readonly writers: readonly FencedWriter[];
  /** The executors' group membership the commands offsets are committed for (with its group metadata). */
  readonly member: GroupMember;
  readonly eventsTopic: string;
  readonly commandsTopic: string;
  readonly partition: number;
  readonly logger: Logger;
  /** Max requests per transaction. */
  readonly maxBatch?: number;
  /** How long the first request waits for company before the transaction starts. */
  readonly lingerMs?: number;
  /**
   * Largest produce batch per topic partition (the topics' max.message.bytes): a transaction's records
   * are sent in as many produce calls as it takes to stay under it, so any set of records that fit one by
   * one commits. Default {@link MAX_RECORD_BYTES}.
   */
  readonly maxRequestBytes?: number;
  /**
   * The owner's clock: a record written without a timestamp (the events carry theirs, their occurredAt) is
   * stamped with it, so every record the executor writes has the time of the clock its events have, as
   * a host whose clock is off stamps its records. Default: the producer stamps them (the process clock).
   */
  readonly now?: () => number;
  /** The executor writing (its id): every events record carries it in {@link WRITER_HEADER}, so a reader of the log alone knows whose clock stamped it. */
  readonly writer?: string;
}

/** A transaction that takes this long to commit logs where it waited (a warning). */
const SLOW_TRANSACTION_MS = 5_000;

/** The header naming the executor that wrote an events record. */
export const WRITER_HEADER = 'plan-ledger-writer';

interface Pending {
  req: AppendRequest;
  resolve: () => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit for one owned partition (docs/design.md#performance-principles): every append request that is ready — decided
 * commands with their offsets, intents, results, completions of many items and plans — rides in one
 * Kafka transaction, bounded by `maxBatch` and a short linger. Each request's promise resolves when
 * its transaction has committed, so a caller that awaits it knows its events are durable and visible.
 *
 * After a failure the appender is broken: every queued and later request is rejected with the cause
 * (a FENCED LedgerError when a newer owner took over). The owner then resets or gives the partition up.
 */
export class TransactionalAppender {
  private queue: Pending[] = [];
  private running = false;
  private broken: unknown;
  private readonly maxBatch: number;
  private readonly lingerMs: number;
  private readonly maxRequestBytes: number;
  /** The writer of the last transaction (an index into `writers`). */
  private turn = 0;
  /** Transactions committed and events appended, for metrics and benchmarks. */
  readonly stats = { transactions: 0, events: 0 };

  constructor(private readonly o: AppenderOptions) {
    if (o.writers.length === 0) throw new Error('TransactionalAppender needs at least one writer');
    this.maxBatch = o.maxBatch ?? 500;
    this.maxRequestBytes = o.maxRequestBytes ?? MAX_RECORD_BYTES;
    this.lingerMs = o.lingerMs ?? setting('PLAN_LEDGER_APPEND_LINGER_MS');
  }

  append(req: AppendRequest): Promise<void> {
    if (this.broken !== undefined) return Promise.reject(this.broken);
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ req, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  get isBroken(): boolean {
    return this.broken !== undefined;
  }

  /** Waits until nothing is queued or in flight (used by graceful shutdown). */
  async idle(): Promise<void> {
    while (this.running || this.queue.length) await sleep(5);
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length && this.broken === undefined) {
        // Requests that arrive while a transaction is in flight queue up and ride in the next one;
        // an optional linger lets a lone request wait for company.
        await (this.lingerMs > 0 ? sleep(this.lingerMs) : new Promise((r) => setImmediate(r)));
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          await this.commit(batch.map((b) => b.req));
          for (const b of batch) b.resolve();
        } catch (e) {
          this.broken = isFencingError(e)
            ? new LedgerError('FENCED', `partition ${this.o.partition}: a newer owner fenced this executor's writer`, { partition: this.o.partition }, { cause: e })
            : e;
          for (const b of batch) b.reject(this.broken);
        }
      }
      if (this.broken !== undefined) for (const b of this.queue.splice(0)) b.reject(this.broken);
    } finally {
      this.running = false;
    }
  }

  private async commit(reqs: AppendRequest[]): Promise<void> {
    const events = reqs.flatMap((r) => r.events);
    const byTopic = new Map<string, OutRecord[]>();
    const at = this.o.now === undefined ? undefined : String(this.o.now());
    const stamped = (m: OutRecord): OutRecord => (at === undefined || m.timestamp !== undefined ? m : { ...m, timestamp: at });
    const writer = this.o.writer;
    const signed = (m: OutRecord): OutRecord => (writer === undefined || m.value == null ? m : { ...m, headers: { ...m.headers, [WRITER_HEADER]: writer } });
    if (events.length) byTopic.set(this.o.eventsTopic, events.map((m) => ({ ...signed(stamped(m)), partition: this.o.partition })));
    for (const r of reqs) {
      for (const x of r.extra ?? []) {
        const list = byTopic.get(x.topic) ?? [];
        list.push(...x.messages.map(stamped));
        byTopic.set(x.topic, list);
      }
    }
    let offset: bigint | undefined;
    for (const r of reqs) if (r.commitOffset !== undefined && (offset === undefined || BigInt(r.commitOffset) > offset)) offset = BigInt(r.commitOffset);
    if (byTopic.size === 0 && offset === undefined) return;

    // Transactions are sequential (one in flight), so records land in the log in the order their
    // transactions were sent, whichever writer carried them; read_committed readers see them in that order.
    this.turn = offset !== undefined ? 0 : (this.turn + 1) % this.o.writers.length;
    const t0 = Date.now();
    const tx = await this.o.writers[this.turn]!.transaction();
    const steps: { begunMs?: number; sentMs?: number; offsetsMs?: number } = {};
    try {
      steps.begunMs = Date.now() - t0;
      for (const call of produceCalls(byTopic, this.maxRequestBytes)) await sendCall(tx, call);
      steps.sentMs = Date.now() - t0;
      if (offset !== undefined) await tx.sendOffsets(this.o.member, [{ topic: this.o.commandsTopic, partition: this.o.partition, offset: offset.toString() }]);
      steps.offsetsMs = Date.now() - t0;
      await tx.commit();
      this.stats.transactions++;
      this.stats.events += events.length;
      const ms = Date.now() - t0;
      if (ms >= SLOW_TRANSACTION_MS) this.o.logger.warn({ partition: this.o.partition, ms, ...steps, events: events.length }, 'a transaction took long: when it had begun, its records were written, its offsets sent (ms after it began)');
    } catch (e) {
      await tx.abort().catch((abortErr: unknown) => this.o.logger.debug({ err: abortErr }, 'abort after failed transaction also failed'));
      throw e;
    }
  }
}

/**
 * One produce call: its topics' records sent together (each topic once, so no partition's records can
 * overtake each other); settles once every send has, failing with the first failure.
 */
async function sendCall(tx: FencedTransaction, call: ReadonlyArray<{ topic: string; messages: OutRecord[] }>): Promise<void> {
  const sent = await Promise.allSettled(call.map((t) => tx.send(t.topic, t.messages)));
  const failed = sent.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Room left in a produce batch for its own header (record batch v2: 61 bytes) and some slack. */
const BATCH_OVERHEAD = 1024;

/**
 * Splits a transaction's records into produce calls whose records for each topic stay under `maxBytes`
 * (counted per topic, so per topic partition too). One call when everything fits, as before.
 */
export function produceCalls(byTopic: ReadonlyMap<string, OutRecord[]>, maxBytes: number): Array<Array<{ topic: string; messages: OutRecord[] }>> {
  const budget = Math.max(1, maxBytes - BATCH_OVERHEAD);
  const perTopic: Array<{ topic: string; chunks: OutRecord[][] }> = [];
  for (const [topic, messages] of byTopic) {
    const chunks: OutRecord[][] = [];
    let chunk: OutRecord[] = [];
    let bytes = 0;
    for (const m of messages) {
      const n = recordBytes(m);
      if (chunk.length && bytes + n > budget) {
        chunks.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(m);
      bytes += n;
    }
    if (chunk.length) chunks.push(chunk);
    perTopic.push({ topic, chunks });
  }
  const calls: Array<Array<{ topic: string; messages: OutRecord[] }>> = [];
  for (let i = 0; perTopic.some((t) => t.chunks.length > i); i++) {
    calls.push(perTopic.filter((t) => t.chunks.length > i).map((t) => ({ topic: t.topic, messages: t.chunks[i]! })));
  }
  return calls;
}
