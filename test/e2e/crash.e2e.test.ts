// Guarantee 2 (docs/design.md#guarantees): killing an executor at every protocol boundary never makes an idempotent
// external service perform an effect twice, and the plan still completes. Executors are real child
// processes (`plan-ledger executor`), killed with SIGKILL; one partition makes the owner certain.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { verifyChain, type PlanEvent } from '../../src/plan/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testConfig, waitFor } from '../support/helpers.js';
import { ownsPartitions, runCli, spawnExecutor } from '../support/processes.js';

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

const items = [
  { id: 'prepare', title: 'prepare', why: 'look things up first', tool: 'effect', input: {} },
  { id: 'pay', title: 'pay', why: 'the side effect that must happen once', tool: 'effect', input: {}, dependsOn: ['prepare'] },
  { id: 'notify', title: 'notify', why: 'tell the customer', tool: 'effect', input: {}, dependsOn: ['pay'] },
];

// completedBy: who appends pay's ItemCompleted. Its result and completion commit in one transaction (with
// the intent of notify), so after (c) the survivor has nothing left of pay to do but to run notify.
const boundaries: { name: string; env: Record<string, string>; payCalls: number; completedBy: string }[] = [
  { name: '(a) inside the tool, after the effect, before it returns', env: { PLAN_LEDGER_TEST_CRASH_IN_TOOL: 'pay' }, payCalls: 2, completedBy: 'exec-B' },
  { name: '(a2) after IntentRecorded, before the tool is invoked', env: { PLAN_LEDGER_FAULT: 'after_intent:pay' }, payCalls: 1, completedBy: 'exec-B' },
  { name: '(b) after the tool returned, before ResultCommitted', env: { PLAN_LEDGER_FAULT: 'after_tool:pay' }, payCalls: 2, completedBy: 'exec-B' },
  { name: '(c) after ResultCommitted + ItemCompleted (one transaction), before the next tool', env: { PLAN_LEDGER_FAULT: 'after_result:pay' }, payCalls: 1, completedBy: 'exec-A' },
];

