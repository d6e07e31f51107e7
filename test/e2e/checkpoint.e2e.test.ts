// Issue 15: a crash is a pause, down to the iteration state inside an item. A tool that checkpoints after
// each of 10 pages is killed with SIGKILL right after its 7th checkpoint; the next owner invokes it again
// with the same idempotency key and `ctx.lastCheckpoint` = page 7, so it reads pages 8..10 only, and the
// effect happens once. Evidence recorded before the crash survives it and shows in the audit.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { verifyChain } from '../../src/plan/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testConfig } from '../support/helpers.js';
import { ownsPartitions, spawnExecutor } from '../support/processes.js';

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

describe('checkpoints inside an item', () => {
  it('a tool killed -9 after its 7th checkpoint of 10 resumes at 8 on the new owner with the same key, one effect; evidence survives in the audit', async () => {
    const config = testConfig({ partitions: 1 });
    const env = { EFFECTS_URL: effects.url, PLAN_LEDGER_CHECKPOINT_INTERVAL_MS: '20' };
    const a = spawnExecutor(config, { label: 'exec-A', env: { ...env, PLAN_LEDGER_TEST_CRASH_AFTER_CHECKPOINT: '7' } });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({ goal: 'read a long report', mode: 'execute', items: [{ id: 'read', title: 'read 10 pages', why: 'a long tool call', tool: 'pager', input: { pages: 10 } }] });
      const exit = await a.exited;
      expect(exit.signal).toBe('SIGKILL');

      const b = spawnExecutor(config, { label: 'exec-B', env });
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
      b.kill('SIGTERM');
      await b.exited;

      const item = done.items['read']!;
      const key = `${planId}/read/1`;
      expect(item.attempts.map((x) => x.idempotencyKey)).toEqual([key]);
      expect(JSON.parse(item.outputJson!)).toMatchObject({ resumedAt: 8, read: [8, 9, 10] });
      expect(effects.calls.filter((c) => c.key.startsWith(`${planId}/`)).map((c) => [c.key, c.executorId, c.recovering])).toEqual([[key, 'exec-B', true]]);
      expect(item.checkpoint).toMatchObject({ attempt: 1, checkpoint: 10, stateJson: '{"page":10}' });
      expect(item.evidence?.map((e) => [e.name, e.valueJson])).toEqual([
        ['page-3', '{"finding":"fact on page 3","page":3}'],
        ['page-6', '{"finding":"fact on page 6","page":6}'],
        ['page-9', '{"finding":"fact on page 9","page":9}'],
      ]);

      const events = (await ledger.planEvents(planId)).map((r) => r.event);
      expect(verifyChain(events).ok).toBe(true);
      const checkpoints = events.flatMap((e) => (e.type === 'ItemCheckpointed' ? [[e.data.checkpoint, e.data.stateJson, e.actor]] : []));
      expect(checkpoints).toEqual([
        ...[1, 2, 3, 4, 5, 6, 7].map((n) => [n, `{"page":${n}}`, 'exec-A']),
        ...[8, 9, 10].map((n) => [n, `{"page":${n}}`, 'exec-B']),
      ]);

      const audit = await ledger.audit(planId);
      const rows = audit.rows.filter((r) => r.type === 'EvidenceRecorded' || r.type === 'ItemCheckpointed');
      expect(rows).toHaveLength(13);
      expect(rows.filter((r) => r.type === 'EvidenceRecorded').map((r) => [r.outcome, r.actor])).toEqual([
        ['evidence:page-3', 'exec-A'],
        ['evidence:page-6', 'exec-A'],
        ['evidence:page-9', 'exec-B'],
      ]);
    } finally {
      await ledger.close();
    }
  });
});
