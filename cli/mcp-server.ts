import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { summarizeAgentRun } from '../src/agent/records.js';
import type { Ledger } from '../src/client/index.js';
import { isLedgerError, LedgerError } from '../src/errors.js';
import { isPlanFinished, type PlanState, type PlanStatus } from '../src/plan/index.js';
import { showPlan } from '../src/secrets/redact.js';
import { WaitProgress } from './mcp-progress.js';

const STATUSES = ['none', 'draft', 'proposed', 'approved', 'running', 'completed', 'failed', 'cancelled'] as const satisfies readonly PlanStatus[];

const item = z.object({
  id: z.string().describe('unique within the plan: letters, digits, . _ : -'),
  title: z.string(),
  why: z.string().describe('why the item is in the plan, for the reviewer'),
  tool: z.string().optional().describe('the executor tool that runs it (none for a wait item)'),
  input: z.unknown().optional(),
  dependsOn: z.array(z.string()).optional(),
  wait: z
    .object({ signal: z.string(), timeoutMs: z.number().int().positive().nullable().optional(), prompt: z.string().nullable().optional() })
    .optional()
    .describe('makes it a wait item: it completes when the signal arrives (plan_signal), its data the output'),
});

const planView = {
  planId: z.string(),
  goal: z.string(),
  mode: z.string().nullable(),
  status: z.string(),
  digest: z.string(),
  seq: z.number(),
  labels: z.record(z.string(), z.string()),
  items: z.array(
    z.object({
      id: z.string(),
      title: z.string(),
      tool: z.string(),
      status: z.string(),
      dependsOn: z.array(z.string()),
      attempts: z.number(),
      outputJson: z.string().nullable().describe("the item's output as JSON text (null until it completes), as in the library's PlanState, show --json and the HTTP API"),
      output: z.unknown().optional().describe('deprecated: outputJson parsed (absent when null); use outputJson'),
      error: z.object({ code: z.string(), message: z.string() }).nullable(),
    }),
  ),
  agent: z.unknown().optional(),
};

function parsed(json: string | null): unknown {
  if (json === null) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return json;
  }
}

/** A plan as an MCP client sees it: its items' status, output and error (secret fields redacted). */
function view(state: PlanState) {
  const s = showPlan(state);
  const agent = summarizeAgentRun(s);
  return {
    planId: s.planId,
    goal: s.goal,
    mode: s.mode,
    status: s.status,
    digest: s.digest,
    seq: s.seq,
    labels: s.labels,
    items: s.itemOrder.map((id) => {
      const it = s.items[id]!;
      const failure = it.failure?.error ?? it.attempts.at(-1)?.error ?? null;
      return {
        id,
        title: it.title,
        tool: it.tool,
        status: it.status,
        dependsOn: it.dependsOn,
        attempts: it.attempts.length,
        outputJson: it.outputJson,
        // Deprecated alias (what plan_show and plan_wait returned before outputJson): the same value, parsed.
        ...(it.outputJson !== null ? { output: parsed(it.outputJson) } : {}),
        error: failure ? { code: failure.code, message: failure.message } : null,
      };
    }),
    ...(agent ? { agent } : {}),
  };
}

function ok<T extends Record<string, unknown>>(value: T) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(value) }], structuredContent: value };
}

/** A ledger error is the tool's error result (the client sees code and message), never a protocol failure. */
async function answer<T extends Record<string, unknown>>(fn: () => Promise<T>) {
  try {
    return ok(await fn());
  } catch (e) {
    const code = isLedgerError(e) ? e.code : 'ERROR';
    const rejection = isLedgerError(e) ? (e.details as { rejection?: string } | undefined)?.rejection : undefined;
    return { content: [{ type: 'text' as const, text: `${code}${rejection ? ` ${rejection}` : ''}: ${(e as Error).message}` }], isError: true };
  }
}

async function planOf(ledger: Ledger, planId: string): Promise<PlanState> {
  const s = await ledger.getPlan(planId);
  if (s === undefined || s.status === 'none') throw new LedgerError('NOT_FOUND', `plan ${planId} not found`, { planId });
  return s;
}

/**
 * plan-ledger as an MCP server: an agent in any MCP client keeps its plan in the ledger (create, propose,
 * add items, answer a wait, fork, wait, show, audit, verify, list) and an operator approves it. Tools have input and output
 * schemas; plans are resources (`plan://<planId>`). Connect a transport with `server.connect(transport)`.
 */
