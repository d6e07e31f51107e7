import type { LedgerCodec } from '../src/codec/index.js';
import { isLedgerError } from '../src/errors.js';
import type { OutRecord } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { decide, evolveInPlace, isPlanFinished, PlanError, rejectionEvent, type AnyCommand, type ApprovalPolicy, type DecideContext, type InternalCommand, type InternalCommandPayloads, type PlanEvent, type PlanState, type Rejection } from '../src/plan/index.js';
import type { ArchiveLoader } from '../src/projection/restore.js';
import { stateFromSnapshot } from '../src/projection/snapshot.js';
import type { OwnerLimits, RestoredForOwner } from './context.js';
import { CacheBudget, DEFAULT_EXECUTOR_CACHE_MIB, DormantCache } from './dormant-cache.js';
import type { ExecutorMetrics } from './metrics.js';
import { FirstSeenMemo } from './clock.js';
import { firstEventAt } from './plan-reload.js';
import { eventMessages, recordBytes } from './records.js';

/** What {@link PartitionBook.decideAndApply} decided: the events (applied) with their records, or why not. */
export interface Decided {
  readonly events: PlanEvent[];
  readonly messages: OutRecord[];
  readonly rejection?: Rejection;
  readonly fault?: string;
}

export interface BookDeps {
  readonly codec: LedgerCodec;
  readonly limits: OwnerLimits;
  readonly metrics: ExecutorMetrics;
  readonly executorId: string;
  readonly now: () => number;
  /** The approval policy `decide` applies to new plans and new items; none by default. */
  readonly policy?: ApprovalPolicy;
  /** The executor's byte budget for finished plans put aside (default its own 64 MiB). */
  readonly cacheBudget?: CacheBudget;
  /**
   * Reads a finished plan that left the cache back from its events (see `readPlanFromEvents`); `since`
   * is when its first event was written, or null. Without it, such a plan stalls when a command needs it.
   */
  readonly readPlan?: (planId: string, since: number | null) => Promise<PlanState | undefined>;
}

/**
 * The plans of one owned partition as its owner knows them — live, stalled, erased, dormant (finished,
 * undecoded), archived — and the one place their state changes: {@link decideAndApply}.
 */
export class PartitionBook {
  readonly plans = new Map<string, PlanState>();
  /** Plans that cannot advance (an undecodable or inapplicable event, a result that cannot be recorded), with the reason. */
  readonly stalled = new Map<string, string>();
  /**
   * Erased plan ids (their last records are tombstones). A command for one behaves as for an unknown
   * plan — PLAN_NOT_FOUND for anything but CreatePlan — and its CommandRejected is tombstoned in the
   * same transaction, so nothing of the erased plan id stays live in the ledger.
   */
  readonly erased = new Set<string>();
  /**
   * Finished plans aside from {@link plans}, bounded in bytes: those restored without decoding (the raw
   * value of their latest snapshot) and those that finished here ({@link retire}: their state as JSON).
   * Nothing runs for them; a command for one loads it into {@link plans} first ({@link wake}), from the
   * cache or — once evicted from it — from its events.
   */
  readonly dormant: DormantCache;
  /** The partition's archive; `archiveMerged` once its index is in {@link archivedIds} / {@link erased}. */
  private archived: ArchiveLoader | undefined;
  private archiveMerged = false;
  /** Archived (finished) plans not loaded yet: a command for one reads its snapshot from the archive. */
  readonly archivedIds = new Set<string>();
  /** Highest event-key seq of stalled plans (their state stops before the poison record). */
  readonly stalledKeySeq = new Map<string, number>();
  /** Above every token ever used on the partition (see {@link seed}). */
  fencingToken = 1;
  /**
   * When this owner first saw each open retry and wait, on its clock: scans and `decide` read it, so a
   * retry or timeout recorded on a clock ahead of ours is due at most its full delay after we saw it.
   */
  readonly firstSeen: FirstSeenMemo;

  constructor(
    private readonly d: BookDeps,
    private readonly log: Logger,
  ) {
    this.dormant = new DormantCache(d.cacheBudget ?? new CacheBudget(DEFAULT_EXECUTOR_CACHE_MIB * 1024 * 1024));
    this.firstSeen = new FirstSeenMemo(() => this.now());
  }

