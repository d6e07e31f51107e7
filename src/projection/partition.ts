import { evolveAll, evolveInPlace, type PlanEvent, type PlanState } from '../plan/index.js';
import { classifyFailure, parseEventKey, stallOf, type FailureDecision, type Stall } from './poison.js';
import { SnapshotPolicy, type SnapshotPolicyOptions } from './snapshot-policy.js';
import { maxFencingTokenOf } from './snapshot.js';

/** A plan as one partition's projection holds it. */
export interface PlanEntry {
  readonly planId: string;
  /** undefined while nothing could be applied (e.g. the plan's first record was poison). */
  state: PlanState | undefined;
  /** Offset of the last event applied to the plan (null when restored from a snapshot with no tail). */
  lastOffset: string | null;
  /** Set when a record of the plan could not be decoded or applied: the plan does not advance any further. */
  stalled: Stall | null;
}

/** What happened to one record of the events partition. */
export type RecordOutcome =
  /** Applied; `drained` are events that waited for this one (out of order after compaction) and applied after it. */
  | { kind: 'applied'; planId: string; event: PlanEvent; state: PlanState; offset: string; drained: PlanEvent[] }
  /**
   * seq is ahead of the plan: kept aside until the missing seqs arrive. Compaction keeps the *last* copy of
   * a re-sent event, so an earlier seq can sit later in the log. Still missing when the partition has been
   * read to its end: {@link PartitionProjection.settleGaps} stalls the plan.
   */
  | { kind: 'deferred'; planId: string; event: PlanEvent; offset: string }
  /** seq already applied (an exact re-send before compaction, or an event a snapshot already covers). */
  | { kind: 'duplicate'; planId: string; event: PlanEvent; offset: string }
  /** The plan is stalled; the record is held back (counted on the stall), not applied. */
  | { kind: 'held'; planId: string; stall: Stall; offset: string }
  /** A tombstone (erasure): the plan is dropped from the projection. */
  | { kind: 'erased'; planId: string; offset: string }
  /** The record cannot be decoded or applied: dead-letter it. `planId` is null when the key is unreadable. */
  | { kind: 'poison'; planId: string | null; seq: number | null; decision: Extract<FailureDecision, { action: 'dlq' }>; offset: string };

/**
 * The pure projection of one events partition: plans folded with the domain's `evolve`, stalls, and the
 * snapshot policy. It does no I/O; decoding happens before {@link applyEvent} and failures come in through
 * {@link fail}. Both the restore path and the live projector drive it, so they cannot disagree.
 */
export class PartitionProjection {
  readonly plans = new Map<string, PlanEntry>();
  readonly policy: SnapshotPolicy;
  /** Offset of the last record processed (applied, duplicate, held, erased or poison); null before any. */
  lastOffset: string | null = null;
  eventsApplied = 0;
  /**
   * Highest `attempts[].fencingToken` of any plan this projection has seen (seeded, applied, or noted from
   * a watermark); kept when a plan is erased, so it never goes down. Written on the watermark.
   */
  maxFencingToken = 0;
  /** Events waiting for a missing earlier seq, per plan, by seq. */
  private readonly pending = new Map<string, Map<number, PendingEvent>>();

  constructor(
    readonly partition: number,
    policy: Partial<SnapshotPolicyOptions> = {},
  ) {
    this.policy = new SnapshotPolicy(policy);
  }

  /** Seeds a plan from a verified snapshot. */
  seed(state: PlanState): void {
    this.plans.set(state.planId, { planId: state.planId, state, lastOffset: null, stalled: null });
    this.policy.restored(state.planId, state.seq, state.seq, state.itemOrder.length);
    this.noteFencingToken(maxFencingTokenOf(state));
  }

  /** Raises {@link maxFencingToken} to `token` (e.g. from a watermark's header, covering plans not decoded). */
  noteFencingToken(token: number): void {
    if (token > this.maxFencingToken) this.maxFencingToken = token;
  }

  /** Marks a plan stalled (e.g. from the DLQ on restore). Keeps an existing stall. */
  stall(planId: string, stall: Stall): void {
    const entry = this.entry(planId);
    entry.stalled ??= stall;
  }

  get(planId: string): PlanEntry | undefined {
    return this.plans.get(planId);
  }

  /**
   * First look at a record before decoding: tombstones erase, a stalled plan holds its records back.
   * Returns null when the record must be decoded and applied.
   */
  precheck(offset: string, key: Buffer | null, value: Buffer | null): RecordOutcome | null {
    const k = parseEventKey(key);
    if (value === null) {
      this.lastOffset = offset;
      if (k === null) return this.fail(offset, key, { action: 'dlq', code: 'SCHEMA', reason: 'bad_key', message: 'tombstone with an unreadable key' });
      this.plans.delete(k.planId);
      this.pending.delete(k.planId);
      this.policy.forget(k.planId);
      return { kind: 'erased', planId: k.planId, offset };
    }
    if (k === null) return null;
    const entry = this.plans.get(k.planId);
    return entry?.stalled ? this.hold(entry, entry.stalled, offset) : null;
  }

