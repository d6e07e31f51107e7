import type { Message, Producer } from 'kafkajs';
import { LedgerError } from '../src/errors.js';
import { recordBytes } from './records.js';
import { isFencingError } from '../src/kafka/client.js';
import type { Logger } from '../src/logging.js';

/** One unit of work for the partition's next transaction. */
export interface AppendRequest {
  /** Records for the partition's events topic partition (already encoded). */
  readonly events: Message[];
  /** Records for other topics/partitions that must commit atomically with the events (cross-partition commands). */
  readonly extra?: { topic: string; messages: Message[] }[];
  /** The next commands-topic offset to commit for this partition (last processed + 1). */
  readonly commitOffset?: string;
}

export interface AppenderOptions {
  /**
   * The partition's transactional producers, all fenced by their owner. Transactions take turns on them,
   * so one starts while the previous one's commit markers are still being written (a producer's next
   * transaction waits for its own markers: CONCURRENT_TRANSACTIONS). A transaction that commits consumer
   * offsets always goes on the first, so offset commits stay in one producer's order.
   */
  readonly producers: readonly Producer[];
  readonly eventsTopic: string;
  readonly commandsTopic: string;
  readonly partition: number;
  readonly consumerGroupId: string;
  readonly logger: Logger;
  /** Max requests per transaction. */
  readonly maxBatch?: number;
  /** How long the first request waits for company before the transaction starts. */
  readonly lingerMs?: number;
  /**
   * Largest produce batch per topic partition (the topics' max.message.bytes): a transaction's records
   * are sent in as many produce calls as it takes to stay under it, so any set of records that fit one by
   * one commits. Default 1 MiB.
   */
  readonly maxRequestBytes?: number;
}

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
  /** The producer of the last transaction (an index into `producers`). */
  private turn = 0;
  /** Transactions committed and events appended, for metrics and benchmarks. */
  readonly stats = { transactions: 0, events: 0 };

  constructor(private readonly o: AppenderOptions) {
    if (o.producers.length === 0) throw new Error('TransactionalAppender needs at least one producer');
    this.maxBatch = o.maxBatch ?? 500;
    this.maxRequestBytes = o.maxRequestBytes ?? 1024 * 1024;
    this.lingerMs = o.lingerMs ?? Number(process.env.PLAN_LEDGER_APPEND_LINGER_MS ?? 0);
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
    while (this.running || this.queue.length) await new Promise((r) => setTimeout(r, 5));
  }

  private async drain(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length && this.broken === undefined) {
        // Requests that arrive while a transaction is in flight queue up and ride in the next one;
        // an optional linger lets a lone request wait for company.
        await (this.lingerMs > 0 ? new Promise((r) => setTimeout(r, this.lingerMs)) : new Promise((r) => setImmediate(r)));
        const batch = this.queue.splice(0, this.maxBatch);
        try {
          await this.commit(batch.map((b) => b.req));
          for (const b of batch) b.resolve();
        } catch (e) {
          this.broken = isFencingError(e)
            ? new LedgerError('FENCED', `partition ${this.o.partition}: a newer owner fenced this executor's producer`, { partition: this.o.partition }, { cause: e })
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
    const byTopic = new Map<string, Message[]>();
    if (events.length) byTopic.set(this.o.eventsTopic, events.map((m) => ({ ...m, partition: this.o.partition })));
    for (const r of reqs) {
      for (const x of r.extra ?? []) {
        const list = byTopic.get(x.topic) ?? [];
        list.push(...x.messages);
        byTopic.set(x.topic, list);
      }
    }
    let offset: bigint | undefined;
    for (const r of reqs) if (r.commitOffset !== undefined && (offset === undefined || BigInt(r.commitOffset) > offset)) offset = BigInt(r.commitOffset);
    if (byTopic.size === 0 && offset === undefined) return;

    // Transactions are sequential (one in flight), so records land in the log in the order their
    // transactions were sent, whichever producer carried them; read_committed readers see them in that
    // order. It also keeps transactions of different producers from overlapping in the log, which kafkajs's
    // reader needs: its aborted-record filter lets records of one of two overlapping aborted transactions through.
    this.turn = offset !== undefined ? 0 : (this.turn + 1) % this.o.producers.length;
    const tx = await this.o.producers[this.turn]!.transaction();
    try {
      for (const topicMessages of produceCalls(byTopic, this.maxRequestBytes)) await tx.sendBatch({ topicMessages, acks: -1 });
      if (offset !== undefined) {
        await tx.sendOffsets({
          consumerGroupId: this.o.consumerGroupId,
          topics: [{ topic: this.o.commandsTopic, partitions: [{ partition: this.o.partition, offset: offset.toString() }] }],
        });
      }
      await tx.commit();
      this.stats.transactions++;
      this.stats.events += events.length;
    } catch (e) {
      await tx.abort().catch((abortErr: unknown) => this.o.logger.debug({ err: abortErr }, 'abort after failed transaction also failed'));
      throw e;
    }
  }
}

/** Room left in a produce batch for its own header (record batch v2: 61 bytes) and some slack. */
const BATCH_OVERHEAD = 1024;

/**
 * Splits a transaction's records into produce calls whose records for each topic stay under `maxBytes`
 * (counted per topic, so per topic partition too). One call when everything fits, as before.
 */
export function produceCalls(byTopic: ReadonlyMap<string, Message[]>, maxBytes: number): Array<Array<{ topic: string; messages: Message[] }>> {
  const budget = Math.max(1, maxBytes - BATCH_OVERHEAD);
  const perTopic: Array<{ topic: string; chunks: Message[][] }> = [];
  for (const [topic, messages] of byTopic) {
    const chunks: Message[][] = [];
    let chunk: Message[] = [];
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
  const calls: Array<Array<{ topic: string; messages: Message[] }>> = [];
  for (let i = 0; perTopic.some((t) => t.chunks.length > i); i++) {
    calls.push(perTopic.filter((t) => t.chunks.length > i).map((t) => ({ topic: t.topic, messages: t.chunks[i]! })));
  }
  return calls;
}
