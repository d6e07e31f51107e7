// Forks against the real broker and registry: a failed plan forked at its failed item with a fixed input
// completes, inheriting the outputs of what finished before (byte for byte, not run again); the source is
// untouched and still verifies; a fork of a fork; hostile fork points are coded errors with nothing sent.
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { isLedgerError } from '../../src/errors.js';
import { verifyChain, type PlanEvent } from '../../src/plan/index.js';
import { tools } from '../fixtures/tools.js';
import { testConfig, testLogger } from '../support/helpers.js';

async function eventsOf(ledger: Ledger, planId: string): Promise<PlanEvent[]> {
  const events = (await ledger.planEvents(planId)).map((r) => r.event);
  expect(verifyChain(events).ok).toBe(true);
  return events;
}

async function failure(p: Promise<unknown>): Promise<{ code: string; field: unknown }> {
  try {
    await p;
  } catch (e) {
    if (isLedgerError(e)) return { code: e.code, field: e.details['field'] };
    throw e;
  }
  throw new Error('expected a failure');
}

const once = { maxAttempts: 1, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 };
const items = [
  { id: 'fetch', title: 'fetch the order', why: 'first', tool: 'noop', input: { order: 42 } },
  { id: 'charge', title: 'charge', why: 'fails until its input is fixed', tool: 'flaky', input: { succeedOn: 9 }, retry: once, dependsOn: ['fetch'] },
  { id: 'notify', title: 'notify', why: 'after the charge', tool: 'noop', input: { to: 'customer' }, dependsOn: ['charge'] },
];

