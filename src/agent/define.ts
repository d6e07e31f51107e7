import type { FlexibleSchema, LanguageModel } from 'ai';
import type { RetryPolicyInput, ToolContext } from '../tools.js';

/** Tool calls one model turn may have run; the rest get a model-visible error (see {@link AgentDefinition.maxToolCallsPerTurn}). */
export const DEFAULT_MAX_TOOL_CALLS_PER_TURN = 64;
/** Longest text of a turn that is recorded and shown to the next turn (UTF-8 bytes); the rest is cut off. */
export const DEFAULT_MAX_TEXT_BYTES = 1024 * 1024;
/** Turns an agent may take when neither its definition nor the run says. */
export const DEFAULT_MAX_TURNS = 10;

/**
 * A tool an agent's model may call. Each call becomes a plan item run by the executor (its own
 * idempotency key, fencing token, checkpoints, timeout): `run` gets the ledger's {@link ToolContext}, so an
 * effect keyed by `ctx.idempotencyKey` happens once however often the executor crashes.
 */
export interface AgentTool<I = unknown, O = unknown> {
  /** The ledger tool name and the name the model sees. */
  readonly name: string;
  readonly description?: string;
  /** A zod schema or the AI SDK's `jsonSchema(...)`: the model sees it, and a call whose arguments fail it never runs. */
  readonly inputSchema: FlexibleSchema<I>;
  /**
   * Longest one attempt may run (ms). The agent's wrapper enforces it itself, so that the last attempt's
   * timeout reaches the model as a TIMEOUT error instead of failing the item (which would block the next turn).
   */
  readonly timeoutMs?: number;
  /** Retry policy of the call's item (default the ledger's: 3 attempts). */
  readonly retry?: Partial<RetryPolicyInput>;
  run(input: I, ctx: ToolContext): Promise<O> | O;
}

/** Declares a tool for {@link defineAgent}. */
export function defineAgentTool<I, O>(tool: AgentTool<I, O>): AgentTool<I, O> {
  if (!tool || typeof tool.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) {
    throw new TypeError('defineAgentTool: name is required (1-64 letters, digits, _ or -, as model providers accept)');
  }
  if (typeof tool.run !== 'function') throw new TypeError(`defineAgentTool(${tool.name}): run must be a function`);
  if (tool.inputSchema === undefined || tool.inputSchema === null) throw new TypeError(`defineAgentTool(${tool.name}): inputSchema is required`);
  if (tool.timeoutMs !== undefined && !(Number.isSafeInteger(tool.timeoutMs) && tool.timeoutMs > 0)) {
    throw new TypeError(`defineAgentTool(${tool.name}): timeoutMs must be a positive integer of milliseconds`);
  }
  return Object.freeze({ ...tool });
}

/** What a run may spend before the agent stops asking its model. */
export interface AgentBudget {
  /** Input plus output tokens over all turns of the run. */
  readonly tokens?: number;
}

export interface AgentDefinition {
  /** Names the agent's turn tool (`agent:<name>`) and its plans' `agent` label. */
  readonly name: string;
  /** Any AI SDK language model (a provider's model, or `MockLanguageModelV3` from `ai/test`). */
  readonly model: LanguageModel;
  readonly system?: string;
  readonly tools: readonly AgentTool<unknown, unknown>[];
  /** Model turns per run, the last included (default 10); a run may lower or raise it. */
  readonly maxTurns?: number;
  /** Default budget of a run; a run may give its own. */
  readonly budget?: AgentBudget;
  /** Tool calls of one turn that run (default 64); the calls past it are answered with a TOO_MANY_TOOL_CALLS error. */
  readonly maxToolCallsPerTurn?: number;
  /** Text of one turn that is recorded (default 1 MiB of UTF-8); longer text is cut there and the output says so. */
  readonly maxTextBytes?: number;
  /** Longest one model turn may take (ms) before its attempt fails with TIMEOUT (default: the executor's tool timeout). */
  readonly turnTimeoutMs?: number;
  /** Retry policy of the turn items (default the ledger's: 3 attempts); an attempt that failed was not recorded, so it asks the model again. */
  readonly turnRetry?: Partial<RetryPolicyInput>;
  /** The AI SDK's own retries of a failed model call within one attempt (default 2, the SDK's). */
  readonly maxRetries?: number;
  /**
   * Ask with `streamText` and publish the words on the attempt's live stream as they come (default true).
   * False asks with `generateText`, for a model that only answers whole (no `doStream`): the turn is
   * recorded the same, and its stream carries only the end marker.
   */
  readonly stream?: boolean;
}

