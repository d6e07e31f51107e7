// A tools module to start from: `plan-ledger executor --tools examples/tools.ts`.
// An executor loads the module's `tools` export (or a default array) and runs items whose `tool` names one.
// Copy it, keep what you need, and pass the idempotency key to every external system that changes state.
import { defineTool, RetryableError, TerminalError } from '../src/tools.js';

/** Returns its input: handy to try plans, approvals and the audit trail without side effects. */
export const echo = defineTool({
  name: 'echo',
  run: (input: unknown) => ({ echo: input ?? null }),
});

/** Waits `ms` (at most 10 minutes); stops early when the executor loses the plan or shuts down. */
export const wait = defineTool({
  name: 'wait',
  run: (input: { ms: number }, ctx) =>
    new Promise<{ waitedMs: number }>((resolve, reject) => {
      const ms = Math.min(Math.max(0, Number(input.ms) || 0), 600_000);
      const timer = setTimeout(() => resolve({ waitedMs: ms }), ms);
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer);
        reject(new RetryableError('aborted: the executor gave the plan up'));
      });
    }),
});

/** GET a URL; 4xx fails the item for good, 5xx and network errors are retried with backoff. */
export const httpGet = defineTool({
  name: 'http.get',
  async run(input: { url: string }, ctx) {
    const res = await fetch(input.url, { signal: ctx.signal });
    if (res.status >= 400 && res.status < 500) throw new TerminalError(`GET ${input.url} answered ${res.status}`, `HTTP_${res.status}`);
    if (!res.ok) throw new RetryableError(`GET ${input.url} answered ${res.status}`);
    const text = await res.text();
    return { status: res.status, contentType: res.headers.get('content-type'), body: text.slice(0, 4000) };
  },
});

/**
 * POST JSON with an `Idempotency-Key` header set to the attempt's key. After a crash the executor that
 * takes over repeats the call with the same key, so a server that honours the header acts only once.
 */
export const httpPost = defineTool({
  name: 'http.post',
  async run(input: { url: string; body?: unknown }, ctx) {
    const res = await fetch(input.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': ctx.idempotencyKey },
      body: JSON.stringify(input.body ?? {}),
      signal: ctx.signal,
    });
    if (res.status >= 400 && res.status < 500) throw new TerminalError(`POST ${input.url} answered ${res.status}`, `HTTP_${res.status}`);
    if (!res.ok) throw new RetryableError(`POST ${input.url} answered ${res.status}`);
    const type = res.headers.get('content-type') ?? '';
    return { status: res.status, body: type.includes('json') ? ((await res.json()) as unknown) : await res.text() };
  },
});

/**
 * Dynamic planning: returns follow-up items, which the ledger appends to the plan (as ItemAdded events).
 * Input `{ steps: ["a", "b"] }` adds one `echo` item per step, each after the previous one.
 */
export const plan = defineTool({
  name: 'plan.steps',
  run: (input: { steps: string[] }, ctx) => ({
    output: { planned: input.steps.length },
    followUps: input.steps.map((step, i) => ({
      id: `${ctx.itemId}.${i + 1}`,
      title: step,
      why: `planned at run time by ${ctx.itemId}`,
      tool: 'echo',
      input: { step },
      dependsOn: i === 0 ? [] : [`${ctx.itemId}.${i}`],
    })),
  }),
});

export const tools = [echo, wait, httpGet, httpPost, plan];
