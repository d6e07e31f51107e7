// The projector's HTTP API against the real stack: reads from the projection, writes through the real
// ledger client to a real in-process executor. A recording wrapper around the real client proves the
// 400/401/403/404/413 paths never submit anything.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector, type CommandSubmitter, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger } from '../../src/client/index.js';
import type { LedgerConfig } from '../../src/config.js';
import { stateDigest } from '../../src/plan/index.js';
import { defineTool, TerminalError } from '../../src/tools.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, testLedger } from './support.js';

/** The legacy single token (PLAN_LEDGER_API_TOKEN): read and write, principal `api-token`. */
const TOKEN = 'test-token-0123456789';
const ALICE = { token: 'alice-token-0123456789abcdef', principal: 'alice', scopes: ['read', 'write'] as const };
const GRAFANA = { token: 'grafana-token-0123456789abcd', principal: 'grafana', scopes: ['read'] as const };

const noop = defineTool({ name: 'noop', run: (input: unknown) => ({ echo: input ?? null }) });
/** Fails for good on the first attempt of an item, succeeds after an operator's retry. */
const once = defineTool({
  name: 'fail-once',
  run(_input: unknown, ctx) {
    if (ctx.attempt === 1) throw new TerminalError('first attempt fails on purpose');
    return { attempt: ctx.attempt };
  },
});

async function stack(config: LedgerConfig, http: Partial<Parameters<typeof startProjector>[0]> = {}) {
  await testLedger(config); // topics, deleted after the test
  const executor = await startExecutor({ tools: [noop, once], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
  cleanup(() => executor.stop());
  const ledger = await connectLedger(config, { logger: testLogger });
  cleanup(() => ledger.close());
  const calls: string[] = [];
  const submit: CommandSubmitter = {
    createPlan: (...a) => (calls.push('createPlan'), ledger.createPlan(...a)),
    approve: (...a) => (calls.push('approve'), ledger.approve(...a)),
    reject: (...a) => (calls.push('reject'), ledger.reject(...a)),
    cancel: (...a) => (calls.push('cancel'), ledger.cancel(...a)),
    retryItem: (...a) => (calls.push('retryItem'), ledger.retryItem(...a)),
    signal: (...a) => (calls.push('signal'), ledger.signal(...a)),
    fork: (...a) => (calls.push('fork'), ledger.fork(...a)),
  };
  const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: TOKEN, apiTokens: [ALICE, GRAFANA], submit, watermarkIntervalMs: 500, defaultMetrics: false, ...http });
  cleanup(() => projector.stop());
  await executor.started;
  return { executor, ledger, projector, calls };
}

