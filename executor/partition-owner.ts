import { topicNames } from '../src/config.js';
import { REVOCATION_WAIT_MS, type FencedWriter, type LogRecord } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import type { PlanState } from '../src/plan/index.js';
import { settledWithin } from '../src/timeouts.js';
import { TransactionalAppender } from './appender.js';
import { CommandHandler, type BatchGuard } from './command-handler.js';
import type { OwnerDeps } from './context.js';
import { ItemScheduler } from './item-scheduler.js';
import { PartitionBook } from './partition-book.js';
import { PlanWriter } from './plan-writer.js';
import { PlanTraces } from './tracing.js';

export { CommandStepError, type BatchGuard } from './command-handler.js';

/** How often a take-over (fence and restore) that has not ended says which step it waits in. */
const TAKE_OVER_WARN_MS = 10_000;

/**
 * The executor's view of one owned partition: the only writer of the partition's events, through
 * fenced writers whose transactional ids are fixed per partition ({@link partitionTransactionalIds}), so
 * taking ownership fences the previous owner. Its lifecycle: fence, restore the partition's plans into its
 * {@link PartitionBook}, then serve commands ({@link CommandHandler}) and run ready items
 * ({@link ItemScheduler}) until it is released.
 */
export class PartitionOwner {
  readonly book: PartitionBook;
  private writers: FencedWriter[] = [];
  /**
   * Settles once the take-over's fences (the InitProducerId of each of its writers, and the predecessor's
   * it waited for) have ended, however. A new owner of the partition in this process fences after it: a
   * fence of ours ending after the new owner's would fence the new owner. A transaction of ours still in
   * flight needs no wait: the new owner's fence aborts it.
   */
  readonly fencesEnded: Promise<void>;
  private fencesDone!: () => void;
  /** Settles when every fence (`connect`, InitProducerId) this owner started has ended, however. */
  private fencing: Promise<unknown> = Promise.resolve();
  private appender!: TransactionalAppender;
  private handler!: CommandHandler;
  private items!: ItemScheduler;
  private stopped = false;
  /** No new work is started (stopping or stopped). */
  private draining = false;
  private readonly log: Logger;
  private readonly topics;
  /** The plans' trace contexts and the owner's spans (see tracing.ts); undefined when tracing is off, so no call site evaluates anything for it. */
  private readonly traces: PlanTraces | undefined;
  readonly ready: Promise<void>;
  /** Settled: `ready` has resolved or rejected (read synchronously on the command path). */
  private readySettled = false;

  constructor(
    readonly partition: number,
    private readonly d: OwnerDeps,
  ) {
    this.log = d.logger.child({ component: 'partition-owner', partition });
    this.topics = topicNames(d.config.topicPrefix);
    this.traces = d.tracer === undefined ? undefined : new PlanTraces(d.tracer, d.executorId);
    const readPlan = d.readPlan;
    this.book = new PartitionBook(
      {
        codec: d.codec,
        limits: d.limits,
        metrics: d.metrics,
        executorId: d.executorId,
        now: () => this.now(),
        ...(d.policy !== undefined ? { policy: d.policy } : {}),
        ...(d.cacheBudget !== undefined ? { cacheBudget: d.cacheBudget } : {}),
        ...(readPlan !== undefined ? { readPlan: (planId: string, since: number | null) => readPlan(partition, planId, since) } : {}),
      },
      this.log,
    );
    this.fencesEnded = new Promise((resolve) => (this.fencesDone = resolve));
    this.ready = this.start();
    this.ready.then(
      () => (this.readySettled = true),
      () => (this.readySettled = true),
    );
  }

  private now(): number {
    return this.d.now?.() ?? Date.now();
  }

  /** The partition's live plans. */
  get plans(): ReadonlyMap<string, PlanState> {
    return this.book.plans;
  }

  private async start(): Promise<void> {
    const t0 = Date.now();
    // A take-over that is slow says which step it waits in, every TAKE_OVER_WARN_MS, until it ends.
    let step = 'fence';
    const watch = setInterval(() => this.log.warn({ step, waitingMs: Date.now() - t0 }, 'taking the partition over is still waiting'), TAKE_OVER_WARN_MS);
    watch.unref();
    try {
      await this.takeOver(t0, (s) => (step = s));
    } finally {
      clearInterval(watch);
      void this.fencing.then(() => this.fencesDone()); // however the take-over ended
    }
  }