  private now(): number {
    return this.d.now();
  }

  /** Takes the restored partition in; starts reading the archive index in the background. */
  seed(restored: RestoredForOwner): void {
    for (const [id, s] of restored.plans) this.plans.set(id, s);
    for (const [id, r] of restored.stalled) this.stalled.set(id, r);
    for (const id of restored.erased ?? []) this.erased.add(id);
    for (const [id, seq] of restored.lastKeySeq ?? []) if (this.stalled.has(id)) this.stalledKeySeq.set(id, seq);
    for (const [id, value] of restored.dormant ?? []) if (!this.plans.has(id)) this.dormant.set(id, { kind: 'snapshot', value, since: null });
    this.archived = restored.archived;
    // Read the archive in the background, so the first command for an unknown plan rarely waits for it.
    if (this.archived) void this.archived.load().catch(() => {});
    // Above every token ever used on the partition: the watermark vouches for the plans left dormant.
    let maxToken = restored.maxFencingToken ?? 0;
    for (const s of this.plans.values()) for (const it of Object.values(s.items)) for (const a of it.attempts) maxToken = Math.max(maxToken, a.fencingToken);
    this.fencingToken = maxToken + 1;
  }

  /** Forgets an erased plan: only its id stays, as erased. */
  forget(planId: string): void {
    this.plans.delete(planId);
    this.dormant.delete(planId);
    this.archivedIds.delete(planId);
    this.stalled.delete(planId);
    this.stalledKeySeq.delete(planId);
    this.erased.add(planId);
  }

  /**
   * A plan that cannot advance without a defect being fixed: nothing more runs for it on this owner, its
   * commands go to the DLQ with the reason, and the reason is logged. A restart of the partition retries
   * it from the log.
   */
  stall(planId: string, reason: string): void {
    this.stalled.set(planId, reason);
    this.log.error({ planId, reason }, 'plan stalled');
  }

  /**
   * Before deciding a command for a plan this owner does not hold: merges the partition's archive index
   * (once) — archived plans into {@link archivedIds}, erased ids into {@link erased}, skipping ids the
   * owner has met since its restore (held, erased or created again) — and, when the plan is archived,
   * reads its snapshot into {@link dormant}. A failed read (broker outage) throws, so the command batch is
   * retried, and is tried again then.
   */
  async fromArchive(planId: string): Promise<void> {
    if (this.archived === undefined) return;
    if (!this.archiveMerged) {
      const archive = await this.archived.load();
      if (!this.archiveMerged) {
        this.archiveMerged = true;
        for (const id of archive.offsets.keys()) if (!this.plans.has(id) && !this.erased.has(id) && !this.dormant.knows(id)) this.archivedIds.add(id);
        for (const id of archive.erased) if (!this.plans.has(id) && !this.dormant.knows(id)) this.erased.add(id);
        this.log.debug({ archived: archive.offsets.size, erased: archive.erased.size }, 'archive index loaded');
      }
    }
    if (!this.archivedIds.has(planId) || this.plans.has(planId)) return;
    const value = await this.archived.value(planId);
    this.archivedIds.delete(planId);
    if (value !== undefined && !this.plans.has(planId)) this.dormant.set(planId, { kind: 'snapshot', value, since: null });
  }

  /** The plan is aside (dormant, held or evicted): a command for it must {@link wake} it first. */
  isAside(planId: string): boolean {
    return !this.plans.has(planId) && this.dormant.knows(planId);
  }

  /**
   * A plan that finished here, once its last events committed and nothing of it runs: its state leaves
   * {@link plans} for the byte-bounded {@link dormant} cache (as JSON), so the executor's memory does not
   * grow with the plans it has run. A later command loads it back ({@link wake}) and is decided against
   * the same state as before. Stalled plans stay (their commands go to the DLQ with the reason).
   */
  retire(planId: string): void {
    const state = this.plans.get(planId);
    if (state === undefined || !isPlanFinished(state.status) || this.stalled.has(planId)) return;
    this.plans.delete(planId);
    this.firstSeen.forget(planId);
    this.dormant.set(planId, { kind: 'state', value: Buffer.from(JSON.stringify(state)), since: firstEventAt(state) });
  }

