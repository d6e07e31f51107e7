// The projector holds finished plans in a cache bounded in bytes: past it, a finished plan whose snapshot
// is in the archive goes cold — listed from its summary, read from its archived snapshot on demand, and
// loaded back when an event arrives for it. Every read of a cold plan equals the ledger's own.
import { describe, expect, it } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import type { LedgerConfig } from '../../src/config.js';
import { isLedgerError } from '../../src/errors.js';
import { stateDigest } from '../../src/plan/index.js';
import { tools } from '../fixtures/tools.js';
import { chainOfItems } from '../executor/support.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, testLedger } from './support.js';

const TOKEN = 'cold-token-0123456789abcdef';

async function projector(config: LedgerConfig, cacheMib: number): Promise<ProjectorHandle> {
  const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: TOKEN, watermarkIntervalMs: 300, defaultMetrics: false, cacheMib });
  cleanup(() => p.stop());
  return p;
}

async function get(p: ProjectorHandle, path: string): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${p.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function ledgerDigest(ledger: Ledger, planId: string): Promise<string> {
  return stateDigest((await ledger.getPlan(planId))!);
}

describe('cold plans in the projector (real broker and registry)', () => {
  it('finished plans past a tiny cache go cold; reads, lists, events and a later event for one stay exact', async () => {
    const config = testConfig({ partitions: 2 });
    await testLedger(config);
    const executor = await startExecutor({ tools, config, concurrency: 8, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    cleanup(() => executor.stop());
    const ledger = await connectLedger(config, { logger: testLogger });
    cleanup(() => ledger.close());
    await executor.started;
    // ~8 KiB: two or three small finished plans; the rest go cold once their snapshots are archived.
    const p = await projector(config, 0.008);

    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await ledger.createPlan({ goal: `cold ${i}`, mode: 'execute', labels: { batch: 'cold' }, items: chainOfItems(3) })).planId);
    const { planId: waiting } = await ledger.createPlan({ goal: 'waits for approval', mode: 'propose', labels: { batch: 'cold' }, items: chainOfItems(2) });
    await ledger.propose(waiting);
    for (const id of ids) await ledger.waitFor(id, 'completed', { timeoutMs: 60_000 });
    await ledger.waitFor(waiting, 'proposed', { timeoutMs: 30_000 });
    const model = p.service.model;
    await waitFor(() => model.cold.size >= 8, { timeoutMs: 45_000, message: 'finished plans went cold' });
    const cold = ids.filter((id) => model.cold.has(id));
    const hot = ids.filter((id) => !model.cold.has(id));
    expect(cold.length).toBeGreaterThanOrEqual(8);
    expect(model.finishedBytes).toBeLessThanOrEqual(0.008 * 1024 * 1024);
    for (const id of cold) expect(p.plan(id)).toBeUndefined(); // not in memory

    // One plan, read cold and read hot: the same state as the ledger's own flat read.
    const x = cold[0]!;
    const detail = await get(p, `/api/plans/${x}`);
    expect(detail.status).toBe(200);
    expect(detail.json.stateDigest).toBe(await ledgerDigest(ledger, x));
    expect((detail.json.summary as { status: string; progress: { completed: number } }).progress.completed).toBe(3);
    expect(model.cold.has(x)).toBe(true); // a read does not load it back into the projection
    for (const id of hot) expect((await get(p, `/api/plans/${id}`)).json.stateDigest).toBe(await ledgerDigest(ledger, id));
    const live = await get(p, `/api/plans/${waiting}`);
    expect(live.json.stateDigest).toBe(await ledgerDigest(ledger, waiting));

    // The list is complete: cold plans are listed and filtered from their summaries.
    const list = await get(p, '/api/plans?label=batch:cold&limit=500');
    expect(list.json.total).toBe(13);
    const byId = new Map((list.json.plans as Array<{ planId: string; status: string; seq: number; digest: string }>).map((s) => [s.planId, s]));
    for (const id of ids) expect(byId.get(id)?.status).toBe('completed');
    const xState = (await ledger.getPlan(x))!;
    expect(byId.get(x)).toMatchObject({ seq: xState.seq, digest: xState.digest });
    expect((await get(p, '/api/plans?status=completed&label=batch:cold')).json.total).toBe(12);
    expect((await get(p, '/api/plans?status=proposed&label=batch:cold')).json.total).toBe(1);
    const events = await get(p, `/api/plans/${x}/events`);
    expect((events.json.events as unknown[]).length).toBe(xState.seq);

    // A command to a cold plan: its rejection is an event; the projector loads the plan back and applies it.
    const refused = await ledger.cancel(x).catch((e: unknown) => e);
    expect(isLedgerError(refused, 'REJECTED')).toBe(true);
    await waitFor(async () => (await model.read(x))?.state?.seq === xState.seq + 1, { timeoutMs: 30_000, message: 'the rejection reached the projection' });
    expect(stateDigest((await model.read(x))!.state!)).toBe(await ledgerDigest(ledger, x));
    expect(model.has(x)).toBe(true);

    // A restarted projector with the same tiny cache: archived plans go cold at restore; reads stay exact.
    await p.stop();
    const q = await projector(config, 0.008);
    await waitFor(async () => (await q.caughtUp()) && q.service.model.cold.size >= 8, { timeoutMs: 45_000, message: 'restored cold' });
    const y = ids.find((id) => q.service.model.cold.has(id))!;
    expect((await get(q, `/api/plans/${y}`)).json.stateDigest).toBe(await ledgerDigest(ledger, y));
    expect((await get(q, '/api/plans?label=batch:cold&limit=500')).json.total).toBe(13);
    expect((await get(q, `/api/plans/${x}`)).json.stateDigest).toBe(await ledgerDigest(ledger, x));
  });
});
