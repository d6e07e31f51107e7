// Durable waits against the real broker and registry: a wait item's deadline is on record, so the
// executor that owns the plan after a takeover fires its timeout; a signal has one effect however often it
// is sent; a signal nobody waits for is a coded rejection in the plan's chain; many waiting plans hold no
// tool slot, so other plans keep running.
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { isLedgerError } from '../../src/errors.js';
import { verifyChain, type PlanEvent } from '../../src/plan/index.js';
import type { LedgerConfig } from '../../src/config.js';
import type { ItemInput } from '../../src/plan-input.js';
import { setting } from '../../src/settings.js';
import { tools } from '../fixtures/tools.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';

async function executor(config: LedgerConfig, executorId: string, concurrency = 4): Promise<ExecutorHandle> {
  const e = await startExecutor({ tools, config, executorId, concurrency, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
  onTestFinished(() => e.stop());
  await e.started;
  return e;
}

async function ledgerFor(config: LedgerConfig): Promise<Ledger> {
  const ledger = await connectLedger(config);
  onTestFinished(() => ledger.close());
  return ledger;
}

async function eventsOf(ledger: Ledger, planId: string): Promise<PlanEvent[]> {
  const events = (await ledger.planEvents(planId)).map((r) => r.event);
  expect(verifyChain(events).ok).toBe(true);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events;
}

async function rejection(p: Promise<unknown>): Promise<{ code: unknown; field: unknown }> {
  try {
    await p;
  } catch (e) {
    if (isLedgerError(e, 'REJECTED')) return { code: e.details['rejection'], field: e.details['field'] };
    throw e;
  }
  throw new Error('expected a rejection');
}

/** The executor's tool slots as its metrics report them. */
async function slots(e: ExecutorHandle): Promise<Record<string, number>> {
  const text = await e.metrics();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^plan_ledger_executor_tool_slots\{state="(\w+)"\} (\d+)$/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

const waitItem = (signal: string, timeoutMs: number | null, over: Partial<ItemInput> = {}): ItemInput => ({
  id: 'answer',
  title: 'the customer answers',
  why: 'we need the delivery address',
  wait: { signal, timeoutMs, prompt: 'Which address should we ship to?' },
  ...over,
});
/** Plans waiting at once in the load test (PLAN_LEDGER_TEST_WAITING to change it). */
const WAITING = setting('PLAN_LEDGER_TEST_WAITING');
const once = { maxAttempts: 1, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 };

describe('durable waits (real broker and registry)', () => {
  it('a timeout recorded by one executor fires on the executor that took the plan over', async () => {
    const config = testConfig({ partitions: 1 });
    const a = await executor(config, 'wait-A');
    const ledger = await ledgerFor(config);
    const { planId } = await ledger.createPlan({
      goal: 'ship once the customer answers',
      mode: 'execute',
      items: [waitItem('customer-reply', 8000, { retry: once }), { id: 'ship', title: 'ship', why: 'after the answer', tool: 'noop', dependsOn: ['answer'] }],
    });
    const started = await ledger.waitFor(planId, (s) => s.items['answer']?.status === 'in_progress', { timeoutMs: 30_000 });
    const deadline = started.items['answer']!.attempts[0]!.wait!.deadline!;
    await a.stop();
    expect(Date.now()).toBeLessThan(deadline); // the first owner is gone before its wait's deadline

    await executor(config, 'wait-B');
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 40_000 });
    expect(failed.items['answer']).toMatchObject({ status: 'failed', failure: { reason: 'retries_exhausted', error: { code: 'WAIT_TIMEOUT' } } });
    expect(failed.items['ship']!.status).toBe('pending');
    const events = await eventsOf(ledger, planId);
    const waitStarted = events.find((e) => e.type === 'WaitStarted')!;
    expect(waitStarted).toMatchObject({ actor: 'wait-A', data: { itemId: 'answer', attempt: 1, deadline, executorId: 'wait-A' } });
    const result = events.find((e) => e.type === 'ResultCommitted')!;
    expect(result).toMatchObject({ actor: 'wait-B', data: { itemId: 'answer', outcome: 'failed_retryable', executorId: 'wait-B', error: { code: 'WAIT_TIMEOUT' } } });
    expect(result.occurredAt).toBeGreaterThanOrEqual(deadline);
    expect(events.filter((e) => e.type === 'IntentRecorded')).toHaveLength(0); // no tool was ever invoked
    expect(events.slice(-2).map((e) => e.type)).toEqual(['ItemFailed', 'PlanFailed']);
    expect((await ledger.verify(planId)).ok).toBe(true);
  });

  it("a signal sent twice has one effect: the second is DUPLICATE_SIGNAL; a wrong name is NOT_WAITING (recorded in the plan's chain), a wrong plan PLAN_NOT_FOUND", async () => {
    const config = testConfig({ partitions: 1 });
    await executor(config, 'wait-C');
    const ledger = await ledgerFor(config);
    const { planId } = await ledger.createPlan({
      goal: 'ship once the customer answers',
      mode: 'execute',
      items: [waitItem('customer-reply', null), { id: 'ship', title: 'ship', why: 'after the answer', tool: 'noop', dependsOn: ['answer'] }],
    });
    await ledger.waitFor(planId, (s) => s.items['answer']?.status === 'in_progress', { timeoutMs: 30_000 });

    expect(await rejection(ledger.signal(planId, 'payment-webhook', { ok: true }, { signalId: 'w-1', by: 'bob' }))).toEqual({ code: 'NOT_WAITING', field: 'data.signal' });
    expect(await rejection(ledger.signal(`${planId}-nope`, 'customer-reply', {}, { signalId: 'w-2' }))).toEqual({ code: 'PLAN_NOT_FOUND', field: 'planId' });

    const first = await ledger.signal(planId, 'customer-reply', { address: '1 Main St' }, { signalId: 'mail-4411', by: 'alice' });
    expect(first.events.map((e) => e.type)).toEqual(['ItemSignalled', 'ItemCompleted']);
    expect(await rejection(ledger.signal(planId, 'customer-reply', { address: '2 Side St' }, { signalId: 'mail-4411', by: 'alice' }))).toEqual({
      code: 'DUPLICATE_SIGNAL',
      field: 'data.signalId',
    });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    expect(done.items['answer']!.outputJson).toBe('{"address":"1 Main St"}');
    expect(done.items['answer']!.attempts).toHaveLength(1);
    expect(done.items['ship']!.status).toBe('completed');

    const events = await eventsOf(ledger, planId);
    expect(events.filter((e) => e.type === 'ItemSignalled')).toHaveLength(1);
    expect(events.filter((e) => e.type === 'ItemCompleted' && e.data.itemId === 'answer')).toHaveLength(1);
    expect(events.find((e) => e.type === 'ItemSignalled')).toMatchObject({ actor: 'alice', data: { signalId: 'mail-4411', dataJson: '{"address":"1 Main St"}' } });
    const rejected = events.flatMap((e) => (e.type === 'CommandRejected' ? [[e.actor, e.data.commandType, e.data.code]] : []));
    expect(rejected).toEqual([
      ['bob', 'SignalItem', 'NOT_WAITING'],
      ['alice', 'SignalItem', 'DUPLICATE_SIGNAL'],
    ]);
    expect((await ledger.verify(planId)).ok).toBe(true);
  });

  it(`${WAITING.toLocaleString('en')} plans waiting at once on one executor hold no tool slot: a plan started meanwhile completes, a signal still reaches one of them`, async () => {
    const config = testConfig({ partitions: 3 });
    const e = await executor(config, 'wait-many', 2);
    const ledger = await ledgerFor(config);
    const ids = Array.from({ length: WAITING }, (_, i) => `waiting-${String(i).padStart(5, '0')}`);
    const heapBefore = process.memoryUsage().heapUsed;
    const t0 = Date.now();
    for (let i = 0; i < ids.length; i += 250) {
      await Promise.all(ids.slice(i, i + 250).map((planId) => ledger.createPlan({ planId, goal: 'wait for a person', mode: 'execute', items: [waitItem('approval', 3_600_000)] })));
    }
    const created = Date.now() - t0;
    // Every one of them is waiting (WaitStarted recorded), as the owning executor holds them.
    await waitFor(() => ids.every((id) => e.planState(id)?.items['answer']?.status === 'in_progress'), { timeoutMs: 120_000, intervalMs: 500, message: 'every plan waits' });
    expect(await slots(e)).toEqual({ in_use: 0, wanted: 0, limit: 2 });
    // Memory grows with the plans held (executor and client in this process), not with time waited: a bound per plan.
    const perPlan = (process.memoryUsage().heapUsed - heapBefore) / WAITING;
    expect(perPlan).toBeLessThan(64 * 1024);

    // Other plans keep running: four independent tool items on the two slots.
    const { planId: busy } = await ledger.createPlan({
      goal: 'runs while the others wait',
      mode: 'execute',
      items: ['a', 'b', 'c', 'd'].map((id) => ({ id, title: id, why: 'work meanwhile', tool: 'noop', input: { id } })),
    });
    const done = await ledger.waitFor(busy, 'completed', { timeoutMs: 30_000 });
    expect(Object.values(done.items).map((it) => it.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
    expect(await slots(e)).toEqual({ in_use: 0, wanted: 0, limit: 2 });

    const target = ids[ids.length - 1]!;
    await ledger.signal(target, 'approval', { approved: true }, { signalId: 'ok-1' });
    expect((await ledger.waitFor(target, 'completed', { timeoutMs: 30_000 })).items['answer']!.outputJson).toBe('{"approved":true}');
    expect(e.planState(ids[0]!)?.items['answer']?.status).toBe('in_progress');
    testLogger.info({ plans: WAITING, createdMs: created, totalMs: Date.now() - t0, heapBytesPerPlan: Math.round(perPlan) }, 'waiting plans');
  }, 300_000);
});
