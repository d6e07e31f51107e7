import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../src/backoff.js';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Tracer } from '@opentelemetry/api';
import { loadConfig, topicNames, type LedgerConfig } from '../src/config.js';
import { BlobReader } from '../src/blobs/index.js';
import { keyringFor, type PlanKeyring } from '../src/crypto/index.js';
import { codecWhenRegistryAnswers, type LedgerCodec } from '../src/codec/index.js';
import { isLedgerError, LedgerError } from '../src/errors.js';
import { StreamPublisher } from './streams.js';
import { createKafka, ensurePlanTopics, isWriterGivenUp, type GroupMember, type KafkaClient, type LedgerAdmin, type LogRecord } from '../src/kafka/index.js';
import { silentLogger, type Logger } from '../src/logging.js';
import type { ApprovalPolicy, PlanState } from '../src/plan/index.js';
import { resolvePolicy } from '../src/policy-file.js';
import { loadSettings, setting } from '../src/settings.js';
import type { Telemetry } from '../src/telemetry.js';
import type { Tool } from '../src/tools.js';
import { TRACER_NAME, tracingRequested } from '../src/trace-context.js';
import { MAX_COMMAND_FAILURES, MAX_RESET_BACKOFF_MS, RESET_BACKOFF_MS } from '../src/executor-bounds.js';
import { offsetClock, SKEW_WARN_MS, SkewEstimate, type Clock } from './clock.js';
import { CacheBudget } from './dormant-cache.js';
import { createExecutorMetrics, type ExecutorMetrics } from './metrics.js';
import { readPlanFromEvents } from './plan-reload.js';
import type { OwnerLimits } from './context.js';
import { CommandStepError, PartitionOwner, type BatchGuard } from './partition-owner.js';
import { isKafkaOutage } from './command-handler.js';
import { restoreOwnedPartition } from './restore.js';
import { Slots } from './slots.js';
import { announceIntervalMs, cacheMib, clockOffset, ownerLimits, type ExecutorOptions } from './options.js';
import { Announcer } from './announcer.js';

export type { ExecutorOptions } from './options.js';

/** A command batch that failed this many times at the same command is dead-lettered at that command. */
export { MAX_COMMAND_FAILURES };

export interface ExecutorHandle {
  readonly executorId: string;
  readonly config: LedgerConfig;
  /** Partitions this executor owns now. */
  ownedPartitions(): number[];
  /**
   * The current state of a plan this executor owns (undefined when another executor owns it). A live view:
   * the executor applies its plans' events in place, so copy it (`structuredClone`) to keep it as it is now.
   * A finished plan put aside comes back as a copy; one evicted from the cache (or not read yet) as undefined.
   */
  planState(planId: string): PlanState | undefined;
  /** Transactions committed and events appended by this executor's owners so far. */
  stats(): { transactions: number; events: number };
  /** The executor's Prometheus metrics in the text format (resets, dead-lettered commands, timeouts, attempts). */
  metrics(): Promise<string>;
  /** Resolves once the executor owns partitions and has restored them. */
  readonly started: Promise<void>;
  /**
   * Stops gracefully: no new items, running items finish (up to shutdownGraceMs) or are aborted
   * through their signal, no transaction is left half-written, then the group is left.
   */
  stop(): Promise<void>;
}

function sum(owners: Map<number, PartitionOwner>, key: 'transactions' | 'events'): number {
  let n = 0;
  for (const o of owners.values()) n += o.stats[key];
  return n;
}

/**
 * Starts an executor: a member of the consumer group `<prefix>.executors` on the commands topic. It
 * owns the partitions the group assigns it — restores their plans, serves their commands, and runs
 * their ready items through the item protocol with the given tools.
 *
 * @example
 * const executor = await startExecutor({ tools: [charge, notify], concurrency: 8 });
 * process.once('SIGTERM', () => executor.stop());
 */
