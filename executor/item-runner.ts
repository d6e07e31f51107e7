import type { Logger } from '../src/logging.js';
import { canonicalJson, type ItemError, type ItemSpec, type Outcome } from '../src/plan/index.js';
import { LedgerError } from '../src/errors.js';
import { toItemSpec } from '../src/plan-input.js';
import { isTerminalError, isToolResult, type ChildPlanSpec, type Tool, type ToolContext } from '../src/tools.js';
import type { Slots } from './slots.js';

/** Ten minutes: the default longest a tool call may run before its attempt fails with TIMEOUT. */
export const DEFAULT_TOOL_TIMEOUT_MS = 10 * 60_000;
/** How long a tool that ignores its aborted signal may keep its slot after the timeout. */
export const DEFAULT_ABORT_GRACE_MS = 5_000;

/** One item attempt to run: everything the runner needs, no Kafka. */
export interface AttemptRequest {
  readonly tool: Tool | undefined;
  readonly toolName: string;
  readonly inputJson: string;
  readonly ctx: Omit<ToolContext, 'signal' | 'checkpoint' | 'evidence'>;
  /** The attempt's progress writes, bound to its signal (nothing is recorded once it aborted). */
  readonly progress: (signal: AbortSignal) => Pick<ToolContext, 'checkpoint' | 'evidence'>;
  /** Aborts when the partition is released (hand-over, shutdown): the attempt is then abandoned. */
  readonly release: AbortSignal;
  readonly timeoutMs: number;
  readonly abortGraceMs: number;
  readonly slots: Slots;
  /** Canonical JSON output above this many UTF-8 bytes fails the attempt terminally (OUTPUT_TOO_LARGE). */
  readonly maxOutputBytes: number;
  readonly executorId: string;
  /** Traces the tool call (a child span of the attempt's); absent when tracing is off. */
  readonly trace?: { tool(): ToolTrace };
}

/**
 * How an attempt ended, as a value (never thrown):
 * - `result`: record it (`ResultCommitted` with the outcome, output or error, follow-ups);
 * - `delegate`: the tool handed the item to a child plan;
 * - `abandoned`: the partition was released mid-call; the next owner recovers the attempt with the same key.
 */
export type AttemptOutcome =
  | { kind: 'result'; outcome: Outcome; outputJson: string | null; error: ItemError | null; followUps: ItemSpec[]; durationMs: number }
  | { kind: 'delegate'; delegate: ChildPlanSpec; durationMs: number }
  | { kind: 'abandoned' };

/**
 * The tool call of an attempt (a child span named after the tool); its `traceparent` goes to the tool.
 * Declared here, where it is called; tracing.ts makes it (AttemptTrace.tool).
 */
export interface ToolTrace {
  readonly traceparent: string | undefined;
  end(outcome: AttemptOutcome): void;
}

const ABANDONED = Symbol('abandoned');
const TIMED_OUT = Symbol('timed out');

/**
 * Runs one attempt of an item: probe first when recovering (if the tool has one), then the tool in a
 * concurrency slot, under a timeout. Every way a tool can misbehave ends in an outcome with a code, after
 * exactly one invocation:
 * - it throws: `failed_terminal` (TerminalError) or `failed_retryable` (anything else), with its code;
 * - it runs past `timeoutMs`: its signal aborts and the attempt is `failed_retryable` with code TIMEOUT;
 *   a tool that ignores the abort keeps its slot at most `abortGraceMs` longer, and whatever it returns
 *   later is discarded (the attempt is over);
 * - its output is not JSON (`INVALID_OUTPUT`) or larger than `maxOutputBytes` (`OUTPUT_TOO_LARGE`): terminal;
 * - its follow-up items are malformed: terminal with `INVALID_FOLLOW_UP` naming the field.
 * A release of the partition (hand-over, shutdown) abandons the attempt instead: nothing is recorded, and
 * the next owner repeats it with the same idempotency key.
 */
export async function runAttempt(req: AttemptRequest, log: Logger): Promise<AttemptOutcome> {
  if (req.trace === undefined) return runTool(req, log, undefined);
  const traced: { tool?: ToolTrace } = {};
  const ended = await runTool(req, log, traced);
  traced.tool?.end(ended);
  return ended;
}

