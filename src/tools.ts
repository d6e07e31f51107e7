import type { Logger } from './logging.js';

/** A follow-up item a tool adds to its plan (dynamic planning). Same fields as a plan file's item. */
export interface FollowUpItem {
  id: string;
  title: string;
  why: string;
  dependsOn?: string[];
  /** The tool that runs the item; a wait item needs none (recorded as 'wait'). */
  tool?: string;
  input?: unknown;
  retry?: Partial<RetryPolicyInput> | null;
  /**
   * Dotted paths into the item's input and output JSON whose values are secret, e.g.
   * `['card.number', 'token']` (an array index is a segment: `cards.0.number`). They show as `"[secret]"` in
   * the executor's and projector's logs, the API, the dashboard and the CLI; the tool gets the real value.
   */
  secret?: string[] | null;
  /**
   * Makes the item a wait item: it runs no tool and holds no tool slot; it completes when the signal
   * `signal` arrives (`ledger.signal`, `plan-ledger signal`, the API), its data being the item's output.
   * Past `timeoutMs` the attempt fails with WAIT_TIMEOUT and the retry policy applies (each retry waits anew).
   */
  wait?: { signal: string; timeoutMs?: number | null; prompt?: string | null } | null;
}

export interface RetryPolicyInput {
  maxAttempts: number;
  initialBackoffMs: number;
  backoffMultiplier: number;
  maxBackoffMs: number;
}

/** A child plan an item delegates to; the item completes or fails with it. */
export interface ChildPlanSpec {
  goal: string;
  items: FollowUpItem[];
  labels?: Record<string, string>;
}

/** What a tool may return instead of a bare output. */
export interface ToolResult<O = unknown> {
  output?: O;
  followUps?: FollowUpItem[];
  delegate?: ChildPlanSpec;
}

/**
 * Everything a tool invocation knows about itself. The idempotency key is stable across retries of the
 * same attempt, including the re-invocation a recovering executor makes after a crash: pass it to the
 * external system so a repeated call has no second effect.
 */
export interface ToolContext {
  readonly planId: string;
  readonly itemId: string;
  /** 1-based attempt number. */
  readonly attempt: number;
  /** `planId/itemId/attempt`. */
  readonly idempotencyKey: string;
  /** Grows with every change of partition owner: an external system can refuse a smaller one. */
  readonly fencingToken: number;
  /** Aborts when the executor loses the plan's partition or shuts down. */
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Outputs of the items this one depends on, by item id (parsed JSON). */
  readonly dependencies: Readonly<Record<string, unknown>>;
  /** True when this invocation repeats an attempt whose intent was recorded by an earlier owner. */
  readonly recovering: boolean;
  /**
   * The latest progress recorded with {@link checkpoint} for this item, by this attempt before a crash or
   * by an earlier attempt (parsed JSON); undefined when there is none. A tool resumes from it.
   */
  readonly lastCheckpoint: unknown;
  /**
   * Durably records the tool's progress within this attempt (an `ItemCheckpointed` event in the plan's log
   * and hash chain); resolves once it is committed. A recovering or retried invocation gets it back as
   * {@link lastCheckpoint}, so a crash is a pause, not a restart from page 1. Rate-limited: calls closer
   * together than the executor's checkpoint interval (default 1 s) coalesce and the latest state wins, so
   * a chatty tool cannot flood the log. Large states go by reference like any payload.
   *
   * @example
   * for (let page = ((ctx.lastCheckpoint as { page?: number })?.page ?? 0) + 1; page <= 300; page++) {
   *   findings.push(await read(page));
   *   await ctx.checkpoint({ page, findings });
   * }
   */
  checkpoint(state: unknown): Promise<void>;
  /**
   * Attaches intermediate evidence to the item (an `EvidenceRecorded` event): a finding, a URL, a partial
   * output. `show`, `audit`, the API and the dashboard display it on the item's timeline; it survives a crash.
   * At most 1,000 per attempt.
   */
  evidence(name: string, value: unknown): Promise<void>;
  /**
   * The W3C trace context of this tool call (its `plan-ledger.tool` span) when the executor traces (see
   * docs/guides/tracing.md); undefined otherwise. Send it as the `traceparent` header of an outgoing HTTP call and
   * the service's spans join the plan's trace.
   *
   * @example
   * const res = await fetch(`${PAYMENTS}/charges`, {
   *   method: 'POST',
   *   headers: { 'idempotency-key': ctx.idempotencyKey, ...(ctx.traceparent ? { traceparent: ctx.traceparent } : {}) },
   *   body: JSON.stringify(input),
   *   signal: ctx.signal,
   * });
   */
  readonly traceparent?: string | undefined;
  /**
   * The attempt's live stream on `<prefix>.plan-streams`: what a reader of the plan's stream
   * (`ledger.stream(planId)`, `plan-ledger tail <plan> --stream`) sees while the tool runs. Not recorded in
   * the plan: the result is. Writes never throw and wait only while too much is unacknowledged.
   *
   * @example
   * for (const [i, page] of pages.entries()) {
   *   await ctx.stream.write({ page: i + 1, of: pages.length });
   *   out.push(await read(page));
   * }
   */
  readonly stream: ToolStream;
}

