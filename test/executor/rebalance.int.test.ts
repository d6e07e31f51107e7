// A second executor joins the group: a partition that stays with the first keeps its owner (no second
// restore, its running tool goes on, whether the rebalance revoked and returned it or left it alone); a
// partition that moves is restored by the new owner, which re-invokes in-flight items with the same key.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { partitionFor } from '../../src/kafka/index.js';
import { startExecutor } from '../../executor/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { tools } from '../fixtures/tools.js';
import { testConfig, waitFor } from '../support/helpers.js';

/** The owner's own line (restorePartition logs one of the same name under component 'restore'). */
const ownerRestored = (l: Record<string, unknown>) => l.msg === 'partition restored' && l.component === 'partition-owner';

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
  process.env.EFFECTS_URL = effects.url;
});
afterAll(() => effects.stop());

describe('rebalance', () => {
  it('keeps the partitions that come back (no second restore, running tools continue); moved ones resume with the same key', async () => {
    const config = testConfig({ partitions: 4 });
    const a = capturingLogger();
    const execA = await startExecutor({ tools, config, logger: a.logger, executorId: 'reb-A', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execA.stop());
    await execA.started;
    await waitFor(() => execA.ownedPartitions().length === 4);
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());

    // One plan per partition, each with an item whose effect call is held for 3 s.
    const planIds: string[] = [];
    for (let i = 0; planIds.length < 4; i++) {
      const id = `reb-plan-${i}`;
      if (planIds.some((p) => partitionFor(p, 4) === partitionFor(id, 4))) continue;
      planIds.push(id);
    }
    for (const planId of planIds) {
      await ledger.createPlan({ planId, goal: 'rebalance', mode: 'execute', items: [{ id: 'slow', title: 'slow', why: 'spans the rebalance', tool: 'effect', input: { holdMs: 3000 } }] });
    }
    await waitFor(() => planIds.every((p) => effects.calls.some((c) => c.key === `${p}/slow/1`)), { message: 'all four slow calls started' });
    const restoredBefore = a.lines.filter(ownerRestored).map((l) => l.partition);
    expect(restoredBefore.sort()).toEqual([0, 1, 2, 3]);

    const b = capturingLogger();
    const execB = await startExecutor({ tools, config, logger: b.logger, executorId: 'reb-B', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execB.stop());
    await waitFor(() => execA.ownedPartitions().length + execB.ownedPartitions().length === 4 && execB.ownedPartitions().length > 0, { message: 'partitions split' });
    const kept = execA.ownedPartitions();
    const moved = execB.ownedPartitions();
    expect(kept.length).toBeGreaterThan(0);

    for (const planId of planIds) await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    // Kept partitions were restored exactly once by A; moved ones once by B.
    const restoredByA = a.lines.filter(ownerRestored).map((l) => l.partition as number);
    for (const p of kept) expect(restoredByA.filter((x) => x === p)).toHaveLength(1);
    const restoredByB = b.lines.filter(ownerRestored).map((l) => l.partition as number);
    expect(restoredByB.sort()).toEqual([...moved].sort());

    for (const planId of planIds) {
      const calls = effects.calls.filter((c) => c.key.startsWith(`${planId}/`));
      expect(new Set(calls.map((c) => c.key))).toEqual(new Set([`${planId}/slow/1`])); // one key, one effect
      const plan = await ledger.getPlan(planId);
      const result = plan!.items.slow!.attempts[0]!;
      if (kept.includes(partitionFor(planId, 4))) {
        expect(calls).toHaveLength(1); // the running tool was not thrown away
        expect(result.executorId).toBe('reb-A');
      } else {
        expect(calls.map((c) => c.recovering)).toEqual([false, true]); // re-invoked by the new owner, same key
      }
    }
    expect([...effects.effects.keys()].filter((k) => planIds.some((p) => k.startsWith(`${p}/`)))).toHaveLength(4);
  });
});
