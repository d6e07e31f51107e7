import { describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { topicNames } from '../../src/config.js';
import { eventKey, partitionFor } from '../../src/kafka/index.js';
import { isLedgerError } from '../../src/errors.js';
import { verifyChain } from '../../src/plan/index.js';
import { defineTool } from '../../src/tools.js';
import { tools as fixtureTools } from '../fixtures/tools.js';
import { testKafka, testConfig } from '../support/helpers.js';
import { ledgerWithExecutor } from './support.js';

// Issue 9's cases against the real broker: every bad thing a tool or a client does ends in a recorded
// outcome after one invocation per attempt key, and the same partition goes on serving other plans.

/** Counts invocations per idempotency key. */
function counting() {
  const calls = new Map<string, number>();
  const note = (key: string) => calls.set(key, (calls.get(key) ?? 0) + 1);
  return { calls, note, max: () => Math.max(0, ...calls.values()) };
}

describe('never wedged, never looping (issue 9)', () => {
  it('a tool that returns 300 KB: its output goes by reference (chunks in the same transaction), after ONE invocation; a dependant reads it whole', async () => {
    const count = counting();
    const big = 'x'.repeat(300 * 1024);
    const huge = defineTool({
      name: 'huge',
      run: (_input, ctx) => {
        count.note(ctx.idempotencyKey);
        return { blob: big };
      },
    });
    const seen: unknown[] = [];
    const reader = defineTool({
      name: 'reader',
      run: (_input, ctx) => {
        count.note(ctx.idempotencyKey);
        seen.push(ctx.dependencies['big']);
        return { length: (ctx.dependencies['big'] as { blob: string }).blob.length };
      },
    });
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config, tools: [...fixtureTools, huge, reader] });
    const { planId } = await ledger.createPlan({
      goal: 'large output',
      mode: 'execute',
      items: [
        { id: 'big', title: 'big', why: 'returns 300 KB', tool: 'huge' },
        { id: 'use', title: 'use', why: 'reads it', tool: 'reader', dependsOn: ['big'] },
      ],
    });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    // waitFor and getPlan read payloads back whole; the log holds the reference.
    expect(JSON.parse(done.items['big']!.outputJson!)).toEqual({ blob: big });
    const stored = (await ledger.getPlan(planId, { payloads: 'reference' }))!.items['big']!.outputJson!;
    expect(stored).toMatch(new RegExp(`^\\{"\\$blob":\\{"at":\\d+,"bytes":${Buffer.byteLength(JSON.stringify({ blob: big }))},"chunks":1,"sha256":"[0-9a-f]{64}"\\}\\}$`));
    expect(JSON.parse(await ledger.readPayload(planId, stored))).toEqual({ blob: big });
    expect(JSON.parse(done.items['use']!.outputJson!)).toEqual({ length: 300 * 1024 });
    expect(seen).toEqual([{ blob: big }]);
    expect(count.calls.size).toBe(2);
    expect(count.max()).toBe(1);
    const events = (await ledger.planEvents(planId)).map((r) => r.event);
    expect(verifyChain(events).ok).toBe(true);

    // verify reads the payload back and checks it against the sha256 the chain holds.
    const verified = await ledger.verify(planId);
    expect(verified.ok).toBe(true);
    expect(verified.checks.find((c) => c.name === 'payloads')).toMatchObject({ ok: true, detail: '1 payload(s) stored by reference match their sha256' });

    // Erasure tombstones the plan's chunks: the payload is gone with the plan.
    await ledger.erase(planId, { reason: 'test' });
    const gone = await ledger.readPayload(planId, stored).catch((e: unknown) => e);
    expect(isLedgerError(gone, 'NOT_FOUND')).toBe(true);
  });

  it('output past the payload ceiling fails the item terminally with OUTPUT_TOO_LARGE after ONE invocation; the partition serves the next plan', async () => {
    const count = counting();
    const huge = defineTool({
      name: 'huge',
      run: (_input, ctx) => {
        count.note(ctx.idempotencyKey);
        return { blob: 'x'.repeat(300 * 1024) };
      },
    });
    const config = testConfig({ partitions: 1 });
    process.env.PLAN_LEDGER_MAX_PAYLOAD_BYTES = String(200 * 1024);
    const started = ledgerWithExecutor({ config, tools: [...fixtureTools, huge] });
    const { ledger } = await started.finally(() => delete process.env.PLAN_LEDGER_MAX_PAYLOAD_BYTES);
    const { planId } = await ledger.createPlan({ goal: 'too much output', mode: 'execute', items: [{ id: 'big', title: 'big', why: 'returns 300 KB', tool: 'huge', retry: { maxAttempts: 3 } }] });
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
    const item = failed.items['big']!;
    expect(item.attempts.map((a) => [a.outcome, a.error?.code])).toEqual([['failed_terminal', 'OUTPUT_TOO_LARGE']]);
    expect(count.calls.get(`${planId}/big/1`)).toBe(1);
    expect(count.calls.size).toBe(1);

    const next = await ledger.createPlan({ goal: 'after', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'still served', tool: 'noop', input: { n: 1 } }] });
    await ledger.waitFor(next.planId, 'completed', { timeoutMs: 30_000 });
    expect(count.max()).toBe(1);
  });

  it('createPlan with a 3 MiB input stores it by reference and the tool gets it whole; past the ceiling it throws PAYLOAD_TOO_LARGE naming the field before anything is sent', async () => {
    const inputs: string[] = [];
    const measure = defineTool({
      name: 'measure',
      run: (input: { text: string }) => {
        inputs.push(input.text);
        return { bytes: input.text.length };
      },
    });
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config, tools: [...fixtureTools, measure] });
    const text = 'é'.repeat(1_600_000); // 3.2 MB of UTF-8
    const { planId, events } = await ledger.createPlan({ goal: 'large input', mode: 'execute', items: [{ id: 'm', title: 'm', why: 'takes 3 MiB', tool: 'measure', input: { text } }] });
    const added = events.find((e) => e.type === 'ItemAdded');
    expect(added?.type === 'ItemAdded' && added.data.item.inputJson).toMatch(/^\{"\$blob":\{"at":\d+,"bytes":3200011,"chunks":7,/);
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(JSON.parse(done.items['m']!.outputJson!)).toEqual({ bytes: 1_600_000 });
    expect(inputs).toEqual([text]);

    process.env.PLAN_LEDGER_MAX_PAYLOAD_BYTES = String(1024 * 1024);
    const small = await connectLedger(config).finally(() => delete process.env.PLAN_LEDGER_MAX_PAYLOAD_BYTES);
    try {
      const refused = await small.createPlan({ planId: `${planId}-too-big`, goal: 'too large', mode: 'execute', items: [{ id: 'm', title: 'm', why: 'w', tool: 'measure', input: { text } }] }).catch((e: unknown) => e);
      expect(isLedgerError(refused, 'PAYLOAD_TOO_LARGE')).toBe(true);
      expect((refused as { details: { field: string; bytes: number } }).details).toMatchObject({ field: 'items[0].input', bytes: 3200011 });
      expect(await small.getPlan(`${planId}-too-big`)).toBeUndefined();
    } finally {
      await small.close();
    }
  });

  it('an input forged to look like a payload reference (a blob that was never written) fails its item terminally, once; the partition serves the next plan', async () => {
    const count = counting();
    const measure = defineTool({
      name: 'measure',
      run: (_input, ctx) => {
        count.note(ctx.idempotencyKey);
        return { ok: true };
      },
    });
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config, tools: [...fixtureTools, measure] });
    const forged = { $blob: { at: Date.now(), bytes: 10, chunks: 1, sha256: 'a'.repeat(64) } };
    const { planId } = await ledger.createPlan({ goal: 'forged reference', mode: 'execute', items: [{ id: 'f', title: 'f', why: 'points at nothing', tool: 'measure', input: forged }] });
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
    const item = failed.items['f']!;
    expect(item.attempts.map((a) => [a.outcome, a.error?.code])).toEqual([['failed_terminal', 'PAYLOAD_UNREADABLE']]);
    expect(count.calls.size).toBe(0); // the tool never ran on a payload it could not have
    const next = await ledger.createPlan({ goal: 'after', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'still served', tool: 'noop' }] });
    await ledger.waitFor(next.planId, 'completed', { timeoutMs: 30_000 });
  });

  it('a legal plan of 1,000 items with ~900-byte `why` each is appended (split under the record limit) and runs to completion', async () => {
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config });
    const why = 'w'.repeat(900);
    const items = Array.from({ length: 1000 }, (_, i) => ({ id: `i${i}`, title: `item ${i}`, why, tool: 'noop', input: { i } }));
    const { planId, events } = await ledger.createPlan({ goal: 'a thousand items', mode: 'execute', items }, { timeoutMs: 60_000 });
    expect(events.filter((e) => e.type === 'ItemAdded')).toHaveLength(1000);
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
    expect(done.itemOrder).toHaveLength(1000);
    expect(Object.values(done.items).every((i) => i.status === 'completed' && i.attempts.length === 1)).toBe(true);
    const all = (await ledger.planEvents(planId)).map((r) => r.event);
    expect(verifyChain(all).ok).toBe(true);
  }, 180_000);

  it('a tool that never answers fails its attempt with TIMEOUT, retries per its policy, and frees its slot for other plans', async () => {
    const count = counting();
    const hang = defineTool({
      name: 'hang',
      timeoutMs: 400,
      run: (_input, ctx) => {
        count.note(ctx.idempotencyKey);
        return new Promise(() => {}); // ignores its signal too: the runner walks away after the grace period
      },
    });
    const config = testConfig({ partitions: 1 });
    // One slot: the second plan can only run if the hanging call gave its slot back.
    const { ledger, executor } = await ledgerWithExecutor({ config, tools: [...fixtureTools, hang], concurrency: 1 });
    const { planId } = await ledger.createPlan({
      goal: 'never answers',
      mode: 'execute',
      items: [{ id: 'h', title: 'hang', why: 'a tool that never returns', tool: 'hang', retry: { maxAttempts: 2, initialBackoffMs: 10, backoffMultiplier: 1, maxBackoffMs: 10 } }],
    });
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 60_000 });
    const item = failed.items['h']!;
    expect(item.attempts.map((a) => [a.attempt, a.outcome, a.error?.code])).toEqual([
      [1, 'failed_retryable', 'TIMEOUT'],
      [2, 'failed_retryable', 'TIMEOUT'],
    ]);
    expect([...count.calls.entries()].sort()).toEqual([
      [`${planId}/h/1`, 1],
      [`${planId}/h/2`, 1],
    ]);
    const other = await ledger.createPlan({ goal: 'after the hang', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'gets the slot', tool: 'noop' }] });
    await ledger.waitFor(other.planId, 'completed', { timeoutMs: 30_000 });
    expect(await executor.metrics()).toMatch(/plan_ledger_executor_tool_timeouts_total\{tool="hang"\} 2/);
  });

  it('follow-ups a tool returns that cannot be added (bad id, a cycle, non-JSON input) fail the item with a code, once', async () => {
    const count = counting();
    const cases: Record<string, unknown> = {
      badId: [{ id: 'not an id!', title: 't', why: 'w', tool: 'noop' }],
      cycle: [
        { id: 'f1', title: 'f1', why: 'w', tool: 'noop', dependsOn: ['f2'] },
        { id: 'f2', title: 'f2', why: 'w', tool: 'noop', dependsOn: ['f1'] },
      ],
      notJson: [{ id: 'f3', title: 'f3', why: 'w', tool: 'noop', input: { n: 1n } }],
      notArray: 'follow me',
    };
    const planner = defineTool({
      name: 'bad-planner',
      run: (input: { kind: string }, ctx) => {
        count.note(ctx.idempotencyKey);
        return { output: { planned: input.kind }, followUps: cases[input.kind] as never };
      },
    });
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config, tools: [...fixtureTools, planner] });
    const { planId } = await ledger.createPlan({
      goal: 'bad follow-ups',
      mode: 'execute',
      items: Object.keys(cases).map((kind) => ({ id: kind, title: kind, why: 'returns bad follow-ups', tool: 'bad-planner', input: { kind } })),
    });
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
    const codes = Object.fromEntries(Object.keys(cases).map((k) => [k, failed.items[k]!.attempts.map((a) => a.error?.code)]));
    expect(codes).toEqual({
      badId: ['RESULT_INVALID_FIELD'],
      cycle: ['RESULT_DEPENDENCY_CYCLE'],
      notJson: ['INVALID_FOLLOW_UP'],
      notArray: ['INVALID_FOLLOW_UP'],
    });
    expect(failed.itemOrder).toEqual(Object.keys(cases)); // nothing was added
    expect(count.calls.size).toBe(4);
    expect(count.max()).toBe(1);
  });

  it('a command for a plan that does not exist is rejected with its code and leaves no live record in the events topic', async () => {
    const config = testConfig({ partitions: 1 });
    const { ledger } = await ledgerWithExecutor({ config });
    const planId = `ghost-${Date.now()}`;
    const err = await ledger.cancel(planId, 'no such plan').catch((e: unknown) => e);
    expect(isLedgerError(err, 'REJECTED')).toBe(true);
    expect((err as { details: { rejection: string } }).details.rejection).toBe('PLAN_NOT_FOUND');

    const kafka = testKafka(config);
    const records: Array<{ key: string; value: Buffer | null }> = [];
    await kafka.readToEnd({
      topic: topicNames(config.topicPrefix).events,
      partitions: [partitionFor(planId, config.partitions)],
      onRecords: (rs) => {
        for (const r of rs) if (r.key?.toString() === eventKey(planId, 1)) records.push({ key: r.key.toString(), value: r.value });
      },
    });
    // The rejection the client read, then its tombstone in the same transaction: compaction leaves nothing.
    expect(records.map((r) => r.value === null)).toEqual([false, true]);
    // A plan may still be created under that id afterwards.
    const created = await ledger.createPlan({ planId, goal: 'now it exists', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'w', tool: 'noop' }] });
    await ledger.waitFor(created.planId, 'completed', { timeoutMs: 30_000 });
  });
});
