import type { EventType } from '../plan/index.js';

/** Events after which a plan's snapshot is worth writing: structure, progress, approval, the end. */
export const SNAPSHOT_BOUNDARY_EVENTS: ReadonlySet<EventType> = new Set<EventType>([
  'ItemAdded',
  'ItemCompleted',
  'ItemDelegated',
  'PlanApproved',
  'PlanCompleted',
  'PlanFailed',
  'PlanCancelled',
]);

export interface SnapshotPolicyOptions {
  /** A plan is snapshotted at least every this many events since its last snapshot (default 100). */
  readonly everyEvents: number;
}

export const DEFAULT_SNAPSHOT_POLICY: Readonly<SnapshotPolicyOptions> = Object.freeze({ everyEvents: 100 });

/** From this many items on, a plan's snapshot (O(items) bytes) waits for events in proportion to its size. */
export const LARGE_PLAN_ITEMS = 1_000;

/**
 * Events a plan of `items` items must have had since its last snapshot before a boundary makes it due:
 * none for a plan under {@link LARGE_PLAN_ITEMS}; a quarter of its items above, so the bytes of its
 * snapshots stay about those of its events (an item in a snapshot is a few times smaller than an event)
 * and a restore replays at most that many events after the snapshot.
 */
export function eventsBetweenSnapshots(items: number): number {
  return items >= LARGE_PLAN_ITEMS ? Math.floor(items / 4) : 0;
}

export function isSnapshotBoundary(type: EventType): boolean {
  return SNAPSHOT_BOUNDARY_EVENTS.has(type);
}

/** The end of a plan: its snapshot (to the archive) is written at once, whatever its size. */
function isFinal(type: EventType): boolean {
  return type === 'PlanCompleted' || type === 'PlanFailed' || type === 'PlanCancelled';
}

/**
 * Tracks, per plan, what happened since its last snapshot and which plans are due. Decisions are made per
 * event, but snapshots are taken by the caller once per batch ({@link takeDue}), so a `CreatePlan` with 20
 * items that arrives in one batch gives one snapshot, not 21. Nothing is ever snapshotted twice at one seq.
 *
 * @example
 * const policy = new SnapshotPolicy();
 * policy.applied('p1', 1, 'PlanCreated'); // not due
 * policy.applied('p1', 2, 'ItemAdded');   // due
 * policy.takeDue() // ['p1'] — the caller writes p1's snapshot at its current seq and calls written('p1', seq)
 */
export class SnapshotPolicy {
  private readonly plans = new Map<string, { snapshotSeq: number; appliedSeq: number; since: number; items: number }>();
  private readonly due = new Set<string>();
  readonly options: SnapshotPolicyOptions;

  constructor(options: Partial<SnapshotPolicyOptions> = {}) {
    this.options = { ...DEFAULT_SNAPSHOT_POLICY, ...options };
    if (!Number.isInteger(this.options.everyEvents) || this.options.everyEvents < 1) {
      throw new RangeError(`everyEvents must be a positive integer, got ${String(this.options.everyEvents)}`);
    }
  }

  /** A plan restored from a snapshot at `snapshotSeq` (0 = none). */
  restored(planId: string, snapshotSeq: number, appliedSeq: number, items = 0): void {
    this.plans.set(planId, { snapshotSeq, appliedSeq, since: appliedSeq - snapshotSeq, items });
    if (appliedSeq > snapshotSeq && appliedSeq - snapshotSeq >= this.options.everyEvents) this.due.add(planId);
  }

  /**
   * An event was applied to the plan, which now has `items` items; returns true when the plan became due.
   * A large plan becomes due only after {@link eventsBetweenSnapshots} events since its last snapshot.
   */
  applied(planId: string, seq: number, type: EventType, items = 0): boolean {
    let p = this.plans.get(planId);
    if (p === undefined) {
      p = { snapshotSeq: 0, appliedSeq: 0, since: 0, items };
      this.plans.set(planId, p);
    }
    if (seq <= p.appliedSeq) return false; // a re-send changes nothing
    p.appliedSeq = seq;
    p.since += 1;
    p.items = items;
    const wait = eventsBetweenSnapshots(items);
    if (isFinal(type) || (p.since >= wait && (isSnapshotBoundary(type) || p.since >= this.options.everyEvents))) {
      this.due.add(planId);
      return true;
    }
    return false;
  }

  /** Plans due for a snapshot, in the order they became due; clears the set. */
  takeDue(): string[] {
    const out = [...this.due];
    this.due.clear();
    return out;
  }

  /**
   * Plans with applied events their last snapshot does not cover, which the watermark snapshots; a large
   * plan not due yet is not among them but in {@link deferred} (the watermark lists it as an exception).
   */
  dirty(): string[] {
    const out: string[] = [];
    for (const [id, p] of this.plans) if (p.appliedSeq > p.snapshotSeq && !this.isDeferred(p)) out.push(id);
    return out;
  }

  /** Large plans with events their last snapshot does not cover, not due for a new one yet. */
  deferred(): string[] {
    const out: string[] = [];
    for (const [id, p] of this.plans) if (p.appliedSeq > p.snapshotSeq && this.isDeferred(p)) out.push(id);
    return out;
  }

  private isDeferred(p: { since: number; items: number }): boolean {
    return p.since < eventsBetweenSnapshots(p.items);
  }

  /** The snapshot of `planId` at `seq` is on its way to the topic. */
  written(planId: string, seq: number): void {
    const p = this.plans.get(planId);
    if (p === undefined) {
      this.plans.set(planId, { snapshotSeq: seq, appliedSeq: seq, since: 0, items: 0 });
      return;
    }
    if (seq > p.snapshotSeq) {
      p.snapshotSeq = seq;
      p.since = Math.max(0, p.appliedSeq - seq);
    }
    if (p.appliedSeq <= p.snapshotSeq) this.due.delete(planId);
  }

  /** A snapshot write failed: the plan is dirty again (the next watermark snapshots it). */
  unwritten(planId: string): void {
    const p = this.plans.get(planId);
    if (p !== undefined) {
      p.snapshotSeq = 0;
      p.since = p.appliedSeq;
    }
  }

  snapshotSeq(planId: string): number {
    return this.plans.get(planId)?.snapshotSeq ?? 0;
  }

  forget(planId: string): void {
    this.plans.delete(planId);
    this.due.delete(planId);
  }
}