export interface Agent extends Required<Pick<AgentDefinition, 'name' | 'model' | 'tools' | 'maxTurns' | 'maxToolCallsPerTurn' | 'maxTextBytes' | 'maxRetries' | 'stream'>> {
  readonly system: string | undefined;
  readonly budget: AgentBudget | undefined;
  readonly turnTimeoutMs: number | undefined;
  readonly turnRetry: Partial<RetryPolicyInput> | undefined;
  /** The ledger tool that runs this agent's model turns. */
  readonly turnTool: string;
}

function positiveInt(v: unknown, field: string): void {
  if (v !== undefined && !(Number.isSafeInteger(v) && (v as number) > 0)) throw new TypeError(`defineAgent: ${field} must be a positive integer`);
}

/**
 * Declares an agent: a model, a system prompt and tools. Register it on an executor with
 * {@link agentTools} and start runs with {@link runAgent}.
 *
 * @example
 * const agent = defineAgent({ name: 'support', model: openai('gpt-4.1-mini'), system: 'You help with refunds.', tools: [lookupOrder, refund], maxTurns: 8 });
 * await startExecutor({ tools: agentTools(agent) });
 */
export function defineAgent(def: AgentDefinition): Agent {
  if (!def || typeof def.name !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(def.name)) throw new TypeError('defineAgent: name is required (1-64 letters, digits, ., _ or -)');
  if (def.model === undefined || def.model === null) throw new TypeError(`defineAgent(${def.name}): model is required`);
  if (!Array.isArray(def.tools)) throw new TypeError(`defineAgent(${def.name}): tools must be an array`);
  const names = new Set<string>();
  for (const t of def.tools) {
    if (names.has(t.name)) throw new TypeError(`defineAgent(${def.name}): two tools are named "${t.name}"`);
    names.add(t.name);
  }
  positiveInt(def.maxTurns, 'maxTurns');
  positiveInt(def.maxToolCallsPerTurn, 'maxToolCallsPerTurn');
  positiveInt(def.maxTextBytes, 'maxTextBytes');
  positiveInt(def.turnTimeoutMs, 'turnTimeoutMs');
  positiveInt(def.budget?.tokens, 'budget.tokens');
  if (def.maxRetries !== undefined && !(Number.isSafeInteger(def.maxRetries) && def.maxRetries >= 0)) throw new TypeError('defineAgent: maxRetries must be a non-negative integer');
  if (def.stream !== undefined && typeof def.stream !== 'boolean') throw new TypeError('defineAgent: stream must be a boolean');
  return Object.freeze({
    name: def.name,
    model: def.model,
    system: def.system,
    tools: [...def.tools],
    maxTurns: def.maxTurns ?? DEFAULT_MAX_TURNS,
    budget: def.budget,
    maxToolCallsPerTurn: def.maxToolCallsPerTurn ?? DEFAULT_MAX_TOOL_CALLS_PER_TURN,
    maxTextBytes: def.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES,
    turnTimeoutMs: def.turnTimeoutMs,
    turnRetry: def.turnRetry,
    maxRetries: def.maxRetries ?? 2,
    stream: def.stream ?? true,
    turnTool: turnToolName(def.name),
  });
}

export function turnToolName(agentName: string): string {
  return `agent:${agentName}`;
}
