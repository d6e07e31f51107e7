import type { Kafka, KafkaMessage, Message, Producer } from 'kafkajs';
import { erasureRecord } from '../src/audit/erasure-record.js';
import { blobTombstones, parseRef, payloadPlacement, toBlob, type BlobReader, type PayloadLimits } from '../src/blobs/index.js';
import { topicNames, type LedgerConfig } from '../src/config.js';
import type { LedgerCodec } from '../src/codec/index.js';
import { isLedgerError } from '../src/errors.js';
import { connectFenced, transactionalProducer } from '../src/kafka/client.js';
import { eventKey, partitionFor } from '../src/kafka/partitioner.js';
import { auditTopic } from '../src/kafka/topics.js';
import type { Logger } from '../src/logging.js';
import {
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
  type DecideLimits,
  type InternalCommand,
  type InternalCommandPayloads,
  type ItemError,
  type PlanCommand,
  type PlanEvent,
  type PlanState,
  type Rejection,
} from '../src/plan/index.js';
import { toItemSpec } from '../src/plan-input.js';
import type { ArchiveLoader } from '../src/projection/restore.js';
import { stateFromSnapshot } from '../src/projection/snapshot.js';
import type { Tool } from '../src/tools.js';
import { TransactionalAppender, type AppendRequest } from './appender.js';
import { faultPoint } from './faults.js';
import { runAttempt, type AttemptOutcome } from './item-runner.js';
import type { ExecutorMetrics } from './metrics.js';
import { childErasedCommand, childFinishedCommand, commandMessage, deadLetterMessage, eventMessages, recordBytes } from './records.js';
import { RetryTimer } from './retry-timer.js';
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
  readonly limits: OwnerLimits;
  readonly metrics: ExecutorMetrics;
  /** Resolves payloads stored by reference (inputs, dependencies' outputs). */
  readonly blobs: BlobReader;
}

/** The bounds an owner keeps every step within (see the README's Limits). */
export interface OwnerLimits {
  /** Largest record the events topic takes (its max.message.bytes); a bigger event is refused before it is appended. */
  readonly maxRecordBytes: number;
  /** Default tool timeout; a tool's own `timeoutMs` wins. */
  readonly toolTimeoutMs: number;
  /** How long a tool that ignores its aborted signal keeps its slot after the timeout. */
  readonly abortGraceMs: number;
  /** Limits `decide` enforces (inline payload bytes, items per plan). */
  readonly decide: DecideLimits;
  /** Payloads above `inlineBytes` go by reference to the blobs topic; none may pass `maxPayloadBytes`. */
  readonly payload: PayloadLimits;
}

/** A command the owner could not get into the ledger: the executor counts these per offset (see Executor). */
export class CommandStepError extends Error {
  constructor(
    readonly offset: string,
    readonly failure: unknown,
  ) {
    super(`command at offset ${offset} failed: ${failure instanceof Error ? failure.message : String(failure)}`);
  }
}

/** How the executor asks an owner to take a batch after failures (see Executor.eachBatch). */
export interface BatchGuard {
  /** Decide and append one command per transaction, so a failure names its command. */
  readonly isolate?: boolean;
  /** A command that failed repeatedly: dead-letter it with this cause instead of deciding it again. */
  readonly poison?: { readonly offset: string; readonly cause: string; readonly failures: number };
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
  private readonly retries: RetryTimer;
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
    this.retries = new RetryTimer(
      () => this.now(),
      (planId) => this.schedule(planId),
    );
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
      maxRequestBytes: this.d.limits.maxRecordBytes,
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

