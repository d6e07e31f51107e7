import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../backoff.js';
import type { LedgerConfig } from '../config.js';
import { isLedgerError, LedgerError } from '../errors.js';
import type { Logger } from '../logging.js';
import { connectWatched, isFencingError, isRetriableKafkaError, kafkaErrorName, routeLogs, withBrokerCode, type HandleErrors, type RdConfig } from './connection.js';
import { nativeConsumerOf } from './member.js';
import { confluent } from './native.js';
import type { Delivered, FencedTransaction, FencedWriter, FencedWriterBounds, GroupMember, OutRecord, RecordWriter } from './port.js';

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
/** librdkafka's _FATAL: the producer failed for good. */
const FATAL = -150;
/** Refusals of a producer id, which librdkafka makes fatal for an idempotent or transactional producer. */
const FATAL_REFUSALS = new Set(['CLUSTER_AUTHORIZATION_FAILED', 'TRANSACTIONAL_ID_AUTHORIZATION_FAILED']);

function promised<T = void>(fn: (cb: (err: unknown, value?: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((err, value) => (err ? reject(err) : resolve(value as T))));
}

/** A client call that has not answered for this long is logged, and again at each multiple of it. */
const SLOW_CALL_MS = 10_000;

/**
 * `call`, with a warning for every {@link SLOW_CALL_MS} it goes unanswered: a Kafka call that waits on an
 * outage says so, naming itself, instead of going quiet.
 */
function watched<T>(logger: Logger, what: string, context: object, call: Promise<T>): Promise<T> {
  const began = Date.now();
  const timer = setInterval(() => logger.warn({ ...context, call: what, waitingMs: Date.now() - began }, 'Kafka call still waiting'), SLOW_CALL_MS);
  timer.unref();
  return call.finally(() => clearInterval(timer));
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
    // A fatal error (a refused producer id, a fence) ends the producer for good. librdkafka then purges
    // only the records still in its own queue: one already handed to a broker thread waits out the
    // message timeout (30 s) and fails as timed out, its cause lost (seen in CI: an auditor's refused
    // write came back _MSG_TIMED_OUT after 30 s, not CLUSTER_AUTHORIZATION_FAILED). Every waiting
    // record fails now, with the cause.
    p.on('event.error', ((err: { code?: number }) => {
      // The binding reports a refused producer id with code -1 and the broker's words ("cluster
      // authorization failed"); librdkafka makes either refusal of a producer id fatal.
      const cause = withBrokerCode(err);
      if (err.code !== FATAL && !FATAL_REFUSALS.has(kafkaErrorName(cause) ?? '')) return;
      for (const [id, w] of this.waiting) {
        this.waiting.delete(id);
        w.reject(cause);
      }
    }) as never);
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
    for (const until = Date.now() + 1000; this.errors.last === undefined && Date.now() < until; ) await sleep(10);
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
    return watched(this.logger, 'produce', { topic, records: records.length, ...this.describe() }, Promise.all(out));
  }

  /** Names the writer in its slow-call warnings. */
  protected describe(): object {
    return {};
  }

  async disconnect(): Promise<void> {
    await this.detach()?.close();
  }

  /** Takes the producer out of use (later calls fail as not connected) and returns how to close it. */
  protected detach(): { close(): Promise<void> } | undefined {
    const p = this.producer;
    this.producer = undefined;
    if (!p) return undefined;
    return {
      close: async () => {
        await watched(this.logger, 'flush', this.describe(), promised((cb) => p.flush(5_000, cb as never))).catch(() => {});
        await watched(this.logger, 'disconnect', this.describe(), promised((cb) => p.disconnect(5_000, cb as never))).catch(() => {});
        for (const w of this.waiting.values()) w.reject(new Error('the producer was disconnected'));
        this.waiting.clear();
      },
    };
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

/** How long a transaction may stay open on the broker, and its records wait for a leader, through a broker outage. */
const TRANSACTION_CALL_TIMEOUT_MS = 60_000;
/**
 * The first bound of a fence (`initTransactions`) and a commit. Both wait on the transaction coordinator,
 * which a killed broker's partitions hand to a survivor within a leader election (a few seconds past the
 * broker session timeout, 9 s by default). A call that waits longer is usually waiting on librdkafka's own
 * coordinator lookup, which leaves some errors to a later broker state change (librdkafka issues 5456 and
 * 5511): in a chaos run, fences and commits on a handle waited until the killed broker came back, up to
 * 60 s, while the two brokers left served. A fresh handle looks the coordinator up from the live brokers:
 * so a call past this bound gives the writer up and its owner replaces it. Each consecutive miss of the
 * same transactional id doubles the next writer's bound, up to {@link TRANSACTION_CALL_TIMEOUT_MS}, so a
 * cluster that is only slow still gets the time it needs. 5 s, as an offset commit's: with 15 s, a broker
 * kill (`npm run chaos -- --faults brokers`) held a partition whose commit was in flight for 20 s (the
 * bound and its margin) before its owner went on with a fresh writer, while its leaders had moved at 8 s.
 */
const FIRST_CALL_BOUND_MS = 5_000;
/**
 * The first bound of a transaction's offset commit, doubled per consecutive miss of the same transactional
 * id like a fence's and a commit's (up to {@link TRANSACTION_CALL_TIMEOUT_MS}). librdkafka 2.15 does not time
 * this call out itself (librdkafka issues 5456 and 5511): when its lookup of the group's coordinator meets
 * an error it leaves to a broker state change (COORDINATOR_LOAD_IN_PROGRESS on a cluster just started, a
 * coordinator moved by a broker's controlled shutdown) and no broker changes state, the call waits until one
 * does. In a rolling restart (npm run chaos -- --faults rolling) every executor's offset commits hung like
 * that while a broker restarted, each until the bound (20 s then); a healthy one answers in milliseconds, and a
 * fresh handle asks the live brokers.
 */
const SEND_OFFSETS_FIRST_BOUND_MS = 5_000;
/** Past librdkafka's own timeout, the margin after which a transaction call that has not answered is given up. */
const CALL_MARGIN_MS = 5_000;

/** Consecutive fences or commits given up, per transactional id (forgotten on the id's next success). */
const misses = new Map<string, number>();

/** The bound of the next fence or commit of `transactionalId`: `first`, doubled per consecutive miss, capped. */
export function transactionCallBound(transactionalId: string, first = FIRST_CALL_BOUND_MS): number {
  return backoffMs((misses.get(transactionalId) ?? 0) + 1, first, Math.max(first, TRANSACTION_CALL_TIMEOUT_MS));
}

/** Handles left open because a transaction call on them never ended; see {@link NativeFencedWriter.disconnect}. */
const abandoned = new Set<{ close(): Promise<void> }>();

/** How many transactional producers this process holds open because a call on them has not ended. */
export function abandonedWriters(): number {
  return abandoned.size;
}

/** The code and details of the error a {@link NativeFencedWriter} that was given up fails with. */
export const WRITER_GIVEN_UP = 'writer-given-up';

/** True when `e` says a transactional writer was given up: its owner must replace it (a new one fences it). */
export function isWriterGivenUp(e: unknown): boolean {
  return isLedgerError(e, 'TIMEOUT') && e.details.reason === WRITER_GIVEN_UP;
}

/**
 * A transactional producer with a fixed id. `connect` runs InitProducerId for the id, which bumps its
 * epoch: an older producer of the id is fenced (its open transaction aborted, its later requests refused)
 * before `connect` returns.
 *
 * Every transaction call is bounded here, whatever librdkafka does with its own timeout: one that has not
 * answered by then fails with a TIMEOUT {@link LedgerError} ({@link isWriterGivenUp}) and the writer is
 * given up: every later call fails the same way at once. A fence or a commit that librdkafka itself timed
 * out (a retriable error) gives the writer up the same way, so the owner retries on a fresh handle rather
 * than on one whose coordinator lookup is stuck. Its transaction is left open; the next writer of the id
 * (created by the owner, which alone knows whether it still owns the id) fences it: the broker completes
 * a commit the coordinator had already taken, and aborts anything else.
 */
export class NativeFencedWriter extends NativeWriter implements FencedWriter {
  private givenUp: LedgerError | undefined;
  /** Settles when each native transaction call in flight ends (answered or failed), given up or not. */
  private readonly inFlight = new Set<Promise<void>>();
  private readonly sendOffsetsMs: number;
  private readonly fenceMs: number | undefined;
  private readonly commitMs: number | undefined;

  constructor(rd: RdConfig, logger: Logger, readonly transactionalId: string, config: LedgerConfig, bounds: FencedWriterBounds = {}) {
    super(rd, logger, config);
    this.sendOffsetsMs = bounds.sendOffsetsMs ?? SEND_OFFSETS_FIRST_BOUND_MS;
    this.fenceMs = bounds.fenceMs;
    this.commitMs = bounds.commitMs;
  }

  protected override describe(): object {
    return { transactionalId: this.transactionalId };
  }

  private giveUp(what: string, ms: number, cause?: unknown): LedgerError {
    if (this.givenUp) return this.givenUp;
    // A miss lengthens the next writer's bound. One of a writer already closed (its owner gave up the
    // take-over when another call failed first) says nothing of the next writer's chances: not counted.
    const attached = this.producer !== undefined;
    if (attached && (what === 'initTransactions' || what === 'commitTransaction' || what === 'sendOffsetsToTransaction')) misses.set(this.transactionalId, (misses.get(this.transactionalId) ?? 0) + 1);
    this.givenUp = new LedgerError(
      'TIMEOUT',
      `${what} of transactional id ${this.transactionalId} did not answer in ${ms} ms; the writer is given up, a new writer of the id must replace it`,
      { reason: WRITER_GIVEN_UP, transactionalId: this.transactionalId, call: what },
      ...(cause !== undefined ? [{ cause }] : []),
    );
    this.logger.error({ transactionalId: this.transactionalId, call: what, timeoutMs: ms, err: cause }, 'transactional writer given up: a Kafka call did not answer');
    return this.givenUp;
  }

  /**
   * `call`, watched and bounded by `ms`: past it the writer is given up. With `retriesOnFreshHandle`, a
   * retriable error of the call (librdkafka's own timeout) gives it up too.
   */
  private step<T>(what: string, ms: number, call: Promise<T>, retriesOnFreshHandle = false): Promise<T> {
    if (this.givenUp) return Promise.reject(this.givenUp);
    const settled = call.then(
      () => {},
      () => {},
    );
    this.inFlight.add(settled);
    void settled.then(() => this.inFlight.delete(settled));
    return new Promise<T>((resolve, reject) => {
      const began = Date.now();
      const timer = setTimeout(() => reject(this.giveUp(what, ms)), ms);
      watched(this.logger, what, { transactionalId: this.transactionalId }, call).then(
        (v) => {
          clearTimeout(timer);
          if (retriesOnFreshHandle) misses.delete(this.transactionalId);
          resolve(v);
        },
        (e: unknown) => {
          clearTimeout(timer);
          // librdkafka's own timeout (the bound less the margin) ended it: say how long it really waited.
          reject(retriesOnFreshHandle && isRetriableKafkaError(e) && !isFencingError(e) ? this.giveUp(what, Date.now() - began, e) : e);
        },
      );
    });
  }

  async connect(): Promise<void> {
    const p = await this.open({
      'transactional.id': this.transactionalId,
      'transaction.timeout.ms': TRANSACTION_CALL_TIMEOUT_MS,
      'message.timeout.ms': TRANSACTION_CALL_TIMEOUT_MS - 5_000,
    });
    const bound = transactionCallBound(this.transactionalId, this.fenceMs);
    try {
      await this.step('initTransactions', bound + CALL_MARGIN_MS, promised((cb) => p.initTransactions(bound, cb as never)), true);
    } catch (e) {
      await this.disconnect();
      throw e;
    }
  }

  async transaction(): Promise<FencedTransaction> {
    if (this.givenUp) throw this.givenUp;
    const p = this.producer;
    if (!p) throw new Error(`the transactional producer ${this.transactionalId} is not connected`);
    await this.step('beginTransaction', TRANSACTION_CALL_TIMEOUT_MS, promised((cb) => p.beginTransaction(cb as never)));
    const offsets = (member: GroupMember, list: ReadonlyArray<{ topic: string; partition: number; offset: string }>) => {
      const bound = transactionCallBound(this.transactionalId, this.sendOffsetsMs);
      return this.step(
        'sendOffsetsToTransaction',
        bound,
        promised((cb) =>
          p.sendOffsetsToTransaction(
            list.map((o) => ({ topic: o.topic, partition: o.partition, offset: Number(o.offset) })),
            nativeConsumerOf(member) as never,
            // Past our own bound: a call that has not answered by then is given up by the bound, never
            // ended by librdkafka's timeout first (a retriable error the caller would have to tell apart).
            bound + CALL_MARGIN_MS,
            cb as never,
          ),
        ),
      ).then(() => {
        misses.delete(this.transactionalId);
      });
    };
    const commit = () => {
      const bound = transactionCallBound(this.transactionalId, this.commitMs);
      return this.step('commitTransaction', bound + CALL_MARGIN_MS, promised((cb) => p.commitTransaction(bound, cb as never)), true);
    };
    return {
      send: (topic, records) => (this.givenUp ? Promise.reject(this.givenUp) : this.produce(topic, records)),
      sendOffsets: offsets,
      commit,
      // A given-up writer's transaction is aborted by the writer that fences it; a call now would only conflict with the one still waiting.
      abort: () => (this.givenUp ? Promise.resolve() : this.step('abortTransaction', TRANSACTION_CALL_TIMEOUT_MS + CALL_MARGIN_MS, promised((cb) => p.abortTransaction(TRANSACTION_CALL_TIMEOUT_MS, cb as never)))),
    };
  }

  /**
   * Closes the producer once no transaction call is in flight on it. librdkafka's destroy of a handle
   * waits for a call in flight, on a libuv thread: a given-up call that never answers would hold that
   * thread and another for the destroy, for good, and with a few of them the pool that every Kafka read
   * waits on is gone (a chaos run with brokers killed every few seconds wedged all three executors so).
   * So a handle with a call in flight is closed only when the call ends; one whose call never ends is
   * left open, held here so its finalizer never runs the destroy on the main thread, and counted
   * ({@link abandonedWriters}).
   */
  override async disconnect(): Promise<void> {
    if (this.inFlight.size === 0) return super.disconnect();
    const calls = [...this.inFlight];
    const handle = this.detach();
    if (!handle) return;
    abandoned.add(handle);
    this.logger.warn({ transactionalId: this.transactionalId, callsInFlight: calls.length }, 'a transactional writer with a Kafka call in flight is closed when the call ends (left open until then)');
    void Promise.all(calls).then(async () => {
      abandoned.delete(handle);
      await handle.close();
    });
  }
}
