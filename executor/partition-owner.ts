import type { Kafka, KafkaMessage, Message, Producer } from 'kafkajs';
import { erasureRecord } from '../src/audit/erasure-record.js';
import { topicNames, type LedgerConfig } from '../src/config.js';
import type { LedgerCodec } from '../src/codec/index.js';
import { isLedgerError } from '../src/errors.js';
import { connectFenced, transactionalProducer } from '../src/kafka/client.js';
import { eventKey, partitionFor } from '../src/kafka/partitioner.js';
import { auditTopic } from '../src/kafka/topics.js';
import type { Logger } from '../src/logging.js';
import {
  canonicalJson,
  decide,
  evolveAll,
  getItem,
  hasAppliedCommand,
  isPlanFinished,
  nextWakeUp,
  pendingRecoveries,
  readyItems,
  rejectionEvent,
  type AnyCommand,
  type ApprovalPolicy,
  type DecideContext,
  type InternalCommand,
  type InternalCommandPayloads,
  type ItemError,
  type Outcome,
  type PlanCommand,
  type PlanEvent,
  type PlanState,
} from '../src/plan/index.js';
import { toItemSpec } from '../src/plan-input.js';
import { dlqHeaders } from '../src/projection/poison.js';
import type { ArchiveLoader } from '../src/projection/restore.js';
import { stateFromSnapshot } from '../src/projection/snapshot.js';
import { isTerminalError, isToolResult, type Tool, type ToolContext, type ToolResult } from '../src/tools.js';
import { TransactionalAppender, type AppendRequest } from './appender.js';
import { faultPoint } from './faults.js';
import type { Slots } from './slots.js';

export interface OwnerDeps {
  readonly kafka: Kafka;
  readonly config: LedgerConfig;
  readonly codec: LedgerCodec;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly executorId: string;
  readonly logger: Logger;
  readonly slots: Slots;
  readonly restore: (partition: number) => Promise<{
    /** Plans seeded from a snapshot and events replayed on top (for the log and the restore benchmark). */
    fromSnapshot?: number;
    eventsReplayed?: number;
    plans: Map<string, PlanState>;
    stalled: Map<string, string>;
    /** Plans whose keys were tombstoned last (erased); see {@link PartitionOwner.erased}. */
    erased?: Set<string>;
    /** Highest seq among each plan's event keys (covers a stalled plan's records past its state). */
    lastKeySeq?: Map<string, number>;
    /** Finished plans left undecoded: planId → raw snapshot value (see {@link PartitionOwner.dormant}). */
    dormant?: Map<string, Buffer>;
    /** Highest fencing token ever used on the partition, dormant plans included. */
    maxFencingToken?: number;
    /** The partition's archived plans, read on first need (see {@link PartitionOwner.loadArchive}). */
    archived?: ArchiveLoader;
  }>;
  readonly now?: () => number;
  /** The approval policy `decide` applies to new plans and new items (see src/plan/policy.ts); none by default. */
  readonly policy?: ApprovalPolicy;
}


/**
 * The executor's view of one owned partition: the only writer of the partition's events, through a
 * transactional producer whose id is fixed per partition (`<prefix>.executor.p<N>`), so taking
 * ownership fences the previous owner. It restores every plan of the partition, serves its commands,
 * and drives ready items through intent → tool → result → settle.
 */
export class PartitionOwner {
  readonly plans = new Map<string, PlanState>();
  /** Plans that cannot advance (an undecodable or inapplicable event), with the reason. */
  readonly stalled = new Map<string, string>();
  /**
   * Erased plan ids (their last records are tombstones). A command for one behaves as for an unknown
   * plan — PLAN_NOT_FOUND for anything but CreatePlan — but its CommandRejected is tombstoned in the
   * same transaction, so nothing of the erased plan id stays live in the ledger.
   */
  readonly erased = new Set<string>();
  /**
   * Finished (completed, cancelled) plans restored without decoding: planId → the raw value of their latest
   * snapshot. Nothing runs for them; a command for one loads it into {@link plans} first ({@link wake}).
   */
  readonly dormant = new Map<string, Buffer>();
  /** The partition's archive; `archiveMerged` once its index is in {@link archivedIds} / {@link erased}. */
  private archived: ArchiveLoader | undefined;
  private archiveMerged = false;
  /** Archived (finished) plans not loaded yet: a command for one reads its snapshot from the archive. */
  private readonly archivedIds = new Set<string>();
  /** Highest event-key seq of stalled plans (their state stops before the poison record). */
  private readonly stalledKeySeq = new Map<string, number>();
  private readonly inFlight = new Set<string>();
  private readonly abort = new AbortController();
  private producer!: Producer;
  private appender!: TransactionalAppender;
  private fencingToken = 1;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires, and per plan when it next has a retry to start. */
  private timerAt: number | undefined;
  private readonly wakeAt = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private readonly log: Logger;
  private readonly topics;
  readonly ready: Promise<void>;
  /** Settled: `ready` has resolved or rejected (read synchronously on the command path). */
  private readySettled = false;

