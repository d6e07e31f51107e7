// A step looks at a window of items at the plan's cursor and at the items it may have readied elsewhere
// (the dependants of what it completed), not at the whole plan: a long chain costs the same per step at
// any length, and an item far past the window starts as soon as its dependency completes.
import { describe, expect, it } from 'vitest';
import { defineTool } from '../../src/tools.js';
import { tools } from '../fixtures/tools.js';
import { ledgerWithExecutor } from './support.js';

describe('the scheduler on a long plan', () => {
  it('starts an item far past the window right after its dependency completes, not when the window reaches it', async () => {
    const { ledger } = await ledgerWithExecutor();
    const chain = Array.from({ length: 400 }, (_, i) => ({ id: `c${i}`, title: `chain ${i}`, why: 'a long chain', tool: 'noop', dependsOn: i ? [`c${i - 1}`] : [] }));
    // `far` sits at index 400, past the window of 256 at the cursor, and depends on the chain's first item only.
    const far = { id: 'far', title: 'far', why: 'readied by c0', tool: 'noop', dependsOn: ['c0'] };
    const { planId } = await ledger.createPlan({ goal: 'window', mode: 'execute', items: [...chain, far] });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
    expect(Object.values(done.items).filter((i) => i.status === 'completed')).toHaveLength(401);

    const intents = (await ledger.planEvents(planId)).flatMap((r) => (r.event.type === 'IntentRecorded' ? [{ itemId: r.event.data.itemId, seq: r.event.seq }] : []));
    expect(intents).toHaveLength(401); // one intent per item: nothing started twice
    const seqOf = (id: string) => intents.find((x) => x.itemId === id)!.seq;
    // Readied by c0's completion, it is recorded with c1's intent, long before the chain gets near it.
    expect(seqOf('far')).toBeGreaterThan(seqOf('c0'));
    expect(seqOf('far')).toBeLessThan(seqOf('c5'));
  });
});

describe('intents and tool slots', () => {
  it('records no more open intents than there are tool slots: none waits for a slot a new owner would have to invoke again', async () => {
    const slow = defineTool({ name: 'slow', run: async () => new Promise((r) => setTimeout(() => r({ ok: true }), 15)) });
    const { ledger } = await ledgerWithExecutor({ tools: [...tools, slow], concurrency: 4 });
    const items = Array.from({ length: 120 }, (_, i) => ({ id: `s${i}`, title: `slow ${i}`, why: 'independent', tool: 'slow' }));
    const { planId } = await ledger.createPlan({ goal: 'slots', mode: 'execute', items });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
    let open = 0;
    let most = 0;
    for (const { event } of await ledger.planEvents(planId)) {
      if (event.type === 'IntentRecorded') most = Math.max(most, ++open);
      if (event.type === 'ResultCommitted') open--;
    }
    expect(open).toBe(0);
    expect(most).toBeLessThanOrEqual(4);
    expect(most).toBeGreaterThanOrEqual(2); // the slots were used in parallel
  });

  it('tools that never answer hold every slot: their attempts end in TIMEOUT, and a plan started meanwhile still gets its intent and completes', async () => {
    const hang = defineTool({ name: 'hang', timeoutMs: 300, run: () => new Promise(() => {}) }); // ignores its signal too
    const { ledger } = await ledgerWithExecutor({ tools: [...tools, hang], concurrency: 2 });
    const once = { maxAttempts: 1, initialBackoffMs: 10, backoffMultiplier: 1, maxBackoffMs: 10 };
    const stuck = await ledger.createPlan({ goal: 'holds every slot', mode: 'execute', items: ['h1', 'h2'].map((id) => ({ id, title: id, why: 'never answers', tool: 'hang', retry: once })) });
    const other = await ledger.createPlan({ goal: 'started meanwhile', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'waits for a slot', tool: 'noop' }] });
    const failed = await ledger.waitFor(stuck.planId, 'failed', { timeoutMs: 60_000 });
    expect(Object.values(failed.items).map((i) => i.attempts.map((a) => a.error?.code))).toEqual([['TIMEOUT'], ['TIMEOUT']]);
    const done = await ledger.waitFor(other.planId, 'completed', { timeoutMs: 60_000 });
    expect(done.items['a']!.attempts).toHaveLength(1);
  });
});

describe('many tools running at once on one partition', () => {
  it('raises no listener warning: the partition release signal has a listener per running attempt', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => void warnings.push(`${w.name}: ${w.message}`);
    process.on('warning', onWarning);
    try {
      let inside = 0;
      let most = 0;
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const held = defineTool({
        name: 'held',
        run: async () => {
          most = Math.max(most, ++inside);
          if (inside >= 16) open();
          await gate;
          inside--;
          return { ok: true };
        },
      });
      const { ledger } = await ledgerWithExecutor({ tools: [...tools, held], concurrency: 16 });
      const items = Array.from({ length: 16 }, (_, i) => ({ id: `h${i}`, title: `held ${i}`, why: 'all at once', tool: 'held' }));
      const { planId } = await ledger.createPlan({ goal: 'sixteen at once', mode: 'execute', items });
      await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
      expect(most).toBe(16);
      expect(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning'))).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });
});
