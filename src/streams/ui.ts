// The AI SDK UI adapter: a plan's live stream as the AI SDK's UI message stream (`UIMessageChunk`s, served
// with the SDK's own `createUIMessageStreamResponse`), so `useChat` shows a durable agent run and picks it
// up again after a reload (docs/guides/agents.md#the-ai-sdk-ui-usechat). One assistant message per run,
// its id the plan id: a replay replaces the message a client holds instead of adding a second one.
//
// The stream is pulled: nothing is read from the ledger before the HTTP client takes what came before, so a
// client that never reads holds at most one ledger batch here (the AI SDK's `createUIMessageStream` writes
// into an unbounded queue and cannot hear a cancel, which is why it is not used to build this one).
import { createUIMessageStreamResponse, type UIMessage, type UIMessageChunk } from 'ai';
import { isLedgerError, LedgerError } from '../errors.js';
import type { PlanState, PlanStatus } from '../plan/index.js';
import type { StreamOptions } from './reader.js';
import { parseCursor, type StreamChunk } from './records.js';

/** What the adapter asks of a ledger (a `Ledger` from `connectLedger` has all of it). */
export interface UIStreamLedger {
  getPlan(planId: string, opts?: { payloads?: 'resolve' | 'reference' }): Promise<PlanState | undefined>;
  waitFor(planId: string, status: (s: PlanState) => boolean, opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<PlanState>;
  stream(planId: string, opts?: StreamOptions): AsyncIterableIterator<StreamChunk>;
}

/** The metadata of a run's message: the plan, the cursor after the last chunk sent, and how the run ended. */
export interface PlanUIMetadata {
  planId: string;
  /** Pass it as `from` to go on after what this message holds (`?from=` on the route). */
  cursor?: string;
  /** Set on the last chunk: the plan's status when the stream ended. */
  status?: PlanStatus;
}

/** The data parts of a run's message besides text and tool calls. */
export interface PlanUIDataParts {
  [key: string]: unknown;
  /** The latest `ctx.stream.write(...)` value of an item's attempt (one part per attempt, updated in place). */
  progress: { itemId: string; attempt: number; data: unknown };
  /** A run of an attempt that did not end as the recorded result: `superseded` (re-run after a takeover) or `abandoned`. */
  'attempt-end': { itemId: string; attempt: number; run: number; end: 'superseded' | 'abandoned'; reason?: string };
}

/** A run as a `UIMessage`: `useChat<PlanUIMessage>()`, `readUIMessageStream<PlanUIMessage>()`. */
export type PlanUIMessage = UIMessage<PlanUIMetadata, PlanUIDataParts>;
export type PlanUIChunk = UIMessageChunk<PlanUIMetadata, PlanUIDataParts>;

export interface PlanUIStreamOptions {
  /** A cursor from the message's metadata: the chunks after it only. Default: the whole run, a replay. */
  from?: string;
  /** Ends the stream (it closes without `finish`). */
  signal?: AbortSignal;
}

/** Where a text delta's part keeps the cursor after it (`providerMetadata['plan-ledger'].cursor`). */
const CURSOR_KEY = 'plan-ledger';

const OVER: ReadonlySet<PlanStatus> = new Set(['completed', 'failed', 'cancelled']);
const isOver = (s: PlanState) => OVER.has(s.status);
/** The UI's finish reason for how the plan ended. */
const FINISH: Partial<Record<PlanStatus, 'stop' | 'error' | 'other'>> = { completed: 'stop', failed: 'error', cancelled: 'other' };

/**
 * Checks what can be checked before anything is sent: the plan exists (NOT_FOUND: unknown or erased) and
 * `from` is a cursor of this plan's stream (VALIDATION). Returns the plan as read.
 */
async function check(ledger: UIStreamLedger, planId: string, from: string | undefined): Promise<PlanState> {
  if (typeof planId !== 'string' || planId === '') throw new LedgerError('VALIDATION', 'planId: name a plan', { field: 'planId' });
  if (from !== undefined) parseCursor(from, planId);
  const state = await ledger.getPlan(planId, { payloads: 'reference' });
  if (state === undefined) throw new LedgerError('NOT_FOUND', `plan ${planId} not found (unknown or erased): it has no stream`, { planId });
  return state;
}

/** Turns a plan's stream chunks into UI message chunks (the state of the parts open in this connection). */
class UIMapper {
  private readonly runs = new Map<string, { text: string | undefined; parts: number; calls: Set<string> }>();
  /** Tool calls shown as started whose item has not been seen completed: item id → toolCallId. */
  private readonly awaiting = new Map<string, string>();
  private readonly shown = new Set<string>();

