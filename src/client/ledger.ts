import { randomBytes } from 'node:crypto';
import { parseErasureRecord, type ErasureRecord } from '../audit/erasure-record.js';
import { auditPlan, replayAll, replayPlan, verifyAll, verifyPlanInLog, type PlanAudit, type PlanReplay, type ReplayFailure } from '../audit/live.js';
import { LedgerLog } from '../audit/log.js';
import { asOfText, toAsOf, type AsOfInput } from '../audit/timeline.js';
import type { PlanVerification } from '../audit/verify.js';
import { keyringFor, type PlanKeyring } from '../crypto/index.js';
import { BlobReader, payloadLimitsFromEnv, placePayload, resolvePayloads, type PayloadLimits } from '../blobs/index.js';
import { codecFromConfig, type LedgerCodec } from '../codec/index.js';
import { loadConfig, topicNames, type LedgerConfig, type LedgerConfigInput } from '../config.js';
import { isLedgerError, LedgerError } from '../errors.js';
import {
  auditTopic,
  createKafka,
  ensurePlanTopics,
  kafkaErrorName,
  kafkaFailure,
  lastStableOffset,
  MAX_RECORD_BYTES,
  parseEventKey,
  partitionFor,
  readPlanRecords,
  type KafkaClient,
  type LedgerAdmin,
  type LogRecord,
  type OutRecord,
  type PartitionTail,
  type ReadStats,
  type RecordWriter,
} from '../kafka/index.js';
import { silentLogger, type Logger } from '../logging.js';
import { canonicalJson, evolveAll, FORK_LABEL, evolveInPlace, isValidId, type ItemSpec, type CommandPayloads, type CommandType, type PlanCommand, type PlanEvent, type PlanMode, type PlanState, type PlanStatus } from '../plan/index.js';
import { toItemSpec, type ItemInput } from '../plan-input.js';
import { traceHeaders } from '../trace-context.js';
import type { PlanPage } from '../projection/query.js';
import { retryDelayMs } from '../projection/poison.js';
import { assertCommandFits, illFormedField } from './command-size.js';
import { FollowedPlans } from './followed.js';
import { listPlansFromIndex, type PlanFilter } from './list-plans.js';
import { PlanIndex } from './plan-index.js';
import { planStartOffset, readPlanState, type PlanReads } from './reads.js';

export interface CreatePlanInput {
  goal: string;
  /** `propose`: nothing runs until an operator approves the digest. `execute`: runs at once. */
  mode: PlanMode;
  items?: ItemInput[];
  labels?: Record<string, string>;
  /** Default: a fresh unique id. */
  planId?: string;
}

/** What a command caused: the events the owning executor appended for it. */
export interface CommandOutcome {
  readonly commandId: string;
  readonly planId: string;
  readonly events: PlanEvent[];
}

export interface ForkOptions extends CommandOptions {
  /** The fork point: a seq of the source's log, or an item id. */
  at: number | string;
  /** New inputs for items that will run, by item id. */
  set?: Record<string, unknown>;
  /** The fork's id (default: a fresh one). */
  planId?: string;
  /** Default: the source's mode. */
  mode?: PlanMode;
}

export interface CommandOptions {
  /** Who issues the command (recorded as the events' actor). Default: the client id. */
  by?: string;
  /** How long to wait for the owning executor to decide (default 30 s). */
  timeoutMs?: number;
}

export interface EraseOptions {
  /** Why, recorded in the erasure record. Default "erasure requested". */
  reason?: string;
  /** Who asked for it, recorded in the erasure record. Default: the client id. */
  by?: string;
  /** Erase even while the plan is approved or running (its running tools' results are then dropped). */
  force?: boolean;
  /** How long to wait for the owning executor to decide (default 30 s). */
  timeoutMs?: number;
}

/** What an accepted erasure did: no events, the tombstones, and the record on `<prefix>.ledger-audit`. */
export interface EraseOutcome extends CommandOutcome {
  readonly erasure: ErasureRecord;
}

export interface LedgerEventRecord {
  readonly event: PlanEvent;
  readonly partition: number;
  readonly offset: string;
}

export interface AuditOptions {
  /** Stop the timeline at this point and fold the plan as it was there: a seq, an ISO-8601 time or a Date. */
  asOf?: AsOfInput;
}

export interface ReplayOptions {
  /** Rebuild up to this point of each plan: a seq, an ISO-8601 time or a Date. Default: all of it. */
  until?: AsOfInput;
}

/** Every plan of the ledger (the topic prefix), for `replay` and `verify`. */
export interface AllPlans {
  all: true;
}

