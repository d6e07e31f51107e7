// Issue 13: 24 partitions and 3 executor processes in one group. The topics of a fresh prefix are created
// with 24 partitions; the three executors share them (each owns some, none owns one twice); 60 plans of a
// three-item chain run on them; one executor is killed (SIGKILL) while plans are running, its partitions
// move to the two others, and every plan still completes with exactly one effect per item.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { topicNames } from '../../src/config.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { ensurePlanTopics } from '../../src/kafka/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testAdmin, testConfig, testKafka, waitFor } from '../support/helpers.js';
import { spawnExecutor, type ExecutorProcess } from '../support/processes.js';

const PARTITIONS = 24;
const PLANS = 60;

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

/** The partitions an executor owns now (its last `assignment` line), or undefined before its first. */
const owned = (p: ExecutorProcess) => ([...p.logs].reverse().find((l) => l.msg === 'assignment') as { partitions?: number[] } | undefined)?.partitions;
/** Partitions an executor has restored (owner `partition restored` lines), in order. */
const restored = (p: ExecutorProcess) => p.logs.filter((l) => l.msg === 'partition restored' && l.component === 'partition-owner').map((l) => l.partition as number);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('24 partitions, 3 executors', () => {
  it('share the partitions, run 60 plans exactly once, and hand a killed member\'s partitions to the others', { timeout: 600_000 }, async () => {
    const config = testConfig({ partitions: PARTITIONS });
    const admin = await testAdmin(testKafka(config));
    await ensurePlanTopics(admin, config);
    const names = topicNames(config.topicPrefix);
    const meta = await admin.fetchTopicMetadata([names.commands, names.events, names.snapshots, names.archive]);
    expect(meta.map((t) => t.partitions.length)).toEqual([PARTITIONS, PARTITIONS, PARTITIONS, PARTITIONS]);

    const env = { EFFECTS_URL: effects.url };
    const execs = ['x-A', 'x-B', 'x-C'].map((label) => spawnExecutor(config, { label, env }));
    // The group settles with every partition owned by exactly one of the three, and restored by it.
    await waitFor(
      () => {
        const sets = execs.map(owned);
        if (sets.some((s) => !s?.length)) return false;
        const all = sets.flatMap((s) => s!);
        if (all.length !== PARTITIONS || new Set(all).size !== PARTITIONS) return false;
        return execs.every((e, i) => sets[i]!.every((p) => restored(e).includes(p)));
      },
      { timeoutMs: 180_000, intervalMs: 250, message: 'three members own and have restored all 24 partitions' },
    );
    const before = execs.map((e) => owned(e)!);
    for (const s of before) expect(s.length).toBeGreaterThanOrEqual(1);
    expect(before.flat().sort((a, b) => a - b)).toEqual(range(PARTITIONS));

    const ledger = await connectLedger(config);
    try {
      const items = [
        { id: 'fetch', title: 'fetch', why: 'first', tool: 'effect', input: {} },
        { id: 'work', title: 'work', why: 'held long enough to be running at the kill', tool: 'effect', input: { holdMs: 1500 }, dependsOn: ['fetch'] },
        { id: 'report', title: 'report', why: 'last', tool: 'effect', input: {}, dependsOn: ['work'] },
      ];
      const planIds = range(PLANS).map((i) => `p24-${config.topicPrefix}-${i}`);
      const byPartition = new Set(planIds.map((id) => partitionFor(id, PARTITIONS)));
      expect(byPartition.size).toBeGreaterThanOrEqual(20); // the plans are spread over (nearly) every partition
      await Promise.all(planIds.map((planId) => ledger.createPlan({ planId, goal: `plan ${planId}`, mode: 'execute', items }, { timeoutMs: 120_000 })));

      // Kill the member that owns the most partitions once some of its plans are mid-run.
      const victim = execs.reduce((a, b) => (owned(b)!.length > owned(a)!.length ? b : a));
      const victimParts = new Set(owned(victim)!);
      const victimPlans = planIds.filter((id) => victimParts.has(partitionFor(id, PARTITIONS)));
      expect(victimPlans.length).toBeGreaterThan(0);
      await waitFor(() => effects.calls.some((c) => c.executorId === victim.label && c.itemId === 'work'), { timeoutMs: 120_000, message: `${victim.label} is running a work item` });
      victim.kill('SIGKILL');
      expect((await victim.exited).signal).toBe('SIGKILL');
      const survivors = execs.filter((e) => e !== victim);

      // The survivors take the victim's partitions over: together they own all 24 again.
      await waitFor(
        () => {
          const sets = survivors.map(owned);
          const all = sets.flatMap((s) => s ?? []);
          return all.length === PARTITIONS && new Set(all).size === PARTITIONS && survivors.every((e, i) => sets[i]!.every((p) => restored(e).includes(p)));
        },
        { timeoutMs: 120_000, intervalMs: 250, message: 'the survivors own and have restored all 24 partitions' },
      );
      for (const p of victimParts) expect(survivors.some((e) => owned(e)!.includes(p))).toBe(true);

      const done = await Promise.all(planIds.map((id) => ledger.waitFor(id, 'completed', { timeoutMs: 180_000 })));
      expect(done.every((s) => s.status === 'completed')).toBe(true);

      // Exactly once: one effect per item under its attempt-1 key; a repeated call only by a survivor
      // recovering an item the victim had started, with the same key.
      for (const planId of planIds) {
        const keys = [...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`)).sort();
        expect(keys).toEqual([`${planId}/fetch/1`, `${planId}/report/1`, `${planId}/work/1`]);
        const calls = effects.calls.filter((c) => c.key.startsWith(`${planId}/`));
        const repeats = calls.filter((c) => c.recovering);
        for (const r of repeats) expect(survivors.map((s) => s.label)).toContain(r.executorId);
        expect(calls.length).toBe(3 + repeats.filter((r) => calls.some((c) => c.key === r.key && c !== r)).length);
        const events = (await ledger.planEvents(planId)).map((r) => r.event);
        for (const type of ['IntentRecorded', 'ResultCommitted', 'ItemCompleted'] as const) {
          expect(events.filter((e) => e.type === type).map((e) => (e.data as { itemId: string }).itemId).sort(), `${planId} ${type}`).toEqual(['fetch', 'report', 'work']);
        }
      }
      // Every member did work, and the victim's plans were finished by the survivors.
      const actors = new Set(effects.calls.filter((c) => planIds.some((id) => c.key.startsWith(`${id}/`))).map((c) => c.executorId));
      expect([...actors].sort()).toEqual(['x-A', 'x-B', 'x-C']);
      const finishedBy = await Promise.all(victimPlans.map(async (id) => (await ledger.planEvents(id)).map((r) => r.event).find((e) => e.type === 'PlanCompleted')?.actor));
      for (const by of finishedBy) expect(survivors.map((s) => s.label)).toContain(by);
      console.log(JSON.stringify({ owned: Object.fromEntries(execs.map((e, i) => [e.label, before[i]])), victim: victim.label, victimPlans: victimPlans.length, after: Object.fromEntries(survivors.map((e) => [e.label, owned(e)])), recoveringCalls: effects.calls.filter((c) => c.recovering).length }));
      for (const s of survivors) s.kill('SIGTERM');
    } finally {
      await ledger.close();
    }
  });
});