  constructor(
    readonly partition: number,
    private readonly d: OwnerDeps,
  ) {
    this.log = d.logger.child({ component: 'partition-owner', partition });
    this.topics = topicNames(d.config.topicPrefix);
    this.ready = this.start();
    this.ready.then(
      () => (this.readySettled = true),
      () => (this.readySettled = true),
    );
  }

  private now(): number {
    return this.d.now?.() ?? Date.now();
  }

  private async start(): Promise<void> {
    const t0 = Date.now();
    // Fence first, then read: once our InitProducerId returns, the previous owner can commit nothing
    // more, so the log we restore from is final.
    this.producer = transactionalProducer(this.d.kafka, `${this.d.config.topicPrefix}.executor.p${this.partition}`, { transactionTimeout: 30_000 });
    await connectFenced(this.producer);
    this.appender = new TransactionalAppender({
      producer: this.producer,
      eventsTopic: this.topics.events,
      commandsTopic: this.topics.commands,
      partition: this.partition,
      consumerGroupId: this.topics.executorsGroup,
      logger: this.log,
    });
    const restored = await this.d.restore(this.partition);
    for (const [id, s] of restored.plans) this.plans.set(id, s);
    for (const [id, r] of restored.stalled) this.stalled.set(id, r);
    for (const id of restored.erased ?? []) this.erased.add(id);
    for (const [id, seq] of restored.lastKeySeq ?? []) if (this.stalled.has(id)) this.stalledKeySeq.set(id, seq);
    for (const [id, value] of restored.dormant ?? []) if (!this.plans.has(id)) this.dormant.set(id, value);
    this.archived = restored.archived;
    // Read the archive in the background, so the first command for an unknown plan rarely waits for it.
    if (this.archived) void this.archived.load().catch(() => {});
    // Above every token ever used on the partition: the watermark vouches for the plans left dormant.
    let maxToken = restored.maxFencingToken ?? 0;
    for (const s of this.plans.values()) for (const it of Object.values(s.items)) for (const a of it.attempts) maxToken = Math.max(maxToken, a.fencingToken);
    this.fencingToken = maxToken + 1;
    this.log.info(
      { plans: this.plans.size, dormant: this.dormant.size, stalled: this.stalled.size, fromSnapshot: restored.fromSnapshot, eventsReplayed: restored.eventsReplayed, fencingToken: this.fencingToken, ms: Date.now() - t0 },
      'partition restored',
    );
    for (const planId of this.plans.keys()) this.schedule(planId);
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

  /** Commands of this partition, in offset order: decide, append events, commit offsets — one transaction. */
  async handleCommands(messages: KafkaMessage[]): Promise<void> {
    await this.ready;
    if (this.draining || messages.length === 0) return;
    const reqs: Promise<void>[] = [];
    const touched = new Set<string>();
    for (const m of messages) {
      const next = (BigInt(m.offset) + 1n).toString();
      let command: PlanCommand;
      try {
        command = await this.d.codec.decodeCommand(m.value ?? Buffer.alloc(0));
      } catch (e) {
        if (isLedgerError(e, 'UNAVAILABLE')) throw e; // registry down: retry the batch, do not dead-letter
        reqs.push(this.deadLetter(m, e, next));
        continue;
      }
      const home = partitionFor(command.planId, this.d.config.partitions);
      if (home !== this.partition) {
        // A producer with another partition count or partitioner: the plan's events live on `home`.
        reqs.push(this.deadLetter(m, { code: 'VALIDATION', message: `command for plan ${command.planId} arrived on partition ${this.partition}; its partition is ${home}`, details: { reason: 'misrouted' } }, next));
        continue;
      }
      // A plan this owner does not hold may be archived (finished) or erased: know which before deciding.
      if (!this.plans.has(command.planId)) await this.fromArchive(command.planId);
      // A finished plan restored dormant: load it, so the command is decided against its real state.
      if (!this.plans.has(command.planId) && this.dormant.has(command.planId)) await this.wake(command.planId);
      if (!this.plans.has(command.planId) && this.erased.has(command.planId)) {
        const rejected = this.rejectForErased(command, next);
        if (rejected) {
          reqs.push(rejected);
          continue;
        }
        this.erased.delete(command.planId); // an accepted CreatePlan: the id starts afresh
      }
      const stall = this.stalled.get(command.planId);
      // ErasePlan is let through for a stalled plan with a state; without one (e.g. a dormant plan whose
      // snapshot does not verify) it cannot be decided without writing over the plan's first event.
      if (stall !== undefined && (command.type !== 'ErasePlan' || !this.plans.has(command.planId))) {
        // Its log has a record this executor cannot apply; deciding on the partial state could reuse a
        // seq that is already taken. The command goes to the DLQ with the reason instead.
        reqs.push(this.deadLetter(m, { code: 'CONFLICT', message: `plan ${command.planId} is stalled (${stall}); the command was not applied`, details: { reason: 'plan_stalled' } }, next));
        continue;
      }
      if (command.type === 'ErasePlan') {
        reqs.push(this.erase(command, next));
        continue;
      }
      const events = this.decideAndApply(command, true);
      touched.add(command.planId);
      reqs.push(this.appendEvents(command.planId, events, next));
    }
    await Promise.all(reqs);
    for (const id of touched) this.schedule(id);
  }

  /**
   * Before deciding a command for a plan this owner does not hold: merges the partition's archive index
   * (once) — archived plans into {@link archivedIds}, erased ids into {@link erased}, skipping ids the
   * owner has met since its restore (held, erased or created again) — and, when the plan is archived,
   * reads its snapshot into {@link dormant}. A failed read (broker outage) throws, so the command batch is
   * retried, and is tried again then.
   */
  private async fromArchive(planId: string): Promise<void> {
    if (this.archived === undefined) return;
    if (!this.archiveMerged) {
      const archive = await this.archived.load();
      if (!this.archiveMerged) {
        this.archiveMerged = true;
        for (const id of archive.offsets.keys()) if (!this.plans.has(id) && !this.erased.has(id) && !this.dormant.has(id)) this.archivedIds.add(id);
        for (const id of archive.erased) if (!this.plans.has(id) && !this.dormant.has(id)) this.erased.add(id);
        this.log.debug({ archived: archive.offsets.size, erased: archive.erased.size }, 'archive index loaded');
      }
    }
    if (!this.archivedIds.has(planId) || this.plans.has(planId)) return;
    const value = await this.archived.value(planId);
    this.archivedIds.delete(planId);
    if (value !== undefined && !this.plans.has(planId)) this.dormant.set(planId, value);
  }

  /**
   * Loads a dormant plan from its raw snapshot (decode + verify) into {@link plans}. A snapshot that does
   * not verify stalls the plan with the reason (its commands go to the DLQ; deciding on no state would
   * write over its first event). An unreachable registry throws UNAVAILABLE: the batch is retried.
   */
  private async wake(planId: string): Promise<void> {
    const value = this.dormant.get(planId);
    if (value === undefined) return;
    let reason: string;
    try {
      const snap = await this.d.codec.decodeSnapshot(value);
      const check = stateFromSnapshot(snap);
      if (check.ok && snap.planId === planId) {
        this.dormant.delete(planId);
        if (!this.plans.has(planId)) this.plans.set(planId, check.state);
        this.log.debug({ planId, seq: check.state.seq, status: check.state.status }, 'dormant plan loaded');
        return;
      }
      reason = check.ok ? `snapshot is of plan ${snap.planId}` : check.reason;
      this.stalledKeySeq.set(planId, snap.seq);
    } catch (e) {
      if (isLedgerError(e, 'UNAVAILABLE')) throw e;
      reason = e instanceof Error ? e.message : String(e);
    }
    this.dormant.delete(planId);
    this.stalled.set(planId, `dormant snapshot not trusted: ${reason}`);
    this.log.error({ planId, reason }, 'dormant plan stalled: its snapshot does not verify');
  }

  /**
   * A command for an erased plan id that `decide` refuses (PLAN_NOT_FOUND for anything but CreatePlan):
   * its CommandRejected goes out for the client to see, followed in the same transaction by a tombstone
   * for its key, so no live record of the erased plan id comes back. Undefined when the command is
   * accepted (a CreatePlan) and must be handled normally.
   */
  private rejectForErased(command: PlanCommand, commitOffset: string): Promise<void> | undefined {
    const ctx = { now: this.now() };
    const decision = decide(undefined, command, ctx);
    if (decision.ok) return undefined;
    this.log.warn({ planId: command.planId, command: command.type, rejection: decision.rejection }, 'command for an erased plan rejected');
    const e = rejectionEvent(undefined, command, decision.rejection, ctx);
    const key = eventKey(e.planId, e.seq);
    return this.appender.append({
      events: [
        { key, value: this.d.codec.encodeEvent(e), timestamp: String(e.occurredAt) },
        { key, value: null },
      ],
      commitOffset,
    });
  }

  /**
   * ErasePlan: decided like any command (refused while approved or running without `force`), and when
   * accepted the erasure itself, in ONE transaction with the command's offset: a tombstone for every
   * event key `planId:1..seq` on the events partition, a tombstone for the plan's snapshot and its archive record, and a
   * `PlanErased` record on `<prefix>.ledger-audit`. Then the owner forgets the plan; its items still in
   * flight find no plan when they return and record nothing.
   *
   * A child plan erased before it finished (only possible with `force`) would leave its parent item
   * waiting forever, so the same transaction tells the parent: a `ChildPlanFinished` with status `failed`
   * and error `CHILD_ERASED`, under the commandId a finishing child uses (`child-finished:<childPlanId>`).
   * A child that finished already told its parent and sends nothing; should both commands ever reach the
   * parent (a stalled child whose state lags its log), the parent applies the first and ignores the other.
   */
  private erase(command: Extract<PlanCommand, { type: 'ErasePlan' }>, commitOffset: string): Promise<void> {
    const { planId } = command;
    const state = this.plans.get(planId);
    // A commandId that already caused events (its own rejection, redelivered) is decided already.
    if (state && hasAppliedCommand(state, command.commandId)) return this.appendEvents(planId, [], commitOffset);
    const rejected = this.decideAndApply(command, true);
    if (rejected.length || !state) return this.appendEvents(planId, rejected, commitOffset);

    const lastSeq = Math.max(state.seq, this.stalledKeySeq.get(planId) ?? 0);
    const tombstones: Message[] = Array.from({ length: lastSeq }, (_, i) => ({ key: eventKey(planId, i + 1), value: null }));
    const toParent = state.parent && !isPlanFinished(state.status) ? this.childErasedCommand(state, command) : undefined;
    const record = erasureRecord(state, {
      commandId: command.commandId,
      by: command.data.by,
      reason: command.data.reason,
      force: command.data.force,
      partition: this.partition,
      now: this.now(),
      executorId: this.d.executorId,
      lastSeq,
      ...(toParent ? { parentNotified: { planId: toParent.planId, itemId: toParent.data.parentItemId, commandId: toParent.commandId } } : {}),
    });
    this.plans.delete(planId);
    this.dormant.delete(planId);
    this.archivedIds.delete(planId);
    this.stalled.delete(planId);
    this.stalledKeySeq.delete(planId);
    this.erased.add(planId);
    this.log.info({ planId, status: state.status, events: lastSeq, forced: record.forced, by: record.by, parentNotified: record.parentNotified }, 'plan erased');
    return this.appender.append({
      events: tombstones,
      extra: [
        { topic: this.topics.snapshots, messages: [{ key: planId, value: null, partition: this.partition }] },
        { topic: this.topics.archive, messages: [{ key: planId, value: null, partition: this.partition }] },
        { topic: auditTopic(this.d.config.topicPrefix), messages: [{ key: planId, value: JSON.stringify(record) }] },
        ...(toParent ? [{ topic: this.topics.commands, messages: [this.commandMessage(toParent)] }] : []),
      ],
      commitOffset,
    });
  }

  /** The command goes to the DLQ (same partition number, original key and value, cause in headers) with its offset. */
  private deadLetter(m: KafkaMessage, e: unknown, commitOffset: string): Promise<void> {
    const err = e as { code?: string; message?: string; details?: { reason?: string } };
    const reason = String(err.details?.reason ?? 'unknown');
    this.log.error({ offset: m.offset, reason, err: err.message }, 'command sent to the DLQ');
    const headers = dlqHeaders({
      sourceTopic: this.topics.commands,
      sourcePartition: this.partition,
      sourceOffset: m.offset,
      code: String(err.code ?? 'SCHEMA'),
      reason,
      message: String(err.message ?? e),
    });
    const dlq: Message = { key: m.key, value: m.value, partition: this.partition, headers };
    return this.appender.append({ events: [], extra: [{ topic: this.topics.dlq, messages: [dlq] }], commitOffset });
  }

  /**
   * Decides a command against the current state and applies the resulting events at once, so the next
   * decision sees them. If their transaction later fails, the owner is reset from the log.
   */
  private decideAndApply(command: AnyCommand, recordRejection: boolean): PlanEvent[] {
    const state = this.plans.get(command.planId);
    const ctx: DecideContext = { now: this.now(), ...(this.d.policy !== undefined ? { policy: this.d.policy } : {}) };
    const decision = decide(state, command, ctx);
    let events: PlanEvent[];
    if (decision.ok) {
      events = decision.events;
    } else {
      this.log.warn({ planId: command.planId, command: command.type, rejection: decision.rejection }, 'command rejected');
      if (!recordRejection) return [];
      events = [rejectionEvent(state, command, decision.rejection, ctx)];
    }
    const s = evolveAll(state, events);
    if (s) this.plans.set(command.planId, s);
    return events;
  }

  private internal<K extends keyof InternalCommandPayloads>(type: K, planId: string, commandId: string, data: InternalCommandPayloads[K]): InternalCommand {
    return { type, planId, commandId, issuedAt: this.now(), actor: this.d.executorId, correlationId: commandId, data } as InternalCommand;
  }

  /** Encodes and appends a plan's events; a plan that just finished tells its parent (cross-partition). */
  private appendEvents(planId: string, events: PlanEvent[], commitOffset?: string, extra: AppendRequest['extra'] = []): Promise<void> {
    const messages: Message[] = events.map((e) => ({ key: eventKey(e.planId, e.seq), value: this.d.codec.encodeEvent(e), timestamp: String(e.occurredAt) }));
    const finished = events.find((e) => e.type === 'PlanCompleted' || e.type === 'PlanFailed' || e.type === 'PlanCancelled');
    const state = this.plans.get(planId);
    const all = [...extra];
    if (finished && state?.parent) all.push(this.childFinishedCommand(state, finished));
    if (!messages.length && !all.length && commitOffset === undefined) return Promise.resolve();
    return this.appender.append({ events: messages, extra: all, ...(commitOffset !== undefined ? { commitOffset } : {}) });
  }

  private childFinishedCommand(state: PlanState, finished: PlanEvent): { topic: string; messages: Message[] } {
    const outputs: Record<string, unknown> = {};
    for (const id of state.itemOrder) {
      const out = state.items[id]?.outputJson;
      if (out != null) outputs[id] = JSON.parse(out);
    }
    const status = finished.type === 'PlanCompleted' ? 'completed' : finished.type === 'PlanFailed' ? 'failed' : 'cancelled';
    const command = this.toParent(state, finished.correlationId, {
      status,
      outputJson: status === 'completed' ? canonicalJson(outputs) : null,
      error: status === 'completed' ? null : { code: `CHILD_${status.toUpperCase()}`, message: `child plan ${state.planId} ${status}`, detailsJson: null },
    });
    return { topic: this.topics.commands, messages: [this.commandMessage(command)] };
  }

  /**
   * The ChildPlanFinished a child plan erased before it finished sends its parent: status `failed`, so
   * the parent item fails terminally, as with a failed child. Same commandId as a finishing child's.
   */
  private childErasedCommand(state: PlanState, erase: Extract<PlanCommand, { type: 'ErasePlan' }>): Extract<PlanCommand, { type: 'ChildPlanFinished' }> {
    const { by } = erase.data;
    return this.toParent(state, erase.correlationId, {
      status: 'failed',
      outputJson: null,
      error: {
        code: 'CHILD_ERASED',
        message: `child plan ${state.planId} was erased by ${by} while ${state.status}`,
        detailsJson: canonicalJson({ childPlanId: state.planId, erasedBy: by, erasureCommandId: erase.commandId, statusAtErasure: state.status }),
      },
    });
  }

  /** A ChildPlanFinished from a child plan to the item of its parent that delegated to it. */
  private toParent(
    state: PlanState,
    correlationId: string,
    result: Pick<Extract<PlanCommand, { type: 'ChildPlanFinished' }>['data'], 'status' | 'outputJson' | 'error'>,
  ): Extract<PlanCommand, { type: 'ChildPlanFinished' }> {
    const parent = state.parent!;
    return {
      type: 'ChildPlanFinished',
      // One id per child: whatever ends the child first (finishing, erasure) is the one the parent applies.
      commandId: `child-finished:${state.planId}`,
      planId: parent.planId,
      issuedAt: this.now(),
      actor: this.d.executorId,
      correlationId,
      data: { parentItemId: parent.itemId, childPlanId: state.planId, ...result },
    };
  }

  private commandMessage(c: PlanCommand): Message {
    return { key: c.planId, value: this.d.codec.encodeCommand(c), partition: partitionFor(c.planId, this.d.config.partitions) };
  }

  /** Looks at a plan and starts whatever can run: recoveries of items mid-protocol, then ready items. */
  schedule(planId: string): void {
    if (this.draining) return;
    const state = this.plans.get(planId);
    if (!state || this.stalled.has(planId) || isPlanFinished(state.status)) return;
    for (const r of pendingRecoveries(state)) {
      const key = `${planId}/${r.itemId}`;
      if (r.action.kind === 'await_child' || this.inFlight.has(key)) continue;
      if (r.action.kind === 'settle') {
        this.track(key, planId, r.itemId, () => this.settle(planId, r.itemId, r.action.attempt));
      } else {
        this.launchInvocation(planId, r.itemId, r.action.attempt, true);
      }
    }
    void this.startReady(planId).catch((e: unknown) => this.onItemError(planId, '(intents)', e));
  }

  /**
   * Notes when a plan next has an item to start (a scheduled retry), and keeps one timer at the earliest
   * such time of the partition. Per plan, so an item step costs nothing for the other plans.
   */
  private noteWakeUp(planId: string): void {
    const state = this.plans.get(planId);
    const at = state ? nextWakeUp(state, this.now()) : null;
    if (at === null) {
      this.wakeAt.delete(planId);
      return;
    }
    this.wakeAt.set(planId, at);
    if (this.timerAt === undefined || at < this.timerAt) this.armTimer(at);
  }

  private armTimer(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.onTimer(), Math.max(0, at - this.now()) + 5);
    this.timer.unref();
  }

