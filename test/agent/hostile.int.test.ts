import { describe, expect, it } from 'vitest';
import { APICallError } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent, summarizeAgentRun, type Agent, type TurnOutput } from '../../src/agent/index.js';
import type { Ledger } from '../../src/client/index.js';
import { TerminalError } from '../../src/tools.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { call, lastToolResults, response, text, scriptedModel } from './script.js';

function tools() {
  const effects: string[] = [];
  const lookup = defineAgentTool({
    name: 'lookup',
    inputSchema: z.object({ orderId: z.string() }),
    run(input: { orderId: string }, ctx) {
      effects.push(ctx.idempotencyKey);
      return { orderId: input.orderId };
    },
  });
  const broken = defineAgentTool({
    name: 'broken',
    inputSchema: z.object({}),
    run() {
      throw new TerminalError('order 7 does not exist', 'NOT_FOUND');
    },
  });
  const flaky = defineAgentTool({
    name: 'flaky',
    inputSchema: z.object({}),
    retry: { maxAttempts: 2, initialBackoffMs: 20, backoffMultiplier: 1, maxBackoffMs: 20 },
    run(_input: unknown, ctx) {
      throw new Error(`upstream 503 on attempt ${ctx.attempt}`);
    },
  });
  const stuck = defineAgentTool({
    name: 'stuck',
    inputSchema: z.object({}),
    timeoutMs: 300,
    retry: { maxAttempts: 1 },
    run: () => new Promise<never>(() => {}),
  });
  return { effects, list: [lookup, broken, flaky, stuck] };
}

/** An agent that answers at once: the run that must still complete after each hostile one. */
function healthyAgent(): Agent {
  return defineAgent({ name: 'healthy', model: scriptedModel(async () => response([text('all good')], { in: 5, out: 2 })), tools: [] });
}

async function healthyRunCompletes(ledger: Ledger, agent: Agent): Promise<void> {
  const { planId } = await runAgent(ledger, { agent, goal: 'are you there?', mode: 'execute' });
  const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
  expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'all good' });
}

