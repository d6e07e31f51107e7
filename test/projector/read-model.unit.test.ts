// The overview's activity: applied events counted per 10 s of their occurredAt, zero-filled, bounded.
import { describe, expect, it } from 'vitest';
import { ReadModel } from '../../projector/read-model.js';
import type { PlanEvent } from '../../src/plan/index.js';

const ev = (type: string, occurredAt: number, seq = 1) => ({ type, occurredAt, seq, planId: 'p' }) as unknown as PlanEvent;

describe('ReadModel activity', () => {
  it('counts completed and failed items and retries per 10 s bucket of event time', () => {
    const m = new ReadModel({ retainEvents: 0, loader: async () => [] });
    const t0 = 1_700_000_000_000; // a multiple of 10 000
    m.applied(ev('ItemCompleted', t0 + 1));
    m.applied(ev('ItemCompleted', t0 + 9_999));
    m.applied(ev('ItemFailed', t0 + 10_000));
    m.applied(ev('ItemRetryScheduled', t0 + 10_001));
    m.applied(ev('PlanCreated', t0 - 1)); // the bucket before
    const a = m.activity(t0 + 15_000, 30_000);
    expect(a).toEqual([
      { at: t0 - 10_000, events: 1, itemsCompleted: 0, itemsFailed: 0, retries: 0 },
      { at: t0, events: 2, itemsCompleted: 2, itemsFailed: 0, retries: 0 },
      { at: t0 + 10_000, events: 2, itemsCompleted: 0, itemsFailed: 1, retries: 1 },
    ]);
    expect(m.activity(t0 + 60 * 60_000)).toHaveLength(30); // 5 minutes of 10 s, all zero
    expect(m.activity(t0 + 60 * 60_000).every((b) => b.events === 0)).toBe(true);
    m.close();
  });

  it('keeps the newest 15 minutes of buckets when a replay applies old events late', () => {
    const m = new ReadModel({ retainEvents: 0, loader: async () => [] });
    const now = 1_700_000_000_000;
    m.applied(ev('ItemCompleted', now));
    for (let i = 1; i <= 200; i++) m.applied(ev('ItemCompleted', now - i * 10_000 * 3)); // old history, replayed after
    expect(m.activity(now, 10_000)).toEqual([{ at: now, events: 1, itemsCompleted: 1, itemsFailed: 0, retries: 0 }]);
    expect(m.activity(now, 15 * 60_000).reduce((n, b) => n + b.events, 0)).toBe(1 + 29); // now, and 29 more within 15 min
    m.close();
  });

  it('counts the events a restore replays once, also when the partition is restored again', () => {
    const m = new ReadModel({ retainEvents: 0, loader: async () => [] });
    const t0 = 1_700_000_000_000;
    const of = (planId: string, seq: number) => ({ type: 'ItemCompleted', occurredAt: t0 + seq, seq, planId }) as unknown as PlanEvent;
    m.applied(of('a', 1)); // live
    m.applied(of('a', 2));
    for (const seq of [1, 2, 3]) m.replayed(of('a', seq)); // the partition came back: 1 and 2 were counted live
    for (const seq of [1, 2]) m.replayed(of('b', seq)); // a plan first seen in a restore's tail
    for (const seq of [1, 2]) m.replayed(of('b', seq)); // and that restore again
    expect(m.activity(t0 + 5, 10_000)).toEqual([{ at: t0, events: 5, itemsCompleted: 5, itemsFailed: 0, retries: 0 }]);
    m.close();
  });
});
