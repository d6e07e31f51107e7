import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { verifyChain } from '../../src/plan/index.js';
import { defineTool } from '../../src/tools.js';
import { tools as fixtureTools } from '../fixtures/tools.js';
import { testConfig } from '../support/helpers.js';
import { ledgerWithExecutor } from './support.js';

describe('checkpoints and evidence (real broker)', () => {
  it('a chatty tool cannot flood the log: 2,000 checkpoint calls coalesce into a few writes, every call resolves, the latest state wins', async () => {
    const chatty = defineTool({
      name: 'chatty',
      async run(_input, ctx) {
        const calls: Promise<void>[] = [];
        for (let i = 1; i <= 2000; i++) {
          calls.push(ctx.checkpoint({ i }));
          if (i % 200 === 0) await new Promise((r) => setTimeout(r, 20));
        }
        await Promise.all(calls);
        return { calls: calls.length };
      },
    });
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config, tools: [...fixtureTools, chatty], checkpointIntervalMs: 100 });
    const { planId } = await ledger.createPlan({ goal: 'chatty', mode: 'execute', items: [{ id: 'c', title: 'c', why: 'checkpoints in a loop', tool: 'chatty' }] });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    expect(JSON.parse(done.items['c']!.outputJson!)).toEqual({ calls: 2000 });
    expect(done.items['c']!.checkpoint?.stateJson).toBe('{"i":2000}');
    const events = (await ledger.planEvents(planId)).map((r) => r.event);
    const written = events.filter((e) => e.type === 'ItemCheckpointed');
    // ~200 ms of calls at one write per 100 ms: a handful, never one per call.
    expect(written.length).toBeGreaterThanOrEqual(1);
    expect(written.length).toBeLessThanOrEqual(20);
    expect(written.map((e) => (e.type === 'ItemCheckpointed' ? e.data.checkpoint : 0))).toEqual(written.map((_, i) => i + 1));
    expect(verifyChain(events).ok).toBe(true);
  });

  it('a retried attempt gets the previous attempt\'s last checkpoint; a large one goes by reference; evidence with an empty name is refused with a code', async () => {
    const seen: unknown[] = [];
    const resumer = defineTool({
      name: 'resumer',
      async run(_input, ctx) {
        seen.push(ctx.lastCheckpoint);
        if (ctx.attempt === 1) {
          await ctx.checkpoint({ step: 5, notes: 'n'.repeat(100 * 1024) });
          throw new Error('transient failure after step 5');
        }
        const refused = await ctx.evidence('', { empty: 'name' }).catch((e: unknown) => e);
        return { refused: isLedgerError(refused, 'REJECTED') ? String((refused as { details: Record<string, unknown> }).details["rejection"]) : 'accepted' };
      },
    });
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config, tools: [...fixtureTools, resumer], checkpointIntervalMs: 10 });
    const { planId } = await ledger.createPlan({
      goal: 'resume',
      mode: 'execute',
      items: [{ id: 'r', title: 'r', why: 'fails once', tool: 'resumer', retry: { maxAttempts: 2, initialBackoffMs: 10, backoffMultiplier: 1, maxBackoffMs: 10 } }],
    });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    expect(seen).toEqual([undefined, { step: 5, notes: 'n'.repeat(100 * 1024) }]);
    expect(JSON.parse(done.items['r']!.checkpoint!.stateJson)).toEqual({ step: 5, notes: 'n'.repeat(100 * 1024) });
    expect((await ledger.getPlan(planId, { payloads: 'reference' }))!.items['r']!.checkpoint?.stateJson).toMatch(/^\{"\$blob":\{"at":\d+,"bytes":\d+,"chunks":1,"sha256":"[0-9a-f]{64}"\}\}$/);
    expect(JSON.parse(done.items['r']!.outputJson!)).toEqual({ refused: 'INVALID_FIELD' });
  });
});
