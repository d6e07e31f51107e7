// The executor's one wall clock, the owners' memo of when they first saw a retry or a wait, and the clock
// skew an executor measures against the records others write. See docs/concepts/item-protocol.md#clocks.
import type { FirstSeen } from '../src/plan/index.js';

/**
 * Every wall-clock read on the executor's path: the `now` decide is given (every event's occurredAt, so the
 * events records' timestamps), retry and wait timers, the timestamps of the other records it writes.
 * `offsetMs` shifts it (PLAN_LEDGER_CLOCK_OFFSET_MS, tests only: a host whose clock is off). Durations
 * (tool timeouts, backoffs) use timers and are not shifted.
 */
export interface Clock {
  now(): number;
  readonly offsetMs: number;
}

export function offsetClock(offsetMs: number, base: () => number = Date.now): Clock {
  return offsetMs === 0 ? { now: base, offsetMs } : { now: () => base() + offsetMs, offsetMs };
}

/**
 * One owner's memo of when it first saw each open retry and wait (see FirstSeen in src/plan/execution.ts):
 * asked first by a scan or by `decide`, it records the owner's now. A plan's entries go when it finishes or
 * leaves the owner; an item's entry is replaced when its next retry or wait comes (a new mark).
 */
export class FirstSeenMemo {
  private readonly plans = new Map<string, Map<string, { mark: string; at: number }>>();

  constructor(private readonly now: () => number) {}

  readonly ask: FirstSeen = (planId, itemId, mark) => {
    let items = this.plans.get(planId);
    if (items === undefined) this.plans.set(planId, (items = new Map()));
    const known = items.get(itemId);
    if (known !== undefined && known.mark === mark) return known.at;
    const at = this.now();
    items.set(itemId, { mark, at });
    return at;
  };

  forget(planId: string): void {
    this.plans.delete(planId);
  }

  /** Entries kept (for tests). */
  get size(): number {
    let n = 0;
    for (const m of this.plans.values()) n += m.size;
    return n;
  }
}

/** Past this (either way), the executor logs a warning about its clock (again only once it grew by half). */
export const SKEW_WARN_MS = 30_000;
/** Samples the estimate keeps (the latest). */
const SKEW_SAMPLES = 64;
/** A sample further off than this is no clock a broker would take records from (log.message.timestamp.after.max.ms, 1 h by default) or a record long in the log: dropped. */
const SKEW_MAX_SAMPLE_MS = 3_600_000;

/**
 * How far this executor's clock is ahead (positive) or behind (negative) the clocks of those whose records
 * it consumes (commands, from clients and other executors): each sample is our now minus the record's
 * CreateTime, that is the skew plus the time the record took to arrive, which is never negative. So the
 * samples scatter above the skew — a little for a live record, seconds for one that waited out a failover —
 * and the estimate is their lower quartile: it stays put through a backlog of up to three quarters of the
 * window, and a writer whose clock is ahead of the rest must send a quarter of the samples to move it.
 */
export class SkewEstimate {
  private readonly samples: number[] = [];
  private warnedAt = 0;

  /** A record's CreateTime (ms) seen at `now` (our clock); the new estimate (unchanged for a sample dropped). */
  sample(recordTimestamp: number, now: number): number | undefined {
    const diff = now - recordTimestamp;
    if (Number.isFinite(diff) && recordTimestamp > 0 && Math.abs(diff) <= SKEW_MAX_SAMPLE_MS) {
      this.samples.push(diff);
      if (this.samples.length > SKEW_SAMPLES) this.samples.shift();
    }
    return this.estimate();
  }

  /** The lower quartile of the samples (ms; positive: our clock is ahead), or undefined before the first. */
  estimate(): number | undefined {
    if (this.samples.length === 0) return undefined;
    const sorted = [...this.samples].sort((a, b) => a - b);
    return sorted[Math.floor((sorted.length - 1) / 4)]!;
  }

  /** Whether to warn now: the estimate is past SKEW_WARN_MS either way and half again past the last warning. */
  shouldWarn(): boolean {
    const e = this.estimate();
    if (e === undefined || Math.abs(e) < SKEW_WARN_MS || Math.abs(e) < this.warnedAt * 1.5) return false;
    this.warnedAt = Math.abs(e);
    return true;
  }
}