export async function startExecutor(opts: ExecutorOptions): Promise<ExecutorHandle> {
  loadSettings(['client', 'executor']); // every PLAN_LEDGER_* variable the executor reads, checked before anything connects
  const config = loadConfig(opts.config);
  const executorId = opts.executorId ?? `${hostname()}-${process.pid}-${randomBytes(2).toString('hex')}`;
  const logger = (opts.logger ?? silentLogger()).child({ component: 'executor', executorId });
  const tools = new Map<string, Tool>();
  for (const t of opts.tools) {
    if (tools.has(t.name)) throw new LedgerError('VALIDATION', `two tools are named "${t.name}"`, { field: 'tools' });
    tools.set(t.name, t);
  }
  cacheMib(opts); // a bad value fails here, naming its field, before anything connects
  const heartbeatMs = announceIntervalMs(opts);
  const clock = offsetClock(clockOffset(opts));
  if (clock.offsetMs !== 0) logger.warn({ clockOffsetMs: clock.offsetMs }, 'clock offset set (a test setting): every time this executor reads or writes is shifted');
  const policy = resolvePolicy(opts.policy);
  if (policy !== undefined) logger.info({ policyId: policy.id, policyHash: policy.hash, approval: policy.approval, rules: policy.rules.length }, 'approval policy loaded');
  const kafka = createKafka(config, logger, 'executor', 'service');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensurePlanTopics(admin, config);
  } catch (e) {
    await admin.disconnect();
    throw e;
  }
  const codec = await codecWhenRegistryAnswers(config, { logger });
  const limits = ownerLimits(opts);
  logger.info({ limits: { ...limits, decide: { ...limits.decide } } }, 'limits');
  // Tracing: the caller's provider, else one from OTEL_* (the SDK is loaded only then), else off.
  const telemetry = opts.tracerProvider === undefined && tracingRequested() ? (await import('../src/telemetry.js')).tracerProviderFromEnv('plan-ledger-executor') : undefined;
  const tracer = (opts.tracerProvider ?? telemetry?.provider)?.getTracer(TRACER_NAME);
  if (tracer !== undefined) logger.info({ fromEnv: telemetry !== undefined }, 'tracing on');
  const exec = new Executor(kafka, admin, codec, config, tools, executorId, logger, opts, limits, policy, tracer, telemetry, clock, heartbeatMs);
  try {
    await exec.start();
  } catch (e) {
    await telemetry?.shutdown();
    throw e;
  }
  return exec.handle();
}

/** Consecutive failures of one partition's command batches (see {@link Executor} onCommands). */
interface BatchFailures {
  /** The command that failed (known once batches run isolated), and how often in a row. */
  offset?: string;
  count: number;
  cause: string;
}

class Executor {
  private readonly owners = new Map<number, PartitionOwner>();
  private readonly slots: Slots;
  private member: GroupMember | undefined;
  /** Partitions assigned before `join` returned the member the owners commit offsets for: owned once it has. */
  private readonly assignedEarly = new Set<number>();
  private stopping = false;
  private resolveStarted!: () => void;
  private readonly started = new Promise<void>((r) => (this.resolveStarted = r));
  private readonly topics;

  constructor(
    private readonly kafka: KafkaClient,
    private readonly admin: LedgerAdmin,
    private readonly codec: LedgerCodec,
    private readonly config: LedgerConfig,
    private readonly tools: Map<string, Tool>,
    private readonly executorId: string,
    private readonly logger: Logger,
    private readonly opts: ExecutorOptions,
    private readonly limits: OwnerLimits,
    private readonly policy: ApprovalPolicy | undefined,
    private readonly tracer: Tracer | undefined,
    /** The provider built from OTEL_* (not the caller's): flushed and shut down with the executor. */
    private readonly telemetry: Telemetry | undefined,
    /** Every wall-clock read of the owners (see clock.ts). */
    private readonly clock: Clock,
    heartbeatMs: number,
  ) {
    this.announcer = new Announcer({ kafka, config, executorId, tools: [...tools.keys()], heartbeatMs, logger, partitions: () => this.ownedNow() });
    this.metrics.trackSkew(() => this.skew.estimate());
    this.slots = new Slots(opts.concurrency ?? 16);
    this.metrics.trackSlots(() => this.slots);
    this.cacheBudget = new CacheBudget(Math.floor(cacheMib(opts) * 1024 * 1024));
    this.topics = topicNames(config.topicPrefix);
    this.blobs = new BlobReader({ kafka, admin, topic: this.topics.blobs, partitions: config.partitions });
    this.keys = keyringFor({ kafka, config, ...(opts.masterKey ? { master: opts.masterKey } : {}) });
    this.streams = new StreamPublisher(kafka, this.topics.streams, logger.child({ component: 'streams' }), {}, () => this.clock.now());
  }

