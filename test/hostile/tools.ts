// Tools for the hostile-input tier, loaded by `plan-ledger executor --tools test/hostile/tools.ts` in a
// child process (a tool that loops or starves the event loop must not take the test runner with it).
// Every tool first reports its invocation to the test's EffectsService (EFFECTS_URL), keyed by the
// attempt's idempotency key, so a test counts invocations per attempt.
import { defineTool, type ToolContext } from '../../src/tools.js';
import { effect, noop } from '../fixtures/tools.js';

async function record(ctx: ToolContext): Promise<void> {
  const res = await fetch(`${process.env.EFFECTS_URL}/effects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ key: ctx.idempotencyKey, itemId: `${ctx.planId}/${ctx.itemId}`, executorId: process.env.PLAN_LEDGER_EXECUTOR_LABEL ?? String(process.pid), recovering: ctx.recovering }),
  });
  if (!res.ok) throw new Error(`effects service answered ${res.status}`);
}

/** Returns an output of `input.bytes` bytes (default 300 KB): larger than a record may hold inline. */
export const bigOutput = defineTool({
  name: 'big-output',
  async run(input: { bytes?: number }, ctx) {
    await record(ctx);
    return { blob: 'x'.repeat(input.bytes ?? 300_000) };
  },
});

// Written against the tool-timeout API of issue 9 (`defineTool({ timeoutMs })`); built as a plain object
// first so it compiles before the field exists on `Tool`.
const hangSpec = {
  name: 'hang',
  timeoutMs: 500,
  async run(_input: unknown, ctx: ToolContext): Promise<never> {
    await record(ctx);
    return new Promise<never>(() => {}); // never answers, ignores the abort signal
  },
};
/** Never answers (and ignores its abort signal); its timeout is 500 ms. */
export const hang = defineTool(hangSpec);

/** Returns follow-up items that the domain must refuse, by `input.kind`. */
export const badFollowUps = defineTool({
  name: 'bad-followups',
  async run(input: { kind: 'bad-id' | 'cycle' | 'non-json' | 'duplicate' | 'unknown-dep' | 'unknown-tool' }, ctx) {
    await record(ctx);
    const item = (id: string, extra: Record<string, unknown> = {}) => ({ id, title: `follow-up ${id}`, why: 'returned by a hostile tool', tool: 'noop', input: {}, ...extra });
    const followUps = {
      'bad-id': [item('not a valid id!')],
      cycle: [item('f1', { dependsOn: ['f2'] }), item('f2', { dependsOn: ['f1'] })],
      'non-json': [item('f1', { input: { n: 10n } })], // a BigInt has no JSON form
      duplicate: [item(ctx.itemId)],
      'unknown-dep': [item('f1', { dependsOn: ['nowhere'] })],
      'unknown-tool': [item('f1', { tool: 'no-such-tool' })],
    }[input.kind];
    return { output: { kind: input.kind }, followUps: followUps as never };
  },
});

/** Reports its invocation and returns its input (the probe plans' tool). */
export const counted = defineTool({
  name: 'counted',
  async run(input: unknown, ctx) {
    await record(ctx);
    return { echo: input ?? null };
  },
});

export const tools = [effect, noop, bigOutput, hang, badFollowUps, counted];