  /**
   * Commands of this partition, in offset order: decide, append events, commit offsets — one transaction
   * (group commit). With `guard.isolate`, one command per transaction, so a failure names its command
   * ({@link CommandStepError}); `guard.poison` is a command that failed repeatedly: it goes to the DLQ with
   * its cause instead of being decided again, and the partition moves on.
   */
  async handleCommands(messages: KafkaMessage[], guard: BatchGuard = {}): Promise<void> {
    await this.ready;
    if (this.draining || messages.length === 0) return;
    const reqs: Promise<void>[] = [];
    const touched = new Set<string>();
    for (const m of messages) {
      const next = (BigInt(m.offset) + 1n).toString();
      const req = this.handleCommand(m, next, guard, touched);
      if (!req) continue;
      if (guard.isolate) {
        try {
          await req;
        } catch (e) {
          throw isLedgerError(e, 'FENCED') || isLedgerError(e, 'UNAVAILABLE') ? e : new CommandStepError(m.offset, e);
        }
      } else {
        reqs.push(req);
      }
    }
    await Promise.all(reqs);
    for (const id of touched) this.schedule(id);
  }

  /** One command: the append request that records what it caused (events, a rejection, a DLQ record). */
  private handleCommand(m: KafkaMessage, next: string, guard: BatchGuard, touched: Set<string>): Promise<void> | undefined {
    if (guard.poison && guard.poison.offset === m.offset) {
      return this.deadLetter(m, { code: 'INTERNAL', message: `the command failed ${guard.poison.failures} times in a row; last: ${guard.poison.cause}`, details: { reason: 'repeated_failure' } }, next);
    }
    return this.decodeAndDecide(m, next, touched);
  }