  private newOwner(partition: number, member: GroupMember): PartitionOwner {
    // The partition's previous owner here may still be fencing (stopped by a reset or a fence, revoked, or
    // lost mid-take-over): the new one fences after those fences ended (PartitionOwner.fencesEnded).
    const after = this.ownerFences.get(partition);
    const owner = new PartitionOwner(partition, {
      ...(after !== undefined ? { after } : {}),
      ...(this.opts.beforeFence !== undefined ? { beforeFence: this.opts.beforeFence } : {}),
      kafka: this.kafka,
      member,
      config: this.config,
      codec: this.codec,
      tools: this.tools,
      executorId: this.executorId,
      logger: this.logger,
      now: () => this.clock.now(),
      slots: this.slots,
      limits: this.limits,
      metrics: this.metrics,
      blobs: this.blobs,
      streams: this.streams,
      admin: this.admin,
      ...(this.keys !== undefined ? { keys: this.keys } : {}),
      ...(this.policy !== undefined ? { policy: this.policy } : {}),
      ...(this.tracer !== undefined ? { tracer: this.tracer } : {}),
      cacheBudget: this.cacheBudget,
      readPlan: (partition, planId, since) => readPlanFromEvents({ kafka: this.kafka, admin: this.admin, codec: this.codec, config: this.config, partition, planId, since }),
      restore: (p, onStep) => restoreOwnedPartition({ kafka: this.kafka, codec: this.codec, config: this.config, partition: p, logger: this.logger, ...(onStep ? { onStep } : {}) }),
    });
    this.ownerFences.set(partition, owner.fencesEnded);
    owner.onBroken = () => void this.reset(partition, owner);
    owner.onFenced = () => void this.retakeIfStillAssigned(partition, owner);
    owner.ready.then(
      // Restored: a fault before this one was a passing one (a broker outage), so the backoff starts over.
      () => this.resets.delete(partition),
      (e: unknown) => {
        this.logger.error({ err: e, partition }, 'taking ownership failed; retrying');
        void this.reset(partition, owner);
      },
    );
    return owner;
  }

  readonly metrics: ExecutorMetrics = createExecutorMetrics();
  /** Who this executor is and what it serves, on <prefix>.plan-executors. */
  private readonly announcer: Announcer;
  /** Bytes of finished plans the owners may hold aside, together (PLAN_LEDGER_EXECUTOR_CACHE_MIB). */
  private readonly cacheBudget: CacheBudget;
  private readonly blobs: BlobReader;
  /** The attempts' live streams (`<prefix>.plan-streams`): one idempotent producer for every owner. */
  private readonly streams: StreamPublisher;
  private readonly keys: PlanKeyring | undefined;
  /** Consecutive resets per partition, for the backoff; forgotten once an owner restores, or after a quiet minute. */
  private readonly resets = new Map<number, { count: number; at: number }>();
  private get sessionTimeoutMs(): number {
    return this.opts.sessionTimeoutMs ?? setting('PLAN_LEDGER_SESSION_TIMEOUT_MS');
  }
  private get heartbeatIntervalMs(): number {
    return this.opts.heartbeatIntervalMs ?? setting('PLAN_LEDGER_HEARTBEAT_INTERVAL_MS');
  }
  private readonly batchFailures = new Map<number, BatchFailures>();
  /** This executor's clock against the writers of the commands it consumes (plan_ledger_clock_skew_ms). */
  private readonly skew = new SkewEstimate();

  /** Samples the clock skew from the commands' CreateTime, and warns when it is past SKEW_WARN_MS. */
  private sampleSkew(records: readonly LogRecord[]): void {
    const now = this.clock.now();
    for (const r of records) this.skew.sample(Number(r.timestamp), now);
    if (this.skew.shouldWarn()) {
      this.logger.warn(
        { clockSkewMs: this.skew.estimate(), thresholdMs: SKEW_WARN_MS },
        'this executor\'s clock differs from the command writers\' clocks by more than the threshold; retries and waits stay bounded (docs/concepts/item-protocol.md#clocks), but check the host\'s time sync',
      );
    }
  }

