import type { LedgerConfig } from '../config.js';
import type { Logger } from '../logging.js';
import { connectWatched, routeLogs, withBrokerCode, type HandleErrors, type RdConfig } from './client.js';
import { nativeConsumerOf } from './member.js';
import { confluent } from './native.js';
import type { Delivered, FencedTransaction, FencedWriter, GroupMember, OutRecord, RecordWriter } from './port.js';

type NativeProducer = InstanceType<ReturnType<typeof confluent>['Producer']>;

interface Waiting {
  resolve: (d: Delivered) => void;
  reject: (e: unknown) => void;
}

/**
 * A librdkafka request may carry several records; the broker checks each batch against the topic's
 * max.message.bytes. The client's own ceiling is set well above it so the broker's word is the one that counts.
 */
const CLIENT_MAX_REQUEST_BYTES = 64 * 1024 * 1024;

/** Delivery errors that stand for another: _PURGE_QUEUE, _PURGE_INFLIGHT, _FATAL. */
const PURGED = new Set([-152, -151, -150]);

function promised<T = void>(fn: (cb: (err: unknown, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));
}

/**
 * The parts both writers share: a native producer whose delivery reports come back on librdkafka's
 * background thread (no poll interval to wait for), and `send`, which resolves per record once the
 * in-sync replicas acknowledged it. librdkafka retries a failed produce with the same producer id and
 * sequence numbers, in order, so a retry is never a second copy; and it regroups by the partitions'
 * current leaders without skipping any.
 */
abstract class NativeWriter {
  protected producer: NativeProducer | undefined;
  protected errors: HandleErrors = {};
  private readonly waiting = new Map<number, Waiting>();
  private nextId = 1;

  constructor(
    protected readonly rd: RdConfig,
    protected readonly logger: Logger,
    protected readonly config: LedgerConfig,
  ) {}

  protected async open(extra: RdConfig): Promise<NativeProducer> {
    const { Producer } = confluent();
    const p = new Producer({
      ...this.rd,
      'enable.idempotence': true,
      acks: 'all',
      'linger.ms': 0,
      'message.max.bytes': CLIENT_MAX_REQUEST_BYTES,
      dr_cb: true,
      ...extra,
    } as never);
    const errors = routeLogs(p as never, this.logger, this.config.sasl?.password);
    this.errors = errors;
    p.on('delivery-report', (err, report) => {
      const id = report?.opaque as number | undefined;
      const w = id !== undefined ? this.waiting.get(id) : undefined;
      if (!w) return;
      this.waiting.delete(id!);
      // A record purged from the queue (a fatal producer error, a disconnect) says nothing of why: the
      // handle's own last error does (e.g. CLUSTER_AUTHORIZATION_FAILED for a refused producer id).
      if (!err) {
        w.resolve({ topic: report.topic, partition: report.partition, offset: String(report.offset) });
      } else if (PURGED.has(err.code)) {
        void this.explained(err).then(w.reject);
      } else {
        w.reject(err);
      }
    });
    const connecting = promised((cb) => p.connect({ timeout: 30_000 } as never, cb as never));
    try {
      await connectWatched(errors, connecting, this.config);
    } catch (e) {
      // Closing a handle waits for its connect in flight: close it once that has given up, not now.
      void connecting.then(
        () => promised((cb) => p.disconnect(2_000, cb as never)).catch(() => {}),
        () => {},
      );
      throw e;
    }
    p.setPollInBackground(true);
    this.producer = p;
    return p;
  }