export interface Ledger {
  readonly config: LedgerConfig;
  createPlan(input: CreatePlanInput, opts?: CommandOptions): Promise<CommandOutcome & { digest: string }>;
  addItems(planId: string, items: ItemInput[], opts?: CommandOptions): Promise<CommandOutcome>;
  propose(planId: string, opts?: CommandOptions): Promise<CommandOutcome & { digest: string }>;
  approve(planId: string, digest: string, opts?: CommandOptions & { note?: string }): Promise<CommandOutcome>;
  /** Rejects the proposed plan (the current digest unless `digest` names the one reviewed). */
  reject(planId: string, reason: string, opts?: CommandOptions & { digest?: string }): Promise<CommandOutcome>;
  cancel(planId: string, reason?: string, opts?: CommandOptions): Promise<CommandOutcome>;
  retryItem(planId: string, itemId: string, opts?: CommandOptions): Promise<CommandOutcome>;
  /**
   * Delivers signal `name` with `data` (any JSON value; it becomes the output of each item waiting for the
   * name) to a plan: its events are `ItemSignalled` + `ItemCompleted` per waiting item, the actor `by`.
   * Idempotent by `signalId` (default: a fresh id): a second delivery with the same id is `REJECTED` with
   * code `DUPLICATE_SIGNAL`; a signal no item waits for now is `REJECTED` with `NOT_WAITING`, an unknown plan
   * `PLAN_NOT_FOUND` — each recorded in the plan's chain as a `CommandRejected`, never dropped.
   *
   * @example await ledger.signal(planId, 'customer-reply', { address: '1 Main St' }, { signalId: 'webhook-8121' });
   */
  signal(planId: string, name: string, data: unknown, opts?: CommandOptions & { signalId?: string }): Promise<CommandOutcome>;
  /**
   * Creates a new plan from a point of another's history; the source is not touched. `at` is a seq of the
   * source's log (the fork starts from its state after that event) or an item id (the fork point is just
   * before the item's first attempt started; an item that never started: the source's head). The fork has
   * the source's items as of that point: those completed keep their recorded outputs (`ItemInherited`, byte
   * for byte, never run again), every other one is pending again; `set` replaces the input of items that
   * will run. Its first event names the origin, `PlanCreated.forkedFrom { planId, seq, chainHead }` (the
   * hash of the source's event at seq), so an auditor can check what it inherited. Mode and policy apply as
   * to any new plan (`mode` defaults to the source's). A bad `at` or `set` is a `VALIDATION` error naming
   * the field, with nothing sent; an unknown source `NOT_FOUND`.
   *
   * @example const { planId } = await ledger.fork(failedPlan, { at: 'step-39', set: { 'step-39': { retries: 5 } } });
   */
  fork(planId: string, opts: ForkOptions): Promise<CommandOutcome & { digest: string; forkedFrom: { planId: string; seq: number; chainHead: string } }>;
  /**
   * Erases a plan through its owning executor (the only writer of its partition): in one transaction it
   * tombstones every event key `planId:1..seq` and the plan's snapshot and archive record, and records a
   * `PlanErased` entry on `<prefix>.ledger-audit`; then it forgets the plan (a later command for the id
   * is PLAN_NOT_FOUND, except CreatePlan). Compaction then removes the records. Rejected (`REJECTED` with code
   * `INVALID_STATE`) while the plan is approved or running unless `force`; `PLAN_NOT_FOUND` for an
   * unknown or already erased plan.
   */
  erase(planId: string, opts?: EraseOptions): Promise<EraseOutcome>;
  /**
   * The plan as its events say now; undefined if unknown. Read from its latest snapshot (live or archived,
   * located through the client's index of the projector's topics) plus its events after the partition's
   * watermark: the cost follows the tail, not the history. Where no projector has written a watermark,
   * the partition is read from its start (no projector needed, slower). Payloads stored by reference are
   * read back whole (`payloads: 'reference'` keeps the `{"$blob":…}` references the log and digests hold);
   * one that cannot be read (erased, forged) stays a reference, and `verify` names it.
   */
  getPlan(planId: string, opts?: { payloads?: 'resolve' | 'reference' }): Promise<PlanState | undefined>;
  /**
   * The payload a stored payload text stands for: the text itself when inline, the content of a payload
   * stored by reference (`{"$blob":…}`, for inputs and outputs above the inline threshold), read from the
   * blobs topic and checked against its sha256 (INTEGRITY when it does not match, NOT_FOUND once erased).
   *
   * @example JSON.parse(await ledger.readPayload(planId, plan.items.report.outputJson!))
   */
  readPayload(planId: string, json: string): Promise<string>;
  /**
   * Every event of a plan in order, with where it sits in the log: read from the plan's first event (found
   * by the record timestamp of its creation, or the watermark for a plan created after it) to the end.
   */
  planEvents(planId: string): Promise<LedgerEventRecord[]>;
  /**
   * One page of plans, newest first, rebuilt from the log (no projector needed) with the filters, order
   * and cursor of the projector's `GET /api/plans`; `stalled` matches plans with a record that could not
   * be decoded or applied. Pages follow a keyset cursor: a plan added while paging shifts no page. A bad
   * filter is a `VALIDATION` error naming the field.
   *
   * @example
   * let page = await ledger.listPlans({ status: ['running', 'proposed'], label: 'team:payments', limit: 20 });
   * for (;;) {
   *   for (const p of page.plans) console.log(p.planId, p.status, `${p.progress.completed}/${p.progress.total}`);
   *   if (!page.nextCursor) break;
   *   page = await ledger.listPlans({ status: ['running', 'proposed'], label: 'team:payments', limit: 20, cursor: page.nextCursor });
   * }
   */
  listPlans(filter?: PlanFilter): Promise<PlanPage>;
  /**
   * The audit timeline of a plan, read from the log: one row per event with its position, actor,
   * causation, item and attempt, the attempt's idempotency key, the outcome and the time since the
   * attempt's intent (after a crash that includes the take-over) — what `plan-ledger audit` prints. With
   * `asOf` the timeline stops there and `state` is the plan as it was then (time travel); without, the
   * plan now. `NOT_FOUND` for an unknown or erased plan.
   *
   * @example
   * const { rows, state } = await ledger.audit(planId, { asOf: 7 }); // or an ISO time, or a Date
   * for (const r of rows) if (r.type === 'ResultCommitted') console.log(r.itemId, r.attempt, r.idempotencyKey, r.outcome);
   * console.log(state.state?.status, state.stateDigest); // the plan after seq 7
   */
  audit(planId: string, opts?: AuditOptions): Promise<PlanAudit>;
  /**
   * Rebuilds a plan from its events alone with the domain's `evolve` (what `plan-ledger replay` prints):
   * its state, digest and `stateDigest`, up to `until` when given. `NOT_FOUND` for an unknown plan or
   * one that did not exist yet at `until`; `INTEGRITY` when its events do not fold (`verify` names the
   * broken one). With `{ all: true }`, every plan of the prefix that existed at `until`, in log order; a
   * plan that does not fold is an entry with `ok: false` and the reason, not a throw.
   *
   * @example
   * const r = await ledger.replay(planId);
   * // r.stateDigest === stateDigest((await ledger.getPlan(planId))!)
   * const before = await ledger.replay(planId, { until: '2026-01-31T12:00:00Z' });
   * const everything = await ledger.replay({ all: true });
   * const broken = everything.filter((p) => !p.ok);
   */
  replay(planId: string, opts?: ReplayOptions): Promise<PlanReplay>;
  replay(target: AllPlans, opts?: ReplayOptions): Promise<Array<PlanReplay | ReplayFailure>>;
  /**
   * Verifies a plan in the live ledger, as `plan-ledger verify` does: seq contiguous from 1, hash chain
   * intact, independent rebuilds (a straight fold, an Avro round trip, a snapshot hand-over) agree on
   * `stateDigest`, and every snapshot on the snapshots topic agrees with a replay up to its seq. A broken
   * plan is a result with `ok: false` and `firstBroken` naming the first broken event, not a throw;
   * `NOT_FOUND` for an unknown plan. With `{ all: true }`, every plan of the prefix.
   *
   * @example
   * const v = await ledger.verify(planId);
   * if (!v.ok) console.error(`seq ${v.firstBroken?.seq} (${v.firstBroken?.check}): ${v.firstBroken?.reason}`);
   * const failing = (await ledger.verify({ all: true })).filter((p) => !p.ok);
   */
  verify(planId: string): Promise<PlanVerification>;
  verify(target: AllPlans): Promise<PlanVerification[]>;
  /**
   * Resolves with the plan's state once it reaches `status` (or satisfies the predicate): the plan is read
   * once as {@link getPlan} does, then followed on the client's live tail of the events topic (listening
   * starts before the read; events seen by both are applied once, by seq). A plan this client created is
   * not read at all: the client has followed it on the tail since before its first event (the first
   * `waitFor` after `createPlan` takes that state over). Payloads stored by reference are read back whole
   * in the state it returns.
   */
  waitFor(planId: string, status: PlanStatus | ((s: PlanState) => boolean), opts?: { timeoutMs?: number }): Promise<PlanState>;
  close(): Promise<void>;
}