  /**
   * Replaces a broken owner with a fresh one (re-fence, restore from the log) if we still own the
   * partition, after an exponential backoff (0.5 s, 1 s, 2 s, … capped at 30 s): a fault that repeats
   * never turns into a tight loop of restores.
   */
  private async reset(partition: number, broken: PartitionOwner): Promise<void> {
    await broken.stop('reset');
    if (this.stopping || this.owners.get(partition) !== broken) return;
    const now = Date.now();
    const prev = this.resets.get(partition);
    const count = prev && now - prev.at < 60_000 + MAX_RESET_BACKOFF_MS ? prev.count + 1 : 1;
    this.resets.set(partition, { count, at: now });
    const delay = backoffMs(count, RESET_BACKOFF_MS, MAX_RESET_BACKOFF_MS);
    this.metrics.partitionResets.inc({ partition: String(partition) });
    this.logger.warn({ partition, consecutive: count, backoffMs: delay }, 'partition reset; restoring it from the log after a backoff');
    await sleep(delay);
    // No member: it was fenced for good and is joining again (its partitions were revoked as lost).
    if (this.stopping || this.owners.get(partition) !== broken || this.member === undefined) return;
    this.retire(broken);
    this.owners.set(partition, this.newOwner(partition, this.member));
  }

  /**
   * An owner's writer was fenced: another writer of the partition's transactional ids started after ours.
   * Mostly that is the partition's next owner, and the group has moved the partition away from us (we
   * were paused past our session): the revocation, or the loss, follows here within a session timeout.
   * But a fence can also come from no owner at all: a past owner's `initTransactions` still in flight
   * when the group moved the partition here ends after ours and bumps the epoch over it. A revoked owner
   * lets its fences end before the group hands the partition on (GroupMemberOptions.onRevoked), so this
   * is left to an owner whose assignment was lost (its session lapsed) with a fence in flight, or one whose
   * fence outlived the member's revocation wait. No revocation ever follows that one, and the partition
   * would stay assigned here and served by no one. So once a member that lost the partition would have heard of it (a session
   * timeout and a heartbeat), a partition still assigned here gets a fresh owner: it fences the ids again
   * and restores from the log. Fencing is how ownership moves anyway: a mistaken retake costs the next
   * owner a fence of its own, never an effect.
   */
  private async retakeIfStillAssigned(partition: number, fenced: PartitionOwner): Promise<void> {
    await sleep(this.sessionTimeoutMs + this.heartbeatIntervalMs);
    if (this.stopping || this.owners.get(partition) !== fenced || !this.member?.assigned().includes(partition)) return;
    this.logger.warn({ partition, afterMs: this.sessionTimeoutMs + this.heartbeatIntervalMs }, 'fenced, yet the group still assigns the partition here: taking it again');
    await this.reset(partition, fenced);
  }

  /** The fences of each partition's latest owner here (PartitionOwner.fencesEnded), kept past its stop. */
  private readonly ownerFences = new Map<number, Promise<void>>();

  /** Stats of owners that are gone. */
  private readonly retired = { transactions: 0, events: 0 };

  private retire(owner: PartitionOwner): void {
    this.retired.transactions += owner.stats.transactions;
    this.retired.events += owner.stats.events;
  }

  /**
   * Partitions the group gave this member: each gets a fresh owner (fence, restore), unless it has a live
   * one. `started` resolves once every owner has taken its partition (at once when none was given).
   */
  private assign(partitions: number[]): void {
    if (this.member === undefined) {
      for (const p of partitions) this.assignedEarly.add(p);
      return;
    }
    for (const p of partitions) {
      const current = this.owners.get(p);
      if (!current || current.isStopping) this.owners.set(p, this.newOwner(p, this.member));
    }
    this.logger.info({ added: partitions, partitions: this.ownedNow() }, 'assignment');
    this.announcer.beat();
    void Promise.allSettled([...this.owners.values()].map((o) => o.ready)).then(() => this.resolveStarted());
  }

  /**
   * Partitions taken from this member: their owners stop. Lost — the coordinator expired us (a pause, a
   * long GC) — another member may have owned them in between and fenced our writers; an assignment after
   * it starts them afresh. Handed back in a rebalance, the stops are awaited (a transaction in flight ends
   * first, so the next owner seldom has one to abort).
   */
  private async revoke(partitions: number[], lost: boolean): Promise<void> {
    const stops: Promise<void>[] = [];
    for (const p of partitions) {
      this.assignedEarly.delete(p);
      const owner = this.owners.get(p);
      if (!owner) continue;
      this.retire(owner);
      this.owners.delete(p);
      stops.push(owner.stop(lost ? 'assignment lost' : 'revoked'));
    }
    this.logger.info({ revoked: partitions, lost, partitions: this.ownedNow() }, 'assignment');
    this.announcer.beat();
    if (!lost) await Promise.allSettled(stops);
  }

  private ownedNow(): number[] {
    return [...this.owners.keys()].sort((a, b) => a - b);
  }

