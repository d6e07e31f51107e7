// The one LRU cache (src/lru.ts): recency, weights, a budget shared by several caches, and what leaves.
import { describe, expect, it } from 'vitest';
import { Lru, WeightBudget } from '../src/lru.js';

describe('Lru', () => {
  it('evicts the least recently used first; get touches, peek does not', () => {
    const gone: string[] = [];
    const c = new Lru<string, number>({ maxWeight: 3, onEvict: (k) => void gone.push(k) });
    c.set('a', 1);
    c.set('b', 2);
    c.set('c', 3);
    expect(c.get('a')).toBe(1); // a is now the most recent
    expect(c.peek('b')).toBe(2); // b stays the least recent
    c.set('d', 4);
    expect(gone).toEqual(['b']);
    expect([...c.keys()]).toEqual(['c', 'a', 'd']);
    expect([c.size, c.weight]).toEqual([3, 3]);
  });

  it('weighs entries; a replaced value is re-weighed and becomes the most recent', () => {
    const gone: Array<[string, string]> = [];
    const c = new Lru<string, string>({ maxWeight: 10, weigh: (v) => v.length, onEvict: (k, v) => void gone.push([k, v]) });
    c.set('x', 'aaaa');
    c.set('y', 'bbbb');
    expect(c.weight).toBe(8);
    c.set('x', 'aaaaaa'); // 6 + 4: x is now the most recent
    expect([c.weight, [...c.keys()]]).toEqual([10, ['y', 'x']]);
    c.set('z', 'c');
    expect(gone).toEqual([['y', 'bbbb']]);
    expect([c.weight, [...c.keys()]]).toEqual([7, ['x', 'z']]);
  });

  it('a value heavier than the whole limit leaves at once and pushes nothing out', () => {
    const gone: string[] = [];
    const c = new Lru<string, string>({ maxWeight: 5, weigh: (v) => v.length, onEvict: (k) => void gone.push(k) });
    expect(c.set('small', 'abc')).toBe(true);
    c.set('big', 'abcd'); // 3 + 4 > 5: small leaves
    expect(gone).toEqual(['small']);
    expect(c.set('huge', 'abcdef')).toBe(false);
    expect(gone).toEqual(['small', 'huge']);
    expect([...c.keys()]).toEqual(['big']);
    // Replacing a kept key with an oversized value drops the old value too.
    expect(c.set('big', 'abcdefgh')).toBe(false);
    expect([c.size, c.weight, gone]).toEqual([0, 0, ['small', 'huge', 'big']]);
  });

  it('caches sharing a budget each evict their own entries while the total is over', () => {
    const budget = new WeightBudget(4);
    const goneA: string[] = [];
    const goneB: string[] = [];
    const a = new Lru<string, number>({ budget, onEvict: (k) => void goneA.push(k) });
    const b = new Lru<string, number>({ budget, onEvict: (k) => void goneB.push(k) });
    a.set('a1', 1);
    a.set('a2', 2);
    b.set('b1', 1);
    b.set('b2', 2);
    expect(budget.used).toBe(4);
    b.set('b3', 3); // over: b gives up its own oldest, a keeps both
    expect([goneA, goneB]).toEqual([[], ['b1']]);
    a.set('a3', 3);
    expect([goneA, goneB]).toEqual([['a1'], ['b1']]);
    expect(budget.used).toBe(4);
    // delete and clear give the weight back without an eviction.
    expect(a.delete('a2')).toBe(2);
    b.clear();
    expect([budget.used, a.size, b.size, goneA, goneB]).toEqual([1, 1, 0, ['a1'], ['b1']]);
  });

  it('entries is a copy, least recent first, safe to change the cache while walking it', () => {
    const c = new Lru<number, string>({ maxWeight: 10 });
    for (let i = 0; i < 5; i++) c.set(i, `v${i}`);
    c.get(0);
    for (const [k] of c.entries()) if (k % 2 === 0) c.delete(k);
    expect(c.entries()).toEqual([[1, 'v1'], [3, 'v3']]);
  });

  it('refuses a limit of its own and a shared budget at once', () => {
    expect(() => new Lru({ maxWeight: 1, budget: new WeightBudget(1) })).toThrow('an Lru takes maxWeight or a shared budget, not both');
  });
});
