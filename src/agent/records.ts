import type { ModelMessage } from 'ai';
import type { PlanState } from '../plan/index.js';

/** Why a run stopped asking its model: a final answer, the turn limit, or the budget. */
export type AgentFinish = 'answer' | 'maxTurns' | 'budget';

export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
}

export interface RunTotals extends TokenUsage {
  /** Model turns asked so far (this one included, in an output). */
  turns: number;
}

/** A model-visible error: what the next turn sees in place of a tool's result. */
export interface AgentToolError {
  code: string;
  message: string;
}

/**
 * One tool call of a turn, as the next turn needs it: the item that runs it, or the error that stopped it
 * before any item existed (unknown tool, arguments failing the schema, past the per-turn cap).
 */
export type CallRef = { toolCallId: string; toolName: string; itemId: string } | { toolCallId: string; toolName: string; error: AgentToolError };

/** A turn item's input: everything the model is asked with, except its tool calls' results (the dependencies). */
export interface TurnInput {
  agent: string;
  /** 1-based. */
  turn: number;
  /** The conversation up to and including the previous turn's response (the first turn: the goal). */
  messages: ModelMessage[];
  /** The previous turn's tool calls, in the order the model made them. */
  calls: CallRef[];
  /** Spent before this turn. */
  totals: RunTotals;
  maxTurns: number;
  budget: { tokens: number | null };
  /**
   * The budget wait this turn follows (the previous turn spent the budget): its answer, `{ "tokens": N }`,
   * is the raised budget. Absent when the budget was not spent.
   */
  raise?: string;
}

/** A tool call as recorded in a turn's output. */
export interface RecordedCall {
  toolCallId: string;
  toolName: string;
  input: unknown;
  /** The item that runs it; absent when it did not run. */
  itemId?: string;
  /** Why it did not run (then the next turn sees this error). */
  error?: AgentToolError;
  /** True when the run stopped at this turn (answer, maxTurns, budget) so its calls were not run. */
  notRun?: boolean;
}

/** A turn item's output: the model's response as recorded in the ledger. A completed turn is never asked again. */
export interface TurnOutput {
  agent: string;
  turn: number;
  modelId: string;
  text: string;
  /** UTF-8 bytes of the model's whole text; more than `text` holds when it was cut at the agent's maxTextBytes. */
  textBytes: number;
  textTruncated: boolean;
  finishReason: string;
  usage: TokenUsage;
  /** Spent after this turn. */
  totals: RunTotals;
  toolCalls: RecordedCall[];
  /** Set on the run's last turn: why it stopped. null: the next turn is `next`. */
  finished: AgentFinish | null;
  /** The next turn's item id (null on the last turn). */
  next: string | null;
  /** Whether the model was asked in this turn (false: the budget or the turn limit was spent before it). */
  asked: boolean;
  /**
   * Set when this turn spent the budget and the run paused: the wait item (signal `budget`) the next turn
   * depends on until an operator raises the budget or cancels the plan (this turn's calls run).
   */
  budgetWait?: string;
  /** Why a turn that was not asked stopped the run (the turn limit, the budget, a raise that raised nothing). */
  stopReason?: string;
}

/** The signal that answers a paused run's budget wait: `{ "tokens": N }`, N above the tokens spent. */
export const BUDGET_SIGNAL = 'budget';

/** What a tool call item records: the tool's result, or the error the model sees. */
export type CallOutput = { result: unknown } | { error: AgentToolError };

/** An agent run as read from its plan. */
export interface AgentRunSummary {
  agent: string;
  /** How the run ended; null while it runs, or when an item failed and blocked it (see `status`). */
  finished: AgentFinish | null;
  /** The plan's status. */
  status: PlanState['status'];
  /** The last recorded turn's text (the final answer when `finished` is `answer`). */
  answer: string | null;
  turns: Array<Pick<TurnOutput, 'turn' | 'modelId' | 'finishReason' | 'usage' | 'finished'> & { itemId: string; toolCalls: number }>;
  /** Spent by the recorded turns (the last one's running totals). */
  totals: RunTotals;
  /** Completed turns whose output was not readable here (stored by reference and not resolved): not in `turns`. */
  unread: number;
  /** The budget wait the run is paused on (its item id), or null when it is not paused for its budget. */
  pausedOn: string | null;
  /** Why the run stopped without asking its model (the last turn's stopReason), or null. */
  stopReason: string | null;
}

/** Whether an item is a model turn of an agent run (its tool is `agent:<name>`). */
export function isTurnTool(tool: string): boolean {
  return tool.startsWith('agent:');
}

/**
 * Reads an agent run from its plan (payloads resolved: `ledger.getPlan(planId)`): its turns in order, their
 * usage, the totals and how it ended. Plain data, no I/O.
 */
export function summarizeAgentRun(state: PlanState): AgentRunSummary | undefined {
  const turns: AgentRunSummary['turns'] = [];
  let agent: string | undefined;
  let last: TurnOutput | undefined;
  let unread = 0;
  for (const id of state.itemOrder) {
    const item = state.items[id];
    if (item === undefined || !isTurnTool(item.tool)) continue;
    agent ??= item.tool.slice('agent:'.length);
    if (item.status !== 'completed' || item.outputJson === null) continue;
    let out: TurnOutput | undefined;
    try {
      out = JSON.parse(item.outputJson) as TurnOutput;
    } catch {
      out = undefined;
    }
    if (typeof out !== 'object' || out === null || typeof out.turn !== 'number' || !Array.isArray(out.toolCalls)) {
      unread++;
      continue;
    }
    last = out;
    turns.push({ itemId: id, turn: out.turn, modelId: out.modelId, finishReason: out.finishReason, usage: out.usage, finished: out.finished, toolCalls: out.toolCalls.length });
  }
  if (agent === undefined) return undefined;
  const totals: RunTotals = last?.totals ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0, turns: 0 };
  const wait = last?.budgetWait !== undefined ? state.items[last.budgetWait] : undefined;
  const pausedOn = wait !== undefined && wait.status !== 'completed' && wait.status !== 'cancelled' && wait.status !== 'failed' ? wait.id : null;
  return { agent, finished: last?.finished ?? null, status: state.status, answer: last ? last.text : null, turns, totals, unread, pausedOn, stopReason: last?.stopReason ?? null };
}