  async start(): Promise<void> {
    await this.join();
    await this.announcer.start();
  }

  /** Joins the executors' group (static membership under the executor id); partitions assigned before it returns are owned once it has. */
  private async join(): Promise<void> {
    this.member = await this.kafka.join({
      groupId: this.topics.executorsGroup,
      topic: this.topics.commands,
      sessionTimeoutMs: this.sessionTimeoutMs,
      heartbeatIntervalMs: this.heartbeatIntervalMs,
      rebalanceTimeoutMs: 30_000,
      // Static membership: after a group coordinator's broker dies, a member whose session lapsed rejoins
      // as itself and the group settles at once (docs/guides/kafka-client.md#static-membership).
      instanceId: this.executorId,
      onAssigned: (partitions) => this.assign(partitions),
      onRevoked: (partitions, lost) => this.revoke(partitions, lost),
      onFenced: () => void this.rejoin(),
      onRecords: (partition, records) => this.onCommands(partition, records),
    });
    const early = [...this.assignedEarly];
    this.assignedEarly.clear();
    if (early.length) this.assign(early);
  }

  /** When the group member was fenced for good, in the last {@link FENCE_WINDOW_MS}: each one doubles the wait before joining again. */
  private fences: number[] = [];

  /**
   * The group member was fenced for good: another member joined under this executor's id. That is this
   * member's own rejoin after its session lapsed while the group coordinator's broker was down (librdkafka
   * makes the old member's fence fatal), or a second executor started with the same id. The member reads
   * nothing more, so without this the executor would run on and announce itself while owning nothing. It
   * closes the member and joins again under the same id, after 1 s, doubling per fence in the last ten
   * minutes up to 30 s: two executors that share an id take turns, each fence logged, rather than one
   * going quiet.
   */
  private async rejoin(): Promise<void> {
    if (this.stopping) return;
    const now = Date.now();
    this.fences = [...this.fences.filter((t) => now - t < FENCE_WINDOW_MS), now];
    const waitMs = backoffMs(this.fences.length, 1000, 30_000);
    this.metrics.memberFences.inc();
    this.logger.warn({ waitMs, fencesInWindow: this.fences.length }, 'group member fenced for good; joining the group again under the same id');
    const fenced = this.member;
    this.member = undefined;
    await sleep(waitMs);
    await Promise.race([fenced?.close().catch(() => {}), sleep(10_000)]);
    for (let attempt = 1; !this.stopping; attempt++) {
      try {
        await this.join();
        // Stopped while joining: stop() found no member to close.
        const joined = this.member as GroupMember | undefined;
        if (this.stopping) await joined?.close().catch(() => {});
        else this.logger.info({ executorId: this.executorId }, 'joined the group again');
        return;
      } catch (e) {
        const retryMs = backoffMs(attempt, 1000, 30_000);
        this.logger.error({ err: e, retryMs }, 'joining the group again failed; trying again');
        await sleep(retryMs);
      }
    }
  }

  /**
   * A batch of one partition's commands. Undefined once handled (their offsets commit with the events they
   * caused); the batch's first offset when it must be read again — no owner to take it, the owner still
   * restoring, or the batch failed (the next owner, or this one reset, reads the same commands).
   */
  private async onCommands(partition: number, records: LogRecord[]): Promise<string | undefined> {
    const first = records[0]?.offset;
    if (first === undefined) return undefined;
    this.sampleSkew(records);
    const owner = this.owners.get(partition);
    // Not served here (yet): read again after a pause, so a partition without an owner does not spin.
    if (!owner || owner.isStopping || this.stopping) return later(first);
    // Restoring can take long on long logs: wait a little, then hand the batch back to be read again, so a
    // rebalance never waits for a restore. An owner that is ready already is read synchronously, so a
    // command batch never sleeps for nothing.
    if (!owner.isReadySettled) {
      await Promise.race([owner.ready.catch(() => {}), sleep(REREAD_DELAY_MS)]);
      if (!owner.isReadySettled) return first;
    }
    if (owner.isStopping || this.stopping || this.owners.get(partition) !== owner) return first;
    const failures = this.batchFailures.get(partition);
    try {
      await owner.handleCommands(records, this.guardFor(failures));
    } catch (e) {
      if (this.owners.get(partition) !== owner) {
        // Revoked or lost meanwhile (an offset commit of a member that lost the partition fails): not the batch's fault.
        this.logger.info({ err: e, partition }, 'command batch ended with its partition gone; the next owner reads it again');
      } else if (isWriterGivenUp(e) || isKafkaOutage(e)) {
        // Kafka, not the commands: a writer call that never answered, a produce that timed out through an
        // outage. A new owner (new writers, fencing the old) takes the same commands again; nothing is
        // counted against them.
        this.logger.warn({ err: e, partition }, 'a Kafka call failed (a writer given up, or a retriable error); resetting the partition');
        void this.reset(partition, owner);
      } else if (isLedgerError(e, 'UNAVAILABLE')) {
        this.logger.warn({ err: e, partition }, 'registry unavailable; the batch will be retried');
        await sleep(1000);
      } else if (!isLedgerError(e, 'FENCED')) {
        this.noteBatchFailure(partition, failures, e);
        this.logger.error({ err: e, partition, failures: this.batchFailures.get(partition) }, 'command batch failed; resetting the partition');
        void this.reset(partition, owner);
      } else {
        owner.fenced();
      }
      return first; // the same commands are read again, by the next owner
    }
    const last = records.at(-1)!.offset;
    // Past the command that failed (or the whole batch, when it was not known): back to group commit.
    if (failures && (failures.offset === undefined || BigInt(last) >= BigInt(failures.offset))) this.batchFailures.delete(partition);
    return undefined;
  }

