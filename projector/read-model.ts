import { EventEmitter } from 'node:events';
import type { PlanEvent, PlanState, PlanStatus } from '../src/plan/index.js';
import { stateDigest } from '../src/plan/index.js';
import { Lru } from '../src/lru.js';
import type { PartitionProjection, PlanSummary, PlanView } from '../src/projection/index.js';

export const BUCKET_MS = 10_000;
/** Plans whose last counted seq is kept, so a partition restored again in this process is not counted twice. */
const MAX_COUNTED_PLANS = 100_000;
const MAX_BUCKETS = 90; // 15 minutes

/** What was applied in one 10 s window of event time. */
export interface ActivityBucket {
  /** Start of the window (ms since the epoch). */
  readonly at: number;
  events: number;
  itemsCompleted: number;
  itemsFailed: number;
  retries: number;
}

/** Loads a plan's whole history from the log when memory does not hold it (restored from a snapshot, evicted). */
export type EventLoader = (planId: string) => Promise<PlanEvent[]>;

interface CachedEvents {
  events: PlanEvent[];
}

/** A finished plan the projector does not hold in memory: where its archived snapshot is, and how lists show it. */
export interface ColdPlan {
  readonly partition: number;
  /** Offset of its snapshot record in the archive topic's partition. */
  readonly offset: string;
  readonly summary: PlanSummary;
}

export interface PlanCacheOptions {
  /** Bytes of finished, archived plans held in memory (their snapshots' size); past it the least recently used go cold. */
  readonly cacheBytes: number;
  /** Takes a plan out of its projection to go cold; undefined when it cannot go now (changed, not archived at its seq). */
  readonly release: (planId: string) => ColdPlan | undefined;
  /** Reads a cold plan's state (its archived snapshot). */
  readonly loadCold: (planId: string, cold: ColdPlan) => Promise<PlanState>;
}

/** A plan as the API reads it: from memory (hot) or loaded from its archived snapshot (cold). */
export type ReadView = PlanView & { partition: number; lastOffset: string | null; cold: boolean };

/**
 * What the HTTP API reads: the partition projections this projector owns, plus a bounded cache of each
 * plan's events for the events and audit routes (LRU by plan, capped by total events). States are always
 * in memory; event histories are a cache, re-read from the events topic on a miss.
 */
export class ReadModel {
  readonly partitions = new Map<number, PartitionProjection>();
  /** Each plan's events, weighed by their count (`retainEvents` in all). */
  private readonly cache: Lru<string, CachedEvents>;
  private readonly loading = new Map<string, Promise<PlanEvent[]>>();
  private readonly changes = new EventEmitter();
  private changed = new Set<string>();
  private flushTimer: NodeJS.Timeout | undefined;
  /** Applied events per 10 s of their occurredAt, for the overview's recent activity. */
  private readonly buckets = new Map<number, ActivityBucket>();
  /** Per plan, the last seq counted as activity (a bounded memory: the least recently counted go first). */
  private readonly countedSeq = new Lru<string, number>({ maxWeight: MAX_COUNTED_PLANS });
  version = 0;
  /** Finished plans whose archived snapshot is at their seq, held in memory: planId → bytes and partition, least recently used first. */
  private readonly hotFinished: Lru<string, { bytes: number; partition: number }>;
  /** Finished plans not in memory: listed from their summary, read from the archive on demand. */
  readonly cold = new Map<string, ColdPlan>();
  private readonly coldLoads = new Map<string, Promise<PlanState>>();

  constructor(
    private readonly opts: { retainEvents: number; loader: EventLoader; notifyMs?: number; cache?: PlanCacheOptions },
  ) {
    this.changes.setMaxListeners(0);
    this.cache = new Lru({ maxWeight: Math.max(0, opts.retainEvents), weigh: (c) => c.events.length });
    // Past the budget the least recently read go cold: out of the projection, read from the archive on demand.
    this.hotFinished = new Lru({
      maxWeight: opts.cache?.cacheBytes ?? Infinity,
      weigh: (h) => h.bytes,
      onEvict: (planId) => {
        const cold = opts.cache?.release(planId);
        if (cold === undefined) return; // changed since (it is hot again, and comes back here when archived again)
        this.cold.set(planId, cold);
        this.evict(planId);
      },
    });
  }

  /** Bytes of finished plans held in memory that could go cold (see {@link PlanCacheOptions.cacheBytes}). */
  get finishedBytes(): number {
    return this.hotFinished.weight;
  }

