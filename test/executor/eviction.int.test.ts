// The executor lets finished plans go: their state leaves the partition's live plans once their last
// events committed, waits in a byte-bounded cache, and past that budget is read back from the plan's own
// events when a command needs it — decided against the same state as before.
import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { stateDigest, verifyChain, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import type { Ledger } from '../../src/client/index.js';
import { testConfig, testLogger } from '../support/helpers.js';
import { chainOfItems, ledgerWithExecutor } from './support.js';

async function chainOf(ledger: Ledger, planId: string): Promise<PlanEvent[]> {
  const events = (await ledger.planEvents(planId)).map((r) => r.event);
  expect(verifyChain(events).ok).toBe(true);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events;
}

async function rejectionOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isLedgerError(e, 'REJECTED')).toBe(true);
  return (e as { details: { rejection: string } }).details.rejection;
}

describe('finished plans leave the executor (real broker and registry)', () => {
  it('with a tiny cache, a command to an early finished plan is decided as before, from the plan read back', async () => {
    const config = testConfig({ partitions: 1 });
    // ~12 KiB: a handful of small finished plans; the rest are evicted and only their ids stay.
    const { ledger, executor } = await ledgerWithExecutor({ config, executorId: 'evict-A', logger: testLogger, cacheMib: 0.012 });
    const ids: string[] = [];
    for (let i = 0; i < 14; i++) ids.push((await ledger.createPlan({ goal: `plan ${i}`, mode: 'execute', items: chainOfItems(3) })).planId);
    const { planId: dropped } = await ledger.createPlan({ goal: 'cancelled before it ran', mode: 'propose', items: chainOfItems(2) });
    await ledger.cancel(dropped);
    const finished = new Map<string, PlanState>();
    for (const id of ids) finished.set(id, await ledger.waitFor(id, 'completed', { timeoutMs: 60_000 }));
    finished.set(dropped, await ledger.waitFor(dropped, 'cancelled', { timeoutMs: 30_000 }));

    const early = ids[0]!;
    const late = ids.at(-1)!;
    // The early plan is neither live nor in the cache any more; the last one finished is in the cache.
    expect(executor.planState(early)).toBeUndefined();
    expect(executor.planState(dropped)).toBeDefined(); // put aside last
    expect(stateDigest(executor.planState(dropped)!)).toBe(stateDigest(finished.get(dropped)!));

    // The same command to an evicted plan and to one held: the same answer, recorded at the next seq.
    const before = finished.get(early)!;
    expect(await rejectionOf(ledger.cancel(early))).toBe('PLAN_FINISHED');
    expect(await rejectionOf(ledger.cancel(late))).toBe('PLAN_FINISHED');
    let events = await chainOf(ledger, early);
    expect(events).toHaveLength(before.seq + 1);
    expect(events.at(-1)).toMatchObject({ type: 'CommandRejected', seq: before.seq + 1, data: { commandType: 'CancelPlan', code: 'PLAN_FINISHED' } });
    // Read back, then put aside again: the executor's state is the plan's state as the log has it.
    const again = executor.planState(early);
    expect(again?.seq).toBe(before.seq + 1);
    expect(stateDigest(again!)).toBe(stateDigest((await ledger.getPlan(early))!));
    expect(again?.items['item-02']?.status).toBe('completed');

    // A retry of an item of a finished plan, a CreatePlan with a used id: refused as for any finished plan.
    expect(await rejectionOf(ledger.retryItem(ids[1]!, 'item-00'))).toBe('PLAN_FINISHED');
    expect(await rejectionOf(ledger.createPlan({ planId: ids[2]!, goal: 'same id again', mode: 'execute', items: chainOfItems(1) }))).toBe('PLAN_EXISTS');
    expect(await rejectionOf(ledger.cancel(dropped))).toBe('PLAN_FINISHED');
    for (const [id, extra] of [[ids[1]!, 1], [ids[2]!, 1], [dropped, 1], [ids[3]!, 0]] as const) {
      events = await chainOf(ledger, id);
      expect(events).toHaveLength(finished.get(id)!.seq + extra);
    }

    // The partition goes on serving new plans.
    const { planId: next } = await ledger.createPlan({ goal: 'after the evictions', mode: 'execute', items: chainOfItems(2) });
    expect((await ledger.waitFor(next, 'completed', { timeoutMs: 30_000 })).seq).toBeGreaterThan(0);
  });
});