  private async takeOver(t0: number, stepping: (step: string) => void): Promise<void> {
    // The previous owner of the partition in this process ends its fences first: one still in flight (its
    // session lapsed, or the group took the partition back, mid-take-over) would otherwise end after ours
    // and fence this owner, with no revocation to follow.
    if (this.d.after !== undefined) {
      stepping('previous owner');
      // Bounded as a revocation is: a predecessor's fence that never ends holds no partition for good (its
      // fences are bounded anyway; past the wait, one ending late fences us and the executor retakes). An
      // owner after this one waits for this wait (fencesEnded settles after it).
      if (!(await settledWithin(this.d.after.then(() => true), REVOCATION_WAIT_MS, false))) {
        this.log.warn({ waitedMs: REVOCATION_WAIT_MS }, "the partition's previous owner here is still fencing; fencing anyway");
      }
      stepping('fence');
      if (this.draining) {
        this.log.info({ ms: Date.now() - t0 }, "released while the previous owner's fences ended; not fencing");
        return;
      }
    }
    // Fence first, then read: once both ids are initialised, the previous owner can commit nothing more,
    // so the log we restore from is final.
    this.writers = partitionTransactionalIds(this.d.config.topicPrefix, this.partition).map((id) => this.d.kafka.fencedWriter(id));
    const slow = this.d.beforeFence?.(this.partition); // fault injection: a fence that takes long
    const connects = this.writers.map((w) => (slow === undefined ? w.connect() : Promise.resolve(slow).then(() => w.connect())));
    this.fencing = Promise.allSettled(connects);
    void this.fencing.then(() => this.fencesDone());
    await Promise.all(connects);
    const fenceMs = Date.now() - t0;
    if (this.draining) {
      this.log.info({ fenceMs }, 'fenced after the partition was released; not restoring it');
      return;
    }
    stepping('restore');
    this.appender = new TransactionalAppender({
      writers: this.writers,
      member: this.d.member,
      eventsTopic: this.topics.events,
      commandsTopic: this.topics.commands,
      partition: this.partition,
      logger: this.log,
      maxRequestBytes: this.d.limits.maxRecordBytes,
      ...(this.d.now !== undefined ? { now: this.d.now } : {}),
      writer: this.d.executorId,
    });
    const writer = new PlanWriter(this.appender, this.book, { codec: this.d.codec, config: this.d.config, executorId: this.d.executorId, now: () => this.now() }, this.topics, this.traces);
    const ctx = { partition: this.partition, book: this.book, writer, d: this.d, log: this.log, topics: this.topics };
    this.handler = new CommandHandler(this.partition, this.book, writer, this.d, this.log, this.topics, ctx, this.traces);
    this.items = new ItemScheduler(
      this.partition,
      this.book,
      writer,
      this.d,
      this.log,
      this.topics,
      (e) => {
        void this.stop('append failed');
        this.onBroken?.(e);
      },
      () => this.fenced(),
      this.traces,
    );
    const restored = await this.d.restore(this.partition, (s) => stepping(`restore: ${s}`));
    // Released while restoring (revoked, lost, reset): the partition is someone else's now. Nothing is
    // seeded or scheduled, and no "partition restored" is said of it: the next owner restores it.
    if (this.draining) {
      this.log.info({ ms: Date.now() - t0 }, 'restore finished after the partition was released; dropped');
      return;
    }
    this.book.seed(restored);
    this.traces?.seed(restored.traceparents);
    this.log.info(
      { plans: this.book.plans.size, dormant: this.book.dormant.size, stalled: this.book.stalled.size, fromSnapshot: restored.fromSnapshot, eventsReplayed: restored.eventsReplayed, fencingToken: this.book.fencingToken, fenceMs, ms: Date.now() - t0 },
      'partition restored',
    );
    for (const planId of this.book.plans.keys()) this.items.schedule(planId, { recover: true });
  }

  /** Set by the executor: called when the owner cannot continue and must be recreated. */
  onBroken?: (e: unknown) => void;

  /** Set by the executor: called once when a writer of this owner was fenced (the owner stops). */
  onFenced?: () => void;

  /** A writer of this owner was fenced: the owner stops, and the executor decides whether to take the partition again. */
  fenced(): void {
    if (this.draining) return;
    void this.stop('fenced');
    this.onFenced?.();
  }

  /** Transactions and events this owner's appender committed. */
  get stats(): { transactions: number; events: number } {
    return this.appender ? { ...this.appender.stats } : { transactions: 0, events: 0 };
  }

  /** Taking ownership has finished (fenced and restored, or failed): commands need not wait. */
  get isReadySettled(): boolean {
    return this.readySettled;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  get isStopping(): boolean {
    return this.draining;
  }

  /**
   * Commands of this partition, in offset order: decide, append events, commit offsets — one transaction
   * (group commit); then the plans they touched are scheduled. See {@link CommandHandler.handle} for `guard`.
   */
  async handleCommands(messages: LogRecord[], guard: BatchGuard = {}): Promise<void> {
    await this.ready;
    if (this.draining || messages.length === 0) return;
    const touched = await this.handler.handle(messages, guard);
    for (const id of touched) this.items.schedule(id, { recover: true });
  }

  /**
   * Stops the partition: no new work; `graceMs` > 0 lets running items finish their protocol first
   * (a graceful hand-over never makes the next owner repeat an invocation), then aborts the rest.
   */
  stop(reason: string, graceMs = 0): Promise<void> {
    this.releasing ??= this.release(reason, graceMs);
    return this.releasing;
  }

  private releasing: Promise<void> | undefined;

  private async release(reason: string, graceMs: number): Promise<void> {
    this.draining = true;
    await this.items?.stop(reason, graceMs);
    this.stopped = true;
    // A fence still in flight ends first (each is bounded): released in the middle of taking the partition
    // over, this owner must not fence the ids after the next owner has (see GroupMemberOptions.onRevoked).
    await this.fencing;
    await this.appender?.idle().catch(() => {});
    await Promise.all(this.writers.map((w) => w.disconnect().catch(() => {})));
    this.book.dormant.clear(); // its bytes go back to the executor's budget
    this.log.info({ reason }, 'partition released');
  }
}

/**
 * The transactional ids of a partition's writer: `<prefix>.executor.p<N>` and `<prefix>.executor.p<N>.b`.
 * An owner fences every one of them before it reads the log, and its transactions take turns on them
 * (see {@link TransactionalAppender}). Every executor of a group must use the same set: one that fenced
 * fewer ids would leave a paused predecessor a writer to append with.
 */
export function partitionTransactionalIds(prefix: string, partition: number): string[] {
  return [`${prefix}.executor.p${partition}`, `${prefix}.executor.p${partition}.b`];
}