export interface ConnectOptions {
  logger?: Logger;
  /**
   * The master key (32 bytes) that wraps each plan's data key; default PLAN_LEDGER_MASTER_KEY_FILE /
   * PLAN_LEDGER_MASTER_KEY. With one, a new plan gets a random data key and every item input is encrypted
   * before it is sent (the commands topic and the DLQ hold ciphertext only); reads decrypt.
   */
  masterKey?: Buffer;
  /** Counts what the client's reads fetch from the log (records per topic), e.g. to watch read costs. */
  readStats?: ReadStats;
}

/** Where a record of the events tail sits. */
interface TailPosition {
  readonly partition: number;
  readonly offset: string;
}

type Listener = (e: PlanEvent, at: TailPosition) => void;
/** Called with the key of a tombstone (`planId:seq`) of a plan. */
type TombstoneListener = (key: string) => void;

/**
 * Connects to the ledger. With no argument the configuration comes from PLAN_LEDGER_* variables and
 * otherwise from the running local stack (`plan-ledger stack up`).
 *
 * @example
 * const ledger = await connectLedger();
 * const { planId, digest } = await ledger.createPlan({ goal: 'refund order 42', mode: 'propose', items });
 * await ledger.propose(planId);
 * await ledger.approve(planId, digest, { by: 'alice' });
 * await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
 */
export async function connectLedger(input?: LedgerConfigInput, opts: ConnectOptions = {}): Promise<Ledger> {
  const config = loadConfig(input);
  const logger = (opts.logger ?? silentLogger()).child({ component: 'client' });
  const kafka = createKafka(config, logger, 'client');
  const admin = kafka.admin();
  await admin.connect().catch(async (e: unknown) => {
    await kafka.close();
    if (isLedgerError(e)) throw e; // refused credentials: already one line naming mechanism and user
    throw new LedgerError('UNAVAILABLE', `cannot reach Kafka at ${config.brokers.join(',')}: ${(e as Error).message}`, {}, { cause: e });
  });
  let client: LedgerClient | undefined;
  try {
    // Independent round trips (the brokers' topics, the registry's schemas), taken at once.
    const [, codec] = await Promise.all([ensurePlanTopics(admin, config), codecFromConfig(config, { logger })]);
    const keys = keyringFor({ kafka, config, ...(opts.masterKey ? { master: opts.masterKey } : {}) });
    client = new LedgerClient(kafka, admin, codec, config, logger, opts.readStats, keys);
    await client.start();
    return kafkaErrorsAsLedgerErrors(client);
  } catch (e) {
    if (client) await client.close();
    else {
      await admin.disconnect().catch(() => {});
      await kafka.close();
    }
    throw e;
  }
}

/**
 * The client as its callers see it: an error of the Kafka client that a method meets reaches the caller as
 * a LedgerError (UNAVAILABLE when the cluster did not serve in time, FORBIDDEN for ACLs, INTERNAL with the
 * Kafka error's name otherwise), never as the client's own error. Other errors pass as they are.
 */
function kafkaErrorsAsLedgerErrors(client: LedgerClient): Ledger {
  const map = (e: unknown, method: string): unknown => {
    if (isLedgerError(e) || kafkaErrorName(e) === undefined) return e;
    const mapped = kafkaFailure(e, `ledger.${method}`);
    return isLedgerError(mapped) ? mapped : new LedgerError('INTERNAL', `ledger.${method}: Kafka error ${kafkaErrorName(e)}: ${(e as Error).message}`, { kafka: kafkaErrorName(e) }, { cause: e });
  };
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        try {
          const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
          return out instanceof Promise ? out.catch((e: unknown) => Promise.reject(map(e, prop))) : out;
        } catch (e) {
          throw map(e, prop);
        }
      };
    },
  });
}

