// The paged read API on a 5,000-item plan against the real stack: the plan is decided with the domain's
// own decide (CreatePlan + AddItems batches, then some items run, fail, start), appended to the real
// events topic with the real codec, and projected by a real projector. Pages hold the right ids in plan
// order, totals and per-status counts are exact, a page's size does not follow the plan's, and bad
// parameters are 400s naming the parameter, with nothing else answered.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { bigItemId, bigPlanCommands, type BigPlanShape } from './big-plan.js';
import { cleanup, LedgerWriter, testLedger } from './support.js';

const TOKEN = 'items-api-token-0123456789abcdef';
const SHAPE: BigPlanShape = { items: 5000, batch: 500, completed: 120, failed: [1000, 2000, 3000], inProgress: [4000, 4010] };
const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => bigItemId(from + k));

type Json = Record<string, unknown> & { [k: string]: unknown };
function api(p: ProjectorHandle, token: string | null = TOKEN) {
  return async (path: string): Promise<{ status: number; bytes: number; json: Json }> => {
    const res = await fetch(`${p.url}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    const text = await res.text();
    return { status: res.status, bytes: Buffer.byteLength(text), json: JSON.parse(text) as Json };
  };
}

interface ItemRow {
  id: string;
  status: string;
  dependsOn: string[];
  attempts: unknown[];
}
interface Page {
  total: number;
  itemCount: number;
  offset: number;
  limit: number;
  nextOffset: number | null;
  seq: number;
  counts: Record<string, number>;
  items: ItemRow[];
}

describe('paged plan reads', () => {
  it('pages a 5,000-item plan: items in plan order by status with counts, the header alone, audit windows; bad parameters are 400s', async () => {
    const config = testConfig({ partitions: 2 });
    const l = await testLedger(config);
    const writer = new LedgerWriter(l);
    // A small plan beside it: its header must cost what the big one's costs.
    await writer.run(bigPlanCommands('small', { items: 3, batch: 3, completed: 1, failed: [], inProgress: [] }).flat());
    for (const step of bigPlanCommands('big', SHAPE)) await writer.run(step);
    const big = writer.states.get('big')!;
    expect(writer.events.get('big')!.filter((e) => e.type === 'CommandRejected')).toEqual([]);
    expect(big.seq).toBe(1 + 5000 + 120 * 3 + 3 * 3 + 2);

    const projector = await startProjector({ config, logger: testLogger, port: 0, apiTokens: [{ token: TOKEN, principal: 'reader', scopes: ['read'] }], watermarkIntervalMs: 500, defaultMetrics: false });
    cleanup(() => projector.stop());
    await waitFor(() => projector.plan('big')?.state?.seq === big.seq && projector.plan('small')?.state?.seq === writer.states.get('small')!.seq, {
      timeoutMs: 60_000,
      message: 'big plan projected',
    });
    const get = api(projector);

    // The first page, the next, the last: ids in plan order, totals, counts per status.
    const p1 = await get('/api/plans/big/items');
    expect(p1.status).toBe(200);
    const page1 = p1.json as unknown as Page;
    expect(page1.items.map((i) => i.id)).toEqual(ids(0, 100));
    expect(page1).toMatchObject({ total: 5000, itemCount: 5000, offset: 0, limit: 100, nextOffset: 100, seq: big.seq });
    expect(page1.counts).toEqual({ pending: 4875, in_progress: 2, result_committed: 0, completed: 120, failed: 3, cancelled: 0 });
    expect(page1.items.slice(0, 3).map((i) => [i.id, i.status, i.dependsOn, i.attempts.length])).toEqual([
      [bigItemId(0), 'completed', [], 1],
      [bigItemId(1), 'completed', [bigItemId(0)], 1],
      [bigItemId(2), 'completed', [bigItemId(1)], 1],
    ]);
    const page2 = (await get('/api/plans/big/items?offset=100&limit=100')).json as unknown as Page;
    expect(page2.items.map((i) => i.id)).toEqual(ids(100, 200));
    expect(page2.items.filter((i) => i.status === 'completed').map((i) => i.id)).toEqual(ids(100, 120));
    const last = (await get('/api/plans/big/items?offset=4990&limit=1000')).json as unknown as Page;
    expect(last.items.map((i) => i.id)).toEqual(ids(4990, 5000));
    expect(last.nextOffset).toBeNull();
    const max = (await get('/api/plans/big/items?offset=2000&limit=1000')).json as unknown as Page;
    expect(max.items.map((i) => i.id)).toEqual(ids(2000, 3000));

    // Status filter, any of: repeated or comma-separated.
    const failed = (await get('/api/plans/big/items?status=failed')).json as unknown as Page;
    expect(failed.items.map((i) => [i.id, i.status])).toEqual([1000, 2000, 3000].map((i) => [bigItemId(i), 'failed']));
    expect(failed).toMatchObject({ total: 3, nextOffset: null });
    const running = (await get('/api/plans/big/items?status=in_progress&status=failed&offset=1&limit=3')).json as unknown as Page;
    expect(running.items.map((i) => i.id)).toEqual([2000, 3000, 4000].map(bigItemId));
    expect(running).toMatchObject({ total: 5, nextOffset: 4 });
    const done = (await get('/api/plans/big/items?status=completed,in_progress&offset=100&limit=50')).json as unknown as Page;
    expect(done.items.map((i) => i.id)).toEqual([...ids(100, 120), bigItemId(4000), bigItemId(4010)]);
    expect(done.total).toBe(122);
    const pending = (await get('/api/plans/big/items?status=pending&limit=5')).json as unknown as Page;
    expect(pending.items.map((i) => i.id)).toEqual(ids(120, 125));
    expect(pending.total).toBe(4875);

    // Bounded: a page of 100 is a small fraction of the whole plan, and the same size at offset 200 and 4,900.
    const whole = await get('/api/plans/big');
    expect(whole.status).toBe(200);
    expect(whole.bytes).toBeGreaterThan(1_000_000);
    expect(p1.bytes).toBeLessThan(64 * 1024); // 100 completed items, each with its attempt
    expect(p1.bytes).toBeLessThan(whole.bytes / 20);
    const early = await get('/api/plans/big/items?offset=200');
    const tail = await get('/api/plans/big/items?offset=4900');
    expect(Math.abs(tail.bytes - early.bytes)).toBeLessThan(early.bytes / 20);

    // The header: everything but the items, the same size as a 3-item plan's.
    const head = await get('/api/plans/big?items=none');
    expect(head.status).toBe(200);
    expect(head.json).toMatchObject({ planId: 'big', items: 'none', summary: { progress: { total: 5000, completed: 120, failed: 3 } }, state: { seq: big.seq, digest: big.digest, status: 'running', itemCount: 5000, counts: page1.counts } });
    expect(head.json['state']).not.toHaveProperty('items');
    expect(head.json['state']).not.toHaveProperty('itemOrder');
    expect(head.json).not.toHaveProperty('stateDigest');
    expect(whole.json['stateDigest']).toBe(projector.stateDigests().get('big'));
    const smallHead = await get('/api/plans/small?items=none');
    expect(head.bytes).toBeLessThan(4096);
    expect(Math.abs(head.bytes - smallHead.bytes)).toBeLessThan(256);

    // The audit: whole without paging parameters (as before); windows of it with limit / before.
    const events = writer.events.get('big')!;
    const full = await get('/api/plans/big/audit');
    expect(full.json['timeline']).toHaveLength(big.seq);
    expect(full.json['attempts']).toHaveLength(125);
    const w1 = await get('/api/plans/big/audit?limit=100');
    expect(w1.status).toBe(200);
    const tl = (j: Json) => (j['timeline'] as Array<{ seq: number; type: string }>).map((t) => t.seq);
    expect(tl(w1.json)).toEqual(events.slice(-100).map((e) => e.seq));
    expect(w1.json['page']).toEqual({ limit: 100, before: null, nextBefore: big.seq - 99, events: big.seq, attempts: 125 });
    expect(w1.json['state']).toMatchObject({ seq: big.seq, itemCount: 5000 });
    expect(w1.json['state']).not.toHaveProperty('items');
    expect(w1.bytes).toBeLessThan(full.bytes / 20);
    // The newest 100 events start at item 90's result: the attempts of items 91..119, then the failures and intents.
    const w1Attempts = (w1.json['attempts'] as Array<{ itemId: string; settlement: string | null }>).map((x) => [x.itemId, x.settlement]);
    expect(w1Attempts).toEqual([
      ...ids(91, 120).map((id) => [id, 'completed']),
      ...[1000, 2000, 3000].map((i) => [bigItemId(i), 'failed']),
      ...[4000, 4010].map((i) => [bigItemId(i), null]),
    ]);
    const w2 = await get(`/api/plans/big/audit?limit=100&before=${String((w1.json['page'] as { nextBefore: number }).nextBefore)}`);
    expect(tl(w2.json)).toEqual(events.slice(-200, -100).map((e) => e.seq));
    const oldest = await get('/api/plans/big/audit?limit=10&before=11');
    expect(tl(oldest.json)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect((oldest.json['page'] as { nextBefore: number | null }).nextBefore).toBeNull();
    expect((oldest.json['timeline'] as Array<{ type: string }>)[0]!.type).toBe('PlanCreated');
    // As of a seq: the header as the plan was then (first batch added, nothing run).
    const asOf = await get('/api/plans/big/audit?asOf=501&limit=5');
    expect(asOf.json).toMatchObject({ asOf: { seq: 501 }, state: { seq: 501, itemCount: 500, counts: { pending: 500 } }, page: { events: 501, attempts: 0 } });
    expect(tl(asOf.json)).toEqual([497, 498, 499, 500, 501]);
    // Events, paged.
    const ev = await get('/api/plans/big/events?fromSeq=4990&limit=20');
    expect((ev.json['events'] as Array<{ seq: number }>).map((e) => e.seq)).toEqual(Array.from({ length: 20 }, (_, i) => 4990 + i));
    expect(ev.json['nextSeq']).toBe(5010);
    expect((await get(`/api/plans/big/events?fromSeq=${big.seq}&limit=20`)).json['nextSeq']).toBeNull();

    // Bad parameters: 400 naming the parameter, in the API's error shape.
    const bad: Array<[string, string]> = [
      ['/api/plans/big/items?offset=-1', 'offset'],
      ['/api/plans/big/items?offset=abc', 'offset'],
      ['/api/plans/big/items?offset=1e400', 'offset'],
      ['/api/plans/big/items?limit=0', 'limit'],
      ['/api/plans/big/items?limit=1001', 'limit'],
      ['/api/plans/big/items?limit=2.5', 'limit'],
      ['/api/plans/big/items?limit=-1e400', 'limit'],
      ['/api/plans/big/items?status=running', 'status'],
      ['/api/plans/big/items?status=completed,__proto__', 'status'],
      [`/api/plans/big/items?${Array.from({ length: 17 }, () => 'status=failed').join('&')}`, 'status'],
      ['/api/plans/big/items?sort=id', 'sort'],
      ['/api/plans/big?items=some', 'items'],
      ['/api/plans/big/audit?limit=0', 'limit'],
      ['/api/plans/big/audit?limit=5000', 'limit'],
      ['/api/plans/big/audit?before=0', 'before'],
      ['/api/plans/big/audit?before=x', 'before'],
      ['/api/plans/big/audit?before=1e400', 'before'],
      ['/api/plans/big/events?fromSeq=1e400', 'fromSeq'],
      ['/api/plans/big/audit?limit=5&asOf=yesterday', 'asOf'],
      ['/api/plans/big/events?limit=1001', 'limit'],
    ];
    for (const [path, field] of bad) {
      const r = await get(path);
      expect({ path, status: r.status, error: r.json['error'], field: r.json['field'] }).toEqual({ path, status: 400, error: 'bad_request', field });
      expect(String(r.json['message'])).toContain(field);
    }
    // Hostile query strings: every answer is a bounded page or a 400 naming a parameter, never a 500.
    const fields = ['offset', 'limit', 'status', 'before', 'asOf', 'fromSeq'];
    const value = fc.oneof(fc.integer({ min: -5, max: 6000 }).map(String), fc.constantFrom('1e400', '-0', '0x10', '1.5', '', 'NaN', '%00', 'failed', 'pending,failed', '__proto__'), fc.string({ maxLength: 40 }));
    const param = fc.tuple(fc.constantFrom(...fields, 'items', 'x'), value);
    const route = fc.constantFrom('/api/plans/big/items', '/api/plans/big/audit', '/api/plans/big/events', '/api/plans/big');
    const answers = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(route, fc.array(param, { maxLength: 4 }), async (path, params) => {
        const qs = params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join('&');
        const r = await get(`${path}${qs ? `?${qs}` : ''}`);
        answers.set(r.status, (answers.get(r.status) ?? 0) + 1);
        expect([200, 400]).toContain(r.status);
        if (r.status === 400) expect([...fields, 'items', 'x']).toContain(r.json['field']);
        else if (path.endsWith('/items')) expect((r.json as unknown as Page).items.length).toBeLessThanOrEqual(1000);
        else if (params.some(([k]) => k === 'limit' || k === 'before')) expect(r.bytes).toBeLessThan(1024 * 1024);
      }),
      { numRuns: 150 },
    );
    expect(answers.get(200)).toBeGreaterThan(10);
    expect(answers.get(400)).toBeGreaterThan(10);
    expect((await get('/api/plans/nope/items')).status).toBe(404);
    expect((await api(projector, null)('/api/plans/big/items')).status).toBe(401);
  });
});
