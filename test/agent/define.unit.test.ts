import { describe, expect, it } from 'vitest';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, summarizeAgentRun, DEFAULT_MAX_TOOL_CALLS_PER_TURN, type TurnOutput } from '../../src/agent/index.js';
import type { ItemState, PlanState } from '../../src/plan/index.js';

const model = new MockLanguageModelV3();
const lookup = defineAgentTool({ name: 'lookup', inputSchema: z.object({ id: z.string() }), run: () => ({}) });

function planOf(items: Array<Pick<ItemState, 'tool' | 'status' | 'outputJson'> & { id: string }>): PlanState {
  return {
    planId: 'p',
    status: 'running',
    itemOrder: items.map((i) => i.id),
    items: Object.fromEntries(items.map((i) => [i.id, i as unknown as ItemState])),
  } as unknown as PlanState;
}

const turnOut = (turn: number, finished: TurnOutput['finished'], tokens: number): TurnOutput => ({
  agent: 'a',
  turn,
  modelId: 'm',
  text: `t${turn}`,
  textBytes: 2,
  textTruncated: false,
  finishReason: finished ? 'stop' : 'tool-calls',
  usage: { inputTokens: tokens, outputTokens: 1, totalTokens: tokens + 1 },
  totals: { inputTokens: tokens * turn, outputTokens: turn, totalTokens: (tokens + 1) * turn, turns: turn },
  toolCalls: [],
  finished,
  next: finished ? null : `turn-${turn + 1}`,
  asked: true,
});

describe('defineAgent, defineAgentTool, agentTools', () => {
  it('fills the defaults and names the turn tool after the agent', () => {
    const a = defineAgent({ name: 'support', model, tools: [lookup] });
    expect([a.turnTool, a.maxTurns, a.maxToolCallsPerTurn, a.maxTextBytes, a.maxRetries]).toEqual(['agent:support', 10, DEFAULT_MAX_TOOL_CALLS_PER_TURN, 1024 * 1024, 2]);
    expect(agentTools(a).map((t) => t.name)).toEqual(['agent:support', 'lookup']);
  });

  it('refuses what cannot run: bad names, two tools of one name, non-positive limits', () => {
    expect(() => defineAgent({ name: 'has space', model, tools: [] })).toThrow(/name is required/);
    expect(() => defineAgent({ name: 'a', model, tools: [lookup, lookup] })).toThrow(/two tools are named "lookup"/);
    expect(() => defineAgent({ name: 'a', model, tools: [], maxTurns: 0 })).toThrow(/maxTurns must be a positive integer/);
    expect(() => defineAgent({ name: 'a', model, tools: [], budget: { tokens: -1 } })).toThrow(/budget.tokens/);
    expect(() => defineAgentTool({ name: 'payments.refund', inputSchema: z.object({}), run: () => 1 })).toThrow(/letters, digits, _ or -/);
    expect(() => defineAgentTool({ name: 'x', inputSchema: z.object({}), timeoutMs: 1.5, run: () => 1 })).toThrow(/timeoutMs/);
  });

  it('lists a tool shared by two agents once, and refuses two different tools of one name', () => {
    const a = defineAgent({ name: 'a', model, tools: [lookup] });
    const b = defineAgent({ name: 'b', model, tools: [lookup] });
    expect(agentTools(a, b).map((t) => t.name)).toEqual(['agent:a', 'lookup', 'agent:b']);
    const other = defineAgentTool({ name: 'lookup', inputSchema: z.object({}), run: () => 2 });
    expect(() => agentTools(a, defineAgent({ name: 'c', model, tools: [other] }))).toThrow(/two different tools are named "lookup"/);
  });
});

describe('summarizeAgentRun', () => {
  it('is undefined for a plan that is not an agent run', () => {
    expect(summarizeAgentRun(planOf([{ id: 'x', tool: 'noop', status: 'completed', outputJson: '{}' }]))).toBeUndefined();
  });

  it('reads the turns in order, the last one\'s totals and outcome, and counts outputs it cannot read', () => {
    const s = planOf([
      { id: 'turn-1', tool: 'agent:a', status: 'completed', outputJson: JSON.stringify(turnOut(1, null, 10)) },
      { id: 'turn-1.call-0', tool: 'lookup', status: 'completed', outputJson: '{"result":1}' },
      { id: 'turn-2', tool: 'agent:a', status: 'completed', outputJson: '{"$blob":{"at":1,"bytes":300000,"chunks":1,"sha256":"ab"}}' },
      { id: 'turn-3', tool: 'agent:a', status: 'completed', outputJson: JSON.stringify(turnOut(3, 'answer', 10)) },
    ]);
    const run = summarizeAgentRun(s)!;
    expect(run).toMatchObject({ agent: 'a', finished: 'answer', answer: 't3', unread: 1, totals: { totalTokens: 33, turns: 3 } });
    expect(run.turns.map((t) => t.itemId)).toEqual(['turn-1', 'turn-3']);
  });

  it('has no outcome while the run is still going', () => {
    const s = planOf([
      { id: 'turn-1', tool: 'agent:a', status: 'completed', outputJson: JSON.stringify(turnOut(1, null, 10)) },
      { id: 'turn-2', tool: 'agent:a', status: 'in_progress', outputJson: null },
    ]);
    expect(summarizeAgentRun(s)).toMatchObject({ finished: null, status: 'running', totals: { turns: 1 } });
  });
});