  private hold(entry: PlanEntry, stall: Stall, offset: string): RecordOutcome {
    this.lastOffset = offset;
    if (offset === stall.offset) return { kind: 'held', planId: entry.planId, stall, offset }; // the poison record itself, seen again
    stall.heldEvents += 1;
    stall.lastHeldOffset = offset;
    return { kind: 'held', planId: entry.planId, stall, offset };
  }

  /** Applies a decoded event of the record at `offset`; an event `evolve` refuses becomes poison. */
  applyEvent(offset: string, key: Buffer | null, event: PlanEvent, value: Buffer | null = null): RecordOutcome {
    const k = parseEventKey(key);
    if (k === null) return this.fail(offset, key, { action: 'dlq', code: 'SCHEMA', reason: 'bad_key', message: `record key ${printable(key)} is not planId:seq` });
    if (k.planId !== event.planId || k.seq !== event.seq) {
      return this.fail(offset, key, {
        action: 'dlq',
        code: 'INVALID_EVENT',
        reason: 'key_mismatch',
        message: `record key ${k.planId}:${k.seq} does not match event ${event.planId}:${event.seq}`,
      });
    }
    const entry = this.entry(event.planId);
    if (entry.stalled) return this.hold(entry, entry.stalled, offset);
    const before = entry.state;
    if (event.seq > (before?.seq ?? 0) + 1) {
      this.lastOffset = offset;
      let waiting = this.pending.get(event.planId);
      if (waiting === undefined) this.pending.set(event.planId, (waiting = new Map()));
      if (!waiting.has(event.seq)) waiting.set(event.seq, { event, offset, key, value });
      return { kind: 'deferred', planId: event.planId, event, offset };
    }
    let next: PlanState;
    const seqBefore = before?.seq ?? 0;
    try {
      // The projection holds the only reference to its plans' states: applied in place, so an event costs
      // what it changes at any plan size (a refused event leaves the state untouched).
      next = evolveInPlace(before, [event])!;
    } catch (e) {
      const d = classifyFailure(e);
      if (d.action === 'retry') throw e; // evolve is pure; cannot happen, but never turn it into a DLQ
      return this.fail(offset, key, d);
    }
    this.lastOffset = offset;
    if (next.seq === seqBefore && before !== undefined) return { kind: 'duplicate', planId: event.planId, event, offset };
    this.advance(entry, next, event, offset);
    // Events that waited for this one.
    const drained: PlanEvent[] = [];
    const waiting = this.pending.get(event.planId);
    while (waiting !== undefined && entry.state !== undefined) {
      const p = waiting.get(entry.state.seq + 1);
      if (p === undefined) break;
      waiting.delete(p.event.seq);
      let after: PlanState;
      try {
        after = evolveInPlace(entry.state, [p.event])!;
      } catch (e) {
        const d = classifyFailure(e);
        if (d.action === 'retry') throw e;
        this.pending.delete(event.planId);
        this.stallAt(entry, d, p);
        break;
      }
      this.advance(entry, after, p.event, maxOffset(entry.lastOffset, p.offset));
      drained.push(p.event);
    }
    if (waiting !== undefined && waiting.size === 0) this.pending.delete(event.planId);
    return { kind: 'applied', planId: event.planId, event, state: entry.state!, offset, drained };
  }

  /**
   * Whether `events` (one plan's, in log order) can go through {@link applyRun}: the plan is neither stalled
   * nor waiting for a missing seq, and the events continue its state seq by seq. Anything else (a
   * re-send, a gap, a plan with trouble) takes the record-by-record path of {@link applyEvent}.
   */
  canApplyRun(planId: string, firstSeq: number): boolean {
    const entry = this.plans.get(planId);
    if (entry?.stalled || this.pending.has(planId)) return false;
    return firstSeq === (entry?.state?.seq ?? 0) + 1;
  }

  /**
   * Applies one plan's events of a replayed batch in one fold (`evolveAll`: one copy of each thing they
   * change, not one per event) with the same result as {@link applyEvent} on each — the domain's property
   * tests prove the two folds equal. The caller has checked {@link canApplyRun} and that the events carry
   * contiguous seqs and match their record keys; `lastOffset` is the offset of the last one. Returns false,
   * changing nothing, when the domain refuses one of them: apply them one by one then, to stall the plan at
   * the right record.
   */
  applyRun(planId: string, events: readonly PlanEvent[], lastOffset: string): boolean {
    const existed = this.plans.has(planId);
    const entry = this.entry(planId);
    let next: PlanState | undefined;
    try {
      next = evolveAll(entry.state, events);
    } catch {
      if (!existed) this.plans.delete(planId); // leave no trace of the attempt
      return false;
    }
    if (next === undefined || next.seq !== events[events.length - 1]!.seq) return false;
    entry.state = next;
    entry.lastOffset = maxOffset(entry.lastOffset, lastOffset);
    this.eventsApplied += events.length;
    for (const event of events) {
      if (event.type === 'IntentRecorded') this.noteFencingToken(event.data.fencingToken);
      this.policy.applied(planId, event.seq, event.type, next.itemOrder.length);
    }
    return true;
  }