class LedgerClient implements Ledger {
  private writer!: RecordWriter;
  private tail!: PartitionTail;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly tombstoneListeners = new Map<string, Set<TombstoneListener>>();
  /** Plans this client created, followed on the tail from their first event (see {@link waitFor}). */
  private readonly followed = new FollowedPlans((planId, l) => this.listen(planId, (e) => l(e)));
  private readonly topics;
  private readonly clientId = `client-${randomBytes(4).toString('hex')}`;
  /** Read access to the log over this client's connections, for audit, replay and verify. */
  private readonly log: LedgerLog;
  private readonly payloadLimits: PayloadLimits = payloadLimitsFromEnv();
  private readonly blobs: BlobReader;
  /** Where each plan's latest snapshot is, and each partition's watermark (followed live, started on first read). */
  private readonly index: PlanIndex;
  private readonly reads: PlanReads;
  /** Next offset of the events tail per partition: every record below it has reached the listeners. */
  private readonly tailNext = new Map<number, bigint>();
  private tailWaiters: Array<{ partition: number; offset: bigint; resolve: () => void }> = [];

  constructor(
    private readonly kafka: KafkaClient,
    private readonly admin: LedgerAdmin,
    private readonly codec: LedgerCodec,
    readonly config: LedgerConfig,
    private readonly logger: Logger,
    private readonly stats?: ReadStats,
    /** The plans' data keys when a master key is configured. */
    private readonly keys?: PlanKeyring,
  ) {
    this.topics = topicNames(config.topicPrefix);
    this.index = new PlanIndex(kafka, admin, codec, config, logger, stats);
    this.reads = { kafka, admin, codec, config, index: this.index, ...(stats ? { stats } : {}) };
    this.log = LedgerLog.over({ config, kafka, admin, codec, planStart: (planId) => planStartOffset(this.reads, planId), ...(stats ? { stats } : {}) });
    this.blobs = new BlobReader({ kafka, admin, topic: this.topics.blobs, partitions: config.partitions });
  }

  /**
   * Item inputs above the inline threshold go by reference: their chunks are written to the plan's
   * partition of the blobs topic first, and the command carries the reference. Every input is checked
   * against the ceiling before anything is written, so a refused plan leaves nothing behind.
   */
  private async placePayloads(planId: string, plain: ItemSpec[], create = false): Promise<ItemSpec[]> {
    const items = await this.sealInputs(planId, plain, create);
    const partition = partitionFor(planId, this.config.partitions);
    const at = Date.now();
    const placed = items.map((it, i) => placePayload(planId, it.inputJson, `items[${i}].input`, this.payloadLimits, at, partition));
    const messages = placed.flatMap((p) => p.blob?.messages ?? []);
    if (messages.length === 0) return items;
    // One chunk per produce request (a chunk is half the default record limit); acknowledged by all
    // in-sync replicas before the command that refers to it is sent.
    for (const m of messages) await this.write(this.topics.blobs, m, `a blob chunk of plan ${planId}`);
    return items.map((it, i) => ({ ...it, inputJson: placed[i]!.json }));
  }

  /**
   * With a master key, item inputs are sealed with the plan's data key before anything is sent. A new
   * plan gets its key first: the plan-keys record is acknowledged by all in-sync replicas before the
   * command that needs it. A plan without a key (created without a master key) stays plaintext.
   */
  private async sealInputs(planId: string, items: ItemSpec[], create: boolean): Promise<ItemSpec[]> {
    if (this.keys === undefined || items.length === 0) return items;
    let seal: ((json: string) => string) | undefined;
    if (create) {
      const { key, message } = await this.keys.create(planId);
      if (message) await this.write(this.keys.topic, message, `the data key of plan ${planId}`);
      this.keys.remember(planId, key);
      seal = await this.keys.sealer(planId);
    } else {
      seal = await this.keys.sealer(planId);
    }
    return seal ? items.map((it) => ({ ...it, inputJson: seal(it.inputJson) })) : items;
  }

  async readPayload(planId: string, json: string): Promise<string> {
    const text = await this.blobs.resolve(planId, json);
    return this.keys ? this.keys.open(planId, text) : text;
  }

  /** The state with its payloads read back whole: references resolved, and decrypted with the plan's key (a destroyed key reads "[erased]"). */
  private async readable(state: PlanState): Promise<PlanState> {
    return resolvePayloads(this.blobs, state, this.keys ? await this.keys.opener(state.planId) : undefined);
  }

  async start(): Promise<void> {
    this.writer = this.kafka.writer();
    const connecting = this.writer.connect();
    try {
      // A tail of the events topic, positioned at the end as of now, so every outcome of a command sent
      // after connect is seen; set up while the writer connects.
      const ends = await this.admin.fetchTopicOffsets(this.topics.events);
      for (const o of ends) this.tailNext.set(o.partition, BigInt(o.high));
      this.tail = await this.kafka.tail({
        topic: this.topics.events,
        onRecords: (partition, records) => this.onTail(partition, records),
        // Past a batch (transaction markers included), every record below it reached the listeners.
        onPosition: (partition, next) => this.tailAdvanced(partition, next),
      });
      await Promise.all(ends.map((o) => this.tail.add(o.partition, o.high)));
    } catch (e) {
      await connecting.catch(() => {}); // so that close() finds the writer and closes it
      throw e;
    }
    await connecting;
  }

  private async onTail(partition: number, records: LogRecord[]): Promise<void> {
    const counts = this.stats ? (this.stats.tail ??= { received: 0, decoded: 0 }) : undefined;
    if (counts) counts.received += records.length;
    for (const m of records) {
      const planId = parseEventKey(m.key)?.planId;
      if (planId === undefined) continue;
      const key = m.key!.toString();
      if (!m.value) {
        for (const l of [...(this.tombstoneListeners.get(planId) ?? [])]) l(key);
        continue;
      }
      const ls = this.listeners.get(planId);
      if (!ls?.size) continue;
      try {
        if (counts) counts.decoded += 1;
        const e = await this.codec.decodeEvent(m.value);
        const at = { partition, offset: m.offset };
        for (const l of [...ls]) l(e, at);
      } catch (err) {
        this.logger.warn({ err, offset: m.offset }, 'undecodable event on the tail');
      }
    }
  }

  private tailAdvanced(partition: number, next: bigint): void {
    if (next <= (this.tailNext.get(partition) ?? -1n)) return;
    this.tailNext.set(partition, next);
    this.tailWaiters = this.tailWaiters.filter((w) => {
      if (w.partition !== partition || next < w.offset) return true;
      w.resolve();
      return false;
    });
  }