  private decodeAndDecide(m: KafkaMessage, next: string, touched: Set<string>): Promise<void> {
    return (async () => {
      let command: PlanCommand;
      try {
        command = await this.d.codec.decodeCommand(m.value ?? Buffer.alloc(0));
      } catch (e) {
        if (isLedgerError(e, 'UNAVAILABLE')) throw e; // registry down: retry the batch, do not dead-letter
        return this.deadLetter(m, e, next);
      }
      const home = partitionFor(command.planId, this.d.config.partitions);
      if (home !== this.partition) {
        // A producer with another partition count or partitioner: the plan's events live on `home`.
        return this.deadLetter(m, { code: 'VALIDATION', message: `command for plan ${command.planId} arrived on partition ${this.partition}; its partition is ${home}`, details: { reason: 'misrouted' } }, next);
      }
      // A plan this owner does not hold may be archived (finished) or erased: know which before deciding.
      if (!this.plans.has(command.planId)) await this.fromArchive(command.planId);
      // A finished plan restored dormant: load it, so the command is decided against its real state.
      if (!this.plans.has(command.planId) && this.dormant.has(command.planId)) await this.wake(command.planId);
      const stall = this.stalled.get(command.planId);
      // ErasePlan is let through for a stalled plan with a state; without one (e.g. a dormant plan whose
      // snapshot does not verify) it cannot be decided without writing over the plan's first event.
      if (stall !== undefined && (command.type !== 'ErasePlan' || !this.plans.has(command.planId))) {
        // Its log has a record this executor cannot apply; deciding on the partial state could reuse a
        // seq that is already taken. The command goes to the DLQ with the reason instead.
        return this.deadLetter(m, { code: 'CONFLICT', message: `plan ${command.planId} is stalled (${stall}); the command was not applied`, details: { reason: 'plan_stalled' } }, next);
      }
      if (!this.plans.has(command.planId)) {
        // No plan (unknown, or erased): a refusal is answered without leaving a live record behind.
        const refused = this.rejectWithoutPlan(m, command, next);
        if (refused) return refused;
        this.erased.delete(command.planId); // an accepted CreatePlan: the id starts afresh
      }
      if (command.type === 'ErasePlan') return this.erase(command, next);
      const decided = this.decideAndApply(command, true);
      if (decided.fault !== undefined) {
        return this.deadLetter(m, { code: 'INTERNAL', message: `decide failed on this command (a defect, not a rejection): ${decided.fault}`, details: { reason: 'decide_fault' } }, next);
      }
      touched.add(command.planId);
      return this.appendDecided(command.planId, decided, next);
    })();
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
   * A command for a plan this owner does not hold (never created, or erased) that `decide` refuses —
   * PLAN_NOT_FOUND for anything but CreatePlan, or an invalid CreatePlan: its CommandRejected goes out for
   * the client to see, followed in the same transaction by a tombstone for its key, so no live record of
   * a plan that does not exist stays in the compacted events topic (anyone could otherwise grow it without
   * bound). Once the cleaner has run, only the tombstone is left, until delete.retention.ms. Undefined when
   * the command is accepted (a CreatePlan) and must be handled normally.
   */
  private rejectWithoutPlan(m: KafkaMessage, command: PlanCommand, commitOffset: string): Promise<void> | undefined {
    const ctx = { now: this.now(), limits: this.d.limits.decide };
    const decision = decide(undefined, command, ctx);
    if (decision.ok) return undefined;
    if (decision.fault !== undefined) {
      this.d.metrics.decideFaults.inc();
      return this.deadLetter(m, { code: 'INTERNAL', message: `decide failed on this command (a defect, not a rejection): ${decision.fault}`, details: { reason: 'decide_fault' } }, commitOffset);
    }
    this.log.warn({ planId: command.planId, command: command.type, rejection: decision.rejection }, 'command for a plan that does not exist rejected');
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
    if (rejected.events.length || !state) return this.appendDecided(planId, rejected, commitOffset);

    const lastSeq = Math.max(state.seq, this.stalledKeySeq.get(planId) ?? 0);
    const tombstones: Message[] = Array.from({ length: lastSeq }, (_, i) => ({ key: eventKey(planId, i + 1), value: null }));
    const toParent = state.parent && !isPlanFinished(state.status) ? childErasedCommand(state, command, { executorId: this.d.executorId, now: this.now() }) : undefined;
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
    // Every payload the plan stored by reference: inputs, outputs of every attempt.
    const blobs = new Map<string, Message[]>();
    for (const id of state.itemOrder) {
      const item = getItem(state, id);
      for (const json of [item?.inputJson, item?.outputJson, ...(item?.attempts ?? []).map((a) => a.outputJson)]) {
        const ref = parseRef(json);
        if (ref && !blobs.has(ref.sha256)) blobs.set(ref.sha256, blobTombstones(planId, ref, this.partition));
      }
    }
    this.log.info({ planId, status: state.status, events: lastSeq, blobs: blobs.size, forced: record.forced, by: record.by, parentNotified: record.parentNotified }, 'plan erased');
    return this.appender.append({
      events: tombstones,
      extra: [
        { topic: this.topics.snapshots, messages: [{ key: planId, value: null, partition: this.partition }] },
        { topic: this.topics.archive, messages: [{ key: planId, value: null, partition: this.partition }] },
        ...(blobs.size ? [{ topic: this.topics.blobs, messages: [...blobs.values()].flat() }] : []),
        { topic: auditTopic(this.d.config.topicPrefix), messages: [{ key: planId, value: JSON.stringify(record) }] },
        ...(toParent ? [{ topic: this.topics.commands, messages: [commandMessage(this.d.codec, this.d.config.partitions, toParent)] }] : []),
      ],
      commitOffset,
    });
  }

  /** The command goes to the DLQ (same partition number, original key and value, cause in headers) with its offset. */
  private deadLetter(m: KafkaMessage, e: unknown, commitOffset: string): Promise<void> {
    const err = e as { code?: string; message?: string; details?: { reason?: string } };
    const reason = String(err.details?.reason ?? 'unknown');
    this.log.error({ offset: m.offset, reason, err: err.message }, 'command sent to the DLQ');
    this.d.metrics.deadLettered.inc({ reason });
    const dlq = deadLetterMessage(m, { topic: this.topics.commands, partition: this.partition }, { code: String(err.code ?? 'SCHEMA'), reason, message: String(err.message ?? e) });
    return this.appender.append({ events: [], extra: [{ topic: this.topics.dlq, messages: [dlq] }], commitOffset });
  }

  /**
   * Decides a command against the current state and applies the resulting events at once, so the next
   * decision sees them; the events come back encoded. If their transaction later fails, the owner is reset
   * from the log. Nothing that cannot be appended is applied:
   * - a rejection is recorded (`recordRejection`, client commands) or returned (`rejection`, internal steps);
   * - an event larger than the topic's record limit turns the decision into a PAYLOAD_TOO_LARGE rejection;
   * - a defect inside `decide` (`fault`) applies nothing and records nothing: the caller dead-letters.
   */
  private decideAndApply(command: AnyCommand, recordRejection: boolean): Decided {
    const state = this.plans.get(command.planId);
    const ctx = { now: this.now(), limits: this.d.limits.decide };
    const decision = decide(state, command, ctx);
    let events: PlanEvent[];
    let rejection: Rejection | undefined;
    if (decision.ok) {
      events = decision.events;
    } else if (decision.fault !== undefined) {
      this.d.metrics.decideFaults.inc();
      this.log.error({ planId: command.planId, command: command.type, fault: decision.fault }, 'decide failed (a defect): nothing recorded for this command');
      return { events: [], messages: [], fault: decision.fault };
    } else {
      rejection = decision.rejection;
      events = [];
    }
    let messages = eventMessages(this.d.codec, events);
    const oversized = messages.findIndex((msg) => recordBytes(msg) > this.d.limits.maxRecordBytes);
    if (oversized >= 0) {
      const e = events[oversized]!;
      rejection = {
        code: 'PAYLOAD_TOO_LARGE',
        message: `event ${e.type} (seq ${e.seq}) would be ${recordBytes(messages[oversized]!)} bytes; the events topic takes at most ${this.d.limits.maxRecordBytes}`,
        field: null,
      };
      events = [];
      messages = [];
    }
    if (rejection !== undefined) {
      this.log.warn({ planId: command.planId, command: command.type, rejection }, 'command rejected');
      if (!recordRejection) return { events: [], messages: [], rejection };
      events = [rejectionEvent(state, command, rejection, ctx)];
      messages = eventMessages(this.d.codec, events);
    }
    const s = evolveAll(state, events);
    if (s) this.plans.set(command.planId, s);
    return { events, messages, ...(rejection ? { rejection } : {}) };
  }

  private internal<K extends keyof InternalCommandPayloads>(type: K, planId: string, commandId: string, data: InternalCommandPayloads[K]): InternalCommand {
    return { type, planId, commandId, issuedAt: this.now(), actor: this.d.executorId, correlationId: commandId, data } as InternalCommand;
  }

  /** Appends decided events (already encoded); a plan that just finished tells its parent (cross-partition). */
  private appendDecided(planId: string, decided: Pick<Decided, 'events' | 'messages'>, commitOffset?: string, extra: AppendRequest['extra'] = []): Promise<void> {
    const finished = decided.events.find((e) => e.type === 'PlanCompleted' || e.type === 'PlanFailed' || e.type === 'PlanCancelled');
    const state = this.plans.get(planId);
    const all = [...extra];
    if (finished && state?.parent) {
      const told = childFinishedCommand(state, finished, { executorId: this.d.executorId, now: this.now() });
      all.push({ topic: this.topics.commands, messages: [commandMessage(this.d.codec, this.d.config.partitions, told)] });
    }
    if (!decided.messages.length && !all.length && commitOffset === undefined) return Promise.resolve();
    return this.appender.append({ events: decided.messages, extra: all, ...(commitOffset !== undefined ? { commitOffset } : {}) });
  }

  /** Encodes and appends events (for callers that built them outside {@link decideAndApply}). */
  private appendEvents(planId: string, events: PlanEvent[], commitOffset?: string): Promise<void> {
    return this.appendDecided(planId, { events, messages: eventMessages(this.d.codec, events) }, commitOffset);
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

  /** Notes when a plan next has an item to start (a scheduled retry). */
  private noteWakeUp(planId: string): void {
    const state = this.plans.get(planId);
    this.retries.note(planId, state ? nextWakeUp(state, this.now()) : null);
  }

  /**
   * Records the intent of every ready item of a plan (as many as there are free tool slots) in ONE
   * append — together with `leading` events, e.g. the result and completion that made them ready — and,
   * once that transaction committed, invokes their tools. In steady state an item step is one
   * transaction: its result, its completion and the intents it readies.
   */
  private async startReady(planId: string, leading: Decided[] = [], afterCommit?: () => void, extra: AppendRequest['extra'] = []): Promise<void> {
    const intents: Array<{ itemId: string; attempt: number }> = [];
    const events: PlanEvent[] = leading.flatMap((d) => d.events);
    const messages: Message[] = leading.flatMap((d) => d.messages);
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
        if (!recorded.events.length) continue;
        this.inFlight.add(key);
        events.push(...recorded.events);
        messages.push(...recorded.messages);
        intents.push({ itemId: item.itemId, attempt: item.nextAttempt });
      }
    }
    try {
      await this.appendDecided(planId, { events, messages }, undefined, extra);
    } finally {
      for (const i of intents) this.inFlight.delete(`${planId}/${i.itemId}`);
    }
    afterCommit?.();
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
        // Rescheduled on the next turn: a step that recorded nothing must never re-run in a tight loop.
        setImmediate(() => this.schedule(planId));
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

  /** Settles an item whose result is committed (recovery, a child's result), with the next ready intents. */
  private async settle(planId: string, itemId: string, attempt: number): Promise<void> {
    const settled = this.decideAndApply(this.internal('SettleItem', planId, `settle:${this.key(planId, itemId, attempt)}`, { itemId }), false);
    await this.startReady(planId, [settled]);
  }

  /**
   * Invokes the tool of an item whose intent is committed, then records the outcome: result, completion
   * (or retry / failure) and the intents it readies, in one transaction. The attempt always ends in a
   * recorded outcome or is abandoned to the next owner (a hand-over); it is never dropped and re-invoked.
   */
  private async invoke(planId: string, itemId: string, attempt: number, recovering: boolean): Promise<void> {
    if (this.stopped) return;
    const state = this.plans.get(planId);
    const item = state && getItem(state, itemId);
    if (!state || !item || item.status !== 'in_progress') return;
    const tool = this.d.tools.get(item.tool);
    const log = this.log.child({ planId, itemId, attempt, tool: item.tool });
    const idempotencyKey = this.key(planId, itemId, attempt);
    // Payloads stored by reference are read before the tool runs; one that cannot be read fails the attempt.
    let inputJson: string;
    const deps: Record<string, unknown> = {};
    try {
      inputJson = await this.d.blobs.resolve(planId, item.inputJson);
      for (const dep of item.dependsOn) {
        const out = getItem(state, dep)?.outputJson;
        deps[dep] = out == null ? null : JSON.parse(await this.d.blobs.resolve(planId, out));
      }
    } catch (e) {
      if (this.stopped) return;
      const terminal = isLedgerError(e, 'NOT_FOUND') || isLedgerError(e, 'INTEGRITY');
      log.error({ err: e }, 'a payload stored by reference could not be read');
      return this.record(planId, itemId, attempt, {
        kind: 'result',
        outcome: terminal ? 'failed_terminal' : 'failed_retryable',
        outputJson: null,
        error: { code: terminal ? 'PAYLOAD_UNREADABLE' : 'PAYLOAD_UNAVAILABLE', message: `a payload of this item could not be read: ${(e as Error).message}`, detailsJson: null },
        followUps: [],
        durationMs: 0,
      }, log);
    }
    const ended = await runAttempt(
      {
        tool,
        toolName: item.tool,
        inputJson,
        ctx: { planId, itemId, attempt, idempotencyKey, fencingToken: this.fencingToken, log, dependencies: deps, recovering },
        release: this.abort.signal,
        timeoutMs: tool?.timeoutMs ?? this.d.limits.toolTimeoutMs,
        abortGraceMs: this.d.limits.abortGraceMs,
        slots: this.d.slots,
        maxOutputBytes: this.d.limits.payload.maxPayloadBytes,
        executorId: this.d.executorId,
      },
      log,
    );
    faultPoint('after_tool', { planId, itemId, attempt });
    if (this.stopped || ended.kind === 'abandoned') return;
    if (ended.kind === 'delegate') return this.delegate(planId, itemId, attempt, ended, log);

    if (ended.error?.code === 'TIMEOUT') this.d.metrics.toolTimeouts.inc({ tool: item.tool });
    await this.record(planId, itemId, attempt, ended, log);
  }

  /**
   * Records an attempt's outcome: large output and follow-up inputs go by reference (their chunks in the
   * same transaction), then result, completion (or retry / failure) and the intents it readies, in one
   * transaction. A result the ledger refuses becomes a terminal failure with the refusal's code.
   */
  private async record(planId: string, itemId: string, attempt: number, outcome: Extract<AttemptOutcome, { kind: 'result' }>, log: Logger): Promise<void> {
    const idempotencyKey = this.key(planId, itemId, attempt);
    const { ended, blobs } = this.byReference(planId, outcome);
    let committed = this.commitResult(planId, itemId, attempt, ended);
    if (committed.rejection && this.plans.get(planId) && getItem(this.plans.get(planId)!, itemId)?.status === 'in_progress') {
      // The ledger refused what the tool returned (follow-ups that do not fit the plan, a payload past a
      // limit): the attempt fails terminally with the refusal's code, after this one invocation.
      const r = committed.rejection;
      log.warn({ rejection: r }, 'the ledger refused the tool result; recording the attempt as failed');
      committed = this.commitResult(planId, itemId, attempt, {
        kind: 'result',
        outcome: 'failed_terminal',
        outputJson: null,
        error: { code: r.code === 'PAYLOAD_TOO_LARGE' ? 'OUTPUT_TOO_LARGE' : `RESULT_${r.code}`, message: `the ledger refused the tool's result: ${r.message}`, detailsJson: null },
        followUps: [],
        durationMs: ended.durationMs,
      });
    }
    if (!committed.events.length) {
      // Nothing could be recorded although the item still waits for this attempt: stall the plan with the
      // reason (visible, and nothing re-invokes the tool) rather than loop.
      const still = this.plans.get(planId);
      if (still && getItem(still, itemId)?.status === 'in_progress') this.stallPlan(planId, `the result of ${idempotencyKey} could not be recorded: ${committed.fault ?? committed.rejection?.message ?? 'unknown'}`);
      return;
    }
    const result = committed.events[0]?.type === 'ResultCommitted' ? (committed.events[0].data as { outcome: string; error: ItemError | null; outputJson: string | null }) : undefined;
    this.d.metrics.attempts.inc({ outcome: result?.outcome ?? ended.outcome, code: result?.error?.code ?? '' });
    const settled = this.decideAndApply(this.internal('SettleItem', planId, `settle:${idempotencyKey}`, { itemId }), false);
    // Only chunks the recorded result refers to (a refused result was replaced by a failure).
    const used = blobs.filter((b) => b.refJson === result?.outputJson || committed.events.some((e) => e.type === 'ItemAdded' && e.data.item.inputJson === b.refJson));
    const extra = used.length ? [{ topic: this.topics.blobs, messages: used.flatMap((b) => b.messages) }] : [];
    await this.startReady(planId, [committed, settled], () => faultPoint('after_result', { planId, itemId, attempt }), extra);
  }

  /** Moves an outcome's large payloads (output, follow-up inputs) to blobs; past the ceiling the attempt fails. */
  private byReference(planId: string, outcome: Extract<AttemptOutcome, { kind: 'result' }>): { ended: Extract<AttemptOutcome, { kind: 'result' }>; blobs: Array<{ refJson: string; messages: Message[] }> } {
    const blobs: Array<{ refJson: string; messages: Message[] }> = [];
    const place = (json: string, field: string): string => {
      if (parseRef(json) !== undefined || payloadPlacement(json, field, this.d.limits.payload) === undefined) return json;
      const b = toBlob(planId, json, this.now(), this.partition);
      blobs.push(b);
      return b.refJson;
    };
    try {
      const outputJson = outcome.outputJson === null ? null : place(outcome.outputJson, 'output');
      const followUps = outcome.followUps.map((f, i) => ({ ...f, inputJson: place(f.inputJson, `followUps[${i}].input`) }));
      return { ended: { ...outcome, outputJson, followUps }, blobs };
    } catch (e) {
      const tooLarge = isLedgerError(e, 'PAYLOAD_TOO_LARGE');
      return {
        ended: {
          ...outcome,
          outcome: 'failed_terminal',
          outputJson: null,
          followUps: [],
          error: { code: tooLarge ? 'OUTPUT_TOO_LARGE' : 'INVALID_OUTPUT', message: (e as Error).message, detailsJson: null },
        },
        blobs: [],
      };
    }
  }

  private commitResult(planId: string, itemId: string, attempt: number, r: Extract<AttemptOutcome, { kind: 'result' }>): Decided {
    return this.decideAndApply(
      this.internal('CommitResult', planId, `result:${this.key(planId, itemId, attempt)}`, {
        itemId,
        attempt,
        outcome: r.outcome,
        outputJson: r.outputJson,
        error: r.error,
        durationMs: r.durationMs,
        executorId: this.d.executorId,
        followUps: r.followUps,
      }),
      false,
    );
  }

  /** The tool handed the item to a child plan: ItemDelegated, and the child's CreatePlan in the same transaction. */
  private async delegate(planId: string, itemId: string, attempt: number, ended: Extract<AttemptOutcome, { kind: 'delegate' }>, log: Logger): Promise<void> {
    const childPlanId = `${planId}.${itemId}.${attempt}`;
    let items;
    try {
      items = ended.delegate.items.map((it, i) => toItemSpec(it, `delegate.items[${i}]`));
    } catch (e) {
      log.warn({ err: e }, 'the tool delegated to a child plan that cannot be created; recording the attempt as failed');
      const committed = this.commitResult(planId, itemId, attempt, {
        kind: 'result',
        outcome: 'failed_terminal',
        outputJson: null,
        error: { code: 'INVALID_DELEGATION', message: `the child plan cannot be created: ${(e as Error).message}`, detailsJson: null },
        followUps: [],
        durationMs: ended.durationMs,
      });
      const settled = this.decideAndApply(this.internal('SettleItem', planId, `settle:${this.key(planId, itemId, attempt)}`, { itemId }), false);
      await this.startReady(planId, [committed, settled]);
      return;
    }
    const delegated = this.decideAndApply(this.internal('DelegateItem', planId, `delegate:${this.key(planId, itemId, attempt)}`, { itemId, attempt, childPlanId }), false);
    if (!delegated.events.length) return;
    const create: PlanCommand = {
      type: 'CreatePlan',
      commandId: `create-child:${childPlanId}`,
      planId: childPlanId,
      issuedAt: this.now(),
      actor: this.d.executorId,
      correlationId: planId,
      data: {
        goal: String(ended.delegate.goal),
        mode: 'execute',
        labels: { ...(ended.delegate.labels ?? {}), parentPlan: planId },
        parent: { planId, itemId },
        items,
      },
    };
    let message: Message;
    try {
      message = commandMessage(this.d.codec, this.d.config.partitions, create);
    } catch (e) {
      // Not encodable (e.g. a label that is not a string): the child plan's CreatePlan is decided by its
      // own partition, which answers with a coded rejection; a command that cannot even be encoded stalls
      // this plan with the reason instead of being dropped.
      this.stallPlan(planId, `the child plan ${childPlanId} cannot be encoded: ${(e as Error).message}`);
      return;
    }
    await this.appendDecided(planId, delegated, undefined, [{ topic: this.topics.commands, messages: [message] }]);
  }

  /**
   * A plan that cannot advance without a defect being fixed: nothing more runs for it on this owner, its
   * commands go to the DLQ with the reason (see handleCommands), and the reason is logged. A restart of the
   * partition retries it from the log.
   */
  private stallPlan(planId: string, reason: string): void {
    this.stalled.set(planId, reason);
    this.log.error({ planId, reason }, 'plan stalled');
  }

  /**
   * Stops the partition: no new work; `graceMs` > 0 lets running items finish their protocol first
   * (a graceful hand-over never makes the next owner repeat an invocation), then aborts the rest.
   */
  async stop(reason: string, graceMs = 0): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    this.retries.stop();
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

/** What {@link PartitionOwner.decideAndApply} decided: the events (applied) with their records, or why not. */
interface Decided {
  readonly events: PlanEvent[];
  readonly messages: Message[];
  readonly rejection?: Rejection;
  readonly fault?: string;
}