  /**
   * After a failed batch the next ones run isolated (one command per transaction), so the failure names its
   * command; a command that failed {@link MAX_COMMAND_FAILURES} times in a row is dead-lettered with its
   * cause and the partition moves on.
   */
  private guardFor(f: BatchFailures | undefined): BatchGuard {
    if (!f) return {};
    if (f.offset !== undefined && f.count >= MAX_COMMAND_FAILURES) return { isolate: true, poison: { offset: f.offset, cause: f.cause, failures: f.count } };
    return { isolate: true };
  }

  private noteBatchFailure(partition: number, prev: BatchFailures | undefined, e: unknown): void {
    const cause = e instanceof CommandStepError ? describeError(e.failure) : describeError(e);
    const offset = e instanceof CommandStepError ? e.offset : undefined;
    if (offset !== undefined && prev?.offset === offset) this.batchFailures.set(partition, { offset, count: prev.count + 1, cause });
    else this.batchFailures.set(partition, { ...(offset !== undefined ? { offset } : {}), count: 1, cause });
  }

  handle(): ExecutorHandle {
    return {
      executorId: this.executorId,
      config: this.config,
      started: this.started,
      ownedPartitions: () => [...this.owners.entries()].filter(([, o]) => !o.isStopping).map(([p]) => p).sort((a, b) => a - b),
      planState: (planId) => {
        for (const o of this.owners.values()) {
          const s = o.book.peek(planId);
          if (s) return s;
        }
        return undefined;
      },
      stats: () => ({ transactions: this.retired.transactions + sum(this.owners, 'transactions'), events: this.retired.events + sum(this.owners, 'events') }),
      metrics: () => this.metrics.registry.metrics(),
      stop: () => this.stop(),
    };
  }

  private stopPromise: Promise<void> | undefined;
  stop(): Promise<void> {
    this.stopPromise ??= (async () => {
      this.stopping = true;
      const grace = this.opts.shutdownGraceMs ?? 10_000;
      await Promise.allSettled([...this.owners.values()].map((o) => o.stop('shutdown', grace)));
      this.owners.clear();
      await this.member?.close().catch(() => {});
      // After the group is left: a reader that sees the tombstones never sees this executor own a partition.
      await this.announcer.stop();
      await this.streams.close();
      await this.admin.disconnect().catch(() => {});
      await this.kafka.close();
      await this.telemetry?.shutdown();
      this.logger.info('executor stopped');
    })();
    return this.stopPromise;
  }
}

/** The window in which fences of the group member count towards the wait before joining again. */
const FENCE_WINDOW_MS = 10 * 60_000;

/** How long a batch no owner can take yet waits before it is handed back to be read again. */
const REREAD_DELAY_MS = 500;


/** `offset`, after {@link REREAD_DELAY_MS}: read again from there. */
async function later(offset: string): Promise<string> {
  await sleep(REREAD_DELAY_MS);
  return offset;
}

function describeError(e: unknown): string {
  try {
    return e instanceof Error ? e.message : String(e);
  } catch {
    return 'unprintable error';
  }
}