async function runTool(req: AttemptRequest, log: Logger, traced: { tool?: ToolTrace } | undefined): Promise<AttemptOutcome> {
  const t0 = Date.now();
  const elapsed = () => Date.now() - t0;
  if (!req.tool) {
    return failed('failed_terminal', { code: 'UNKNOWN_TOOL', message: `no tool named "${req.toolName}" is registered with executor ${req.executorId}`, detailsJson: null }, elapsed());
  }
  const tool = req.tool;
  // One signal for the tool: the partition's release or this attempt's timeout, whichever comes first.
  const attempt = new AbortController();
  const onRelease = () => attempt.abort(req.release.reason);
  if (req.release.aborted) return { kind: 'abandoned' };
  req.release.addEventListener('abort', onRelease, { once: true });
  const progress = req.progress(attempt.signal);
  let ctx: ToolContext = { ...req.ctx, signal: attempt.signal, checkpoint: (s) => progress.checkpoint(s), evidence: (n, v) => progress.evidence(n, v) };

  let timer: NodeJS.Timeout | undefined;
  let graceTimer: NodeJS.Timeout | undefined;
  try {
    const call = async (): Promise<unknown> => {
      const probed = req.ctx.recovering && tool.probe ? await tool.probe(ctx) : undefined;
      if (probed?.done) {
        log.info('probe found the effect already done; recording its output without invoking');
        return { [PROBED]: probed.output };
      }
      if (attempt.signal.aborted) return ABANDONED;
      log.debug({ recovering: req.ctx.recovering }, 'invoking tool');
      return await tool.run(parseInput(req.inputJson), ctx);
    };
    let ret: unknown;
    let thrown: unknown;
    let threw = false;
    // The slot bounds tools running at once; it is released when the call settles or is walked away from.
    // The clock starts once the slot is held: waiting for one is not the tool's time.
    await req.slots.run(async () => {
      if (req.release.aborted) {
        ret = ABANDONED;
        return;
      }
      // The deadline: abort the signal, then give the tool a grace period to notice before walking away.
      const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => {
          attempt.abort(new LedgerError('TIMEOUT', `tool ${req.toolName} did not answer within ${req.timeoutMs} ms`));
          graceTimer = setTimeout(() => resolve(TIMED_OUT), req.abortGraceMs);
        }, req.timeoutMs);
      });
      if (traced !== undefined) {
        traced.tool = req.trace!.tool();
        ctx = { ...ctx, traceparent: traced.tool.traceparent };
      }
      try {
        ret = await Promise.race([call(), deadline]);
      } catch (e) {
        threw = true;
        thrown = e;
      }
    });
    if (req.release.aborted) return { kind: 'abandoned' };
    const timedOut = ret === TIMED_OUT || (attempt.signal.aborted && attempt.signal.reason instanceof LedgerError && (attempt.signal.reason as LedgerError).code === 'TIMEOUT');
    if (timedOut) {
      log.warn({ timeoutMs: req.timeoutMs, ignoredAbort: ret === TIMED_OUT }, 'tool timed out');
      return failed('failed_retryable', { code: 'TIMEOUT', message: `tool ${req.toolName} did not answer within ${req.timeoutMs} ms`, detailsJson: safeJson({ timeoutMs: req.timeoutMs }) }, elapsed());
    }
    if (ret === ABANDONED) return { kind: 'abandoned' };
    if (threw) return fromThrown(thrown, elapsed());
    return fromReturn(ret, req.maxOutputBytes, elapsed());
  } finally {
    if (timer) clearTimeout(timer);
    if (graceTimer) clearTimeout(graceTimer);
    req.release.removeEventListener('abort', onRelease);
  }
}

const PROBED = Symbol('probed');

function parseInput(inputJson: string): unknown {
  return JSON.parse(inputJson) as unknown;
}

function failed(outcome: Outcome, error: ItemError, durationMs: number): AttemptOutcome {
  return { kind: 'result', outcome, outputJson: null, error, followUps: [], durationMs };
}

/** A thrown error becomes a failed outcome with its code (TerminalError: no retry). */
function fromThrown(e: unknown, durationMs: number): AttemptOutcome {
  const outcome: Outcome = isTerminalError(e) ? 'failed_terminal' : 'failed_retryable';
  const err = (typeof e === 'object' && e !== null ? e : {}) as { code?: unknown; message?: unknown; details?: unknown };
  let message: string;
  try {
    message = String(err.message ?? e);
  } catch {
    message = 'unprintable error';
  }
  return failed(
    outcome,
    {
      code: typeof err.code === 'string' && err.code.length > 0 ? err.code.slice(0, 128) : outcome === 'failed_terminal' ? 'TERMINAL' : 'RETRYABLE',
      message: message.slice(0, 4096),
      detailsJson: err.details === undefined ? null : safeJson(err.details),
    },
    durationMs,
  );
}

/** A returned value becomes a succeeded outcome, unless its output or follow-ups cannot be recorded. */
function fromReturn(ret: unknown, maxOutputBytes: number, durationMs: number): AttemptOutcome {
  let output: unknown;
  let followUps: ItemSpec[] = [];
  if (typeof ret === 'object' && ret !== null && PROBED in ret) {
    output = (ret as Record<symbol, unknown>)[PROBED];
  } else if (isToolResult(ret)) {
    if (ret.delegate) return { kind: 'delegate', delegate: ret.delegate, durationMs };
    output = ret.output;
    try {
      const list: unknown = ret.followUps ?? [];
      if (!Array.isArray(list)) throw new LedgerError('VALIDATION', 'followUps: expected an array', { field: 'followUps' });
      followUps = list.map((f, i) => toItemSpec(f as never, `followUps[${i}]`));
    } catch (e) {
      return failed('failed_terminal', { code: 'INVALID_FOLLOW_UP', message: `the tool returned follow-up items that cannot be added: ${(e as Error).message}`, detailsJson: null }, durationMs);
    }
  } else {
    output = ret;
  }
  let outputJson: string;
  try {
    outputJson = canonicalJson(output ?? null);
  } catch (e) {
    return failed('failed_terminal', { code: 'INVALID_OUTPUT', message: `tool output is not JSON: ${(e as Error).message}`, detailsJson: null }, durationMs);
  }
  const bytes = Buffer.byteLength(outputJson, 'utf8');
  if (bytes > maxOutputBytes) {
    return failed(
      'failed_terminal',
      { code: 'OUTPUT_TOO_LARGE', message: `tool output is ${bytes} bytes; the limit is ${maxOutputBytes}`, detailsJson: safeJson({ bytes, limit: maxOutputBytes }) },
      durationMs,
    );
  }
  return { kind: 'result', outcome: 'succeeded', outputJson, error: null, followUps, durationMs };
}

function safeJson(v: unknown): string | null {
  try {
    return canonicalJson(v);
  } catch {
    return null;
  }
}