  /** Resolves once the events tail has handed every record below `offset` of `partition` to the listeners. */
  private tailReached(partition: number, offset: bigint): Promise<void> {
    if ((this.tailNext.get(partition) ?? 0n) >= offset) return Promise.resolve();
    return new Promise((resolve) => this.tailWaiters.push({ partition, offset, resolve }));
  }

  private listen(planId: string, l: Listener): () => void {
    let set = this.listeners.get(planId);
    if (!set) this.listeners.set(planId, (set = new Set()));
    set.add(l);
    return () => {
      set.delete(l);
      if (!set.size) this.listeners.delete(planId);
    };
  }

  private listenTombstones(planId: string, l: TombstoneListener): () => void {
    let set = this.tombstoneListeners.get(planId);
    if (!set) this.tombstoneListeners.set(planId, (set = new Set()));
    set.add(l);
    return () => {
      set.delete(l);
      if (!set.size) this.tombstoneListeners.delete(planId);
    };
  }

  private command<K extends CommandType>(planId: string, type: K, data: CommandPayloads[K], by: string | undefined): PlanCommand {
    const commandId = `${type}-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
    return { type, planId, commandId, issuedAt: Date.now(), actor: by ?? this.clientId, correlationId: commandId, data } as PlanCommand;
  }

  /** Sends a command; inside an active span, its `traceparent` goes along as a record header (the executor's span continues it). */
  private async produce(command: PlanCommand): Promise<void> {
    const value = this.codec.encodeCommand(command);
    assertCommandFits(command, command.planId, value, MAX_RECORD_BYTES);
    await this.writer.send(this.topics.commands, [{ key: command.planId, value, partition: partitionFor(command.planId, this.config.partitions), ...traceHeaders() }]);
  }

  /** Writes one record outside a command (a blob chunk, a plan key); a Kafka error reaches the caller as a LedgerError. */
  private async write(topic: string, record: OutRecord, what: string): Promise<void> {
    await this.writer.send(topic, [record]).catch((e) => {
      throw kafkaFailure(e, `writing ${what}`);
    });
  }

  /**
   * Writes a command, and writes it again while Kafka cannot take it and the caller's time lasts. A
   * broker killed mid-send makes librdkafka fail the record once its `message.timeout.ms` (30 s) is up,
   * though the cluster may already serve again. A second copy under the same commandId changes nothing:
   * the owner decides a commandId once (a copy it has decided is a no-op, see `decide`). The error that
   * reaches the caller is a LedgerError: UNAVAILABLE when the deadline came first, FORBIDDEN for ACLs.
   */
  private async produceBy(command: PlanCommand, deadline: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.produce(command);
        return;
      } catch (e) {
        const failure = kafkaFailure(e, `writing ${command.type} for plan ${command.planId}`);
        const wait = retryDelayMs(attempt, 100, 2_000);
        if (!isLedgerError(failure, 'UNAVAILABLE') || Date.now() + wait >= deadline) throw failure;
        this.logger.warn({ planId: command.planId, commandId: command.commandId, attempt, err: (e as Error).message }, 'Kafka did not take the command; writing it again under the same commandId');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  /**
   * The events partition's last stable offset, asked again (with a backoff) while Kafka cannot answer and
   * the caller's deadline lasts: a leader moving after a broker died fails the first ask, not the next.
   */
  private async stableOffsetBy(partition: number, deadline: number): Promise<bigint> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await lastStableOffset(this.admin, this.topics.events, partition);
      } catch (e) {
        const failure = kafkaFailure(e, `reading the end of the events partition ${partition}`);
        const wait = retryDelayMs(attempt, 100, 2_000);
        if (!isLedgerError(failure, 'UNAVAILABLE') || Date.now() + wait >= deadline) throw failure;
        this.logger.warn({ partition, attempt, err: (e as Error).message }, 'reading the end of an events partition failed; asking again');
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  private unavailable(type: string, planId: string, commandId: string, timeoutMs: number): LedgerError {
    return new LedgerError('UNAVAILABLE', `Kafka did not take ${type} for plan ${planId} within ${timeoutMs} ms (brokers ${this.config.brokers.join(',')})`, { commandId });
  }

  private timeout(type: string, planId: string, commandId: string, timeoutMs: number): LedgerError {
    return new LedgerError('TIMEOUT', `no executor decided ${type} for plan ${planId} within ${timeoutMs} ms — is an executor running on prefix "${this.config.topicPrefix}"?`, { commandId });
  }

  /**
   * Sends a command and returns exactly the events its owner's decision appended: every event caused by
   * the command carries `causationId = commandId`, and a decision's events are appended in one
   * transaction. The tail reads `read_committed`, so when the first of them arrives the whole transaction
   * has committed and sits below the partition's last stable offset (LSO) as of then; once the tail has
   * handed over every record below that LSO, the decision is complete. No quiet window.
   */
  private async send<K extends CommandType>(planId: string, type: K, data: CommandPayloads[K], opts: CommandOptions = {}): Promise<CommandOutcome> {
    checkPlanId(planId);
    const illFormed = illFormedField(data);
    if (illFormed !== undefined) throw new LedgerError('VALIDATION', `${illFormed}: must be well-formed Unicode (a lone surrogate has no UTF-8 form)`, { field: illFormed });
    const command = this.command(planId, type, data, opts.by);
    const { commandId } = command;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    let written = false;
    const events = new Map<number, PlanEvent>();
    let first!: (at: TailPosition) => void;
    const seen = new Promise<TailPosition>((r) => (first = r));
    const stop = this.listen(planId, (e, at) => {
      if (e.causationId !== commandId) return;
      if (!events.size) first(at);
      events.set(e.seq, e);
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      const decided = (async () => {
        await this.produceBy(command, deadline);
        written = true;
        const at = await seen;
        try {
          await this.tailReached(at.partition, await this.stableOffsetBy(at.partition, deadline));
        } catch (e) {
          // Decided all the same (see the timer below): never reported as failed.
          this.logger.warn({ planId, commandId, type, err: (e as Error).message }, 'command decided; the end of its events partition could not be read: returning the events seen');
        }
      })();
      decided.catch(() => {}); // observed by the race below; after a timeout nobody waits for it any more
      await Promise.race([
        decided,
        new Promise<void>((resolve, reject) => {
          timer = setTimeout(() => {
            // The owner decided (its events are committed and the tail handed some over), but the end of
            // the partition could not be read in time (a broker moving leadership): the command did not
            // fail, and saying so would make a caller that retries create a second plan. Its outcome is
            // the decision's events the tail handed over; they come in one transaction, so one fetch
            // almost always carries them all.
            if (events.size) {
              this.logger.warn({ planId, commandId, type, timeoutMs }, 'command decided; the end of its events partition could not be read in time: returning the events seen');
              resolve();
            } else reject(written ? this.timeout(type, planId, commandId, timeoutMs) : this.unavailable(type, planId, commandId, timeoutMs));
          }, timeoutMs);
        }),
      ]);
    } finally {
      stop();
      clearTimeout(timer);
    }
    const outcome = [...events.values()].sort((a, b) => a.seq - b.seq);
    const rejected = outcome.find((e) => e.type === 'CommandRejected');
    if (rejected && rejected.type === 'CommandRejected') {
      const r = rejected.data;
      throw new LedgerError('REJECTED', `${type} rejected: ${r.code}: ${r.message}`, { rejection: r.code, field: r.field, commandId, planId });
    }
    return { commandId, planId, events: outcome };
  }

  async createPlan(input: CreatePlanInput, opts?: CommandOptions) {
    const planId = input.planId ?? `plan-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    checkPlanId(planId);
    const items = await this.placePayloads(planId, itemList(input.items).map((it, i) => toItemSpec(it, `items[${i}]`)), true);
    this.followed.begin(planId);
    try {
      const out = await this.send(planId, 'CreatePlan', { goal: input.goal, mode: input.mode, labels: input.labels ?? {}, parent: null, items }, opts);
      return { ...out, digest: digestAfter(out.events) ?? '' };
    } catch (e) {
      this.followed.drop(planId);
      throw e;
    }
  }

