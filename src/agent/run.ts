import type { Ledger } from '../client/index.js';
import type { PlanMode } from '../plan/index.js';
import { DEFAULT_MAX_TURNS, turnToolName, type Agent, type AgentBudget } from './define.js';
import type { TurnInput } from './records.js';
import { turnItemId } from './tools.js';

export interface RunAgentInput {
  /** The agent (its definition) or its name; the executors that run the plan must have it registered. */
  agent: Agent | string;
  /** The user's request: the run's first message, and the plan's goal. */
  goal: string;
  /** `execute` runs now; `propose` waits for an operator to approve the plan's digest (default `execute`). */
  mode?: PlanMode;
  /** Overrides the agent's maxTurns for this run (required when `agent` is a name and the default 10 will not do). */
  maxTurns?: number;
  /** Overrides the agent's budget for this run. */
  budget?: AgentBudget;
  labels?: Record<string, string>;
  planId?: string;
}

export interface AgentRunStarted {
  planId: string;
  /** The plan's digest (in propose mode: the one to approve). */
  digest: string;
  /** The first model turn's item id. */
  firstTurn: string;
  /** createPlan's warnings: the agent's turn tool (`agent:<name>`) served by no live executor, say. */
  warnings: string[];
}

/**
 * Starts an agent run: a plan whose only item is the first model turn; each turn then adds its tool calls
 * and the next turn as follow-up items. In propose mode the plan is proposed and waits for approval.
 *
 * @example
 * const { planId } = await runAgent(ledger, { agent: support, goal: 'Refund order 42', mode: 'execute' });
 * const done = await ledger.waitFor(planId, 'completed');
 * summarizeAgentRun(done); // { finished: 'answer', answer: '…', totals: { totalTokens, turns, … } }
 */
export async function runAgent(ledger: Ledger, input: RunAgentInput): Promise<AgentRunStarted> {
  const name = typeof input.agent === 'string' ? input.agent : input.agent.name;
  const defaults = typeof input.agent === 'string' ? undefined : input.agent;
  if (typeof input.goal !== 'string' || input.goal.length === 0) throw new TypeError('runAgent: goal is required');
  const maxTurns = input.maxTurns ?? defaults?.maxTurns ?? DEFAULT_MAX_TURNS;
  if (!(Number.isSafeInteger(maxTurns) && maxTurns > 0)) throw new TypeError('runAgent: maxTurns must be a positive integer');
  const tokens = input.budget?.tokens ?? defaults?.budget?.tokens ?? null;
  if (tokens !== null && !(Number.isSafeInteger(tokens) && tokens > 0)) throw new TypeError('runAgent: budget.tokens must be a positive integer');
  const mode = input.mode ?? 'execute';
  const first: TurnInput = {
    agent: name,
    turn: 1,
    messages: [{ role: 'user', content: input.goal }],
    calls: [],
    totals: { inputTokens: 0, outputTokens: 0, totalTokens: 0, turns: 0 },
    maxTurns,
    budget: { tokens },
  };
  const firstTurn = turnItemId(1);
  const created = await ledger.createPlan({
    goal: input.goal,
    mode,
    labels: { agent: name, ...(input.labels ?? {}) },
    ...(input.planId !== undefined ? { planId: input.planId } : {}),
    items: [
      {
        id: firstTurn,
        title: `${name}: model turn 1`,
        why: 'ask the model for the first step towards the goal',
        tool: turnToolName(name),
        input: first,
        ...(defaults?.turnRetry ? { retry: defaults.turnRetry } : {}),
      },
    ],
  });
  if (mode === 'propose') {
    const proposed = await ledger.propose(created.planId);
    return { planId: created.planId, digest: proposed.digest, firstTurn, warnings: created.warnings };
  }
  return { planId: created.planId, digest: created.digest, firstTurn, warnings: created.warnings };
}
