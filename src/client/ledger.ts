import { randomBytes } from 'node:crypto';
import { auditPlan, replayAll, replayPlan, verifyAll, verifyPlanInLog, type PlanAudit, type PlanReplay, type ReplayFailure } from '../audit/live.js';
import { LedgerLog } from '../audit/log.js';
import { asOfText, toAsOf } from '../audit/timeline.js';
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
  partitionFor,
  readPlanRecords,
  type KafkaClient,
  type LedgerAdmin,
  type ReadStats,
} from '../kafka/index.js';
import { silentLogger, type Logger } from '../logging.js';
import { canonicalJson, FORK_LABEL, type ItemSpec, type PlanEvent, type PlanState, type PlanStatus } from '../plan/index.js';
import { toItemSpec, type ItemInput } from '../plan-input.js';
import type { PlanPage } from '../projection/query.js';
import { FollowedPlans } from './followed.js';
import { listPlansFromIndex, type PlanFilter } from './list-plans.js';
import { PlanIndex } from './plan-index.js';
import { planStartOffset, readPlanState, type PlanReads } from './reads.js';
import { EventsTail } from './events-tail.js';
import { CommandSender } from './sender.js';
import { findErasure } from './erasure.js';
import { forkPoint } from './fork.js';
import { waitForPlan } from './wait-for.js';
import { readPlanStream, type StreamOptions } from '../streams/reader.js';
import type { StreamChunk } from '../streams/records.js';
import { checkPlanId, digestAfter, isAll, itemList } from './inputs.js';
import { kafkaErrorsAsLedgerErrors } from './kafka-errors.js';
import { checkTools, readExecutors, type ExecutorList, type ToolCheck } from '../executors/index.js';
import { settledWithin } from '../timeouts.js';
import type {
  CreatePlanInput,
  CreatePlanOptions,
  CreatePlanOutcome,
  ExecutorsOptions,
  ForkOptions,
  CommandOptions,
  EraseOptions,
  EraseOutcome,
  LedgerEventRecord,
  AuditOptions,
  ReplayOptions,
  AllPlans,
  Ledger,
  ConnectOptions,
} from './api.js';

/** How long a createPlan reuses the executors it read for the last one: a burst of plans reads them once. */
const EXECUTORS_REUSE_MS = 1_000;
/**
 * How long a decided createPlan waits for its tools check (a read of the executors' announcements, begun
 * with the send) to finish. The check is advice: a read that a broker outage holds up never holds back a
 * plan that was decided; the outcome then carries a warning instead.
 */
const TOOL_CHECK_GRACE_MS = 3_000;

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