  private advance(entry: PlanEntry, next: PlanState, event: PlanEvent, offset: string): void {
    entry.state = next;
    entry.lastOffset = maxOffset(entry.lastOffset, offset);
    this.eventsApplied += 1;
    if (event.type === 'IntentRecorded') this.noteFencingToken(event.data.fencingToken);
    this.policy.applied(event.planId, event.seq, event.type, next.itemOrder.length);
  }

  private stallAt(entry: PlanEntry, d: Extract<FailureDecision, { action: 'dlq' }>, p: PendingEvent): void {
    entry.stalled ??= stallOf(d, p.offset, p.event.seq);
  }

  /** True while some plan waits for a missing seq. */
  hasGaps(): boolean {
    return this.pending.size > 0;
  }

  /**
   * The partition has been read to its end and some plans still miss a seq: those seqs are not in the log.
   * Stalls each such plan at its first waiting record (returned as poison, with its bytes, for the DLQ);
   * the rest of its waiting records count as held.
   */
  settleGaps(): Array<{ outcome: Extract<RecordOutcome, { kind: 'poison' }>; key: Buffer | null; value: Buffer | null }> {
    const out: Array<{ outcome: Extract<RecordOutcome, { kind: 'poison' }>; key: Buffer | null; value: Buffer | null }> = [];
    for (const [planId, waiting] of this.pending) {
      const entry = this.entry(planId);
      const sorted = [...waiting.values()].sort((a, b) => a.event.seq - b.event.seq);
      const first = sorted[0]!;
      const expected = (entry.state?.seq ?? 0) + 1;
      const decision = {
        action: 'dlq' as const,
        code: 'INVALID_EVENT',
        reason: 'seq_gap',
        message: `${first.event.eventId} (${first.event.type}): seq gap: expected ${expected}; seq ${expected}..${first.event.seq - 1} are not in the log`,
      };
      if (entry.stalled === null) {
        entry.stalled = stallOf(decision, first.offset, first.event.seq);
        for (const p of sorted.slice(1)) {
          entry.stalled.heldEvents += 1;
          entry.stalled.lastHeldOffset = maxOffset(entry.stalled.lastHeldOffset, p.offset);
        }
      }
      out.push({ outcome: { kind: 'poison', planId, seq: first.event.seq, decision, offset: first.offset }, key: first.key, value: first.value });
    }
    this.pending.clear();
    return out;
  }

  /**
   * The offset a watermark may name: every record up to it is applied (or stalled). A waiting record is not
   * covered by any snapshot yet, so the watermark stays before the first one. With `readTo`, the offset
   * the partition has been read up to (exclusive), a partition with nothing waiting is covered up to just
   * before it: what lies between its last record and there is transaction markers, and a partition that
   * never had a record is covered up to -1 (readers start at 0). Without it, a partition that has applied
   * no record has no watermark to name.
   */
  watermarkOffset(readTo?: bigint): string | null {
    let min: bigint | null = null;
    for (const waiting of this.pending.values()) for (const p of waiting.values()) if (min === null || BigInt(p.offset) < min) min = BigInt(p.offset);
    if (min === null) {
      if (readTo === undefined || (this.lastOffset !== null && BigInt(this.lastOffset) >= readTo)) return this.lastOffset;
      return (readTo - 1n).toString();
    }
    return min > 0n ? (min - 1n).toString() : null;
  }

  /** A record that failed to decode or apply: stall its plan (when the key names one) and report poison. */
  fail(offset: string, key: Buffer | null, decision: Extract<FailureDecision, { action: 'dlq' }>): RecordOutcome {
    this.lastOffset = offset;
    const k = parseEventKey(key);
    if (k !== null) {
      const entry = this.entry(k.planId);
      entry.stalled ??= stallOf(decision, offset, k.seq);
    }
    return { kind: 'poison', planId: k?.planId ?? null, seq: k?.seq ?? null, decision, offset };
  }

  /** States of every plan that has one. */
  states(): Map<string, PlanState> {
    const out = new Map<string, PlanState>();
    for (const [id, e] of this.plans) if (e.state !== undefined) out.set(id, e.state);
    return out;
  }

  stalled(): Map<string, Stall> {
    const out = new Map<string, Stall>();
    for (const [id, e] of this.plans) if (e.stalled) out.set(id, e.stalled);
    return out;
  }

  private entry(planId: string): PlanEntry {
    let e = this.plans.get(planId);
    if (e === undefined) {
      e = { planId, state: undefined, lastOffset: null, stalled: null };
      this.plans.set(planId, e);
    }
    return e;
  }
}

interface PendingEvent {
  readonly event: PlanEvent;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

function maxOffset(a: string | null, b: string): string {
  return a === null || BigInt(b) > BigInt(a) ? b : a;
}

function printable(key: Buffer | null): string {
  if (key === null) return 'null';
  return JSON.stringify(key.toString('utf8').slice(0, 200));
}