  async addItems(planId: string, items: ItemInput[], opts?: CommandOptions) {
    checkPlanId(planId);
    return this.send(planId, 'AddItems', { items: await this.placePayloads(planId, itemList(items).map((it, i) => toItemSpec(it, `items[${i}]`))) }, opts);
  }

  async propose(planId: string, opts?: CommandOptions) {
    const out = await this.send(planId, 'ProposePlan', { comment: null }, opts);
    const proposed = out.events.find((e) => e.type === 'PlanProposed');
    return { ...out, digest: proposed?.type === 'PlanProposed' ? proposed.data.digest : '' };
  }

  approve(planId: string, digest: string, opts: CommandOptions & { note?: string } = {}) {
    return this.send(planId, 'ApprovePlan', { digest, by: opts.by ?? this.clientId, comment: opts.note ?? null }, opts);
  }

  async reject(planId: string, reason: string, opts: CommandOptions & { digest?: string } = {}) {
    const digest = opts.digest ?? (await this.getPlan(planId))?.digest ?? '';
    return this.send(planId, 'RejectPlan', { digest, reason, by: opts.by ?? this.clientId }, opts);
  }

  cancel(planId: string, reason = 'cancelled by operator', opts?: CommandOptions) {
    return this.send(planId, 'CancelPlan', { reason }, opts);
  }

  retryItem(planId: string, itemId: string, opts?: CommandOptions) {
    return this.send(planId, 'RetryItem', { itemId }, opts);
  }