  /**
   * A finished plan's snapshot landed in the archive at its current seq (`bytes`: its size): it may go cold
   * when the finished plans held pass the budget, least recently used first.
   */
  archived(planId: string, partition: number, bytes: number): void {
    this.hotFinished.set(planId, { bytes, partition });
  }

  /** A cold plan is back in its projection (an event arrived for it). */
  warmed(planId: string): void {
    this.cold.delete(planId);
  }

  /** A plan is gone (erased): nothing of it stays, hot or cold. */
  forget(planId: string): void {
    this.cold.delete(planId);
    this.hotFinished.delete(planId);
    this.evict(planId);
  }

  /** Known to this projector, hot or cold. */
  has(planId: string): boolean {
    return this.view(planId) !== undefined || this.cold.has(planId);
  }

  /**
   * The plan for a read: from memory, or — cold — its archived snapshot read back (concurrent reads of
   * one cold plan share the read). Undefined when this projector does not know it.
   */
  async read(planId: string): Promise<ReadView | undefined> {
    const hot = this.view(planId);
    if (hot !== undefined) {
      this.hotFinished.get(planId); // recently read: last to go cold
      return { ...hot, cold: false };
    }
    const cold = this.cold.get(planId);
    if (cold === undefined || this.opts.cache === undefined) return undefined;
    let pending = this.coldLoads.get(planId);
    if (pending === undefined) {
      pending = this.opts.cache.loadCold(planId, cold).finally(() => this.coldLoads.delete(planId));
      this.coldLoads.set(planId, pending);
    }
    const state = await pending;
    const warm = this.view(planId); // warmed by an event meanwhile: the projection is ahead of the archive
    if (warm !== undefined) return { ...warm, cold: false };
    return { planId, state, stalled: null, partition: cold.partition, lastOffset: null, cold: true };
  }

  setPartition(p: number, projection: PartitionProjection): void {
    this.partitions.set(p, projection);
    this.touchAll(projection);
  }

  dropPartition(p: number): void {
    const projection = this.partitions.get(p);
    if (!projection) return;
    this.partitions.delete(p);
    for (const id of projection.plans.keys()) this.evict(id);
    for (const [id, h] of this.hotFinished.entries()) if (h.partition === p) this.hotFinished.delete(id);
    for (const [id, c] of this.cold) if (c.partition === p) this.cold.delete(id);
    this.touchAll(projection);
  }

  private touchAll(projection: PartitionProjection): void {
    for (const id of projection.plans.keys()) this.changed.add(id);
    this.scheduleNotify();
  }

  view(planId: string): (PlanView & { partition: number; lastOffset: string | null }) | undefined {
    for (const [p, projection] of this.partitions) {
      const e = projection.get(planId);
      if (e) return { planId, state: e.state, stalled: e.stalled, partition: p, lastOffset: e.lastOffset };
    }
    return undefined;
  }

  /** Every plan: those in memory with their state, cold ones with their summary (no state). */
  *views(): Iterable<PlanView> {
    for (const projection of this.partitions.values()) yield* projection.plans.values();
    for (const [planId, c] of this.cold) yield { planId, state: undefined, stalled: null, summary: c.summary };
  }

  /** stateDigest of every plan held in memory (cold plans are not read back for this). */
  stateDigests(): Map<string, string> {
    const out = new Map<string, string>();
    for (const v of this.views()) if (v.state) out.set(v.planId, stateDigest(v.state));
    return out;
  }

  states(): Map<string, PlanState> {
    const out = new Map<string, PlanState>();
    for (const v of this.views()) if (v.state) out.set(v.planId, v.state);
    return out;
  }

  countByStatus(): Map<PlanStatus | 'stalled', number> {
    const out = new Map<PlanStatus | 'stalled', number>();
    for (const v of this.views()) {
      const s = v.state?.status ?? v.summary?.status ?? 'none';
      out.set(s, (out.get(s) ?? 0) + 1);
      if (v.stalled) out.set('stalled', (out.get('stalled') ?? 0) + 1);
    }
    return out;
  }

  /** An event was applied: extend the plan's cached history when it is complete up to the previous seq. */
  applied(event: PlanEvent): void {
    this.changed.add(event.planId);
    this.scheduleNotify();
    this.count(event);
    if (this.opts.retainEvents <= 0) return;
    const c = this.cache.peek(event.planId);
    if (c !== undefined) {
      const last = c.events[c.events.length - 1];
      if (last !== undefined && last.seq + 1 !== event.seq) {
        this.evict(event.planId);
        return;
      }
      c.events.push(event);
      this.cache.set(event.planId, c); // re-weighed, and the most recently changed
    } else if (event.seq === 1) {
      this.cache.set(event.planId, { events: [event] });
    }
  }