export function ledgerMcpServer(ledger: Ledger, opts: { by?: string; canWrite?: boolean; /** The caller is `by` (a token's principal): an approval's own `by` is ignored. */ fixedActor?: boolean } = {}): McpServer {
  const by = opts.by ?? 'mcp';
  const server = new McpServer({ name: 'plan-ledger', version: '0.1.0' });
  // A read-only caller sees every tool; the ones that send commands answer FORBIDDEN.
  const write = <T extends Record<string, unknown>>(fn: () => Promise<T>) =>
    opts.canWrite === false ? answer<T>(() => Promise.reject(new LedgerError('FORBIDDEN', `${by} may read but not send commands (no write scope)`))) : answer(fn);

  server.registerTool(
    'plan_create',
    {
      description:
        'Create a plan (the same shape as createPlan). mode "execute" runs at once unless a policy asks for review; "propose" waits for plan_propose and an approval. ' +
        'A tool that no live executor serves comes back in `warnings` (naming the live executors and their tools); with strictTools the plan is refused instead (UNSERVED_TOOL), nothing sent.',
      inputSchema: {
        goal: z.string(),
        mode: z.enum(['propose', 'execute']),
        items: z.array(item),
        labels: z.record(z.string(), z.string()).optional(),
        planId: z.string().optional(),
        strictTools: z.boolean().optional().describe('refuse the plan when a tool it names is served by no live executor'),
      },
      outputSchema: { planId: z.string(), digest: z.string(), status: z.string(), unservedTools: z.array(z.string()), warnings: z.array(z.string()) },
    },
    (a) =>
      write(async () => {
        const r = await ledger.createPlan({ goal: a.goal, mode: a.mode, items: a.items, ...(a.labels ? { labels: a.labels } : {}), ...(a.planId ? { planId: a.planId } : {}) }, { by, strictTools: a.strictTools === true });
        return { planId: r.planId, digest: r.digest, status: (await planOf(ledger, r.planId)).status, unservedTools: r.unservedTools, warnings: r.warnings };
      }),
  );

  server.registerTool(
    'plan_propose',
    { description: 'Propose a draft plan for review: returns the digest an operator approves.', inputSchema: { planId: z.string() }, outputSchema: { planId: z.string(), digest: z.string() } },
    (a) => write(async () => ({ planId: a.planId, digest: (await ledger.propose(a.planId, { by })).digest })),
  );

  server.registerTool(
    'plan_approve',
    {
      description: 'Approve a proposed plan at the digest that was reviewed (a stale digest is rejected).',
      inputSchema: { planId: z.string(), digest: z.string(), by: z.string().optional(), note: z.string().optional() },
      outputSchema: { planId: z.string(), status: z.string() },
    },
    (a) =>
      write(async () => {
        await ledger.approve(a.planId, a.digest, { by: opts.fixedActor ? by : (a.by ?? by), ...(a.note ? { note: a.note } : {}) });
        return { planId: a.planId, status: (await planOf(ledger, a.planId)).status };
      }),
  );

  server.registerTool(
    'plan_add_items',
    { description: 'Add items to a plan (a policy may pause it for review).', inputSchema: { planId: z.string(), items: z.array(item) }, outputSchema: { planId: z.string(), status: z.string(), digest: z.string() } },
    (a) =>
      write(async () => {
        await ledger.addItems(a.planId, a.items, { by });
        const s = await planOf(ledger, a.planId);
        return { planId: a.planId, status: s.status, digest: s.digest };
      }),
  );

  server.registerTool(
    'plan_signal',
    {
      description: 'Answer an item waiting for a signal: the data becomes its output. Idempotent by signalId; a plan or name nothing waits for is rejected (NOT_WAITING).',
      inputSchema: { planId: z.string(), name: z.string(), data: z.unknown().optional(), signalId: z.string().optional() },
      outputSchema: { planId: z.string(), status: z.string(), events: z.array(z.string()) },
    },
    (a) =>
      write(async () => {
        const out = await ledger.signal(a.planId, a.name, a.data ?? null, { by, ...(a.signalId ? { signalId: a.signalId } : {}) });
        return { planId: a.planId, status: (await planOf(ledger, a.planId)).status, events: out.events.map((e) => e.type) };
      }),
  );

  server.registerTool(
    'plan_fork',
    {
      description: 'Fork a plan at a seq or an item id: a new plan with the outputs finished before that point, the rest to run again (optionally with new inputs by item id). The source is untouched.',
      inputSchema: { planId: z.string(), at: z.union([z.number().int(), z.string()]), set: z.record(z.string(), z.unknown()).optional(), newPlanId: z.string().optional(), mode: z.enum(['propose', 'execute']).optional() },
      outputSchema: { planId: z.string(), forkedFrom: z.object({ planId: z.string(), seq: z.number(), chainHead: z.string() }), digest: z.string(), status: z.string() },
    },
    (a) =>
      write(async () => {
        const out = await ledger.fork(a.planId, { at: a.at, by, ...(a.set ? { set: a.set } : {}), ...(a.newPlanId ? { planId: a.newPlanId } : {}), ...(a.mode ? { mode: a.mode } : {}) });
        return { planId: out.planId, forkedFrom: out.forkedFrom, digest: out.digest, status: (await planOf(ledger, out.planId)).status };
      }),
  );

  server.registerTool('plan_show', { description: 'The plan now: status, digest, items with status, output and error; an agent run\'s turns and usage.', inputSchema: { planId: z.string() }, outputSchema: planView }, (a) =>
    answer(async () => view(await planOf(ledger, a.planId))),
  );

  server.registerTool(
    'plan_wait',
    {
      description:
        'Wait until the plan reaches a status (default: finished — completed, failed or cancelled) or the timeout passes. ' +
        'With a progressToken, notifications/progress report the items completed of the total and a running turn\'s text as it streams (at most 4 a second, 2,048 characters of text each).',
      inputSchema: { planId: z.string(), status: z.enum(STATUSES).optional(), timeoutMs: z.number().int().positive().max(600_000).optional() },
      outputSchema: planView,
    },
    (a, extra) =>
      answer(async () => {
        const reached = a.status === undefined ? (s: PlanState) => isPlanFinished(s.status) : (s: PlanState) => s.status === a.status;
        const token = extra._meta?.progressToken;
        if (token === undefined) return view(await ledger.waitFor(a.planId, reached, { timeoutMs: a.timeoutMs ?? 60_000, signal: extra.signal }));
        const progress = new WaitProgress(ledger, a.planId, token, (n) => extra.sendNotification(n));
        progress.start(extra.signal);
        let final: PlanState | undefined;
        try {
          final = await ledger.waitFor(
            a.planId,
            (s) => {
              progress.onState(s);
              return reached(s);
            },
            { timeoutMs: a.timeoutMs ?? 60_000, signal: extra.signal },
          );
          return view(final);
        } finally {
          await progress.stop(final);
        }
      }),
  );

  server.registerTool(
    'plan_audit',
    {
      description: 'The plan\'s audit timeline: one row per event (seq, time, type, actor, item, attempt, idempotency key, outcome, hash).',
      inputSchema: { planId: z.string() },
      outputSchema: { planId: z.string(), rows: z.array(z.record(z.string(), z.unknown())) },
    },
    (a) =>
      answer(async () => {
        const { rows } = await ledger.audit(a.planId);
        return { planId: a.planId, rows: rows.map((r) => ({ seq: r.seq, at: r.at, type: r.type, actor: r.actor, itemId: r.itemId, attempt: r.attempt, idempotencyKey: r.idempotencyKey, outcome: r.outcome, summary: r.summary, hash: r.hash })) };
      }),
  );

  server.registerTool(
    'plan_verify',
    {
      description: 'Verify the plan from its log: seq, hash chain, independent rebuilds, snapshots.',
      inputSchema: { planId: z.string() },
      outputSchema: { planId: z.string(), ok: z.boolean(), events: z.number(), head: z.string().nullable(), checks: z.array(z.object({ name: z.string(), ok: z.boolean(), detail: z.string() })) },
    },
    (a) =>
      answer(async () => {
        const v = await ledger.verify(a.planId);
        return { planId: v.planId, ok: v.ok, events: v.events, head: v.head, checks: v.checks.map((c) => ({ name: c.name, ok: c.ok, detail: c.detail })) };
      }),
  );

  server.registerTool(
    'plan_list',
    {
      description: 'Plans, newest first: filter by status and label (key:value); page with cursor.',
      inputSchema: { status: z.enum(STATUSES).optional(), label: z.string().optional(), limit: z.number().int().min(1).max(500).optional(), cursor: z.string().optional() },
      outputSchema: { plans: z.array(z.object({ planId: z.string(), goal: z.string(), status: z.string(), seq: z.number(), digest: z.string() })), nextCursor: z.string().nullable(), total: z.number() },
    },
    (a) =>
      answer(async () => {
        const page = await ledger.listPlans({ ...(a.status && a.status !== 'none' ? { status: a.status } : {}), ...(a.label ? { label: a.label } : {}), ...(a.limit ? { limit: a.limit } : {}), ...(a.cursor ? { cursor: a.cursor } : {}) });
        return { plans: page.plans.map((p) => ({ planId: p.planId, goal: p.goal, status: p.status, seq: p.seq, digest: p.digest })), nextCursor: page.nextCursor, total: page.total };
      }),
  );

  server.registerResource(
    'plan',
    new ResourceTemplate('plan://{planId}', { list: undefined }),
    { description: 'A plan as plan_show returns it', mimeType: 'application/json' },
    async (uri, vars) => {
      const planId = String(vars.planId);
      return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(view(await planOf(ledger, planId))) }] };
    },
  );

  return server;
}