  /** The timer fired: schedule the plans whose retry time came, re-arm for the next one. */
  private onTimer(): void {
    this.timer = undefined;
    this.timerAt = undefined;
    const now = this.now();
    let next: number | undefined;
    for (const [planId, at] of [...this.wakeAt]) {
      if (at <= now) {
        this.wakeAt.delete(planId);
        this.schedule(planId);
      } else if (next === undefined || at < next) {
        next = at;
      }
    }
    if (next !== undefined && this.timerAt === undefined) this.armTimer(next);
  }

  /**
   * Records the intent of every ready item of a plan (as many as there are free tool slots) in ONE
   * append — together with `leading` events, e.g. the completion that made them ready — and, once that
   * transaction committed, invokes their tools. Piggybacking the next intents on the previous
   * completion keeps a sequential chain at two transactions per item.
   */
  private async startReady(planId: string, leading: PlanEvent[] = []): Promise<void> {
    const intents: Array<{ itemId: string; attempt: number }> = [];
    const events = [...leading];
    const state = this.plans.get(planId);
    if (!this.draining && state && !this.stalled.has(planId) && !isPlanFinished(state.status)) {
      const budget = Math.max(1, this.d.slots.limit - this.d.slots.inUse - this.d.slots.waitingCount);
      for (const item of readyItems(state, this.now())) {
        if (intents.length >= budget) break;
        const key = `${planId}/${item.itemId}`;
        if (this.inFlight.has(key)) continue;
        const recorded = this.decideAndApply(
          this.internal('RecordIntent', planId, `intent:${item.idempotencyKey}`, { itemId: item.itemId, executorId: this.d.executorId, fencingToken: this.fencingToken }),
          false,
        );
        if (!recorded.length) continue;
        this.inFlight.add(key);
        events.push(...recorded);
        intents.push({ itemId: item.itemId, attempt: item.nextAttempt });
      }
    }
    try {
      await this.appendEvents(planId, events);
    } finally {
      for (const i of intents) this.inFlight.delete(`${planId}/${i.itemId}`);
    }
    for (const i of intents) {
      faultPoint('after_intent', { planId, itemId: i.itemId, attempt: i.attempt });
      this.launchInvocation(planId, i.itemId, i.attempt, false);
    }
    this.noteWakeUp(planId);
  }