describe('crash at every protocol boundary (kill -9)', () => {
  it.each(boundaries)('$name: the survivor finishes with exactly one effect per item', async ({ env, payCalls, completedBy }) => {
    const config = testConfig({ partitions: 1 });
    const a = spawnExecutor(config, { label: 'exec-A', env: { EFFECTS_URL: effects.url, ...env } });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({ goal: 'refund order 42', mode: 'execute', items });
      const exit = await a.exited;
      expect(exit.signal).toBe('SIGKILL');

      const b = spawnExecutor(config, { label: 'exec-B', env: { EFFECTS_URL: effects.url } });
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
      b.kill('SIGTERM');

      const key = `${planId}/pay/1`;
      const payCallsSeen = effects.calls.filter((c) => c.key.startsWith(`${planId}/pay/`));
      // Exactly one effect for the plan's pay item, and every invocation carried the same key.
      expect(new Set(payCallsSeen.map((c) => c.key))).toEqual(new Set([key]));
      expect([...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`)).sort()).toEqual(
        [`${planId}/notify/1`, `${planId}/pay/1`, `${planId}/prepare/1`],
      );
      expect(payCallsSeen).toHaveLength(payCalls);
      if (payCalls === 2) {
        expect(payCallsSeen.map((c) => [c.executorId, c.recovering])).toEqual([
          ['exec-A', false],
          ['exec-B', true],
        ]);
      }
      expect(done.items.pay!.attempts).toHaveLength(1);
      expect(done.items.pay!.attempts[0]!.idempotencyKey).toBe(key);
      const events = (await ledger.planEvents(planId)).map((r) => r.event);
      expect(verifyChain(events).ok).toBe(true);
      expect(events.filter((e) => e.type === 'ResultCommitted' && e.data.itemId === 'pay')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'ItemCompleted' && e.data.itemId === 'pay')).toHaveLength(1);
      expect(events.find((e) => e.type === 'ItemCompleted' && e.data.itemId === 'pay')?.actor).toBe(completedBy);
      // The notify item always finishes on the survivor.
      expect(events.find((e) => e.type === 'ItemCompleted' && e.data.itemId === 'notify')?.actor).toBe('exec-B');
    } finally {
      await ledger.close();
    }
  });
});

describe('what show and audit say after a take-over', () => {
  it('name the killed executor and the survivor that re-invoked the attempt with the same key', async () => {
    const config = testConfig({ partitions: 1 });
    const a = spawnExecutor(config, { label: 'exec-A', env: { EFFECTS_URL: effects.url, PLAN_LEDGER_TEST_CRASH_IN_TOOL: 'pay' } });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({ goal: 'refund order 42', mode: 'execute', items });
      expect((await a.exited).signal).toBe('SIGKILL');
      const b = spawnExecutor(config, { label: 'exec-B', env: { EFFECTS_URL: effects.url } });
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
      b.kill('SIGTERM');

      const events = (await ledger.planEvents(planId)).map((r) => r.event);
      const intent = events.find((e) => e.type === 'IntentRecorded' && e.data.itemId === 'pay')!;
      const result = events.find((e) => e.type === 'ResultCommitted' && e.data.itemId === 'pay')!;
      expect([intent.actor, result.actor]).toEqual(['exec-A', 'exec-B']);
      const iso = (ms: number) => new Date(ms).toISOString();
      const line = `  pay#1  re-invoked by exec-B at ${iso(result.occurredAt)} (result committed): exec-A recorded the intent at ${iso(intent.occurredAt)} and lost the plan; same idempotency key …/pay/1`;

      const show = await runCli(config, ['show', planId]);
      expect(show.code, show.stderr).toBe(0);
      const shown = show.stdout.split('\n');
      expect(shown.filter((l) => /^ {2}(prepare|pay|notify) /.test(l)).map((l) => l.trim().split(/\s+/))).toEqual([
        ['prepare', 'completed', 'effect', '-', '1', 'exec-A', 'prepare'],
        ['pay', 'completed', 'effect', 'prepare', '1', 'exec-A→exec-B', 'pay'],
        ['notify', 'completed', 'effect', 'pay', '1', 'exec-B', 'notify'],
      ]);
      expect(shown.filter((l) => l.startsWith('  pay#1 '))).toEqual([line]);

      const audit = await runCli(config, ['audit', planId]);
      expect(audit.code, audit.stderr).toBe(0);
      expect(audit.stdout.split('\n').filter((l) => l.startsWith('  pay#1 '))).toEqual([line]);
    } finally {
      await ledger.close();
    }
  });
});

describe('zombie owner (SIGSTOP, reassignment, SIGCONT)', () => {
  it('gets none of its late appends into the ledger; one effect per item', async () => {
    const config = testConfig({ partitions: 1 });
    const a = spawnExecutor(config, { label: 'zombie-A', env: { EFFECTS_URL: effects.url } });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({
        goal: 'slow payment',
        mode: 'execute',
        items: [
          { id: 'slow', title: 'slow effect', why: 'held long enough to freeze its caller', tool: 'effect', input: { holdMs: 4000 } },
          { id: 'after', title: 'after', why: 'follows', tool: 'effect', input: {}, dependsOn: ['slow'] },
        ],
      });
      await waitFor(() => effects.calls.some((c) => c.key === `${planId}/slow/1`), { message: 'A invoked the slow tool' });
      a.kill('SIGSTOP');

      const b = spawnExecutor(config, { label: 'zombie-B', env: { EFFECTS_URL: effects.url } });
      await b.waitForLog(ownsPartitions, 60_000);
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
      const before = (await ledger.planEvents(planId)).map((r) => r.event);

      const continuedAt = a.logs.length;
      a.kill('SIGCONT');
      // The zombie's tool call returns now. Either its append is refused (fenced, logged), or it learns first
      // that its session expired (the partition revoked as lost): its owner stops and the refused append is
      // not logged. Either way nothing of it may land, which the checks below assert on the log.
      await waitFor(() => a.logs.slice(continuedAt).find((l) => l.reason === 'fenced' || /fenced/.test(String(l.msg)) || (l.msg === 'assignment' && l.lost === true)), {
        timeoutMs: 30_000,
        message: 'zombie-A fenced, or told its partition is lost',
      });
      const after = (await ledger.planEvents(planId)).map((r) => r.event);
      expect(after.map((e) => e.eventId)).toEqual(before.map((e) => e.eventId));
      expect(verifyChain(after).ok).toBe(true);
      const firstB = after.find((e: PlanEvent) => e.actor === 'zombie-B')!.seq;
      expect(after.filter((e) => e.actor === 'zombie-A').every((e) => e.seq < firstB)).toBe(true);
      expect(after.filter((e) => e.type === 'ResultCommitted' && e.data.itemId === 'slow').map((e) => e.actor)).toEqual(['zombie-B']);
      expect([...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`)).sort()).toEqual([`${planId}/after/1`, `${planId}/slow/1`]);
      b.kill('SIGTERM');
    } finally {
      await ledger.close();
    }
  });
});

describe('graceful SIGTERM', () => {
  it('hands the partition over with no duplicate invocation', async () => {
    const config = testConfig({ partitions: 1 });
    const a = spawnExecutor(config, { label: 'term-A', env: { EFFECTS_URL: effects.url } });
    await a.waitForLog(ownsPartitions);
    const b = spawnExecutor(config, { label: 'term-B', env: { EFFECTS_URL: effects.url } });
    // After B joins, exactly one of them owns partition 0.
    const owner = await waitFor(() => {
      const last = (p: typeof a) => [...p.logs].reverse().find((l) => l.msg === 'assignment') as { partitions?: number[] } | undefined;
      const la = last(a);
      const lb = last(b);
      if (!la || !lb) return undefined;
      if (la.partitions?.includes(0) && !lb.partitions?.includes(0)) return a;
      if (lb.partitions?.includes(0) && !la.partitions?.includes(0)) return b;
      return undefined;
    });
    await owner.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const chain = Array.from({ length: 6 }, (_, i) => ({
        id: `s${i}`,
        title: `step ${i}`,
        why: 'graceful hand-over',
        tool: 'effect',
        input: { holdMs: 400 },
        dependsOn: i ? [`s${i - 1}`] : [],
      }));
      const { planId } = await ledger.createPlan({ goal: 'hand over', mode: 'execute', items: chain });
      await waitFor(() => effects.calls.some((c) => c.key === `${planId}/s2/1`), { message: 'third step started' });
      owner.kill('SIGTERM');
      const exit = await owner.exited;
      expect(exit.code).toBe(0);
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
      const calls = effects.calls.filter((c) => c.key.startsWith(`${planId}/`));
      expect(calls.map((c) => c.key).sort()).toEqual(chain.map((s) => `${planId}/${s.id}/1`).sort());
      expect(calls.every((c) => !c.recovering)).toBe(true);
      const survivor = owner === a ? b : a;
      survivor.kill('SIGTERM');
    } finally {
      await ledger.close();
    }
  });
});