  constructor(
    private readonly ledger: UIStreamLedger,
    private readonly planId: string,
  ) {}

  private open(c: StreamChunk, out: PlanUIChunk[]): { text: string | undefined; parts: number; calls: Set<string> } {
    const key = `${c.itemId}/${c.attempt}/${c.run}`;
    let run = this.runs.get(key);
    if (run === undefined) {
      run = { text: undefined, parts: 0, calls: new Set() };
      this.runs.set(key, run);
      out.push({ type: 'start-step' });
    }
    return run;
  }

  private close(key: string, out: PlanUIChunk[]): void {
    const run = this.runs.get(key);
    if (run === undefined) return;
    if (run.text !== undefined) out.push({ type: 'text-end', id: run.text });
    out.push({ type: 'finish-step' });
    this.runs.delete(key);
  }

  /** The UI chunks for one stream chunk (a turn's `final` end reads the recorded calls' inputs). */
  async map(c: StreamChunk): Promise<PlanUIChunk[]> {
    const out: PlanUIChunk[] = [];
    if (c.kind === 'text' || c.kind === 'tool-call') {
      if (this.awaiting.size > 0 && c.itemId.startsWith('turn-')) await this.outputs(undefined, out);
      const run = this.open(c, out);
      if (c.kind === 'text') {
        if (run.text === undefined) {
          run.text = `${c.itemId}/${c.attempt}/${c.run}/${++run.parts}`;
          out.push({ type: 'text-start', id: run.text });
        }
        // The cursor rides on the delta itself: a message's text part is never ahead of the cursor it holds.
        out.push({ type: 'text-delta', id: run.text, delta: c.text ?? '', providerMetadata: { [CURSOR_KEY]: { cursor: c.cursor } } });
      } else if (c.toolCallId !== undefined && !this.shown.has(c.toolCallId)) {
        if (run.text !== undefined) out.push({ type: 'text-end', id: run.text });
        run.text = undefined;
        run.calls.add(c.toolCallId);
        this.shown.add(c.toolCallId);
        out.push({ type: 'tool-input-start', toolCallId: c.toolCallId, toolName: c.toolName ?? 'unknown', dynamic: true });
      }
    } else if (c.kind === 'progress') {
      out.push({ type: 'data-progress', id: `${c.itemId}/${c.attempt}`, data: { itemId: c.itemId, attempt: c.attempt, data: c.data } });
    } else if (c.kind === 'end') {
      const attempt = `${c.itemId}/${c.attempt}/`;
      if (c.end === 'final') {
        const key = attempt + c.run;
        const run = this.runs.get(key);
        if (run !== undefined) {
          if (run.text !== undefined) out.push({ type: 'text-end', id: run.text });
          run.text = undefined;
          await this.inputs(c.itemId, out);
        }
        this.close(key, out);
      } else {
        const ended = c.end === 'superseded' ? [...this.runs.keys()].filter((k) => k.startsWith(attempt) && Number(k.slice(attempt.length)) < c.run) : [attempt + c.run];
        for (const key of ended) {
          this.close(key, out);
          out.push({ type: 'data-attempt-end', id: key, data: { itemId: c.itemId, attempt: c.attempt, run: Number(key.slice(attempt.length)), end: c.end!, ...(c.reason !== undefined ? { reason: c.reason } : {}) } });
        }
      }
    }
    if (out.length > 0) out.push({ type: 'message-metadata', messageMetadata: { planId: this.planId, cursor: c.cursor } });
    return out;
  }

  /** A turn's recorded tool calls: their inputs (and the errors of calls that never ran). */
  private async inputs(itemId: string, out: PlanUIChunk[]): Promise<void> {
    const item = (await this.ledger.getPlan(this.planId, { payloads: 'reference' }))?.items[itemId];
    const calls = parseOutput(item?.outputJson)?.toolCalls;
    if (!Array.isArray(calls)) return;
    for (const call of calls as Array<Record<string, unknown>>) {
      const toolCallId = String(call.toolCallId);
      const toolName = String(call.toolName);
      if (!this.shown.has(toolCallId)) out.push({ type: 'tool-input-start', toolCallId, toolName, dynamic: true });
      this.shown.add(toolCallId);
      out.push({ type: 'tool-input-available', toolCallId, toolName, input: call.input ?? null, dynamic: true });
      const error = call.error as { code?: string; message?: string } | undefined;
      if (error) out.push({ type: 'tool-output-error', toolCallId, errorText: `${error.code ?? 'ERROR'}: ${error.message ?? ''}`, dynamic: true });
      else if (call.notRun === true) out.push({ type: 'tool-output-error', toolCallId, errorText: 'not run: the run stopped at this turn', dynamic: true });
      else if (typeof call.itemId === 'string') this.awaiting.set(call.itemId, toolCallId);
    }
  }