  /**
   * An event of a restored partition's tail (after its snapshots), applied by the restore: counted as
   * activity unless this projector counted it already (a partition that comes back to it).
   */
  replayed(event: PlanEvent): void {
    if (event.seq > (this.countedSeq.peek(event.planId) ?? 0)) this.count(event);
  }

  private count(event: PlanEvent): void {
    this.countedSeq.set(event.planId, event.seq);
    const at = Math.floor(event.occurredAt / BUCKET_MS) * BUCKET_MS;
    let b = this.buckets.get(at);
    if (b === undefined) {
      b = { at, events: 0, itemsCompleted: 0, itemsFailed: 0, retries: 0 };
      this.buckets.set(at, b);
      if (this.buckets.size > MAX_BUCKETS) {
        // Keep the most recent buckets (by time, not insertion: a replay applies old events late).
        const keep = [...this.buckets.keys()].sort((x, y) => y - x).slice(0, MAX_BUCKETS);
        for (const k of this.buckets.keys()) if (!keep.includes(k)) this.buckets.delete(k);
      }
    }
    b.events += 1;
    if (event.type === 'ItemCompleted') b.itemsCompleted += 1;
    else if (event.type === 'ItemFailed') b.itemsFailed += 1;
    else if (event.type === 'ItemRetryScheduled') b.retries += 1;
  }

  /**
   * Applied events per 10 s over the `windowMs` before `now`, by their occurredAt (zero-filled, oldest
   * first). Counts what this projector applied since it started, live or in a restore's tail (once each):
   * the events a snapshot covers add none.
   */
  activity(now: number, windowMs = 5 * 60_000): ActivityBucket[] {
    const last = Math.floor(now / BUCKET_MS) * BUCKET_MS;
    const out: ActivityBucket[] = [];
    for (let at = last - Math.ceil(windowMs / BUCKET_MS - 1) * BUCKET_MS; at <= last; at += BUCKET_MS) {
      out.push({ ...(this.buckets.get(at) ?? { at, events: 0, itemsCompleted: 0, itemsFailed: 0, retries: 0 }) });
    }
    return out;
  }

  /** A plan changed without an applied event (stalled, erased). */
  touched(planId: string): void {
    this.changed.add(planId);
    this.scheduleNotify();
  }

  evict(planId: string): void {
    this.cache.delete(planId);
  }

  /**
   * Every event of the plan up to its current seq: from memory when the history there is complete,
   * otherwise read from the events topic (and cached).
   */
  async events(planId: string): Promise<PlanEvent[]> {
    const view = this.view(planId);
    const seq = view?.state?.seq ?? this.cold.get(planId)?.summary.seq ?? 0;
    const c = this.cache.peek(planId);
    if (c !== undefined && c.events.length > 0 && c.events[c.events.length - 1]!.seq >= seq) return c.events.filter((e) => e.seq <= seq);
    let pending = this.loading.get(planId);
    if (pending === undefined) {
      pending = this.opts.loader(planId).finally(() => this.loading.delete(planId));
      this.loading.set(planId, pending);
    }
    const loaded = await pending;
    // Keep only the prefix the projection has applied (the log may be ahead, or hold events past a stall).
    const upTo = this.view(planId)?.state?.seq ?? this.cold.get(planId)?.summary.seq ?? seq;
    const events = loaded.filter((e) => e.seq <= upTo);
    if (this.opts.retainEvents > 0 && events.length > 0 && events.length <= this.opts.retainEvents && !this.cache.has(planId)) {
      this.cache.set(planId, { events: [...events] });
    }
    return events;
  }

  /** Listens for changes: called with the ids of plans that changed, at most every `notifyMs`. */
  onChange(listener: (planIds: string[], version: number) => void): () => void {
    this.changes.on('change', listener);
    return () => this.changes.off('change', listener);
  }

  private scheduleNotify(): void {
    if (this.flushTimer !== undefined) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      if (this.changed.size === 0) return;
      const ids = [...this.changed];
      this.changed = new Set();
      this.version += 1;
      this.changes.emit('change', ids, this.version);
    }, this.opts.notifyMs ?? 250);
    this.flushTimer.unref();
  }

  close(): void {
    clearTimeout(this.flushTimer);
    this.changes.removeAllListeners();
  }
}
