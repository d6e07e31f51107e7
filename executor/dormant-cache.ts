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

/** One plan put aside. */
export interface DormantEntry {
  /** `snapshot`: a snapshot record's value (Avro, decode + verify); `state`: the owner's own state as JSON. */
  readonly kind: 'snapshot' | 'state';
  readonly value: Buffer;
  /** When the plan's first event was written (ms, record timestamp), where a read of its events can start; null: unknown. */
  readonly since: number | null;
}

/** A byte budget shared by the owners of one executor (each evicts its own entries while the total is over). */
export class CacheBudget {
  used = 0;
  constructor(readonly maxBytes: number) {}
}

/** Bookkeeping bytes counted per entry beside its value (key, map slot, the entry object). */
const ENTRY_OVERHEAD = 160;

/** Default executor cache: 64 MiB. */
export const DEFAULT_EXECUTOR_CACHE_MIB = 64;

export class DormantCache {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly entries = new Map<string, DormantEntry>();
  private bytes = 0;
  /** Plans that left the cache: planId → `since` of their entry, so they can be read back from the log. */
  readonly evicted = new Map<string, number | null>();

  constructor(private readonly budget: CacheBudget) {}

  get size(): number {
    return this.entries.size;
  }

  /** Bytes this cache holds now (values and bookkeeping). */
  get heldBytes(): number {
    return this.bytes;
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
    return this.entries.get(planId);
  }

  set(planId: string, entry: DormantEntry): void {
    this.remove(planId);
    this.evicted.delete(planId);
    this.entries.set(planId, entry);
    const cost = entry.value.length + ENTRY_OVERHEAD;
    this.bytes += cost;
    this.budget.used += cost;
    this.trim();
  }

  /** Drops the entry (loaded, or erased) — the evicted marker too. */
  delete(planId: string): void {
    this.remove(planId);
    this.evicted.delete(planId);
  }

  /** Releases every byte (the owner is gone; the next owner restores from the log). */
  clear(): void {
    this.budget.used -= this.bytes;
    this.bytes = 0;
    this.entries.clear();
    this.evicted.clear();
  }

  private remove(planId: string): void {
    const e = this.entries.get(planId);
    if (e === undefined) return;
    this.entries.delete(planId);
    const cost = e.value.length + ENTRY_OVERHEAD;
    this.bytes -= cost;
    this.budget.used -= cost;
  }

  private trim(): void {
    while (this.budget.used > this.budget.maxBytes && this.entries.size > 0) {
      const [planId, e] = this.entries.entries().next().value as [string, DormantEntry];
      this.remove(planId);
      this.evicted.set(planId, e.since);
    }
  }
}
