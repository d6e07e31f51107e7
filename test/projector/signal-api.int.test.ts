// The signal route of the projector's HTTP API against the real broker and registry: a write token
// delivers a signal (its principal the recorded signaller), the ledger's codes come back as 409s.
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger } from '../../src/client/index.js';
import { tools } from '../fixtures/tools.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';

const ALICE = { token: 'alice-token-0123456789abcdef', principal: 'alice', scopes: ['read', 'write'] as const };
const GRAFANA = { token: 'grafana-token-0123456789abcd', principal: 'grafana', scopes: ['read'] as const };

function api(p: ProjectorHandle, token: string) {
  return async (path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(`${p.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, json: text.startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : { text } };
  };
}

describe('POST /api/plans/:id/signals/:name and /api/plans/:id/fork', () => {
  it("delivers a signal with a write token, the token's principal the recorded signaller; a second one or a wrong name is 409 with the code, an unknown plan 404, a read token 403; a fork of the plan through the API", async () => {
    const config = testConfig({ partitions: 1 });
    const executor = await startExecutor({ tools, config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    await executor.started;
    const ledger = await connectLedger(config, { logger: testLogger });
    onTestFinished(() => ledger.close());
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, apiTokens: [ALICE, GRAFANA], watermarkIntervalMs: 500, defaultMetrics: false });
    onTestFinished(() => projector.stop());
    const alice = api(projector, ALICE.token);

    await ledger.createPlan({
      planId: 'api-wait',
      goal: 'wait for an answer',
      mode: 'execute',
      items: [
        { id: 'ask', title: 'ask', why: 'a person answers', wait: { signal: 'answer', timeoutMs: null, prompt: 'Ship it?' } },
        { id: 'after', title: 'after', why: 'once answered', tool: 'noop', dependsOn: ['ask'] },
      ],
    });
    await waitFor(() => projector.plan('api-wait')?.state?.items['ask']?.status === 'in_progress', { timeoutMs: 30_000, message: 'the projector sees the item wait' });

    expect((await api(projector, GRAFANA.token)('/api/plans/api-wait/signals/answer', { data: 1 })).status).toBe(403);
    expect((await alice('/api/plans/nobody/signals/answer', { data: 1 })).status).toBe(404);
    const extra = await alice('/api/plans/api-wait/signals/answer', { data: 1, extra: true });
    expect([extra.status, extra.json['field']]).toEqual([400, 'extra']);
    const wrong = await alice('/api/plans/api-wait/signals/question', { data: 1 });
    expect([wrong.status, wrong.json['code'], wrong.json['field']]).toEqual([409, 'NOT_WAITING', 'data.signal']);
    const ok = await alice('/api/plans/api-wait/signals/answer', { data: { ship: true }, signalId: 'form-1', by: 'mallory' });
    expect(ok.status).toBe(202);
    expect((ok.json['events'] as Array<{ type: string }>).map((e) => e.type)).toEqual(['ItemSignalled', 'ItemCompleted']);
    const twice = await alice('/api/plans/api-wait/signals/answer', { data: { ship: false }, signalId: 'form-1' });
    expect([twice.status, twice.json['code']]).toEqual([409, 'DUPLICATE_SIGNAL']);

    const done = await ledger.waitFor('api-wait', 'completed', { timeoutMs: 30_000 });
    expect(done.items['ask']!.outputJson).toBe('{"ship":true}');
    const events = (await ledger.planEvents('api-wait')).map((r) => r.event);
    // The token's principal is recorded, not the body's `by`.
    expect(events.filter((e) => e.type === 'ItemSignalled').map((e) => e.actor)).toEqual(['alice']);
    expect(events.filter((e) => e.type === 'CommandRejected').map((e) => [e.actor, e.type === 'CommandRejected' && e.data.code])).toEqual([
      ['alice', 'NOT_WAITING'],
      ['alice', 'DUPLICATE_SIGNAL'],
    ]);

    // A fork through the API at the item after the wait: the answer is inherited, the principal records it.
    const badAt = await alice('/api/plans/api-wait/fork', { at: '0' });
    expect([badAt.status, badAt.json['field']]).toEqual([400, 'at']);
    expect((await api(projector, GRAFANA.token)('/api/plans/api-wait/fork', { at: 'after' })).status).toBe(403);
    const forked = await alice('/api/plans/api-wait/fork', { at: 'after', planId: 'api-wait-fork', set: { after: { again: true } } });
    expect(forked.status).toBe(202);
    expect((forked.json['events'] as Array<{ type: string }>).map((e) => e.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded', 'ItemInherited']);
    const fork = await ledger.waitFor('api-wait-fork', 'completed', { timeoutMs: 30_000 });
    expect(fork.items['ask']!.outputJson).toBe('{"ship":true}');
    expect(fork.forkedFrom?.planId).toBe('api-wait');
    expect((await ledger.planEvents('api-wait-fork'))[0]!.event.actor).toBe('alice');

    // The lineage both ways in GET /api/plans/:id: the fork names its source and point, the source lists its fork.
    const get = async (path: string) => (await (await fetch(`${projector.url}${path}`, { headers: { authorization: `Bearer ${GRAFANA.token}` } })).json()) as Record<string, unknown>;
    await waitFor(() => projector.plan('api-wait-fork')?.state?.status === 'completed', { timeoutMs: 30_000, message: 'the projector sees the fork complete' });
    const forkView = await get('/api/plans/api-wait-fork');
    expect(forkView['forkedFrom']).toEqual({ planId: 'api-wait', seq: fork.forkedFrom!.seq, chainHead: fork.forkedFrom!.chainHead, status: 'completed' });
    expect(forkView['forks']).toEqual([]);
    expect(forkView['agent']).toBeNull();
    const sourceView = await get('/api/plans/api-wait');
    expect(sourceView['forkedFrom']).toBeNull();
    expect(sourceView['forks']).toEqual([{ planId: 'api-wait-fork', seq: fork.forkedFrom!.seq, status: 'completed', goal: 'wait for an answer' }]);
  });
});