describe('forks (real broker and registry)', () => {
  it('a fork at the failed item of a failed plan, with a fixed input, completes; inherited outputs are byte-identical, the source untouched; a fork of the fork', async () => {
    const config = testConfig({ partitions: 3 });
    const executor = await startExecutor({ tools, config, executorId: 'fork-exec', concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    await executor.started;
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());

    const { planId: source } = await ledger.createPlan({ goal: 'charge order 42', mode: 'execute', items });
    const failed = await ledger.waitFor(source, 'failed', { timeoutMs: 30_000 });
    expect(failed.items['charge']!.failure?.reason).toBe('retries_exhausted');
    const sourceEvents = await eventsOf(ledger, source);
    const intentOfCharge = sourceEvents.find((e) => e.type === 'IntentRecorded' && e.data.itemId === 'charge')!;

    const forked = await ledger.fork(source, { at: 'charge', set: { charge: { succeedOn: 1 } }, by: 'operator-ann' });
    expect(forked.forkedFrom).toEqual({ planId: source, seq: intentOfCharge.seq - 1, chainHead: sourceEvents[intentOfCharge.seq - 2]!.hash });
    expect(forked.events.map((e) => e.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded', 'ItemAdded', 'ItemInherited']);
    const done = await ledger.waitFor(forked.planId, 'completed', { timeoutMs: 30_000 });
    // Inherited byte for byte; only the items from the fork point on ran, in the fork.
    expect(done.items['fetch']!.outputJson).toBe(failed.items['fetch']!.outputJson);
    expect(done.items['fetch']!.attempts).toEqual([]);
    expect(done.items['charge']!.attempts.map((a) => [a.attempt, a.outcome])).toEqual([[1, 'succeeded']]);
    expect(JSON.parse(done.items['charge']!.inputJson)).toEqual({ succeedOn: 1 });
    const forkEvents = await eventsOf(ledger, forked.planId);
    expect(forkEvents[0]).toMatchObject({ type: 'PlanCreated', actor: 'operator-ann', data: { forkedFrom: forked.forkedFrom } });
    expect(forkEvents.filter((e) => e.type === 'IntentRecorded').map((e) => e.type === 'IntentRecorded' && e.data.itemId)).toEqual(['charge', 'notify']);
    expect(done.forkedFrom).toEqual(forked.forkedFrom);
    expect(done.labels['forkedFrom']).toBe(source);

    // The source is untouched: the same events, still failed, still verifying.
    expect((await eventsOf(ledger, source)).map((e) => e.hash)).toEqual(sourceEvents.map((e) => e.hash));
    expect((await ledger.getPlan(source))?.status).toBe('failed');
    expect((await ledger.verify(source)).ok).toBe(true);
    const verified = await ledger.verify(forked.planId);
    expect(verified.ok).toBe(true);
    expect(verified.checks.find((c) => c.name === 'lineage')).toMatchObject({ ok: true, detail: expect.stringContaining('1 inherited output(s) equal the source') as unknown });

    // A fork of the fork, at its notify item: fetch and charge are inherited (fetch still the source's bytes).
    const second = await ledger.fork(forked.planId, { at: 'notify', set: { notify: { to: 'ops' } } });
    const notifyIntent = forkEvents.find((e) => e.type === 'IntentRecorded' && e.data.itemId === 'notify')!;
    expect(second.forkedFrom).toEqual({ planId: forked.planId, seq: notifyIntent.seq - 1, chainHead: forkEvents[notifyIntent.seq - 2]!.hash });
    const again = await ledger.waitFor(second.planId, 'completed', { timeoutMs: 30_000 });
    expect(again.items['fetch']!.outputJson).toBe(failed.items['fetch']!.outputJson);
    expect(again.items['charge']!.outputJson).toBe(done.items['charge']!.outputJson);
    expect(again.items['charge']!.attempts).toEqual([]);
    expect(JSON.parse(again.items['notify']!.outputJson!)).toEqual({ echo: { to: 'ops' } });
    const verified2 = await ledger.verify(second.planId);
    expect(verified2.ok).toBe(true);
    expect(verified2.checks.find((c) => c.name === 'lineage')).toMatchObject({ ok: true, detail: expect.stringContaining('2 inherited output(s)') as unknown });

    // A forged origin (a client that sends its own CreatePlan naming a hash the source does not have, or an
    // output it did not record) is decided like any CreatePlan, and verify names the lie.
    const { sender } = ledger as unknown as { sender: { send: (planId: string, type: string, data: unknown) => Promise<unknown> } };
    const send = sender.send.bind(sender);
    const spec = (id: string, dependsOn: string[] = []) => ({ id, title: id, why: id, dependsOn, tool: 'noop', inputJson: '{}', retry: null });
    await send('forged-head', 'CreatePlan', { goal: 'g', mode: 'propose', labels: {}, parent: null, items: [spec('fetch'), spec('charge', ['fetch'])], forkedFrom: { ...forked.forkedFrom, chainHead: 'ab'.repeat(32) }, inherited: [{ itemId: 'fetch', outputJson: failed.items['fetch']!.outputJson }] });
    await send('forged-output', 'CreatePlan', { goal: 'g', mode: 'propose', labels: {}, parent: null, items: [spec('fetch'), spec('charge', ['fetch'])], forkedFrom: forked.forkedFrom, inherited: [{ itemId: 'fetch', outputJson: '{"echo":{"order":666}}' }] });
    for (const [id, reason] of [['forged-head', /has hash .*, the fork names abababab/], ['forged-output', /item fetch \(seq 4\) is not what/]] as const) {
      const v = await ledger.verify(id);
      expect(v.ok, id).toBe(false);
      expect(v.firstBroken, id).toMatchObject({ check: 'lineage', seq: 1 });
      expect(v.firstBroken!.reason, id).toMatch(reason);
    }

    // A fork by seq: the state after that event.
    const bySeq = await ledger.fork(source, { at: String(intentOfCharge.seq - 1), mode: 'propose' });
    expect(bySeq.forkedFrom.seq).toBe(intentOfCharge.seq - 1);
    const draft = await ledger.waitFor(bySeq.planId, 'draft', { timeoutMs: 30_000 });
    expect(draft.items['fetch']!.status).toBe('completed');
    expect(draft.items['charge']!.status).toBe('pending');
  });

  it('hostile fork points and inputs are VALIDATION errors naming the field; nothing is created', async () => {
    const config = testConfig({ partitions: 1 });
    const executor = await startExecutor({ tools, config, executorId: 'fork-hostile', concurrency: 2, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    await executor.started;
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const { planId } = await ledger.createPlan({ goal: 'charge order 42', mode: 'execute', items });
    await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
    const head = (await eventsOf(ledger, planId)).length;

    for (const at of [0, -1, 1.5, Number.NaN, Number.MAX_SAFE_INTEGER + 2, '0', '-1', '1.5', '', ' ', 'has space', '99999999999999999999', '1e3', 'x'.repeat(129), '__proto__', 'nope', String(head + 1)]) {
      expect(await failure(ledger.fork(planId, { at })), JSON.stringify(at)).toEqual({ code: 'VALIDATION', field: 'at' });
    }
    expect(await failure(ledger.fork(planId, { at: 'charge', set: { fetch: { order: 1 } } }))).toEqual({ code: 'VALIDATION', field: 'set.fetch' });
    expect(await failure(ledger.fork(planId, { at: 'charge', set: { ghost: {} } }))).toEqual({ code: 'VALIDATION', field: 'set.ghost' });
    expect(await failure(ledger.fork(`${planId}-missing`, { at: 1 }))).toEqual({ code: 'NOT_FOUND', field: undefined });
    expect((await eventsOf(ledger, planId)).length).toBe(head);
    // A fork point where everything is finished leaves nothing to run: the executor's coded rejection.
    const { planId: complete } = await ledger.createPlan({ goal: 'all done', mode: 'execute', items: [items[0]!] });
    const finished = await ledger.waitFor(complete, 'completed', { timeoutMs: 30_000 });
    const r = await failure(ledger.fork(complete, { at: finished.seq, planId: `${complete}-fork` }));
    expect(r).toEqual({ code: 'REJECTED', field: 'data.inherited' });
  });
});
