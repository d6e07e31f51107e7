/**
 * Finished plans an owner holds undecoded, bounded in bytes: the executor's memory follows its
 * configuration (`PLAN_LEDGER_EXECUTOR_CACHE_MIB`), not the number of plans it has ever run.
 *
 * An entry is either the raw value of a plan's snapshot record (restored from the snapshots topic or the
 * archive; decoded and verified on use) or the plan's own state as JSON, put aside by its owner once the
 * plan finished and its last events committed. Past the budget the least recently used entries leave; a
 * plan that left is only remembered by id (and when its first event was written), and is read back from
 * the events topic when a command needs it.
 */

import { Lru, WeightBudget } from '../src/lru.js';

/** One plan put aside. */
export interface DormantEntry {
  /** `snapshot`: a snapshot record's value (Avro, decode + verify); `state`: the owner's own state as JSON. */
  readonly kind: 'snapshot' | 'state';
  readonly value: Buffer;
  /** When the plan's first event was written (ms, record timestamp), where a read of its events can start; null: unknown. */
  readonly since: number | null;
}

/** A byte budget shared by the owners of one executor (each evicts its own entries while the total is over). */
export class CacheBudget extends WeightBudget {}

/** Bookkeeping bytes counted per entry beside its value (key, map slot, the entry object). */
const ENTRY_OVERHEAD = 160;

/** Default executor cache: 64 MiB. */
export const DEFAULT_EXECUTOR_CACHE_MIB = 64;

export class DormantCache {
  private readonly entries: Lru<string, DormantEntry>;
  /** Plans that left the cache: planId → `since` of their entry, so they can be read back from the log. */
  readonly evicted = new Map<string, number | null>();

  constructor(budget: CacheBudget) {
    this.entries = new Lru({ budget, weigh: (e) => e.value.length + ENTRY_OVERHEAD, onEvict: (planId, e) => void this.evicted.set(planId, e.since) });
  }

  get size(): number {
    return this.entries.size;
  }

  /** Bytes this cache holds now (values and bookkeeping). */
  get heldBytes(): number {
    return this.entries.weight;
  }

  has(planId: string): boolean {
    return this.entries.has(planId);
  }

  /** Held, or evicted (known to exist: a command for it must read it back, never treat it as unknown). */
  knows(planId: string): boolean {
    return this.entries.has(planId) || this.evicted.has(planId);
  }

  /** The entry without touching its recency. */
  peek(planId: string): DormantEntry | undefined {
    return this.entries.peek(planId);
  }

  set(planId: string, entry: DormantEntry): void {
    this.evicted.delete(planId);
    this.entries.set(planId, entry);
  }

  /** Drops the entry (loaded, or erased) — the evicted marker too. */
  delete(planId: string): void {
    this.entries.delete(planId);
    this.evicted.delete(planId);
  }

  /** Releases every byte (the owner is gone; the next owner restores from the log). */
  clear(): void {
    this.entries.clear();
    this.evicted.clear();
  }
}