  /**
   * A purged or fatal record's error, explained: the error that made librdkafka purge (e.g. a refused
   * InitProducerId) reaches the handle's error channel around the same time as the purged records'
   * reports, sometimes just after: wait up to a second for it.
   */
  private async explained(e: unknown): Promise<unknown> {
    for (const until = Date.now() + 1000; this.errors.last === undefined && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
    return withBrokerCode(this.errors.last ?? e);
  }

  protected produce(topic: string, records: readonly OutRecord[]): Promise<Delivered[]> {
    const p = this.producer;
    if (!p) return Promise.reject(new Error('the producer is not connected'));
    const out: Promise<Delivered>[] = [];
    for (const r of records) {
      const id = this.nextId++;
      out.push(
        new Promise<Delivered>((resolve, reject) => {
          this.waiting.set(id, { resolve, reject });
          try {
            const value = r.value === null ? null : Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value);
            const key = r.key === undefined || r.key === null ? null : Buffer.isBuffer(r.key) ? r.key : Buffer.from(r.key);
            const headers = r.headers ? Object.entries(r.headers).map(([k, v]) => ({ [k]: v })) : undefined;
            p.produce(topic, r.partition ?? -1, value, key, r.timestamp !== undefined ? Number(r.timestamp) : null, id, headers as never);
          } catch (e) {
            this.waiting.delete(id);
            // A producer already failed fatally refuses at once (_FATAL): say what failed it.
            const code = (e as { code?: number }).code;
            if (code !== undefined && PURGED.has(code)) void this.explained(e).then(reject);
            else reject(e);
          }
        }),
      );
    }
    return Promise.all(out);
  }

  async disconnect(): Promise<void> {
    const p = this.producer;
    this.producer = undefined;
    if (!p) return;
    await promised((cb) => p.flush(5_000, cb as never)).catch(() => {});
    await promised((cb) => p.disconnect(5_000, cb as never)).catch(() => {});
    for (const w of this.waiting.values()) w.reject(new Error('the producer was disconnected'));
    this.waiting.clear();
  }
}

/** An idempotent producer with acks=all: commands, blobs, plan keys, dead letters. */
export class NativeRecordWriter extends NativeWriter implements RecordWriter {
  constructor(
    rd: RdConfig,
    logger: Logger,
    private readonly profile: { messageTimeoutMs: number; requestTimeoutMs: number },
    config: LedgerConfig,
  ) {
    super(rd, logger, config);
  }

  async connect(): Promise<void> {
    if (this.producer) return;
    await this.open({ 'message.timeout.ms': this.profile.messageTimeoutMs, 'request.timeout.ms': this.profile.requestTimeoutMs });
  }

  send(topic: string, records: readonly OutRecord[]): Promise<Delivered[]> {
    return this.produce(topic, records);
  }
}

/** How long initialising, committing or aborting a transaction may take through a broker outage. */
const TRANSACTION_CALL_TIMEOUT_MS = 60_000;

/**
 * A transactional producer with a fixed id. `connect` runs InitProducerId for the id, which bumps its
 * epoch: an older producer of the id is fenced (its open transaction aborted, its later requests refused)
 * before `connect` returns.
 */
export class NativeFencedWriter extends NativeWriter implements FencedWriter {
  constructor(
    rd: RdConfig,
    logger: Logger,
    readonly transactionalId: string,
    config: LedgerConfig,
  ) {
    super(rd, logger, config);
  }

  async connect(): Promise<void> {
    const p = await this.open({
      'transactional.id': this.transactionalId,
      'transaction.timeout.ms': TRANSACTION_CALL_TIMEOUT_MS,
      'message.timeout.ms': TRANSACTION_CALL_TIMEOUT_MS - 5_000,
    });
    try {
      await promised((cb) => p.initTransactions(TRANSACTION_CALL_TIMEOUT_MS, cb as never));
    } catch (e) {
      await this.disconnect();
      throw e;
    }
  }

  async transaction(): Promise<FencedTransaction> {
    const p = this.producer;
    if (!p) throw new Error(`the transactional producer ${this.transactionalId} is not connected`);
    await promised((cb) => p.beginTransaction(cb as never));
    return {
      send: (topic, records) => this.produce(topic, records),
      sendOffsets: (member: GroupMember, offsets) =>
        promised((cb) =>
          p.sendOffsetsToTransaction(
            offsets.map((o) => ({ topic: o.topic, partition: o.partition, offset: Number(o.offset) })),
            nativeConsumerOf(member) as never,
            TRANSACTION_CALL_TIMEOUT_MS,
            cb as never,
          ),
        ),
      commit: () => promised((cb) => p.commitTransaction(TRANSACTION_CALL_TIMEOUT_MS, cb as never)),
      abort: () => promised((cb) => p.abortTransaction(TRANSACTION_CALL_TIMEOUT_MS, cb as never)),
    };
  }
}