  async fork(source: string, opts: ForkOptions) {
    checkPlanId(source);
    const bad = (message: string, field = 'at') => new LedgerError('VALIDATION', message, { field, planId: source });
    const at = opts.at;
    let seqAt: number | undefined;
    let itemAt: string | undefined;
    if (typeof at === 'number') {
      if (!Number.isSafeInteger(at) || at < 1) throw bad(`at must be a seq (an integer >= 1) or an item id, got ${String(at)}`);
      seqAt = at;
    } else if (typeof at === 'string' && /^[0-9]+$/.test(at)) {
      seqAt = Number(at);
      if (!Number.isSafeInteger(seqAt) || seqAt < 1) throw bad(`at must be a seq (an integer >= 1) or an item id, got "${at.slice(0, 64)}"`);
    } else if (typeof at === 'string' && isValidId(at)) {
      itemAt = at;
    } else {
      throw bad(`at must be a seq (an integer >= 1) or an item id (1..128 chars of [A-Za-z0-9._:-]), got ${JSON.stringify(String(at).slice(0, 64))}`);
    }
    const events = (await this.planEvents(source)).map((r) => r.event);
    const head = evolveAll(undefined, events);
    if (head === undefined || head.status === 'none') throw new LedgerError('NOT_FOUND', `plan ${source} not found on prefix "${this.config.topicPrefix}"`, { planId: source });
    if (itemAt !== undefined) {
      if (!Object.prototype.hasOwnProperty.call(head.items, itemAt)) throw bad(`plan ${source} has no item ${itemAt}`);
      const started = events.find((e) => (e.type === 'IntentRecorded' || e.type === 'WaitStarted') && e.data.itemId === itemAt);
      seqAt = started === undefined ? events.length : started.seq - 1;
    }
    const seq = seqAt!;
    if (seq > events.length) throw bad(`plan ${source} has ${events.length} events; at ${seq} is past its head`);
    const state = evolveAll(undefined, events.slice(0, seq));
    if (state === undefined || state.status === 'none') throw bad(`plan ${source} did not exist yet at seq ${seq}`);
    const set = opts.set ?? {};
    for (const id of Object.keys(set)) {
      const it = Object.prototype.hasOwnProperty.call(state.items, id) ? state.items[id] : undefined;
      if (it === undefined) throw bad(`set: the fork has no item ${id} (plan ${source} as of seq ${seq})`, `set.${id}`);
      if (it.status === 'completed') throw bad(`set: item ${id} finished before the fork point; its output is inherited, not run again`, `set.${id}`);
    }
    const inherited: Array<{ itemId: string; outputJson: string | null }> = [];
    const specs: ItemSpec[] = [];
    for (const id of state.itemOrder) {
      const it = state.items[id]!;
      if (it.status === 'completed') {
        // Byte for byte: an output the source stored by reference or sealed with its key is not the fork's to read.
        if (it.outputJson !== null && (await this.readPayload(source, it.outputJson)) !== it.outputJson) {
          throw bad(`item ${id}'s output is stored by reference or encrypted in plan ${source}; forks of such outputs are not supported`);
        }
        inherited.push({ itemId: id, outputJson: it.outputJson });
      }
      let inputJson: string;
      if (Object.prototype.hasOwnProperty.call(set, id)) {
        try {
          inputJson = canonicalJson(set[id] === undefined ? {} : set[id]);
        } catch (e) {
          throw bad(`set.${id}: ${(e as Error).message}`, `set.${id}`);
        }
      } else {
        inputJson = await this.readPayload(source, it.inputJson);
      }
      specs.push({
        id: it.id,
        title: it.title,
        why: it.why,
        dependsOn: it.dependsOn,
        tool: it.tool,
        inputJson,
        retry: it.retry,
        ...(it.secret != null ? { secret: it.secret } : {}),
        ...(it.wait != null ? { wait: it.wait } : {}),
      });
    }
    const chainHead = events[seq - 1]!.hash;
    const forkedFrom = { planId: source, seq, chainHead };
    const planId = opts.planId ?? `fork-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    checkPlanId(planId);
    const items = await this.placePayloads(planId, specs, true);
    this.followed.begin(planId);
    try {
      const out = await this.send(planId, 'CreatePlan', { goal: state.goal, mode: opts.mode ?? state.mode ?? 'execute', labels: { ...state.labels, [FORK_LABEL]: source }, parent: null, items, forkedFrom, inherited }, opts);
      return { ...out, digest: digestAfter(out.events) ?? '', forkedFrom };
    } catch (e) {
      this.followed.drop(planId);
      throw e;
    }
  }

  signal(planId: string, name: string, data: unknown, opts: CommandOptions & { signalId?: string } = {}) {
    let dataJson: string;
    try {
      dataJson = canonicalJson(data === undefined ? null : data);
    } catch (e) {
      throw new LedgerError('VALIDATION', `signal data: ${(e as Error).message}`, { field: 'data' });
    }
    const signalId = opts.signalId ?? `signal-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
    return this.send(planId, 'SignalItem', { signal: name, signalId, dataJson }, opts);
  }

  async erase(planId: string, opts: EraseOptions = {}): Promise<EraseOutcome> {
    const by = opts.by ?? this.clientId;
    this.blobs.forget(planId);
    const command = this.command(planId, 'ErasePlan', { reason: opts.reason ?? 'erasure requested', by, force: opts.force ?? false }, by);
    const { commandId } = command;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    // The decision comes back as one of: our CommandRejected on the events tail, or the tombstones of
    // the plan's keys (the whole erasure is one transaction, so the first tombstone means all of it
    // committed, the ledger-audit record included).
    const signals: Array<{ kind: 'rejected'; event: PlanEvent } | { kind: 'tombstone' }> = [];
    let wake: (() => void) | undefined;
    const push = (s: (typeof signals)[number]) => {
      signals.push(s);
      wake?.();
    };
    const stopEvents = this.listen(planId, (e) => {
      if (e.causationId === commandId && e.type === 'CommandRejected') push({ kind: 'rejected', event: e });
    });
    const stopTombstones = this.listenTombstones(planId, () => push({ kind: 'tombstone' }));
    let auditFrom: Map<number, string> | undefined;
    try {
      await this.produceBy(command, deadline);
      for (;;) {
        const signal = signals.shift();
        if (signal === undefined) {
          const left = deadline - Date.now();
          if (left <= 0) throw this.timeout('ErasePlan', planId, commandId, timeoutMs);
          await new Promise<void>((r) => {
            const t = setTimeout(r, left);
            wake = () => {
              clearTimeout(t);
              r();
            };
          });
          wake = undefined;
          continue;
        }
        if (signal.kind === 'rejected') {
          const r = signal.event.type === 'CommandRejected' ? signal.event.data : undefined;
          throw new LedgerError('REJECTED', `ErasePlan rejected: ${r?.code}: ${r?.message}`, { rejection: r?.code, field: r?.field, commandId, planId });
        }
        // Tombstones: ours, or another erasure's (then ours is rejected PLAN_NOT_FOUND next).
        signals.splice(0, signals.length, ...signals.filter((s) => s.kind !== 'tombstone'));
        const found = await this.findErasure(commandId, auditFrom, (next) => (auditFrom = next));
        if (found) return { commandId, planId, events: [], erasure: found };
      }
    } finally {
      stopEvents();
      stopTombstones();
    }
  }