  /** The outputs of the calls whose items have completed (read from `state`, or from the ledger). */
  async outputs(state: PlanState | undefined, out: PlanUIChunk[]): Promise<void> {
    if (this.awaiting.size === 0) return;
    const plan = state ?? (await this.ledger.getPlan(this.planId, { payloads: 'reference' }));
    for (const [itemId, toolCallId] of this.awaiting) {
      const item = plan?.items[itemId];
      if (item === undefined || (item.status !== 'completed' && item.status !== 'failed' && item.status !== 'cancelled')) continue;
      this.awaiting.delete(itemId);
      const output = parseOutput(item.outputJson);
      if (item.status === 'completed' && output !== undefined && 'result' in output) out.push({ type: 'tool-output-available', toolCallId, output: output.result, dynamic: true });
      else {
        const error = (output?.error ?? item.failure?.error) as { code?: string; message?: string } | null | undefined;
        out.push({ type: 'tool-output-error', toolCallId, errorText: error ? `${error.code ?? 'ERROR'}: ${error.message ?? ''}` : `the call's item ${item.status}`, dynamic: true });
      }
    }
  }

  /** Closes what is open (a run cut off by the end of the plan). */
  closeAll(out: PlanUIChunk[]): void {
    for (const key of [...this.runs.keys()]) this.close(key, out);
  }
}

/** The offset a cursor stands for (cursors of one plan compare by it). */
function cursorOffset(cursor: string): bigint {
  const m = /^s1\.\d+\.(\d+)\./.exec(cursor);
  return m ? BigInt(m[1]!) : -1n;
}

/**
 * Where a run's message (as `useChat` or `readUIMessageStream` holds it) is up to: the cursor to resume
 * after (`?from=`), so that the rest neither repeats nor misses its text. It is the later of the message's
 * `metadata.cursor` (written after each chunk's parts) and the cursor on its last text delta (which a
 * snapshot taken between a delta and the metadata after it already holds). Undefined: nothing read yet.
 */
export function planUICursor(message: Pick<PlanUIMessage, 'metadata' | 'parts'>): string | undefined {
  let best = message.metadata?.cursor;
  for (const part of message.parts) {
    if (part.type !== 'text') continue;
    const c = (part.providerMetadata?.[CURSOR_KEY] as { cursor?: unknown } | undefined)?.cursor;
    if (typeof c === 'string' && (best === undefined || cursorOffset(c) > cursorOffset(best))) best = c;
  }
  return best;
}

function parseOutput(json: string | null | undefined): Record<string, unknown> | undefined {
  if (typeof json !== 'string') return undefined;
  try {
    const v = JSON.parse(json) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A plan's run as the AI SDK's UI message stream: `start` (message id = plan id), then for each attempt
 * that streams a step — its text as a text part, the tool calls the model starts as dynamic tool parts
 * (their input when the turn is recorded, their output when the call's item completes), a tool's
 * `ctx.stream.write` values as `data-progress` parts, a superseded or abandoned run marked with a
 * `data-attempt-end` part — with the cursor after each chunk in the message metadata, and `finish` once the
 * plan has ended and its stream is read to the end. Pulled: nothing is read ahead of the consumer.
 *
 * Rejects (before any chunk) with VALIDATION for a `from` that is not a cursor of this plan and NOT_FOUND
 * for an unknown or erased plan; an error later (the plan erased while streaming, a cursor past retention)
 * is an `error` chunk naming it, and the stream ends.
 */
export async function planUIMessageStream(ledger: UIStreamLedger, planId: string, opts: PlanUIStreamOptions = {}): Promise<ReadableStream<PlanUIChunk>> {
  return openUIStream(ledger, planId, await check(ledger, planId, opts.from), opts);
}

/** Whether a finished plan's stream holds nothing after `from` (none: nothing at all, e.g. past retention). */
async function nothingAfter(ledger: UIStreamLedger, planId: string, from: string | undefined): Promise<boolean> {
  const it = ledger.stream(planId, { from: from ?? 'beginning', follow: false });
  try {
    return (await it.next()).done === true;
  } finally {
    await it.return?.(undefined);
  }
}

function openUIStream(ledger: UIStreamLedger, planId: string, initial: PlanState, opts: PlanUIStreamOptions): ReadableStream<PlanUIChunk> {
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) stop.abort();
  const mapper = new UIMapper(ledger, planId);
  let cursor = opts.from;
  // The plan's end, watched beside the live read: once it has ended, the live read stops and the rest of
  // the stream (all written before the end was recorded) is read to the partition's end.
  const live = new AbortController();
  const ended = isOver(initial) ? Promise.resolve(initial) : ledger.waitFor(planId, isOver, { timeoutMs: Infinity, signal: stop.signal });
  ended.then(
    () => live.abort(),
    () => live.abort(),
  );
  const both = AbortSignal.any([live.signal, stop.signal]);

  async function* chunks(): AsyncGenerator<PlanUIChunk, void, undefined> {
    yield { type: 'start', messageId: planId, messageMetadata: { planId, ...(cursor !== undefined ? { cursor } : {}) } };
    try {
      for (const phase of ['live', 'rest'] as const) {
        if (stop.signal.aborted) return;
        if (phase === 'live' && live.signal.aborted) continue;
        const from = cursor ?? 'beginning';
        const source = phase === 'live' ? ledger.stream(planId, { from, signal: both }) : ledger.stream(planId, { from, follow: false, signal: stop.signal });
        for await (const c of source) {
          cursor = c.cursor;
          yield* await mapper.map(c);
        }
      }
      if (stop.signal.aborted) return;
      const state = await ended;
      const out: PlanUIChunk[] = [];
      mapper.closeAll(out);
      await mapper.outputs(state, out);
      yield* out;
      yield { type: 'finish', finishReason: FINISH[state.status] ?? 'other', messageMetadata: { planId, status: state.status, ...(cursor !== undefined ? { cursor } : {}) } };
    } catch (e) {
      if (stop.signal.aborted) return;
      yield { type: 'error', errorText: isLedgerError(e) ? `${e.code}: ${e.message}` : `plan ${planId}'s stream failed: ${(e as Error).message}` };
    }
  }

  const it = chunks();
  const done = () => {
    stop.abort();
    opts.signal?.removeEventListener('abort', onAbort);
  };
  return new ReadableStream<PlanUIChunk>(
    {
      async pull(controller) {
        const n = await it.next();
        if (n.done) {
          done();
          controller.close();
        } else controller.enqueue(n.value);
      },
      async cancel() {
        done();
        await it.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}

/**
 * A route handler's answer: the plan's run as the AI SDK's UI message stream over server-sent events
 * (`createUIMessageStreamResponse`), for `useChat`'s resume request (`GET /api/chat/<planId>/stream`).
 * `from` is the cursor to go on after (default: `?from=` of `request`'s URL; none: the whole run). As the
 * AI SDK's resume expects, 204 when there is nothing to resume: the plan has ended and its stream holds
 * nothing after `from` (or nothing at all: past the topic's retention, a replay would empty the message a
 * client keeps). A bad cursor answers 400 and an unknown or erased plan 404, each with `CODE: message` as
 * its text (what `useChat` shows as its error); an aborted request ends the stream.
 */
export async function planUIMessageStreamResponse(ledger: UIStreamLedger, planId: string, opts: { request?: Request; from?: string; headers?: Record<string, string> } = {}): Promise<Response> {
  const from = opts.from ?? (opts.request ? (new URL(opts.request.url).searchParams.get('from') ?? undefined) : undefined);
  try {
    const state = await check(ledger, planId, from);
    if (isOver(state) && (await nothingAfter(ledger, planId, from))) return new Response(null, { status: 204 });
    const stream = openUIStream(ledger, planId, state, { ...(from !== undefined ? { from } : {}), ...(opts.request ? { signal: opts.request.signal } : {}) });
    return createUIMessageStreamResponse({ stream, ...(opts.headers ? { headers: opts.headers } : {}) });
  } catch (e) {
    if (!isLedgerError(e)) throw e;
    const status = e.code === 'VALIDATION' ? 400 : e.code === 'NOT_FOUND' ? 404 : 503;
    return new Response(`${e.code}: ${e.message}`, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });
  }
}