  /** A plan's state if the owner holds it, in {@link plans} or as JSON in the cache (for inspection; not loaded). */
  peek(planId: string): PlanState | undefined {
    const live = this.plans.get(planId);
    if (live !== undefined) return live;
    const e = this.dormant.peek(planId);
    return e?.kind === 'state' ? (JSON.parse(e.value.toString('utf8')) as PlanState) : undefined;
  }

  /**
   * Reads back a finished plan evicted from the cache, from its events. A broker outage throws (the
   * command batch is retried); events that do not fold, or none at all, stall the plan with the reason.
   */
  private async recall(planId: string): Promise<void> {
    const since = this.dormant.evicted.get(planId) ?? null;
    let reason: string;
    try {
      const state = this.d.readPlan ? await this.d.readPlan(planId, since) : undefined;
      if (state !== undefined && state.planId === planId && state.status !== 'none') {
        this.dormant.delete(planId);
        if (!this.plans.has(planId)) this.plans.set(planId, state);
        this.log.debug({ planId, seq: state.seq, status: state.status }, 'evicted plan read back from its events');
        return;
      }
      reason = this.d.readPlan ? 'no event of the plan was found on the partition' : 'this owner cannot read plans back';
    } catch (e) {
      // A record that does not decode or an event that does not fold is a defect to fix, not an outage.
      if (!(e instanceof PlanError) && !isLedgerError(e, 'SCHEMA')) throw e;
      reason = e.message;
    }
    this.dormant.delete(planId);
    this.stalled.set(planId, `evicted plan could not be read back: ${reason}`);
    this.log.error({ planId, reason }, 'evicted plan stalled: it could not be read back from its events');
  }

  /**
   * Loads a dormant plan from its raw snapshot (decode + verify) into {@link plans}. A snapshot that does
   * not verify stalls the plan with the reason (its commands go to the DLQ; deciding on no state would
   * write over its first event). An unreachable registry throws UNAVAILABLE: the batch is retried.
   */
  async wake(planId: string): Promise<void> {
    const entry = this.dormant.peek(planId);
    if (entry === undefined) {
      if (this.dormant.evicted.has(planId)) await this.recall(planId);
      return;
    }
    if (entry.kind === 'state') {
      // Its own state, put aside by this owner ({@link retire}): trusted as it was.
      this.dormant.delete(planId);
      if (!this.plans.has(planId)) this.plans.set(planId, JSON.parse(entry.value.toString('utf8')) as PlanState);
      return;
    }
    const value = entry.value;
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
   * Decides a command against the current state and applies the resulting events at once, so the next
   * decision sees them; the events come back encoded. If their transaction later fails, the owner is reset
   * from the log. Nothing that cannot be appended is applied:
   * - a rejection is recorded (`recordRejection`, client commands) or returned (`rejection`, internal steps);
   * - an event larger than the topic's record limit turns the decision into a PAYLOAD_TOO_LARGE rejection;
   * - a defect inside `decide` (`fault`) applies nothing and records nothing: the caller dead-letters.
   */
  decideAndApply(command: AnyCommand, recordRejection: boolean): Decided {
    const state = this.plans.get(command.planId);
    const ctx = this.decideContext();
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
    // The book holds the only reference to its plans' states: applied in place, O(what the events change).
    const s = evolveInPlace(state, events);
    if (s) this.plans.set(command.planId, s);
    return { events, messages, ...(rejection ? { rejection } : {}) };
  }

  /** Time (with when this owner first saw each retry and wait), limits and the approval policy, as data for `decide`. */
  decideContext(): DecideContext {
    return { now: this.now(), limits: this.d.limits.decide, firstSeen: this.firstSeen.ask, ...(this.d.policy !== undefined ? { policy: this.d.policy } : {}) };
  }

  internal<K extends keyof InternalCommandPayloads>(type: K, planId: string, commandId: string, data: InternalCommandPayloads[K]): InternalCommand {
    return { type, planId, commandId, issuedAt: this.now(), actor: this.d.executorId, correlationId: commandId, data } as InternalCommand;
  }
}
