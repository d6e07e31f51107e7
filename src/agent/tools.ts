import { APICallError, asSchema, generateText, InvalidToolInputError, streamText, NoSuchToolError, type ModelMessage, type Tool as SdkTool, type ToolResultPart } from 'ai';
import { LedgerError } from '../errors.js';
import { resolveRetryPolicy } from '../plan/index.js';
import { defineTool, isTerminalError, RetryableError, TerminalError, type FollowUpItem, type Tool, type ToolContext, type ToolResult } from '../tools.js';
import type { Agent, AgentTool } from './define.js';
import { BUDGET_SIGNAL, type AgentFinish, type AgentToolError, type CallOutput, type CallRef, type RecordedCall, type RunTotals, type TurnInput, type TurnOutput } from './records.js';

/** The wrapper's own deadline fires this much before the executor's, so the model sees a TIMEOUT error. */
const TIMEOUT_MARGIN_MS = 2_000;
const MAX_MESSAGE_CHARS = 2_000;
const MAX_WHY_CHARS = 1_000;

/**
 * The ledger tools that run the given agents, for `startExecutor({ tools })`: one turn tool per agent
 * (`agent:<name>`) and one ledger tool per agent tool (its own name; a tool shared by agents is listed once).
 *
 * @example
 * await startExecutor({ tools: [...agentTools(support, triage), otherTool] });
 */
export function agentTools(...agents: Agent[]): Tool[] {
  const out: Tool[] = [];
  const byName = new Map<string, AgentTool<unknown, unknown>>();
  for (const agent of agents) {
    out.push(turnTool(agent));
    for (const t of agent.tools) {
      const seen = byName.get(t.name);
      if (seen === t) continue;
      if (seen !== undefined) throw new TypeError(`agentTools: two different tools are named "${t.name}"`);
      byName.set(t.name, t);
      out.push(callTool(t));
    }
  }
  return out;
}

function errorOf(e: unknown, fallbackCode: string): AgentToolError {
  const err = (typeof e === 'object' && e !== null ? e : {}) as { code?: unknown; message?: unknown };
  const code = typeof err.code === 'string' && err.code.length > 0 ? err.code.slice(0, 128) : fallbackCode;
  let message: string;
  try {
    message = String(err.message ?? e);
  } catch {
    message = 'unprintable error';
  }
  return { code, message: message.slice(0, MAX_MESSAGE_CHARS) };
}

async function validate(schema: AgentTool['inputSchema'], value: unknown): Promise<{ ok: true; value: unknown } | { ok: false; error: AgentToolError }> {
  const s = asSchema(schema);
  if (s.validate === undefined) return { ok: true, value };
  const r = await s.validate(value);
  return r.success ? { ok: true, value: r.value } : { ok: false, error: { code: 'INVALID_ARGUMENTS', message: r.error.message.slice(0, MAX_MESSAGE_CHARS) } };
}

/**
 * One agent tool as a ledger tool. A failed item would block every item that depends on it — here the next
 * model turn, and with it the whole run (the plan fails, nothing else can progress). The model should see
 * a tool's failure as a result and decide what to do, so the wrapper records it as the item's output,
 * `{ error: { code, message } }`, instead of failing the item: a TerminalError at once, any other error on the
 * item's last attempt (earlier attempts throw, so the executor retries them with backoff as usual), and a
 * timeout through the wrapper's own deadline (`timeoutMs`), which fires before the executor's.
 * A result is recorded as `{ result }`.
 */
