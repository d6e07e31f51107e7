import { describe, expect, it } from 'vitest';
import { CacheBudget, DormantCache, type DormantEntry } from '../../executor/dormant-cache.js';

const entry = (bytes: number, since: number | null = null): DormantEntry => ({ kind: 'state', value: Buffer.alloc(bytes, 1), since });
const OVERHEAD = 160;

describe('DormantCache (finished plans by bytes)', () => {
  it('evicts the least recently set past the budget and remembers the evicted ids with their start time', () => {
    const budget = new CacheBudget(3 * (1000 + OVERHEAD));
    const c = new DormantCache(budget);
    c.set('a', entry(1000, 11));
    c.set('b', entry(1000, 12));
    c.set('c', entry(1000, 13));
    expect(c.size).toBe(3);
    expect(budget.used).toBe(3 * (1000 + OVERHEAD));
    c.set('d', entry(1000, 14));
    expect([c.has('a'), c.has('b'), c.has('c'), c.has('d')]).toEqual([false, true, true, true]);
    expect(c.knows('a')).toBe(true);
    expect(c.evicted.get('a')).toBe(11);
    expect(budget.used).toBe(3 * (1000 + OVERHEAD));
    // Set again: most recent, no longer evicted.
    c.set('a', entry(500, 11));
    expect(c.has('b')).toBe(false);
    expect(c.evicted.has('a')).toBe(false);
    expect(c.heldBytes).toBe(budget.used);
  });

  it('an entry larger than the budget is evicted at once; delete and clear give every byte back', () => {
    const budget = new CacheBudget(2000);
    const c = new DormantCache(budget);
    c.set('big', entry(5000, null));
    expect(c.size).toBe(0);
    expect(c.evicted.get('big')).toBeNull();
    expect(budget.used).toBe(0);
    c.set('x', entry(100));
    c.delete('big');
    expect(c.knows('big')).toBe(false);
    c.delete('x');
    expect(budget.used).toBe(0);
    c.set('y', entry(100));
    c.clear();
    expect([budget.used, c.size, c.evicted.size]).toEqual([0, 0, 0]);
  });

  it('owners sharing a budget each evict their own entries while the total is over', () => {
    const budget = new CacheBudget(2 * (100 + OVERHEAD));
    const p0 = new DormantCache(budget);
    const p1 = new DormantCache(budget);
    p0.set('a', entry(100));
    p0.set('b', entry(100));
    p1.set('c', entry(100));
    expect(p0.size + p1.size).toBe(2);
    expect(p1.size).toBe(0); // p1 could only evict its own
    expect(budget.used).toBe(2 * (100 + OVERHEAD));
    p0.clear();
    expect(budget.used).toBe(0);
  });
});
