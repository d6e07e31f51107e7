import { describe, expect, it } from 'vitest';
import { FollowedPlans } from '../../src/client/followed.js';
import { evolveAll, type PlanEvent } from '../../src/plan/index.js';
import { cmd, item, run } from '../plan/fixtures.js';

/** A plan's events: created with a chain of `n` items, the first one run to completion. */
function planEvents(planId: string, n: number): PlanEvent[] {
  const items = Array.from({ length: n }, (_, i) => item(`i${i}`, i ? [`i${i - 1}`] : []));
  return run([cmd.create(items, 'execute', { planId }), cmd.intent('i0', { planId }), cmd.commit('i0', 1, 'succeeded', {}, { planId })]).events;
}

/** A tail stand-in: listeners by plan, and a way to deliver events to them. */
function tail() {
  const listeners = new Map<string, Set<(e: PlanEvent) => void>>();
  return {
    subscribe: (planId: string, l: (e: PlanEvent) => void) => {
      const set = listeners.get(planId) ?? new Set();
      listeners.set(planId, set.add(l));
      return () => void set.delete(l);
    },
    deliver: (planId: string, events: PlanEvent[]) => {
      for (const e of events) for (const l of [...(listeners.get(planId) ?? [])]) l(e);
    },
    count: (planId: string) => listeners.get(planId)?.size ?? 0,
  };
}

describe('plans followed from their first event', () => {
  it('hands over the same state a fold of the events gives, once, and stops listening', () => {
    const t = tail();
    const f = new FollowedPlans(t.subscribe);
    const events = planEvents('plan-a', 5);
    f.begin('plan-a');
    t.deliver('plan-a', events);
    const state = f.take('plan-a');
    expect(state?.digest).toBe(evolveAll(undefined, events)?.digest);
    expect(state?.seq).toBe(events.length);
    expect(f.take('plan-a')).toBeUndefined();
    expect(t.count('plan-a')).toBe(0);
  });

  it('gives nothing (read the log) when an event is missing or the first is not seq 1', () => {
    const t = tail();
    const f = new FollowedPlans(t.subscribe);
    const events = planEvents('plan-b', 5);
    f.begin('plan-b');
    t.deliver('plan-b', [events[0]!, ...events.slice(2)]);
    expect(f.take('plan-b')).toBeUndefined();
    f.begin('plan-c');
    t.deliver('plan-c', planEvents('plan-c', 3).slice(1));
    expect(f.take('plan-c')).toBeUndefined();
    expect(f.size).toBe(0);
  });

  it('is bounded: the oldest plan goes past maxPlans, a plan past maxItems is not kept', () => {
    const t = tail();
    const f = new FollowedPlans(t.subscribe, { maxPlans: 2, maxItems: 4 });
    for (const id of ['p1', 'p2', 'p3']) f.begin(id);
    expect(f.size).toBe(2);
    expect(t.count('p1')).toBe(0);
    t.deliver('p2', planEvents('p2', 5));
    expect(f.take('p2')).toBeUndefined();
    t.deliver('p3', planEvents('p3', 3));
    expect(f.take('p3')?.seq).toBeGreaterThan(0);
  });
});