  private launchInvocation(planId: string, itemId: string, attempt: number, recovering: boolean): void {
    this.track(`${planId}/${itemId}`, planId, itemId, () => this.invoke(planId, itemId, attempt, recovering));
  }

  /** Runs one item step with in-flight bookkeeping; reschedules the plan when it ends. */
  private track(key: string, planId: string, itemId: string, step: () => Promise<unknown>): void {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    const p: Promise<void> = step()
      .then(() => undefined)
      .catch((e: unknown) => this.onItemError(planId, itemId, e))
      .finally(() => {
        this.inFlight.delete(key);
        this.running.delete(p);
        this.schedule(planId);
      });
    this.running.add(p);
  }

  private onItemError(planId: string, itemId: string, e: unknown): void {
    if (this.stopped || this.abort.signal.aborted) return;
    if (isLedgerError(e, 'FENCED')) {
      this.log.warn({ planId }, 'fenced by a newer owner; giving the partition up');
      void this.stop('fenced');
      return;
    }
    this.log.error({ err: e, planId, itemId }, 'item step failed; resetting the partition from the log');
    void this.stop('append failed');
    this.onBroken?.(e);
  }

  /** Set by the executor: called when the owner cannot continue and must be recreated. */
  onBroken?: (e: unknown) => void;