function callTool(def: AgentTool<unknown, unknown>): Tool {
  const maxAttempts = resolveRetryPolicy(def.retry ? { ...resolveRetryPolicy(null), ...def.retry } : null).maxAttempts;
  return defineTool<unknown, CallOutput>({
    name: def.name,
    ...(def.timeoutMs !== undefined ? { timeoutMs: def.timeoutMs + TIMEOUT_MARGIN_MS } : {}),
    async run(input, ctx) {
      const checked = await validate(def.inputSchema, input);
      if (!checked.ok) return { error: checked.error };
      const lastAttempt = ctx.attempt >= maxAttempts;
      try {
        const result = await withDeadline(def, checked.value, ctx);
        return { result: result === undefined ? null : result };
      } catch (e) {
        if (ctx.signal.aborted && !(ctx.signal.reason instanceof LedgerError)) throw e; // released: nothing is recorded
        if (isTerminalError(e) || lastAttempt) return { error: errorOf(e, isTerminalError(e) ? 'TERMINAL' : 'TOOL_FAILED') };
        throw e;
      }
    },
  });
}

async function withDeadline(def: AgentTool<unknown, unknown>, input: unknown, ctx: ToolContext): Promise<unknown> {
  if (def.timeoutMs === undefined) return def.run(input, ctx);
  const timeoutMs = def.timeoutMs;
  const deadline = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new RetryableError(`tool ${def.name} did not answer within ${timeoutMs} ms`, 'TIMEOUT');
      deadline.abort(err);
      reject(err);
    }, timeoutMs);
  });
  try {
    return await Promise.race([Promise.resolve(def.run(input, { ...ctx, signal: AbortSignal.any([ctx.signal, deadline.signal]) })), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** The AI SDK tool set the model sees: descriptions and schemas, no `execute` (the ledger runs the calls). */
function sdkTools(agent: Agent): Record<string, SdkTool> {
  const tools: Record<string, SdkTool> = {};
  for (const t of agent.tools) tools[t.name] = { ...(t.description !== undefined ? { description: t.description } : {}), inputSchema: asSchema(t.inputSchema) } as SdkTool;
  return tools;
}

/** JSON as the ledger records it: no undefined, no functions (a model's arguments are JSON already). */
function plain(v: unknown): unknown {
  if (v === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(v)) as unknown;
  } catch {
    return String(v);
  }
}

/** The tool message that answers the previous turn's calls, from its items' outputs (the dependencies). */
function toolResults(calls: CallRef[], deps: Readonly<Record<string, unknown>>): ModelMessage | undefined {
  if (calls.length === 0) return undefined;
  const content: ToolResultPart[] = calls.map((c) => {
    let output: ToolResultPart['output'];
    if ('error' in c) output = { type: 'error-json', value: { ...c.error } };
    else {
      const o = deps[c.itemId] as CallOutput | undefined;
      if (o === undefined || o === null || typeof o !== 'object') output = { type: 'error-json', value: { code: 'NO_RESULT', message: `item ${c.itemId} recorded no output` } };
      else if ('error' in o) output = { type: 'error-json', value: { ...o.error } };
      else output = { type: 'json', value: plain(o.result) as never };
    }
    return { type: 'tool-result', toolCallId: c.toolCallId, toolName: c.toolName, output };
  });
  return { role: 'tool', content };
}

function cutUtf8(text: string, maxBytes: number): { text: string; bytes: number; truncated: boolean } {
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= maxBytes) return { text, bytes, truncated: false };
  // Decoding a cut buffer drops a split last character as U+FFFD; strip it.
  return { text: Buffer.from(text, 'utf8').subarray(0, maxBytes).toString('utf8').replace(/\uFFFD$/, ''), bytes, truncated: true };
}

function num(n: number | undefined): number {
  return typeof n === 'number' && Number.isFinite(n) ? n : 0;
}

/**
 * The budget a turn runs on: the planned one, or after a pause the one its budget wait was answered with
 * (`{ "tokens": N }`, N a positive integer). An answer of any other shape raises nothing.
 */
function budgetAfterRaise(input: TurnInput, deps: Readonly<Record<string, unknown>>): { tokens: number | null } {
  if (input.raise === undefined) return input.budget;
  const answer = deps[input.raise] as { tokens?: unknown } | null | undefined;
  const tokens = typeof answer === 'object' && answer !== null ? answer.tokens : undefined;
  return typeof tokens === 'number' && Number.isSafeInteger(tokens) && tokens > 0 ? { tokens } : input.budget;
}

function preview(v: unknown): string {
  const json = JSON.stringify(v) ?? 'nothing';
  return json.length > 120 ? `${json.slice(0, 120)}…` : json;
}

export function turnItemId(turn: number): string {
  return `turn-${turn}`;
}

/** What one turn asks the model, streamed or whole. */
function modelCall(agent: Agent, messages: ModelMessage[], ctx: ToolContext) {
  return {
    model: agent.model,
    ...(agent.system !== undefined ? { system: agent.system } : {}),
    messages,
    tools: sdkTools(agent),
    abortSignal: ctx.signal,
    maxRetries: agent.maxRetries,
  };
}

/**
 * Asks the model once with `streamText` and publishes what it says as it comes on the attempt's stream
 * (`ctx.stream`): text deltas up to the agent's maxTextBytes (cut where the recorded text is cut, so the
 * stream's text is the recorded text), each tool call as the model starts it, and the usage at the end.
 * Returns what `generateText` would have: the recorded response keeps its shape.
 */
async function askStreaming(agent: Agent, messages: ModelMessage[], ctx: ToolContext) {
  let failure: { error: unknown } | undefined;
  const result = streamText({
    ...modelCall(agent, messages, ctx),
    onError: () => {}, // the error part below carries it
  });
  let streamed = 0;
  const started = new Set<string>();
  for await (const part of result.fullStream) {
    if (part.type === 'text-delta') {
      if (streamed >= agent.maxTextBytes) continue;
      const bytes = Buffer.byteLength(part.text, 'utf8');
      const piece = streamed + bytes <= agent.maxTextBytes ? part.text : cutUtf8(part.text, agent.maxTextBytes - streamed).text;
      streamed += streamed + bytes <= agent.maxTextBytes ? bytes : agent.maxTextBytes - streamed;
      if (piece.length) await ctx.stream.text(piece);
    } else if (part.type === 'tool-input-start' || part.type === 'tool-call') {
      // A provider streams a call's input (tool-input-start first) or hands it whole (tool-call only).
      const id = part.type === 'tool-call' ? part.toolCallId : part.id;
      if (part.providerExecuted !== true && !started.has(id)) {
        started.add(id);
        await ctx.stream.toolCall({ toolCallId: id, toolName: part.toolName });
      }
    } else if (part.type === 'finish') {
      const inputTokens = num(part.totalUsage.inputTokens);
      const outputTokens = num(part.totalUsage.outputTokens);
      await ctx.stream.usage({ inputTokens, outputTokens, totalTokens: part.totalUsage.totalTokens ?? inputTokens + outputTokens });
    } else if (part.type === 'error') {
      failure ??= { error: part.error };
    }
  }
  if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('the model call was aborted');
  if (failure !== undefined) throw failure.error;
  const [text, toolCalls, finishReason, usage, response] = await Promise.all([result.text, result.toolCalls, result.finishReason, result.usage, result.response]);
  return { text, toolCalls, finishReason, usage, response };
}

/** Asks the model once with `generateText` (an agent defined with `stream: false`): nothing is published before the turn is recorded. */
async function askWhole(agent: Agent, messages: ModelMessage[], ctx: ToolContext) {
  const r = await generateText(modelCall(agent, messages, ctx));
  return { text: r.text, toolCalls: r.toolCalls, finishReason: r.finishReason, usage: r.usage, response: r.response };
}

/** The turn tool: asks the model once, records its response, and plans the calls and the next turn as follow-ups. */
function turnTool(agent: Agent): Tool {
  const toolsByName = new Map(agent.tools.map((t) => [t.name, t]));
  return defineTool<TurnInput, TurnOutput>({
    name: agent.turnTool,
    ...(agent.turnTimeoutMs !== undefined ? { timeoutMs: agent.turnTimeoutMs } : {}),
    async run(input, ctx): Promise<ToolResult<TurnOutput>> {
      const results = toolResults(input.calls, ctx.dependencies);
      const messages: ModelMessage[] = results ? [...input.messages, results] : input.messages;
      const budget = budgetAfterRaise(input, ctx.dependencies);
      const stopBefore: AgentFinish | null = input.turn > input.maxTurns ? 'maxTurns' : budget.tokens !== null && input.totals.totalTokens >= budget.tokens ? 'budget' : null;
      if (stopBefore !== null) {
        const stopReason =
          stopBefore === 'maxTurns'
            ? `the run's ${input.maxTurns} turns are spent`
            : input.raise !== undefined
              ? `the budget raise ${preview(ctx.dependencies[input.raise])} is not {"tokens": N} with N above the ${input.totals.totalTokens} tokens spent`
              : `the budget of ${budget.tokens} tokens is spent (${input.totals.totalTokens})`;
        return { output: { agent: agent.name, turn: input.turn, modelId: '', text: '', textBytes: 0, textTruncated: false, finishReason: 'not-asked', usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, totals: input.totals, toolCalls: [], finished: stopBefore, next: null, asked: false, stopReason }, followUps: [] };
      }

      let response: Awaited<ReturnType<typeof askStreaming>>;
      try {
        response = agent.stream ? await askStreaming(agent, messages, ctx) : await askWhole(agent, messages, ctx);
      } catch (e) {
        // A provider's answer that no retry can change (a bad key, a malformed request) fails the turn now;
        // anything else fails the attempt, and the ledger retries it (the turn was not recorded: asked again).
        if (!ctx.signal.aborted && APICallError.isInstance(e) && !e.isRetryable) {
          throw new TerminalError(`the model call failed: ${e.message}`.slice(0, MAX_MESSAGE_CHARS), 'MODEL_ERROR', { statusCode: e.statusCode ?? null });
        }
        throw e;
      }

      const inputTokens = num(response.usage.inputTokens);
      const outputTokens = num(response.usage.outputTokens);
      const usage = { inputTokens, outputTokens, totalTokens: response.usage.totalTokens ?? inputTokens + outputTokens };
      const totals: RunTotals = {
        inputTokens: input.totals.inputTokens + usage.inputTokens,
        outputTokens: input.totals.outputTokens + usage.outputTokens,
        totalTokens: input.totals.totalTokens + usage.totalTokens,
        turns: input.totals.turns + 1,
      };
      const text = cutUtf8(response.text, agent.maxTextBytes);
      const calls = response.toolCalls.filter((c) => c.providerExecuted !== true); // a provider-run tool (e.g. its web search) is not ours to run
      const finished: AgentFinish | null = calls.length === 0 ? 'answer' : input.turn >= input.maxTurns ? 'maxTurns' : null;
      // The budget spent by this turn pauses the run before its next model turn: the turn's calls run (they
      // spend no tokens), the next turn waits for an operator to raise the budget (the answer of a wait item)
      // or cancel the plan. No model turn is asked meanwhile.
      const spent = finished === null && budget.tokens !== null && totals.totalTokens >= budget.tokens;
      const budgetWait = spent ? `${ctx.itemId}.budget` : undefined;

      const recorded: RecordedCall[] = [];
      const refs: CallRef[] = [];
      const followUps: FollowUpItem[] = [];
      const why = (text.text.trim() || `the model asked for it in turn ${input.turn}`).slice(0, MAX_WHY_CHARS);
      let runnable = 0;
      for (const call of calls) {
        const args = plain(call.input);
        const base = { toolCallId: call.toolCallId, toolName: call.toolName, input: args };
        if (finished !== null) {
          recorded.push({ ...base, notRun: true });
          continue;
        }
        let error: AgentToolError | undefined;
        if ('invalid' in call && call.invalid === true) {
          const e = 'error' in call ? call.error : undefined;
          error = NoSuchToolError.isInstance(e)
            ? { code: 'UNKNOWN_TOOL', message: `there is no tool named "${call.toolName}"; the tools are: ${[...toolsByName.keys()].join(', ')}`.slice(0, MAX_MESSAGE_CHARS) }
            : InvalidToolInputError.isInstance(e)
              ? { code: 'INVALID_ARGUMENTS', message: errorOf(e, 'INVALID_ARGUMENTS').message }
              : errorOf(e, 'INVALID_TOOL_CALL');
        } else if (!toolsByName.has(call.toolName)) {
          error = { code: 'UNKNOWN_TOOL', message: `there is no tool named "${call.toolName}"` };
        } else if (runnable >= agent.maxToolCallsPerTurn) {
          error = { code: 'TOO_MANY_TOOL_CALLS', message: `only the first ${agent.maxToolCallsPerTurn} tool calls of a turn run; this one (of ${calls.length}) did not` };
        }
        if (error !== undefined) {
          recorded.push({ ...base, error });
          refs.push({ toolCallId: call.toolCallId, toolName: call.toolName, error });
          continue;
        }
        const itemId = `${ctx.itemId}.call-${runnable++}`;
        const tool = toolsByName.get(call.toolName)!;
        recorded.push({ ...base, itemId });
        refs.push({ toolCallId: call.toolCallId, toolName: call.toolName, itemId });
        followUps.push({ id: itemId, title: `${call.toolName} (turn ${input.turn})`, why, tool: call.toolName, input: args, dependsOn: [ctx.itemId], ...(tool.retry ? { retry: tool.retry } : {}) });
      }
      if (budgetWait !== undefined) {
        followUps.unshift({
          id: budgetWait,
          title: `${agent.name}: budget spent, raise it to go on`,
          why: `turn ${input.turn} brought the run to ${totals.totalTokens} tokens of its ${budget.tokens}-token budget`,
          dependsOn: [ctx.itemId],
          wait: {
            signal: BUDGET_SIGNAL,
            timeoutMs: null,
            prompt: `The run has used ${totals.totalTokens} tokens of its ${budget.tokens}-token budget; model turn ${input.turn + 1} waits. Answer {"tokens": N} with N above ${totals.totalTokens} to go on, or cancel the plan.`,
          },
        });
      }

      const next = finished === null ? turnItemId(input.turn + 1) : null;
      const output: TurnOutput = {
        agent: agent.name,
        turn: input.turn,
        modelId: response.response.modelId ?? '',
        text: text.text,
        textBytes: text.bytes,
        textTruncated: text.truncated,
        finishReason: response.finishReason,
        usage,
        totals,
        toolCalls: recorded,
        finished,
        next,
        asked: true,
        ...(budgetWait ? { budgetWait } : {}),
      };
      if (next !== null) {
        const assistant: ModelMessage = {
          role: 'assistant',
          content: [
            ...(text.text.length > 0 ? [{ type: 'text' as const, text: text.text }] : []),
            ...calls.map((c) => ({ type: 'tool-call' as const, toolCallId: c.toolCallId, toolName: c.toolName, input: ((x) => (typeof x === 'object' && x !== null ? x : {}))(plain(c.input)) })),
          ],
        };
        const nextInput: TurnInput = { agent: agent.name, turn: input.turn + 1, messages: [...messages, assistant], calls: refs, totals, maxTurns: input.maxTurns, budget, ...(budgetWait ? { raise: budgetWait } : {}) };
        followUps.push({
          id: next,
          title: `${agent.name}: model turn ${input.turn + 1}`,
          why: `answer the results of turn ${input.turn}'s ${refs.length} tool call${refs.length === 1 ? '' : 's'}`,
          tool: agent.turnTool,
          input: nextInput,
          dependsOn: [ctx.itemId, ...followUps.map((f) => f.id)],
          ...(agent.turnRetry ? { retry: agent.turnRetry } : {}),
        });
      }
      return { output, followUps };
    },
  });
}
