// A step looks at a window of items at the plan's cursor and at the items it may have readied elsewhere
// (the dependants of what it completed), not at the whole plan: a long chain costs the same per step at
// any length, and an item far past the window starts as soon as its dependency completes.
import { describe, expect, it } from 'vitest';
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