class LedgerClient implements Ledger {
  /** Writes commands and the records they need, and waits for their decisions. */
  private readonly sender: CommandSender;
  /** The events tail: every outcome of a command this client sends reaches its listeners. */
  private readonly events: EventsTail;
  /** Plans this client created, followed on the tail from their first event (see {@link waitFor}). */
  private readonly followed = new FollowedPlans((planId, l) => this.events.listen(planId, (e) => l(e)));
  private readonly topics;
  private readonly clientId = `client-${randomBytes(4).toString('hex')}`;
  /** Read access to the log over this client's connections, for audit, replay and verify. */
  private readonly log: LedgerLog;
  private readonly payloadLimits: PayloadLimits = payloadLimitsFromEnv();
  private readonly blobs: BlobReader;
  /** Where each plan's latest snapshot is, and each partition's watermark (caught up on each read, from the first one on). */
  private readonly index: PlanIndex;
  private readonly reads: PlanReads;

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
    this.events = new EventsTail({ kafka, admin, codec, topic: this.topics.events, logger, ...(stats ? { stats } : {}) });
    this.sender = new CommandSender({ kafka, admin, codec, config, logger, events: this.events, clientId: this.clientId });
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
    for (const m of messages) await this.sender.write(this.topics.blobs, m, `a blob chunk of plan ${planId}`);
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
      if (message) await this.sender.write(this.keys.topic, message, `the data key of plan ${planId}`);
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
    await this.sender.start(this.events);
  }

  async createPlan(input: CreatePlanInput, opts: CreatePlanOptions = {}): Promise<CreatePlanOutcome> {
    const planId = input.planId ?? `plan-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    checkPlanId(planId);
    const specs = itemList(input.items).map((it, i) => toItemSpec(it, `items[${i}]`));
    // The check reads the executors while the plan is sent; a strict one waits for it first.
    const tools = specs.filter((s) => s.wait === undefined && s.tool !== '').map((s) => s.tool);
    const checking = this.checkPlanTools(planId, tools);
    if (opts.strictTools) {
      const c = await checking;
      if (c.failed !== undefined) throw new LedgerError('UNAVAILABLE', `plan ${planId} not sent: its tools could not be checked against the executors (strictTools): ${c.failed}`, { planId });
      if (c.check?.warning !== undefined && c.check.conclusive) {
        throw new LedgerError('UNSERVED_TOOL', `UNSERVED_TOOL: plan ${planId} not sent: ${c.check.warning}`, { planId, tools: c.check.unserved });
      }
    }
    const items = await this.placePayloads(planId, specs, true);
    this.followed.begin(planId);
    try {
      const out = await this.sender.send(planId, 'CreatePlan', { goal: input.goal, mode: input.mode, labels: input.labels ?? {}, parent: null, items }, opts);
      const c = await settledWithin(checking, TOOL_CHECK_GRACE_MS, { failed: `the executors' announcements were not read within ${TOOL_CHECK_GRACE_MS} ms of the decision` });
      const warnings = c.failed !== undefined ? [`the plan's tools could not be checked against the executors: ${c.failed}`] : c.check?.warning !== undefined ? [c.check.warning] : [];
      return { ...out, digest: digestAfter(out.events) ?? '', unservedTools: c.check?.unserved ?? [], warnings };
    } catch (e) {
      this.followed.drop(planId);
      // No executor decided it: say what the executors' announcements say (none live, say).
      const c = await settledWithin(checking, TOOL_CHECK_GRACE_MS, {});
      if (isLedgerError(e, 'TIMEOUT') && c.check?.warning !== undefined) throw new LedgerError('TIMEOUT', `${e.message} (${c.check.warning})`, e.details, { cause: e });
      throw e;
    }
  }

  private executorsRead: { at: number; list: Promise<ExecutorList> } | undefined;

  executors(opts: ExecutorsOptions = {}): Promise<ExecutorList> {
    if (opts.staleAfterMs !== undefined && !(Number.isSafeInteger(opts.staleAfterMs) && opts.staleAfterMs > 0)) {
      return Promise.reject(new LedgerError('VALIDATION', `staleAfterMs must be a positive integer, got ${String(opts.staleAfterMs)}`, { field: 'staleAfterMs' }));
    }
    return readExecutors(this.kafka, this.config, { ...opts, ...(this.stats ? { stats: this.stats } : {}) });
  }

  /** The plan's tools against the live executors (read at most once a second); a read that fails is a reason, not a throw. */
  private async checkPlanTools(planId: string, tools: string[]): Promise<{ check?: ToolCheck; failed?: string }> {
    if (tools.length === 0) return {};
    const now = Date.now();
    if (this.executorsRead === undefined || now - this.executorsRead.at > EXECUTORS_REUSE_MS) this.executorsRead = { at: now, list: this.executors() };
    const read = this.executorsRead;
    try {
      const check = checkTools(tools, await read.list);
      if (check.warning !== undefined) this.logger.warn({ planId, unserved: check.unserved }, check.warning);
      return { check };
    } catch (e) {
      if (this.executorsRead === read) this.executorsRead = undefined;
      this.logger.warn({ planId, err: (e as Error).message }, "the plan's tools could not be checked against the executors");
      return { failed: (e as Error).message };
    }
  }

  async addItems(planId: string, items: ItemInput[], opts?: CommandOptions) {
    checkPlanId(planId);
    return this.sender.send(planId, 'AddItems', { items: await this.placePayloads(planId, itemList(items).map((it, i) => toItemSpec(it, `items[${i}]`))) }, opts);
  }

  async propose(planId: string, opts?: CommandOptions) {
    const out = await this.sender.send(planId, 'ProposePlan', { comment: null }, opts);
    const proposed = out.events.find((e) => e.type === 'PlanProposed');
    return { ...out, digest: proposed?.type === 'PlanProposed' ? proposed.data.digest : '' };
  }

  approve(planId: string, digest: string, opts: CommandOptions & { note?: string } = {}) {
    return this.sender.send(planId, 'ApprovePlan', { digest, by: opts.by ?? this.clientId, comment: opts.note ?? null }, opts);
  }

  async reject(planId: string, reason: string, opts: CommandOptions & { digest?: string } = {}) {
    const digest = opts.digest ?? (await this.getPlan(planId))?.digest ?? '';
    return this.sender.send(planId, 'RejectPlan', { digest, reason, by: opts.by ?? this.clientId }, opts);
  }

  cancel(planId: string, reason = 'cancelled by operator', opts?: CommandOptions) {
    return this.sender.send(planId, 'CancelPlan', { reason }, opts);
  }

  retryItem(planId: string, itemId: string, opts?: CommandOptions) {
    return this.sender.send(planId, 'RetryItem', { itemId }, opts);
  }

  async fork(source: string, opts: ForkOptions) {
    checkPlanId(source);
    const { state, seq, events, specs, inherited } = await forkPoint(source, (await this.planEvents(source)).map((r) => r.event), opts, this.config.topicPrefix, (json) => this.readPayload(source, json));
    const chainHead = events[seq - 1]!.hash;
    const forkedFrom = { planId: source, seq, chainHead };
    const planId = opts.planId ?? `fork-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
    checkPlanId(planId);
    const items = await this.placePayloads(planId, specs, true);
    this.followed.begin(planId);
    try {
      const out = await this.sender.send(planId, 'CreatePlan', { goal: state.goal, mode: opts.mode ?? state.mode ?? 'execute', labels: { ...state.labels, [FORK_LABEL]: source }, parent: null, items, forkedFrom, inherited }, opts);
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
    return this.sender.send(planId, 'SignalItem', { signal: name, signalId, dataJson }, opts);
  }

  async erase(planId: string, opts: EraseOptions = {}): Promise<EraseOutcome> {
    const by = opts.by ?? this.clientId;
    this.blobs.forget(planId);
    const command = this.sender.command(planId, 'ErasePlan', { reason: opts.reason ?? 'erasure requested', by, force: opts.force ?? false }, by);
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
    const stopEvents = this.events.listen(planId, (e) => {
      if (e.causationId === commandId && e.type === 'CommandRejected') push({ kind: 'rejected', event: e });
    });
    const stopTombstones = this.events.listenTombstones(planId, () => push({ kind: 'tombstone' }));
    let auditFrom: Map<number, string> | undefined;
    try {
      await this.sender.produceBy(command, deadline);
      for (;;) {
        const signal = signals.shift();
        if (signal === undefined) {
          const left = deadline - Date.now();
          if (left <= 0) throw this.sender.timeout('ErasePlan', planId, commandId, timeoutMs);
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
        const found = await findErasure(this.kafka, auditTopic(this.config.topicPrefix), commandId, auditFrom, (next) => (auditFrom = next));
        if (found) return { commandId, planId, events: [], erasure: found };
      }
    } finally {
      stopEvents();
      stopTombstones();
    }
  }

  async planEvents(planId: string): Promise<LedgerEventRecord[]> {
    const partition = partitionFor(planId, this.config.partitions);
    const { from, start } = await planStartOffset(this.reads, planId);
    const records = await readPlanRecords({
      kafka: this.kafka,
      topic: this.topics.events,
      partition,
      planId,
      ...(from !== undefined ? { from } : {}),
      ...(start !== undefined ? { start } : {}),
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

  waitFor(planId: string, status: PlanStatus | ((s: PlanState) => boolean), opts: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<PlanState> {
    return waitForPlan(
      { events: this.events, followed: this.followed, read: (id) => this.getPlan(id, { payloads: 'reference' }), readable: (st) => this.readable(st) },
      planId,
      status,
      opts,
    );
  }

  stream(planId: string, opts: StreamOptions = {}): AsyncIterableIterator<StreamChunk> {
    checkPlanId(planId);
    return readPlanStream(
      {
        kafka: this.kafka,
        admin: this.admin,
        topic: this.topics.streams,
        partitions: this.config.partitions,
        planCreatedAt: async (id) => {
          const state = await this.getPlan(id, { payloads: 'reference' });
          return state === undefined ? undefined : state.createdAt;
        },
      },
      planId,
      opts,
    );
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.events.close(), this.sender.close(), this.index.close()]);
    await this.admin.disconnect().catch(() => {});
    await this.kafka.close();
  }
}
