// The read model's cache of finished plans: least recently used out past the byte budget, cold plans
// listed and filtered from their summaries, read back through the loader, forgotten on erasure.
import { describe, expect, it } from 'vitest';
import { ReadModel, type ColdPlan } from '../../projector/read-model.js';
import { canonicalJson, stateDigest, type PlanState } from '../../src/plan/index.js';
import { PartitionProjection, parsePlanQuery, queryPlans, summarize } from '../../src/projection/index.js';
import { cmd, item, run } from '../plan/fixtures.js';

/** A finished (completed) plan of one item, with its own id and labels. */
function finished(planId: string, labels: Record<string, string>, createdAt: number): PlanState {
  const meta = { planId };
  const { state } = run([cmd.create([item('a')], 'execute', meta), cmd.intent('a', meta), cmd.commit('a', 1, 'succeeded', {}, meta), cmd.settle('a', meta)], createdAt);
  const s = state!;
  return { ...s, labels };
}

function model(projection: PartitionProjection, cacheBytes: number, loads: string[]) {
  const released: string[] = [];
  const archived = new Map<string, string>(); // planId -> "archive record" (its state as JSON)
  const m = new ReadModel({
    retainEvents: 0,
    loader: () => Promise.resolve([]),
    cache: {
      cacheBytes,
      release: (planId): ColdPlan | undefined => {
        const e = projection.get(planId);
        if (e?.state === undefined || planId.endsWith('-busy')) return undefined; // the projector refuses one that changed
        released.push(planId);
        projection.plans.delete(planId);
        archived.set(planId, canonicalJson(e.state));
        return { partition: 0, offset: String(released.length), summary: summarize(e) };
      },
      loadCold: (planId) => {
        loads.push(planId);
        return Promise.resolve(JSON.parse(archived.get(planId)!) as PlanState);
      },
    },
  });
  m.setPartition(0, projection);
  return { m, released };
}

describe('ReadModel cold plans', () => {
  it('lets the least recently used finished plans go cold past the budget; lists stay complete and exact', async () => {
    const projection = new PartitionProjection(0);
    const loads: string[] = [];
    const { m, released } = model(projection, 1500, loads);
    const states = ['p-0', 'p-1', 'p-2', 'p-3', 'p-4-busy', 'p-5'].map((id, i) => finished(id, { team: i % 2 ? 'odd' : 'even' }, 1000 + i));
    const before = queryPlans(states.map((s) => ({ planId: s.planId, state: s, stalled: null })), parsePlanQuery({ limit: 500 }));
    for (const s of states) {
      projection.seed(s);
      m.archived(s.planId, 0, 1000);
    }
    // 1000 bytes each, 1500 budget: one held; p-4-busy is refused (it changed), so it stays in memory.
    expect(released).toEqual(['p-0', 'p-1', 'p-2', 'p-3']);
    expect([...m.cold.keys()]).toEqual(['p-0', 'p-1', 'p-2', 'p-3']);
    expect(m.finishedBytes).toBe(1000); // p-5 only: p-4-busy left the cache's accounting when refused
    expect([...projection.plans.keys()].sort()).toEqual(['p-4-busy', 'p-5']);

    // Every page and filter equals the one over the states themselves.
    const all = queryPlans(m.views(), parsePlanQuery({ limit: 500 }));
    expect(all).toEqual(before);
    expect(queryPlans(m.views(), parsePlanQuery({ label: 'team:odd' })).plans.map((p) => p.planId)).toEqual(['p-5', 'p-3', 'p-1']);
    expect(queryPlans(m.views(), parsePlanQuery({ status: 'completed', limit: 2 })).nextCursor).not.toBeNull();
    expect(m.countByStatus().get('completed')).toBe(6);
    expect(m.has('p-0')).toBe(true);
    expect(m.view('p-0')).toBeUndefined();

    // A cold read goes through the loader (shared by concurrent reads) and returns the state it had.
    const [r1, r2] = await Promise.all([m.read('p-1'), m.read('p-1')]);
    expect(loads).toEqual(['p-1']);
    expect(r1).toMatchObject({ planId: 'p-1', cold: true, partition: 0 });
    expect(stateDigest(r1!.state!)).toBe(stateDigest(states[1]!));
    expect(r2!.state).toBe(r1!.state);
    expect(m.cold.has('p-1')).toBe(true); // a read does not load it back
    expect((await m.read('p-5'))?.cold).toBe(false);
    expect(await m.read('nope')).toBeUndefined();

    // Loaded back for an event, erased, or its partition dropped: nothing of it stays cold.
    m.warmed('p-2');
    m.forget('p-3');
    expect([...m.cold.keys()]).toEqual(['p-0', 'p-1']);
    m.dropPartition(0);
    expect(m.cold.size).toBe(0);
    expect(m.finishedBytes).toBe(0);
    m.close();
  });

  it('a recent read keeps a hot finished plan from going cold first', async () => {
    const projection = new PartitionProjection(0);
    const { m, released } = model(projection, 2000, []);
    for (const id of ['a', 'b']) {
      projection.seed(finished(id, {}, 1000));
      m.archived(id, 0, 1000);
    }
    await m.read('a'); // a is now the most recently used
    projection.seed(finished('c', {}, 1000));
    m.archived('c', 0, 1000);
    expect(released).toEqual(['b']);
    m.close();
  });
});
