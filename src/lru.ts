/**
 * The one least-recently-used cache of the project: entries weighed (bytes, events, or 1 each), the
 * least recently used leaving first while the weight is over the limit. Every bounded cache (the
 * executor's dormant plans, resolved payloads, the projector's event histories and finished plans, the
 * plans a client follows) is one of these, with what leaving means to it in `onEvict`.
 *
 * The limit is its own (`maxWeight`) or a {@link WeightBudget} shared by several caches: then each cache
 * evicts its own entries while the shared total is over (the owners of one executor share one budget).
 */

/** A weight limit several caches share. */
export class WeightBudget {
  used = 0;
  constructor(readonly max: number) {}
}

export interface LruOptions<K, V> {
  /** The limit of this cache alone (default: none), or a budget it shares with others. */
  readonly maxWeight?: number;
  readonly budget?: WeightBudget;
  /** The entry's weight (default 1: the limit is a count). Weighed when set. */
  readonly weigh?: (value: V, key: K) => number;
  /** Called after an entry left to make room (not on `delete`, `clear` or a replacing `set`). */
  readonly onEvict?: (key: K, value: V) => void;
}

interface Slot<V> {
  value: V;
  weight: number;
}

export class Lru<K, V> {
  /** Insertion order is recency order: the first entry is the least recently used. */
  private readonly slots = new Map<K, Slot<V>>();
  private held = 0;
  private readonly budget: WeightBudget;

  constructor(private readonly o: LruOptions<K, V> = {}) {
    if (o.budget !== undefined && o.maxWeight !== undefined) throw new Error('an Lru takes maxWeight or a shared budget, not both');
    this.budget = o.budget ?? new WeightBudget(o.maxWeight ?? Infinity);
  }

  get size(): number {
    return this.slots.size;
  }

  /** The weight this cache holds. */
  get weight(): number {
    return this.held;
  }

  has(key: K): boolean {
    return this.slots.has(key);
  }

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    const s = this.slots.get(key);
    if (s === undefined) return undefined;
    this.slots.delete(key);
    this.slots.set(key, s);
    return s.value;
  }

  /** The value without touching its recency. */
  peek(key: K): V | undefined {
    return this.slots.get(key)?.value;
  }

  /**
   * Sets (or replaces, re-weighing it) the value as the most recently used, then evicts while over the
   * limit; false when the value itself left. A value heavier than the whole limit leaves at once (`onEvict`,
   * without pushing anything else out); the key's old value is dropped then too.
   */
  set(key: K, value: V): boolean {
    this.remove(key);
    const weight = this.o.weigh?.(value, key) ?? 1;
    if (weight > this.budget.max) {
      this.o.onEvict?.(key, value);
      return false;
    }
    this.slots.set(key, { value, weight });
    this.held += weight;
    this.budget.used += weight;
    this.trim();
    return this.slots.has(key);
  }

  /** Removes the entry (no `onEvict`); its value, if it was there. */
  delete(key: K): V | undefined {
    return this.remove(key);
  }

  /** Removes every entry (no `onEvict`). */
  clear(): void {
    this.budget.used -= this.held;
    this.held = 0;
    this.slots.clear();
  }

  keys(): IterableIterator<K> {
    return this.slots.keys();
  }

  /** Entries, least recently used first; a copy, so the cache may change while it is walked. */
  entries(): Array<[K, V]> {
    return [...this.slots].map(([k, s]) => [k, s.value]);
  }

  private remove(key: K): V | undefined {
    const s = this.slots.get(key);
    if (s === undefined) return undefined;
    this.slots.delete(key);
    this.held -= s.weight;
    this.budget.used -= s.weight;
    return s.value;
  }

  private trim(): void {
    while (this.budget.used > this.budget.max && this.slots.size > 0) {
      const key = this.slots.keys().next().value as K;
      const value = this.remove(key) as V;
      this.o.onEvict?.(key, value);
    }
  }
}
