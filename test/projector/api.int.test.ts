// The projector's HTTP API against the real stack: reads from the projection, writes through the real
// ledger client to a real in-process executor. A recording wrapper around the real client proves the
// 400/401/403/404 paths never submit anything.
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector, type CommandSubmitter, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger } from '../../src/client/index.js';
import type { LedgerConfig } from '../../src/config.js';
import { stateDigest } from '../../src/plan/index.js';
import { defineTool, TerminalError } from '../../src/tools.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, testLedger } from './support.js';

const TOKEN = 'test-token-0123456789';

const noop = defineTool({ name: 'noop', run: (input: unknown) => ({ echo: input ?? null }) });
/** Fails for good on the first attempt of an item, succeeds after an operator's retry. */
const once = defineTool({
  name: 'fail-once',
  run(_input: unknown, ctx) {
    if (ctx.attempt === 1) throw new TerminalError('first attempt fails on purpose');
    return { attempt: ctx.attempt };
  },
});

async function stack(config: LedgerConfig) {
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
  };
  const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: TOKEN, submit, watermarkIntervalMs: 500, defaultMetrics: false });
  cleanup(() => projector.stop());
  await executor.started;
  return { executor, ledger, projector, calls };
}

function api(p: ProjectorHandle, token: string | null = TOKEN) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> & { [k: string]: unknown } }> => {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token !== null) headers['authorization'] = `Bearer ${token}`;
    const res = await fetch(`${p.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text } };
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

    // No token configured at all: 401 that says so.
    const closed = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, groupId: `${config.topicPrefix}.projector-b`, defaultMetrics: false });
    cleanup(() => closed.stop());
    const refused = await api(closed)('POST', '/api/plans/known/cancel', { reason: 'x' });
    expect(refused.status).toBe(401);
    expect(String(refused.json['message'])).toMatch(/no API token is configured.*PLAN_LEDGER_API_TOKEN/);

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
    ] as const) {
      const r = await call(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json['error']).toBe('not_found');
    }
    expect(calls).toEqual([]);
  });
});
