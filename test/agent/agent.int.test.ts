import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent, summarizeAgentRun, type TurnInput, type TurnOutput } from '../../src/agent/index.js';
import { verifyChain } from '../../src/plan/index.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { call, lastToolResults, response, text, scriptedModel } from './script.js';

/** Tools whose effects the test counts: invocations by tool, and distinct idempotency keys. */
function countedTools() {
  const invocations: Array<{ tool: string; key: string; input: unknown }> = [];
  const lookup = defineAgentTool({
    name: 'lookup',
    description: 'Look an order up',
    inputSchema: z.object({ orderId: z.string() }),
    run(input: { orderId: string }, ctx) {
      invocations.push({ tool: 'lookup', key: ctx.idempotencyKey, input });
      return { orderId: input.orderId, cents: input.orderId === 'A' ? 1200 : 800 };
    },
  });
  const refund = defineAgentTool({
    name: 'refund',
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), cents: z.number().int().positive() }),
    run(input: { orderId: string; cents: number }, ctx) {
      invocations.push({ tool: 'refund', key: ctx.idempotencyKey, input });
      return { refunded: input.cents, orderId: input.orderId };
    },
  });
  return { lookup, refund, invocations };
}

describe('agents on the AI SDK (in-process executor, real broker and registry)', () => {
  it('runs a scripted 3-turn run: each turn asked once, each tool call an item run once, outputs and usage recorded', async () => {
    const { lookup, refund, invocations } = countedTools();
    const model = scriptedModel([
        response([text('I will look both orders up.'), call('c1', 'lookup', { orderId: 'A' }), call('c2', 'lookup', { orderId: 'B' })], { in: 50, out: 10 }),
        response([text('Order A is the one to refund.'), call('c3', 'refund', { orderId: 'A', cents: 1200 })], { in: 80, out: 12 }),
        response([text('Refunded 12.00 on order A.')], { in: 110, out: 8 }),
      ]);
    const agent = defineAgent({ name: 'support', model, system: 'You refund orders.', tools: [lookup, refund], maxTurns: 5 });
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent) });

    const { planId, firstTurn } = await runAgent(ledger, { agent, goal: 'Refund the order that cost 12.00', mode: 'execute' });
    expect(firstTurn).toBe('turn-1');
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });

    expect(model.doStreamCalls).toHaveLength(3);
    expect(invocations).toHaveLength(3);
    expect(invocations.filter((i) => i.tool === 'lookup').map((i) => (i.input as { orderId: string }).orderId).sort()).toEqual(['A', 'B']);
    expect(invocations.filter((i) => i.tool === 'refund')).toHaveLength(1);
    expect(new Set(invocations.map((i) => i.key)).size).toBe(3);
    expect(invocations.find((i) => i.tool === 'refund')!.key).toBe(`${planId}/turn-2.call-0/1`);

    expect(done.itemOrder).toEqual(['turn-1', 'turn-1.call-0', 'turn-1.call-1', 'turn-2', 'turn-2.call-0', 'turn-3']);
    const item = (id: string) => done.items[id]!;
    expect(item('turn-1.call-0').tool).toBe('lookup');
    expect(JSON.parse(item('turn-1.call-1').inputJson)).toEqual({ orderId: 'B' });
    expect(item('turn-1.call-0').why).toBe('I will look both orders up.');
    expect(item('turn-1.call-0').followUpOf).toBe('turn-1');
    expect(item('turn-2').dependsOn).toEqual(['turn-1', 'turn-1.call-0', 'turn-1.call-1']);
    expect(JSON.parse(item('turn-2.call-0').outputJson!)).toEqual({ result: { refunded: 1200, orderId: 'A' } });
    expect(Object.values(done.items).every((i) => i.attempts.length === 1)).toBe(true);

    const out = (id: string) => JSON.parse(item(id).outputJson!) as TurnOutput;
    expect(out('turn-1')).toMatchObject({
      turn: 1,
      modelId: 'mock-model-id',
      text: 'I will look both orders up.',
      finishReason: 'tool-calls',
      usage: { inputTokens: 50, outputTokens: 10, totalTokens: 60 },
      totals: { inputTokens: 50, outputTokens: 10, totalTokens: 60, turns: 1 },
      finished: null,
      next: 'turn-2',
      asked: true,
    });
    expect(out('turn-1').toolCalls).toEqual([
      { toolCallId: 'c1', toolName: 'lookup', input: { orderId: 'A' }, itemId: 'turn-1.call-0' },
      { toolCallId: 'c2', toolName: 'lookup', input: { orderId: 'B' }, itemId: 'turn-1.call-1' },
    ]);
    expect(out('turn-3')).toMatchObject({ text: 'Refunded 12.00 on order A.', finishReason: 'stop', finished: 'answer', next: null, toolCalls: [], totals: { inputTokens: 240, outputTokens: 30, totalTokens: 270, turns: 3 } });

    // The second turn was asked with the first turn's response and its two calls' results; the third with everything.
    const second = model.doStreamCalls[1]!;
    expect(second.prompt[0]).toEqual({ role: 'system', content: 'You refund orders.' });
    expect(lastToolResults(second)).toEqual([
      { toolCallId: 'c1', toolName: 'lookup', output: { type: 'json', value: { orderId: 'A', cents: 1200 } } },
      { toolCallId: 'c2', toolName: 'lookup', output: { type: 'json', value: { orderId: 'B', cents: 800 } } },
    ]);
    const third = model.doStreamCalls[2]!;
    expect(third.prompt.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(lastToolResults(third)).toEqual([{ toolCallId: 'c3', toolName: 'refund', output: { type: 'json', value: { refunded: 1200, orderId: 'A' } } }]);
    expect((JSON.parse(item('turn-3').inputJson) as TurnInput).totals).toEqual({ inputTokens: 130, outputTokens: 22, totalTokens: 152, turns: 2 });

    expect(summarizeAgentRun(done)).toEqual({
      agent: 'support',
      finished: 'answer',
      pausedOn: null,
      stopReason: null,
      status: 'completed',
      answer: 'Refunded 12.00 on order A.',
      totals: { inputTokens: 240, outputTokens: 30, totalTokens: 270, turns: 3 },
      unread: 0,
      turns: [
        { itemId: 'turn-1', turn: 1, modelId: 'mock-model-id', finishReason: 'tool-calls', usage: { inputTokens: 50, outputTokens: 10, totalTokens: 60 }, finished: null, toolCalls: 2 },
        { itemId: 'turn-2', turn: 2, modelId: 'mock-model-id', finishReason: 'tool-calls', usage: { inputTokens: 80, outputTokens: 12, totalTokens: 92 }, finished: null, toolCalls: 1 },
        { itemId: 'turn-3', turn: 3, modelId: 'mock-model-id', finishReason: 'stop', usage: { inputTokens: 110, outputTokens: 8, totalTokens: 118 }, finished: 'answer', toolCalls: 0 },
      ],
    });
    expect(done.labels).toEqual({ agent: 'support' });
    expect(verifyChain((await ledger.planEvents(planId)).map((r) => r.event)).ok).toBe(true);
  });

  it('with stream: false asks a model that only answers whole (no doStream) with generateText: each turn asked once, recorded the same', async () => {
    const { lookup, refund, invocations } = countedTools();
    const script = [response([text('Looking order A up.'), call('c1', 'lookup', { orderId: 'A' })], { in: 40, out: 9 }), response([text('Order A cost 12.00.')], { in: 70, out: 7 })];
    const model = new MockLanguageModelV3({ doGenerate: script });
    const agent = defineAgent({ name: 'whole', model, tools: [lookup, refund], stream: false });
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent) });
    const { planId } = await runAgent(ledger, { agent, goal: 'What did order A cost?', mode: 'execute' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(model.doStreamCalls).toHaveLength(0);
    expect(invocations.map((i) => [i.tool, i.input])).toEqual([['lookup', { orderId: 'A' }]]);
    expect(done.itemOrder).toEqual(['turn-1', 'turn-1.call-0', 'turn-2']);
    const turns = ['turn-1', 'turn-2'].map((id) => JSON.parse(done.items[id]!.outputJson!) as TurnOutput);
    expect(turns.map((t) => [t.text, t.usage.totalTokens, t.finished])).toEqual([
      ['Looking order A up.', 49, null],
      ['Order A cost 12.00.', 77, 'answer'],
    ]);
    expect(done.items['turn-1']!.attempts).toHaveLength(1);
    expect(done.items['turn-2']!.attempts).toHaveLength(1);
  });

  it('runs a propose-mode agent run only after its digest is approved', async () => {
    const { lookup, refund, invocations } = countedTools();
    const model = scriptedModel([response([call('c1', 'lookup', { orderId: 'A' })]), response([text('Order A cost 12.00.')])]);
    const agent = defineAgent({ name: 'reviewed', model, tools: [lookup, refund] });
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent) });
    const { planId, digest } = await runAgent(ledger, { agent, goal: 'What did order A cost?', mode: 'propose' });
    expect((await ledger.getPlan(planId))?.status).toBe('proposed');
    expect(model.doStreamCalls).toHaveLength(0);
    await ledger.approve(planId, digest, { by: 'alice' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(model.doStreamCalls).toHaveLength(2);
    expect(invocations).toHaveLength(1);
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'Order A cost 12.00.', totals: { turns: 2, totalTokens: 240 } });
  });

  it('stops at maxTurns (the last turn\'s calls do not run); a spent token budget pauses the run until an operator raises it', async () => {
    const { lookup, refund, invocations } = countedTools();
    // A model that never stops asking for a lookup: 100 + 20 tokens a turn.
    let n = 0;
    const model = scriptedModel(async () => response([call(`c${++n}`, 'lookup', { orderId: 'A' })]));
    const agent = defineAgent({ name: 'looper', model, tools: [lookup, refund], maxTurns: 3 });
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent) });

    const turnsRun = await runAgent(ledger, { agent, goal: 'loop', mode: 'execute' });
    const turnsDone = await ledger.waitFor(turnsRun.planId, 'completed', { timeoutMs: 60_000 });
    expect(summarizeAgentRun(turnsDone)).toMatchObject({ finished: 'maxTurns', totals: { turns: 3, totalTokens: 360 } });
    expect(turnsDone.itemOrder).toEqual(['turn-1', 'turn-1.call-0', 'turn-2', 'turn-2.call-0', 'turn-3']);
    const last = JSON.parse(turnsDone.items['turn-3']!.outputJson!) as TurnOutput;
    expect(last.toolCalls).toEqual([expect.objectContaining({ toolName: 'lookup', notRun: true })]);
    expect(invocations).toHaveLength(2);
    expect(model.doStreamCalls).toHaveLength(3);

    // 250 tokens: the third turn (360 spent) is past it. The run pauses before turn 4 (turn 3's call runs)
    // on a wait item the operator answers; nothing asks the model meanwhile.
    const budgetRun = await runAgent(ledger, { agent, goal: 'loop on a budget', mode: 'execute', maxTurns: 50, budget: { tokens: 250 } });
    const paused = await ledger.waitFor(budgetRun.planId, (st) => st.items['turn-3.budget']?.status === 'in_progress' && st.items['turn-3.call-0']?.status === 'completed', { timeoutMs: 60_000 });
    expect(paused.status).toBe('running');
    expect(summarizeAgentRun(paused)).toMatchObject({ finished: null, pausedOn: 'turn-3.budget', totals: { turns: 3, totalTokens: 360 } });
    expect(paused.items['turn-3.budget']!.wait).toEqual({ signal: 'budget', timeoutMs: null, prompt: 'The run has used 360 tokens of its 250-token budget; model turn 4 waits. Answer {"tokens": N} with N above 360 to go on, or cancel the plan.' });
    expect(paused.items['turn-4']).toMatchObject({ status: 'pending', dependsOn: ['turn-3', 'turn-3.budget', 'turn-3.call-0'] });
    expect(model.doStreamCalls).toHaveLength(6);
    expect(invocations).toHaveLength(5);
    // Still paused a moment later: the wait holds the next turn, not a timer of ours.
    await new Promise((r) => setTimeout(r, 1500));
    expect(model.doStreamCalls).toHaveLength(6);
    expect((await ledger.getPlan(budgetRun.planId))!.items['turn-4']!.status).toBe('pending');

    // Raised to 600: turns 4 (480) and 5 (600) are asked, then it pauses again.
    await ledger.signal(budgetRun.planId, 'budget', { tokens: 600 }, { by: 'alice' });
    const again = await ledger.waitFor(budgetRun.planId, (st) => st.items['turn-5.budget']?.status === 'in_progress' && st.items['turn-5.call-0']?.status === 'completed', { timeoutMs: 60_000 });
    expect(summarizeAgentRun(again)).toMatchObject({ finished: null, pausedOn: 'turn-5.budget', totals: { turns: 5, totalTokens: 600 } });
    expect(model.doStreamCalls).toHaveLength(8);

    // An answer that raises nothing ends the run, recorded: turn 6 is not asked, the reason says why.
    await ledger.signal(budgetRun.planId, 'budget', { tokens: 'lots' }, { by: 'alice' });
    const budgetDone = await ledger.waitFor(budgetRun.planId, 'completed', { timeoutMs: 60_000 });
    const run = summarizeAgentRun(budgetDone)!;
    expect(run).toMatchObject({ finished: 'budget', pausedOn: null, totals: { turns: 5, totalTokens: 600 } });
    expect(run.stopReason).toBe('the budget raise {"tokens":"lots"} is not {"tokens": N} with N above the 600 tokens spent');
    expect(JSON.parse(budgetDone.items['turn-6']!.outputJson!)).toMatchObject({ asked: false, finished: 'budget' });
    expect(model.doStreamCalls).toHaveLength(8);
    expect(invocations).toHaveLength(7);
    expect(new Set(invocations.map((i) => i.key)).size).toBe(7);
  });
});