describe('hostile model output and failing tools (in-process executor, real broker and registry)', () => {
  it('an unknown tool, arguments failing the schema and failing tools reach the next turn as errors, never as items that block', async () => {
    const t = tools();
    const model = scriptedModel([
        response([
          call('u1', 'delete_everything', { really: true }),
          call('b1', 'lookup', { orderId: 42 }),
          call('b2', 'lookup', '{not json'),
          call('f1', 'broken', {}),
          call('f2', 'flaky', {}),
          call('s1', 'stuck', {}),
          call('ok', 'lookup', { orderId: 'A' }),
        ]),
        response([text('Only order A could be looked up.')]),
      ]);
    const agent = defineAgent({ name: 'hostile', model, tools: t.list });
    const healthy = healthyAgent();
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent, healthy) });
    const { planId } = await runAgent(ledger, { agent, goal: 'do things', mode: 'execute' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });

    // Three calls never became items; the four valid ones did, and each ran to a recorded output.
    expect(done.itemOrder).toEqual(['turn-1', 'turn-1.call-0', 'turn-1.call-1', 'turn-1.call-2', 'turn-1.call-3', 'turn-2']);
    const turn1 = JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput;
    expect(turn1.toolCalls.map((c) => [c.toolCallId, c.itemId ?? c.error?.code])).toEqual([
      ['u1', 'UNKNOWN_TOOL'],
      ['b1', 'INVALID_ARGUMENTS'],
      ['b2', 'INVALID_ARGUMENTS'],
      ['f1', 'turn-1.call-0'],
      ['f2', 'turn-1.call-1'],
      ['s1', 'turn-1.call-2'],
      ['ok', 'turn-1.call-3'],
    ]);
    expect(done.items['turn-1.call-1']!.attempts.map((a) => a.outcome)).toEqual(['failed_retryable', 'succeeded']);
    expect(t.effects).toEqual([`${planId}/turn-1.call-3/1`]);

    // What the model saw in turn 2: one result per call, in its order, errors as errors.
    expect(model.doStreamCalls).toHaveLength(2);
    const seen = lastToolResults(model.doStreamCalls[1]!).map((r) => ({ id: r.toolCallId, ...(r.output as { type: string; value: { code?: string; message?: string } }) }));
    expect(seen.map((o) => [o.id, o.type, o.value.code ?? o.value])).toEqual([
      ['u1', 'error-json', 'UNKNOWN_TOOL'],
      ['b1', 'error-json', 'INVALID_ARGUMENTS'],
      ['b2', 'error-json', 'INVALID_ARGUMENTS'],
      ['f1', 'error-json', 'NOT_FOUND'],
      ['f2', 'error-json', 'TOOL_FAILED'],
      ['s1', 'error-json', 'TIMEOUT'],
      ['ok', 'json', { orderId: 'A' }],
    ]);
    expect(seen[0]!.value.message).toContain('lookup, broken, flaky, stuck');
    expect(seen[4]!.value.message).toBe('upstream 503 on attempt 2');
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'Only order A could be looked up.' });
    await healthyRunCompletes(ledger, healthy);
  });

  it('1,000 tool calls in one turn: the first 64 run, the other 936 are answered with TOO_MANY_TOOL_CALLS', async () => {
    const t = tools();
    const many = Array.from({ length: 1000 }, (_, i) => call(`m${i}`, 'lookup', { orderId: `o${i}` }));
    const model = scriptedModel([response(many), response([text('done')])]);
    const agent = defineAgent({ name: 'flood', model, tools: t.list });
    const healthy = healthyAgent();
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent, healthy) });
    const { planId } = await runAgent(ledger, { agent, goal: 'look up everything', mode: 'execute' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 90_000 });

    expect(done.itemOrder).toHaveLength(1 + 64 + 1);
    expect(new Set(t.effects).size).toBe(64);
    expect(t.effects).toHaveLength(64);
    const turn1 = JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput;
    expect(turn1.toolCalls.filter((c) => c.itemId !== undefined)).toHaveLength(64);
    expect(turn1.toolCalls.filter((c) => c.error?.code === 'TOO_MANY_TOOL_CALLS')).toHaveLength(936);
    const seen = lastToolResults(model.doStreamCalls[1]!);
    expect(seen).toHaveLength(1000);
    expect(seen.filter((r) => (r.output as { type: string }).type === 'json')).toHaveLength(64);
    expect(seen[999]).toMatchObject({ toolCallId: 'm999', output: { type: 'error-json', value: { code: 'TOO_MANY_TOOL_CALLS' } } });
    expect(model.doStreamCalls).toHaveLength(2);
    await healthyRunCompletes(ledger, healthy);
  });

  it('a 10 MB text is recorded cut at maxTextBytes, with its full size, and the next turn sees the cut text; raised past it, the ledger keeps it whole by reference', async () => {
    const t = tools();
    const big = 'é'.repeat(5 * 1024 * 1024); // 10 MiB of UTF-8, two bytes a character
    const model = scriptedModel([response([text(big), call('c1', 'lookup', { orderId: 'A' })]), response([text(big)])]);
    const agent = defineAgent({ name: 'verbose', model, tools: t.list });
    const healthy = healthyAgent();
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent, healthy) });
    const { planId } = await runAgent(ledger, { agent, goal: 'say a lot', mode: 'execute' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 90_000 });

    for (const id of ['turn-1', 'turn-2']) {
      const out = JSON.parse(done.items[id]!.outputJson!) as TurnOutput;
      expect(out.textBytes).toBe(10 * 1024 * 1024);
      expect(out.textTruncated).toBe(true);
      expect(Buffer.byteLength(out.text, 'utf8')).toBe(1024 * 1024);
      expect(out.text).toBe('é'.repeat(512 * 1024));
    }
    // The item's why is the model's text, bounded.
    expect(done.items['turn-1.call-0']!.why).toBe('é'.repeat(1000));
    const second = model.doStreamCalls[1]!.prompt.find((m) => m.role === 'assistant')!;
    expect(second.content[0]).toMatchObject({ type: 'text', text: 'é'.repeat(512 * 1024) });
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer' });
    await healthyRunCompletes(ledger, healthy);

    // With the cut raised past it, the ledger records the whole text by reference (blob chunks), and the
    // next turn's input (which carries the conversation) too.
    const wholeModel = scriptedModel([response([text(big), call('c1', 'lookup', { orderId: 'A' })]), response([text('done')])]);
    const whole = defineAgent({ name: 'whole', model: wholeModel, tools: t.list, maxTextBytes: 16 * 1024 * 1024 });
    const stack2 = await ledgerWithExecutor({ tools: agentTools(whole, healthy) });
    const run = await runAgent(stack2.ledger, { agent: whole, goal: 'say it all', mode: 'execute' });
    const wholeDone = await stack2.ledger.waitFor(run.planId, 'completed', { timeoutMs: 90_000 });
    const first = JSON.parse(wholeDone.items['turn-1']!.outputJson!) as TurnOutput;
    expect([first.textTruncated, first.text === big]).toEqual([false, true]);
    const refs = await stack2.ledger.getPlan(run.planId, { payloads: 'reference' });
    const ref = (json: string) => (JSON.parse(json) as { $blob?: { bytes: number; chunks: number } }).$blob;
    expect(ref(refs!.items['turn-1']!.outputJson!)?.bytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(ref(refs!.items['turn-2']!.inputJson)?.chunks).toBe(21);
    const told = wholeModel.doStreamCalls[1]!.prompt.find((m) => m.role === 'assistant')!;
    expect(told.content[0]).toMatchObject({ type: 'text', text: big });
    await healthyRunCompletes(stack2.ledger, healthy);
  });

  it('a model turn that never answers ends in a recorded TIMEOUT; the plan fails and the executor keeps serving', async () => {
    const t = tools();
    const model = scriptedModel(() => new Promise<never>(() => {}));
    const agent = defineAgent({ name: 'silent', model, tools: t.list, turnTimeoutMs: 1000, turnRetry: { maxAttempts: 2, initialBackoffMs: 50 } });
    const healthy = healthyAgent();
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent, healthy) });
    const { planId } = await runAgent(ledger, { agent, goal: 'hello?', mode: 'execute' });
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 60_000 });

    const turn = failed.items['turn-1']!;
    expect(turn.status).toBe('failed');
    expect(turn.attempts.map((a) => [a.outcome, a.error?.code])).toEqual([
      ['failed_retryable', 'TIMEOUT'],
      ['failed_retryable', 'TIMEOUT'],
    ]);
    expect(turn.failure?.reason).toBe('retries_exhausted');
    expect(model.doStreamCalls).toHaveLength(2);
    expect(summarizeAgentRun(failed)).toMatchObject({ finished: null, status: 'failed', turns: [] });
    await healthyRunCompletes(ledger, healthy);
  });

  it('stream: false (generateText): a confused model\'s calls end as errors or items, a model that never answers in a recorded TIMEOUT; the executor keeps serving', async () => {
    const t = tools();
    const confused = new MockLanguageModelV3({
      doGenerate: [
        response([call('u1', 'delete_everything', { really: true }), call('b2', 'lookup', '{not json'), call('ok', 'lookup', { orderId: 'A' })]),
        response([text('Only order A could be looked up.')]),
      ],
    });
    const whole = defineAgent({ name: 'whole-confused', model: confused, tools: t.list, stream: false });
    const silent = defineAgent({ name: 'whole-silent', model: new MockLanguageModelV3({ doGenerate: () => new Promise<never>(() => {}) }), tools: t.list, stream: false, turnTimeoutMs: 1000, turnRetry: { maxAttempts: 2, initialBackoffMs: 50 } });
    const healthy = healthyAgent();
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(whole, silent, healthy) });

    const { planId } = await runAgent(ledger, { agent: whole, goal: 'do things', mode: 'execute' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    const turn1 = JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput;
    expect(turn1.toolCalls.map((c) => [c.toolCallId, c.itemId ?? c.error?.code])).toEqual([
      ['u1', 'UNKNOWN_TOOL'],
      ['b2', 'INVALID_ARGUMENTS'],
      ['ok', 'turn-1.call-0'],
    ]);
    expect(t.effects).toEqual([`${planId}/turn-1.call-0/1`]);
    expect(confused.doGenerateCalls).toHaveLength(2);
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'Only order A could be looked up.' });

    const quiet = await runAgent(ledger, { agent: silent, goal: 'hello?', mode: 'execute' });
    const failed = await ledger.waitFor(quiet.planId, 'failed', { timeoutMs: 60_000 });
    expect(failed.items['turn-1']!.attempts.map((a) => [a.outcome, a.error?.code])).toEqual([
      ['failed_retryable', 'TIMEOUT'],
      ['failed_retryable', 'TIMEOUT'],
    ]);
    await healthyRunCompletes(ledger, healthy);
  });

  it('a provider error no retry can change fails the turn at once (MODEL_ERROR); a retryable one is asked again', async () => {
    const t = tools();
    const failure = (statusCode: number, isRetryable: boolean) => new APICallError({ message: `provider answered ${statusCode}`, url: 'http://provider.invalid/v1', requestBodyValues: {}, statusCode, isRetryable });
    const denied = scriptedModel(async () => Promise.reject(failure(401, false)));
    let asked = 0;
    const flaky = scriptedModel(async () => (++asked === 1 ? Promise.reject(failure(503, true)) : response([text('back')])));
    const a = defineAgent({ name: 'denied', model: denied, tools: t.list, maxRetries: 0 });
    const b = defineAgent({ name: 'flaky', model: flaky, tools: t.list, maxRetries: 0, turnRetry: { maxAttempts: 3, initialBackoffMs: 50 } });
    const healthy = healthyAgent();
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(a, b, healthy) });

    const runA = await runAgent(ledger, { agent: a, goal: 'hello', mode: 'execute' });
    const failed = await ledger.waitFor(runA.planId, 'failed', { timeoutMs: 60_000 });
    expect(failed.items['turn-1']!.attempts.map((x) => [x.outcome, x.error?.code])).toEqual([['failed_terminal', 'MODEL_ERROR']]);
    expect(JSON.parse(failed.items['turn-1']!.attempts[0]!.error!.detailsJson!)).toEqual({ statusCode: 401 });
    expect(denied.doStreamCalls).toHaveLength(1);

    const runB = await runAgent(ledger, { agent: b, goal: 'hello', mode: 'execute' });
    const done = await ledger.waitFor(runB.planId, 'completed', { timeoutMs: 60_000 });
    expect(done.items['turn-1']!.attempts.map((x) => x.outcome)).toEqual(['failed_retryable', 'succeeded']);
    expect(flaky.doStreamCalls).toHaveLength(2);
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'back' });
    await healthyRunCompletes(ledger, healthy);
  });
});