function api(p: ProjectorHandle, token: string | null = TOKEN) {
  return async (method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<{ status: number; headers: Headers; json: Record<string, unknown> & { [k: string]: unknown } }> => {
    const headers: Record<string, string> = { ...extra };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    const res = await fetch(`${p.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text } };
  };
}

const item = (id: string, dependsOn: string[] = [], tool = 'noop') => ({ id, title: `do ${id}`, why: `${id} is needed`, tool, dependsOn, input: { id } });

describe('projector HTTP API', () => {
  it('serves health, metrics, plans, a plan, its events and audit, and submits commands with a bearer token', async () => {
    const config = testConfig();
    const { ledger, projector, calls, executor } = await stack(config);
    const call = api(projector);

    expect((await call('GET', '/healthz')).json).toMatchObject({ status: 'ok' });

    // Create through the API (execute mode runs at once), and a proposed plan through the client.
    const created = await call('POST', '/api/plans', { planId: 'api-run', goal: 'run three steps', mode: 'execute', labels: { team: 'core' }, items: [item('a'), item('b', ['a']), item('c', ['a', 'b'])] });
    expect(created.status).toBe(202);
    expect(created.json).toMatchObject({ planId: 'api-run' });
    const proposed = await ledger.createPlan({ planId: 'api-review', goal: 'review me', mode: 'propose', labels: { team: 'core' }, items: [item('x'), item('y', ['x'])] });
    await ledger.propose('api-review');
    await ledger.createPlan({ planId: 'api-reject', goal: 'reject me', mode: 'propose', labels: { team: 'edge' }, items: [item('x')] });
    await ledger.propose('api-reject');
    await waitFor(() => projector.plan('api-run')?.state?.status === 'completed' && projector.plan('api-review')?.state?.status === 'proposed' && projector.plan('api-reject')?.state?.status === 'proposed', {
      timeoutMs: 30_000,
      message: 'plans projected',
    });

    // List, filters, paging.
    const all = await call('GET', '/api/plans');
    expect(all.status).toBe(200);
    expect((all.json['plans'] as Array<{ planId: string }>).map((p) => p.planId).sort()).toEqual(['api-reject', 'api-review', 'api-run']);
    const run = (all.json['plans'] as Array<{ planId: string; progress: { total: number; completed: number } }>).find((p) => p.planId === 'api-run')!;
    expect(run.progress).toMatchObject({ total: 3, completed: 3 });
    const byStatus = await call('GET', '/api/plans?status=proposed&label=team:core');
    expect((byStatus.json['plans'] as Array<{ planId: string }>).map((p) => p.planId)).toEqual(['api-review']);
    const page1 = await call('GET', '/api/plans?limit=2');
    expect(page1.json['plans']).toHaveLength(2);
    const page2 = await call('GET', `/api/plans?limit=2&cursor=${String(page1.json['nextCursor'])}`);
    expect(page2.json['plans']).toHaveLength(1);
    expect(page2.json['nextCursor']).toBeNull();
    const seen = [...(page1.json['plans'] as Array<{ planId: string }>), ...(page2.json['plans'] as Array<{ planId: string }>)].map((p) => p.planId).sort();
    expect(seen).toEqual(['api-reject', 'api-review', 'api-run']);

    // One plan, its events, its audit as of a seq and a time.
    const one = await call('GET', '/api/plans/api-run');
    expect(one.status).toBe(200);
    expect(one.json['stateDigest']).toBe(projector.stateDigests().get('api-run'));
    const events = (await call('GET', '/api/plans/api-run/events')).json['events'] as Array<{ seq: number; type: string; occurredAt: number }>;
    expect(events.map((e) => e.seq)).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    expect(events[0]!.type).toBe('PlanCreated');
    expect(events.at(-1)!.type).toBe('PlanCompleted');
    const audit4 = await call('GET', '/api/plans/api-run/audit?asOf=4');
    expect(audit4.json).toMatchObject({ asOf: { seq: 4 }, state: { seq: 4, status: 'running' } });
    expect(audit4.json['timeline']).toHaveLength(4);
    const auditNow = await call('GET', '/api/plans/api-run/audit');
    expect((auditNow.json['attempts'] as Array<{ itemId: string; settlement: string; executorId: string }>).map((a) => [a.itemId, a.settlement])).toEqual([
      ['a', 'completed'],
      ['b', 'completed'],
      ['c', 'completed'],
    ]);
    expect(auditNow.json['stateDigest']).toBe(projector.stateDigests().get('api-run'));
    const atTime = await call('GET', `/api/plans/api-run/audit?asOf=${encodeURIComponent(new Date(events[0]!.occurredAt).toISOString())}`);
    expect((atTime.json['asOf'] as { seq: number }).seq).toBeGreaterThanOrEqual(1);

    // Commands: a stale digest is rejected by the ledger (409), the right one approves and the plan runs.
    const stale = await call('POST', '/api/plans/api-review/approve', { digest: 'a'.repeat(64), by: 'alice' });
    expect(stale.status).toBe(409);
    expect(stale.json).toMatchObject({ error: 'rejected', code: 'STALE_DIGEST' });
    const approved = await call('POST', '/api/plans/api-review/approve', { digest: proposed.digest, by: 'alice', comment: 'ok' });
    expect(approved.status).toBe(202);
    expect((approved.json['events'] as Array<{ type: string }>).map((e) => e.type)).toContain('PlanApproved');
    await waitFor(() => projector.plan('api-review')?.state?.status === 'completed', { timeoutMs: 30_000, message: 'approved plan ran' });

    const rejected = await call('POST', '/api/plans/api-reject/reject', { reason: 'not now', by: 'bob' });
    expect(rejected.status).toBe(202);
    await waitFor(() => projector.plan('api-reject')?.state?.status === 'draft', { message: 'rejected plan back in draft' });
    const cancelled = await call('POST', '/api/plans/api-reject/cancel', { reason: 'dropped', by: 'bob' });
    expect(cancelled.status).toBe(202);
    await waitFor(() => projector.plan('api-reject')?.state?.status === 'cancelled', { message: 'plan cancelled' });

    // Retry a failed item.
    await call('POST', '/api/plans', { planId: 'api-retry', goal: 'fail then retry', mode: 'execute', items: [item('f', [], 'fail-once')] });
    await waitFor(() => projector.plan('api-retry')?.state?.status === 'failed', { timeoutMs: 30_000, message: 'plan failed' });
    const retried = await call('POST', '/api/plans/api-retry/items/f/retry', {});
    expect(retried.status).toBe(202);
    await waitFor(() => projector.plan('api-retry')?.state?.status === 'completed', { timeoutMs: 30_000, message: 'retried plan completed' });
    expect(calls).toEqual(['createPlan', 'approve', 'approve', 'reject', 'cancel', 'createPlan', 'retryItem']);
    // The projector's digests equal the executor's own states (same evolve, same log).
    for (const id of ['api-run', 'api-review', 'api-reject', 'api-retry']) {
      await waitFor(() => projector.stateDigests().get(id) === stateDigest(executor.planState(id)!), { message: `${id} digest equals the executor's` });
    }

    // Verify on request, problems and the overview, read from the log and the broker now.
    const verified = await call('GET', '/api/plans/api-run/verify');
    expect(verified.status).toBe(200);
    expect(verified.json).toMatchObject({ planId: 'api-run', ok: true, events: events.length, stateDigest: projector.stateDigests().get('api-run'), firstBroken: null });
    expect((verified.json['checks'] as Array<{ name: string; ok: boolean }>).filter((c) => !c.ok)).toEqual([]);
    const problems = await call('GET', '/api/problems');
    expect(problems.json).toEqual({ stalled: [], failed: [], deadLetters: [], deadLettersTotal: 0 });
    const overview = await call('GET', '/api/overview');
    expect(overview.json['plansByStatus']).toEqual({ completed: 3, cancelled: 1 });
    const buckets = (overview.json['activity'] as { buckets: Array<{ itemsCompleted: number; itemsFailed: number }> }).buckets;
    expect(buckets).toHaveLength(30);
    expect(buckets.reduce((n, b) => n + b.itemsCompleted, 0)).toBe(3 + 2 + 1); // api-run, api-review, api-retry
    expect(buckets.reduce((n, b) => n + b.itemsFailed, 0)).toBe(1);
    const groups = overview.json['groups'] as Array<{ groupId: string; members: Array<{ partitions: Record<string, number[]> }>; lag: Array<{ topic: string }> }>;
    const executors = groups.find((g) => g.groupId === `${config.topicPrefix}.executors`)!;
    expect(executors.members).toHaveLength(1);
    expect(executors.members[0]!.partitions[`${config.topicPrefix}.plan-commands`]!.sort()).toEqual(Array.from({ length: config.partitions }, (_, i) => i));
    expect(executors.lag.map((t) => t.topic)).toContain(`${config.topicPrefix}.plan-commands`);
    expect(groups.map((g) => g.groupId)).toContain(`${config.topicPrefix}.projector`);

    const metrics = await fetch(`${projector.url}/metrics`).then((r) => r.text());
    for (const name of ['events_applied_total', 'lag_events', 'plans{status="completed"}', 'snapshot_writes_total', 'dlq_records_total']) expect(metrics).toContain(`plan_ledger_projector_${name}`);
  });

  it('answers 400 naming the field, 401 without a token, 403 with a wrong one, 404 for unknown plans — and submits nothing', async () => {
    const config = testConfig();
    const { ledger, projector, calls } = await stack(config);
    await ledger.createPlan({ planId: 'known', goal: 'g', mode: 'propose', items: [item('x')] });
    await waitFor(() => projector.plan('known'), { message: 'plan projected' });
    const call = api(projector);

    // 401 / 403, before any validation.
    const none = await api(projector, null)('POST', '/api/plans', { goal: 'g', mode: 'execute' });
    expect(none.status).toBe(401);
    expect(String(none.json['message'])).toMatch(/bearer/i);
    expect((await api(projector, 'wrong-token')('POST', '/api/plans/known/approve', {})).status).toBe(403);
    expect((await api(projector, 'wrong-token')('POST', '/api/plans/known/items/x/retry', {})).status).toBe(403);
    // Read routes need a token too: none is 401, a wrong one (even one character off) 403.
    for (const path of ['/api/plans', '/api/plans/known', '/api/plans/known/events', '/api/plans/known/audit', '/api/stream', '/api/whoami', '/api/problems', '/api/overview', '/api/plans/known/verify']) {
      const r = await api(projector, null)('GET', path);
      expect(r.status, path).toBe(401);
      expect(r.json['error']).toBe('unauthorized');
      expect((await api(projector, `${ALICE.token.slice(0, -1)}x`)('GET', path)).status, path).toBe(403);
      expect((await api(projector, 'Bearer')('GET', path)).status, path).toBe(403);
    }
    // Hostile Authorization headers: another scheme or two tokens is 401, a huge or near-miss token 403.
    const raw = (authorization: string) => api(projector, null)('GET', '/api/plans', undefined, { authorization });
    expect((await raw('Basic YWxpY2U6c2VjcmV0')).status).toBe(401);
    expect((await raw(`Bearer ${ALICE.token} ${GRAFANA.token}`)).status).toBe(401);
    expect((await raw('Bearer')).status).toBe(401);
    expect((await raw(`Bearer ${'x'.repeat(8000)}`)).status).toBe(403);
    expect((await raw(`Bearer ${ALICE.token}${ALICE.token}`)).status).toBe(403);
    expect((await raw(`bearer   ${ALICE.token}  `)).status).toBe(200); // scheme is case-insensitive, spaces trimmed
    // A read token reads, and is refused on every write route with 403 naming the missing scope.
    const reader = api(projector, GRAFANA.token);
    expect((await reader('GET', '/api/plans/known')).status).toBe(200);
    expect((await reader('GET', '/api/whoami')).json).toEqual({ principal: 'grafana', scopes: ['read'] });
    for (const [path, body] of [
      ['/api/plans', { goal: 'g', mode: 'execute' }],
      ['/api/plans/known/approve', { digest: 'a'.repeat(64) }],
      ['/api/plans/known/reject', { reason: 'r' }],
      ['/api/plans/known/cancel', { reason: 'r' }],
      ['/api/plans/known/items/x/retry', {}],
    ] as const) {
      const r = await reader('POST', path, body);
      expect(r.status, path).toBe(403);
      expect(r.json['message']).toBe('the token of grafana has no write scope');
    }
    // CORS is closed unless origins are configured: no Access-Control-Allow-Origin, no preflight.
    const cors = await reader('GET', '/api/plans', undefined, { origin: 'https://ops.example' });
    expect(cors.status).toBe(200);
    expect(cors.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${projector.url}/api/plans`, { method: 'OPTIONS', headers: { origin: 'https://ops.example', 'access-control-request-method': 'POST' } });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    // /healthz and /metrics stay open (probes, scrapers), and so do the dashboard's static files.
    for (const path of ['/healthz', '/metrics', '/', '/app.js']) expect((await fetch(`${projector.url}${path}`)).status, path).toBe(200);

    // No token configured at all: 401 that says so.
    const closed = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, groupId: `${config.topicPrefix}.projector-b`, defaultMetrics: false });
    cleanup(() => closed.stop());
    const refused = await api(closed)('POST', '/api/plans/known/cancel', { reason: 'x' });
    expect(refused.status).toBe(401);
    expect(String(refused.json['message'])).toMatch(/no API token is configured.*PLAN_LEDGER_API_TOKEN/);
    const closedRead = await api(closed)('GET', '/api/plans');
    expect(closedRead.status).toBe(401);
    expect(String(closedRead.json['message'])).toMatch(/read routes are closed: no API token is configured/);

    // 400 names the field.
    const bad = async (method: string, path: string, body: unknown, field: string) => {
      const r = await call(method, path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(r.json['field']).toBe(field);
      expect(String(r.json['message'])).toContain(field);
    };
    await bad('POST', '/api/plans', { mode: 'execute' }, 'goal');
    await bad('POST', '/api/plans', { goal: 'g', mode: 'sometimes' }, 'mode');
    await bad('POST', '/api/plans', { goal: 'g', mode: 'execute', items: [{ id: 'bad id!', tool: 'noop' }] }, 'items.0.id');
    await bad('POST', '/api/plans', { goal: 'g', mode: 'execute', colour: 'red' }, 'colour');
    await bad('POST', '/api/plans/known/approve', { by: 'alice' }, 'digest');
    await bad('POST', '/api/plans/known/approve', { digest: 'nothex', by: 'alice' }, 'digest');
    await bad('POST', '/api/plans/known/reject', { by: 'alice' }, 'reason');
    await bad('GET', '/api/plans?status=sleeping', undefined, 'status');
    await bad('GET', '/api/plans?limit=0', undefined, 'limit');
    await bad('GET', '/api/plans?label=nocolon', undefined, 'label');
    await bad('GET', '/api/plans?cursor=garbage', undefined, 'cursor');
    await bad('GET', '/api/plans/known/audit?asOf=yesterday', undefined, 'asOf');
    await bad('GET', '/api/plans/bad%20id/events', undefined, 'id');

    // 404s.
    for (const [method, path, body] of [
      ['GET', '/api/plans/nope', undefined],
      ['GET', '/api/plans/nope/events', undefined],
      ['GET', '/api/plans/nope/audit', undefined],
      ['POST', '/api/plans/nope/approve', { digest: 'a'.repeat(64), by: 'x' }],
      ['POST', '/api/plans/nope/reject', { reason: 'r', by: 'x' }],
      ['POST', '/api/plans/nope/cancel', { reason: 'r' }],
      ['POST', '/api/plans/nope/items/x/retry', {}],
      ['POST', '/api/plans/known/items/nope/retry', {}],
      ['GET', '/api/plans/nope/verify', undefined],
    ] as const) {
      const r = await call(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json['error']).toBe('not_found');
    }
    expect(calls).toEqual([]);
  });

  it('records the token holder as the actor, caps live streams, limits bodies, keeps CORS closed unless configured', async () => {
    const config = testConfig();
    const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-tokens-'));
    const file = join(dir, 'tokens.jsonl');
    writeFileSync(file, `# operators\n${JSON.stringify({ token: 'bob-token-0123456789abcdef', principal: 'bob', scopes: ['write', 'read'] })}\n\n`);
    const { ledger, projector, calls } = await stack(config, { apiTokensFile: file, maxStreamClients: 2, bodyLimitBytes: 16 * 1024, corsOrigins: ['https://ops.example'] });
    const alice = api(projector, ALICE.token);
    const bob = api(projector, 'bob-token-0123456789abcdef');
    expect((await bob('GET', '/api/whoami')).json).toEqual({ principal: 'bob', scopes: ['write', 'read'] });

    // The body's `by` is ignored: the events and the approval name the token's principal.
    const created = await alice('POST', '/api/plans', { planId: 'who', goal: 'who did it', mode: 'propose', items: [item('x')], by: 'mallory' });
    expect(created.status).toBe(202);
    await ledger.propose('who');
    await waitFor(() => projector.plan('who')?.state?.status === 'proposed', { message: 'proposed' });
    const digest = projector.plan('who')!.state!.digest;
    expect((await bob('POST', '/api/plans/who/approve', { digest, by: 'mallory', comment: 'fine' })).status).toBe(202);
    const done = await ledger.waitFor('who', 'completed', { timeoutMs: 30_000 });
    expect(done.approvals.map((a) => [a.decision, a.by])).toEqual([['approved', 'bob']]);
    await waitFor(() => projector.plan('who')?.state?.status === 'completed', { message: 'projected' });
    const events = (await alice('GET', '/api/plans/who/events')).json['events'] as Array<{ type: string; actor: string }>;
    expect(events.find((e) => e.type === 'PlanCreated')!.actor).toBe('alice');
    expect(events.find((e) => e.type === 'PlanApproved')!.actor).toBe('bob');
    expect(events.map((e) => e.actor)).not.toContain('mallory');
    // The legacy single token (PLAN_LEDGER_API_TOKEN) records its principal, `api-token`.
    expect((await api(projector, TOKEN)('POST', '/api/plans', { planId: 'legacy', goal: 'legacy token', mode: 'propose', items: [item('x')], by: 'mallory' })).status).toBe(202);
    await waitFor(() => projector.plan('legacy')?.state?.itemOrder.length === 1, { message: 'legacy plan projected' });
    const legacy = (await alice('GET', '/api/plans/legacy/events')).json['events'] as Array<{ type: string; actor: string }>;
    expect(legacy.map((e) => [e.type, e.actor])).toEqual([['PlanCreated', 'api-token'], ['ItemAdded', 'api-token']]);

    // Live streams: two at once; the third is turned away with 503 until one closes.
    const open = async () => {
      const ac = new AbortController();
      const res = await fetch(`${projector.url}/api/stream`, { headers: { authorization: `Bearer ${GRAFANA.token}` }, signal: ac.signal });
      if (res.status !== 200) return { status: res.status, body: await res.json() as Record<string, unknown>, close: () => ac.abort() };
      const reader = res.body!.getReader();
      const first = new TextDecoder().decode((await reader.read()).value);
      return { status: res.status, body: { first }, close: () => ac.abort() };
    };
    const s1 = await open();
    const s2 = await open();
    expect([s1.status, s2.status]).toEqual([200, 200]);
    expect(String(s1.body['first'])).toContain('event: hello');
    const s3 = await open();
    expect(s3.status).toBe(503);
    expect(s3.body).toMatchObject({ error: 'unavailable', message: 'too many live streams (2); poll /api/plans or retry later' });
    s1.close();
    const s4 = await waitFor(async () => {
      const s = await open();
      if (s.status === 200) return s;
      return null;
    }, { message: 'a stream slot freed when a client left' });
    s2.close();
    s4.close();

    // Body limit: 16 KiB here; a larger body is 413 before any handler, a smaller one goes through.
    const before = calls.length;
    const big = await alice('POST', '/api/plans', { goal: 'g'.repeat(9000), mode: 'propose', items: Array.from({ length: 40 }, (_, i) => ({ ...item(`i${i}`), why: 'w'.repeat(200) })) });
    expect(big.status).toBe(413);
    expect(big.json['error']).toBe('payload_too_large');
    expect(calls.length).toBe(before);
    expect((await alice('POST', '/api/plans', { goal: 'g'.repeat(9000), mode: 'propose', items: [item('a')] })).status).toBe(202);

    // CORS: a listed origin is echoed, any other gets no Access-Control-Allow-Origin; preflight likewise.
    const listed = await alice('GET', '/api/plans', undefined, { origin: 'https://ops.example' });
    expect(listed.headers.get('access-control-allow-origin')).toBe('https://ops.example');
    const other = await alice('GET', '/api/plans', undefined, { origin: 'https://evil.example' });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    const pre = await fetch(`${projector.url}/api/plans`, { method: 'OPTIONS', headers: { origin: 'https://ops.example', 'access-control-request-method': 'POST' } });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toBe('authorization, content-type');
    const preOther = await fetch(`${projector.url}/api/plans`, { method: 'OPTIONS', headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' } });
    expect(preOther.headers.get('access-control-allow-origin')).toBeNull();
  });

});