/**
 * A running attempt's live output (see {@link ToolContext.stream}). Every record names the plan, item,
 * attempt, run and a sequence; the attempt's stream ends with a marker: final, superseded or abandoned.
 */
export interface ToolStream {
  /** Progress as any JSON value (at most 64 KiB; a larger one is dropped). */
  write(data: unknown): Promise<void>;
  /** Text as it comes (an agent turn's deltas); coalesced into records by size and time. */
  text(delta: string): Promise<void>;
  /** A tool call the model started. */
  toolCall(call: { toolCallId: string; toolName: string }): Promise<void>;
  /** Tokens spent by the attempt. */
  usage(usage: { inputTokens: number; outputTokens: number; totalTokens: number }): Promise<void>;
}

/** What a probe learned about an attempt whose result was never recorded. */
export type ProbeResult<O = unknown> = { done: true; output: O } | { done: false };

export interface Tool<I = unknown, O = unknown> {
  readonly name: string;
  /**
   * Longest a call may run (ms). Past it the call's `signal` aborts and the attempt is recorded as a
   * retryable failure with code TIMEOUT; a call that ignores the abort is walked away from after a short
   * grace period and its late result is discarded. Default: the executor's tool timeout (10 minutes).
   */
  readonly timeoutMs?: number;
  run(input: I, ctx: ToolContext): Promise<O | ToolResult<O>> | O | ToolResult<O>;
  /**
   * Optional: asked first when recovering an attempt with an intent but no result. Return
   * `{ done: true, output }` if the effect already happened (the executor records that output without
   * invoking), `{ done: false }` to invoke again with the same idempotency key.
   */
  probe?(ctx: ToolContext): Promise<ProbeResult<O>> | ProbeResult<O>;
}

/**
 * Declares a tool an executor can run.
 *
 * @example
 * const charge = defineTool({
 *   name: 'payments.charge',
 *   async run(input: { orderId: string; cents: number }, ctx) {
 *     // The key makes the external call idempotent: a recovering executor repeats it safely.
 *     const res = await fetch(`${PAYMENTS}/charges`, {
 *       method: 'POST',
 *       headers: { 'idempotency-key': ctx.idempotencyKey },
 *       body: JSON.stringify(input),
 *       signal: ctx.signal,
 *     });
 *     if (res.status === 402) throw new TerminalError('card declined');
 *     if (!res.ok) throw new RetryableError(`payments answered ${res.status}`);
 *     return res.json();
 *   },
 * });
 */
export function defineTool<I = unknown, O = unknown>(tool: Tool<I, O>): Tool<I, O> {
  if (!tool || typeof tool.name !== 'string' || tool.name.length === 0) throw new TypeError('defineTool: name is required');
  if (typeof tool.run !== 'function') throw new TypeError(`defineTool(${tool.name}): run must be a function`);
  if (tool.timeoutMs !== undefined && !(Number.isSafeInteger(tool.timeoutMs) && tool.timeoutMs > 0)) {
    throw new TypeError(`defineTool(${tool.name}): timeoutMs must be a positive integer of milliseconds`);
  }
  return Object.freeze({ ...tool });
}

const TOOL_ERROR = Symbol.for('plan-ledger.tool-error');

/** Thrown by a tool: the item fails now, without retries. */
export class TerminalError extends Error {
  readonly [TOOL_ERROR] = 'terminal';
  override readonly name = 'TerminalError';
  constructor(
    message: string,
    readonly code = 'TERMINAL',
    readonly details?: unknown,
  ) {
    super(message);
  }
}

/** Thrown by a tool: the attempt failed, retry with backoff while attempts remain (plain errors mean the same). */
export class RetryableError extends Error {
  readonly [TOOL_ERROR] = 'retryable';
  override readonly name = 'RetryableError';
  constructor(
    message: string,
    readonly code = 'RETRYABLE',
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export function isTerminalError(e: unknown): e is TerminalError {
  return typeof e === 'object' && e !== null && (e as Record<symbol, unknown>)[TOOL_ERROR] === 'terminal';
}

/** Tells a structured `{ output, followUps, delegate }` return from a bare output. */
export function isToolResult(v: unknown): v is ToolResult {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => k === 'output' || k === 'followUps' || k === 'delegate') && ('followUps' in v || 'delegate' in v);
}