  /**
   * The erasure record a command caused, from `<prefix>.ledger-audit`. It commits with the tombstones,
   * but its partition's transaction marker may trail theirs by a moment, so a miss is re-read briefly.
   */
  private async findErasure(commandId: string, from: Map<number, string> | undefined, advance: (next: Map<number, string>) => void): Promise<ErasureRecord | undefined> {
    const topic = auditTopic(this.config.topicPrefix);
    for (let attempt = 0; attempt < 20; attempt++) {
      let found: ErasureRecord | undefined;
      const next = await this.kafka.readToEnd({
        topic,
        ...(from ? { from } : {}),
        onRecords: (records) => {
          for (const r of records) {
            const rec = parseErasureRecord(r.value);
            if (rec?.commandId === commandId) found = rec;
          }
        },
      });
      from = next;
      advance(next);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 100));
    }
    return undefined;
  }

  async planEvents(planId: string): Promise<LedgerEventRecord[]> {
    const partition = partitionFor(planId, this.config.partitions);
    const from = await planStartOffset(this.reads, planId);
    const records = await readPlanRecords({
      kafka: this.kafka,
      topic: this.topics.events,
      partition,
      planId,
      ...(from !== undefined ? { from } : {}),
      ...(this.stats ? { stats: this.stats } : {}),
    });
    const out: LedgerEventRecord[] = [];
    for (const r of records) {
      const event = await this.codec.decodeEvent(r.value);
      if (event.planId === planId) out.push({ event, partition, offset: r.offset });
    }
    return out.sort((a, b) => a.event.seq - b.event.seq);
  }

  async getPlan(planId: string, opts: { payloads?: 'resolve' | 'reference' } = {}): Promise<PlanState | undefined> {
    const state = (await readPlanState(this.reads, planId)).state;
    return state === undefined || opts.payloads === 'reference' ? state : this.readable(state);
  }

  listPlans(filter?: PlanFilter): Promise<PlanPage> {
    return listPlansFromIndex({ kafka: this.kafka, codec: this.codec, config: this.config, logger: this.logger, index: this.index, ...(this.stats ? { stats: this.stats } : {}) }, filter);
  }

  async audit(planId: string, opts: AuditOptions = {}): Promise<PlanAudit> {
    const asOf = opts.asOf === undefined ? null : toAsOf(opts.asOf, 'asOf');
    return auditPlan(this.log, planId, asOf);
  }

  replay(planId: string, opts?: ReplayOptions): Promise<PlanReplay>;
  replay(target: AllPlans, opts?: ReplayOptions): Promise<Array<PlanReplay | ReplayFailure>>;
  async replay(target: string | AllPlans, opts: ReplayOptions = {}): Promise<PlanReplay | Array<PlanReplay | ReplayFailure>> {
    const until = opts.until === undefined ? null : toAsOf(opts.until, 'until');
    if (isAll(target)) {
      const out: Array<PlanReplay | ReplayFailure> = [];
      await replayAll(this.log, until, (r) => void out.push(r));
      return out;
    }
    if (typeof target !== 'string' || target === '') throw new LedgerError('VALIDATION', 'replay: name one plan or pass { all: true }', { field: 'planId' });
    return replayPlan(this.log, target, until, opts.until === undefined ? undefined : asOfText(opts.until));
  }

  verify(planId: string): Promise<PlanVerification>;
  verify(target: AllPlans): Promise<PlanVerification[]>;
  async verify(target: string | AllPlans): Promise<PlanVerification | PlanVerification[]> {
    if (isAll(target)) {
      const out: PlanVerification[] = [];
      await verifyAll(this.log, (v) => void out.push(v));
      return out;
    }
    if (typeof target !== 'string' || target === '') throw new LedgerError('VALIDATION', 'verify: name one plan or pass { all: true }', { field: 'planId' });
    return verifyPlanInLog(this.log, target);
  }

  async waitFor(planId: string, status: PlanStatus | ((s: PlanState) => boolean), opts: { timeoutMs?: number } = {}): Promise<PlanState> {
    const match = typeof status === 'function' ? status : (s: PlanState) => s.status === status;
    const timeoutMs = opts.timeoutMs ?? 60_000;
    let state: PlanState | undefined;
    // The first live event copies the state read (it may be shared); later ones change the copy in place,
    // so following a plan costs what each event changes, at any plan size.
    let owned = false;
    const buffered: PlanEvent[] = [];
    let live = false;
    let resolveMatch!: (s: PlanState) => void;
    const matched = new Promise<PlanState>((r) => (resolveMatch = r));
    const apply = (e: PlanEvent) => {
      if (!live) return void buffered.push(e);
      if (state && e.seq <= state.seq) return;
      const next = owned ? evolveInPlace(state, [e]) : evolveAll(state, [e]);
      if (next === undefined) return;
      state = next;
      owned = true;
      if (match(next)) resolveMatch(next);
    };
    // Listen first, then read the log: events in between are seen by both and applied once (by seq).
    const stop = this.listen(planId, apply);
    let timer: NodeJS.Timeout | undefined;
    try {
      // A plan this client created has been followed on the tail since before its first event: its state
      // is here already, with the same tail delivering what comes next. Otherwise, read it from the log.
      const followed = this.followed.take(planId);
      owned = followed !== undefined;
      state = followed ?? (await this.getPlan(planId, { payloads: 'reference' }));
      live = true;
      for (const e of buffered.sort((a, b) => a.seq - b.seq)) apply(e);
      if (state && match(state)) return await this.readable(state);
      const reached = await Promise.race([
        matched,
        new Promise<PlanState>((_, reject) => {
          timer = setTimeout(
            () => reject(new LedgerError('TIMEOUT', `plan ${planId} did not reach ${typeof status === 'string' ? status : 'the condition'} within ${timeoutMs} ms (now ${state?.status ?? 'unknown'})`, { planId, status: state?.status })),
            timeoutMs,
          );
        }),
      ]);
      return await this.readable(reached);
    } finally {
      stop();
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.tail?.close(), this.writer?.disconnect(), this.index.close()]);
    await this.admin.disconnect().catch(() => {});
    await this.kafka.close();
  }
}

function isAll(target: unknown): target is AllPlans {
  return typeof target === 'object' && target !== null && (target as AllPlans).all === true;
}

function digestAfter(events: PlanEvent[]): string | undefined {
  try {
    return evolveAll(undefined, events)?.digest;
  } catch {
    return undefined;
  }
}

/** A plan id the ledger can key its records with, or a VALIDATION error before anything is sent. */
function checkPlanId(planId: unknown): asserts planId is string {
  if (!isValidId(planId)) throw new LedgerError('VALIDATION', `planId: must be 1..128 characters of [A-Za-z0-9._:-], got ${JSON.stringify(planId)?.slice(0, 80)}`, { field: 'planId' });
}

/** The items of a plan or an AddItems, checked to be a list. */
function itemList(items: unknown): ItemInput[] {
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new LedgerError('VALIDATION', `items: expected an array, got ${typeof items}`, { field: 'items' });
  return items as ItemInput[];
}