  private key(planId: string, itemId: string, attempt: number): string {
    return `${planId}/${itemId}/${attempt}`;
  }

  /** Settles an item whose result is committed, recording the next ready intents in the same transaction. */
  private async settle(planId: string, itemId: string, attempt: number): Promise<void> {
    const settled = this.decideAndApply(this.internal('SettleItem', planId, `settle:${this.key(planId, itemId, attempt)}`, { itemId }), false);
    await this.startReady(planId, settled);
  }

  /** Invokes the tool of an item whose intent is committed; records the result; settles. */
  private async invoke(planId: string, itemId: string, attempt: number, recovering: boolean): Promise<void> {
    if (this.stopped) return;
    const state = this.plans.get(planId);
    const item = state && getItem(state, itemId);
    if (!state || !item || item.status !== 'in_progress') return;
    const tool = this.d.tools.get(item.tool);
    const log = this.log.child({ planId, itemId, attempt, tool: item.tool });
    const deps: Record<string, unknown> = {};
    for (const dep of item.dependsOn) {
      const out = getItem(state, dep)?.outputJson;
      deps[dep] = out == null ? null : JSON.parse(out);
    }
    const ctx: ToolContext = {
      planId,
      itemId,
      attempt,
      idempotencyKey: this.key(planId, itemId, attempt),
      fencingToken: this.fencingToken,
      signal: this.abort.signal,
      log,
      dependencies: deps,
      recovering,
    };

    const t0 = Date.now();
    let outcome: Outcome = 'succeeded';
    let output: unknown = null;
    let error: ItemError | null = null;
    let result: ToolResult | undefined;
    if (!tool) {
      outcome = 'failed_terminal';
      error = { code: 'UNKNOWN_TOOL', message: `no tool named "${item.tool}" is registered with executor ${this.d.executorId}`, detailsJson: null };
    } else {
      try {
        const probed = recovering && tool.probe ? await tool.probe(ctx) : undefined;
        if (probed?.done) {
          log.info('probe found the effect already done; recording its output without invoking');
          output = probed.output;
        } else {
          log.debug({ recovering }, 'invoking tool');
          // The slot bounds tools running at once; recording the result does not hold one.
          const ret = await this.d.slots.run(async () => (this.abort.signal.aborted ? ABORTED : await tool.run(JSON.parse(item.inputJson), ctx)));
          if (ret === ABORTED || ret === undefined && this.abort.signal.aborted) return;
          if (isToolResult(ret)) {
            result = ret;
            output = ret.output ?? null;
          } else {
            output = ret ?? null;
          }
        }
      } catch (e) {
        if (this.abort.signal.aborted || this.stopped) return; // handed over: the next owner recovers the attempt
        outcome = isTerminalError(e) ? 'failed_terminal' : 'failed_retryable';
        const err = e as { code?: unknown; message?: string; details?: unknown };
        error = {
          code: typeof err.code === 'string' ? err.code : outcome === 'failed_terminal' ? 'TERMINAL' : 'RETRYABLE',
          message: String(err.message ?? e),
          detailsJson: err.details === undefined ? null : safeJson(err.details),
        };
      }
    }
    const durationMs = Date.now() - t0;
    faultPoint('after_tool', { planId, itemId, attempt });
    if (this.stopped) return;

    if (result?.delegate && outcome === 'succeeded') {
      const childPlanId = `${planId}.${itemId}.${attempt}`;
      const events = this.decideAndApply(this.internal('DelegateItem', planId, `delegate:${ctx.idempotencyKey}`, { itemId, attempt, childPlanId }), false);
      if (!events.length) return;
      const create: PlanCommand = {
        type: 'CreatePlan',
        commandId: `create-child:${childPlanId}`,
        planId: childPlanId,
        issuedAt: this.now(),
        actor: this.d.executorId,
        correlationId: state.planId,
        data: {
          goal: result.delegate.goal,
          mode: 'execute',
          labels: { ...(result.delegate.labels ?? {}), parentPlan: planId },
          parent: { planId, itemId },
          items: result.delegate.items.map((it, i) => toItemSpec(it, `delegate.items[${i}]`)),
        },
      };
      await this.appendEvents(planId, events, undefined, [{ topic: this.topics.commands, messages: [this.commandMessage(create)] }]);
      return;
    }

    let outputJson: string | null = null;
    if (outcome === 'succeeded') {
      try {
        outputJson = canonicalJson(output ?? null);
      } catch (e) {
        outcome = 'failed_terminal';
        error = { code: 'INVALID_OUTPUT', message: `tool output is not JSON: ${(e as Error).message}`, detailsJson: null };
      }
    }
    const followUps = outcome === 'succeeded' ? (result?.followUps ?? []).map((f, i) => toItemSpec(f, `followUps[${i}]`)) : [];
    const committed = this.decideAndApply(
      this.internal('CommitResult', planId, `result:${ctx.idempotencyKey}`, { itemId, attempt, outcome, outputJson, error, durationMs, executorId: this.d.executorId, followUps }),
      false,
    );
    if (!committed.length) return;
    await this.appendEvents(planId, committed);
    faultPoint('after_result', { planId, itemId, attempt });
    if (this.stopped) return;
    await this.settle(planId, itemId, attempt);
  }

  /**
   * Stops the partition: no new work; `graceMs` > 0 lets running items finish their protocol first
   * (a graceful hand-over never makes the next owner repeat an invocation), then aborts the rest.
   */
  async stop(reason: string, graceMs = 0): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    if (this.timer) clearTimeout(this.timer);
    if (graceMs > 0 && this.running.size) {
      await Promise.race([Promise.allSettled([...this.running]), new Promise((r) => setTimeout(r, graceMs))]);
    }
    this.stopped = true;
    this.abort.abort(new Error(`partition ${this.partition} released: ${reason}`));
    await Promise.race([Promise.allSettled([...this.running]), new Promise((r) => setTimeout(r, 2000))]);
    await this.appender?.idle().catch(() => {});
    await this.producer?.disconnect().catch(() => {});
    this.log.info({ reason }, 'partition released');
  }

  /** No new work is started (stopping or stopped). */
  private draining = false;
  get isStopping(): boolean {
    return this.draining;
  }
}

const ABORTED = Symbol('aborted');

function safeJson(v: unknown): string | null {
  try {
    return canonicalJson(v);
  } catch {
    return null;
  }
}
