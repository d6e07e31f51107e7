// The paged reads of one plan, on a 2,500-item plan folded by the domain's own decide/evolve: item pages in
// plan order with a status filter and per-status counts, the header without items, windows of the audit.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ItemStatus, PlanEvent, PlanState } from '../../src/plan/index.js';
import { attemptsOf, QueryError, summarize } from '../../src/projection/index.js';
import { auditWindow, headerSummary, itemCounts, itemPage, parseItemStatuses, planHeader } from '../../projector/http/routes/plan-pages.js';
import { bigItemId, bigPlanCommands, type BigPlanShape } from './big-plan.js';
import { commands, LedgerWriter } from './support.js';

const SHAPE: BigPlanShape = { items: 2500, batch: 500, completed: 25, failed: [100, 200], inProgress: [300] };
const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => bigItemId(from + k));

function bigPlan(planId = 'big', shape = SHAPE): { writer: LedgerWriter; state: () => PlanState; events: () => PlanEvent[] } {
  const writer = new LedgerWriter(undefined as never); // decide only; nothing touches Kafka
  for (const step of bigPlanCommands(planId, shape)) writer.decide(step);
  return { writer, state: () => writer.states.get(planId)!, events: () => writer.events.get(planId)! };
}

describe('item pages', () => {
  const plan = bigPlan();
  const state = plan.state();

  it('folds the plan without a rejection: 2,500 items, 25 completed, 2 failed, 1 in progress', () => {
    expect(plan.events().filter((e) => e.type === 'CommandRejected')).toEqual([]);
    expect(state.itemOrder).toHaveLength(2500);
    expect(itemCounts(state)).toEqual({ pending: 2472, in_progress: 1, result_committed: 0, completed: 25, failed: 2, cancelled: 0 });
  });

  it('pages in plan order with the total, the counts and the next offset', () => {
    const first = itemPage(state, {});
    expect(first.items.map((i) => i.id)).toEqual(ids(0, 100));
    expect(first).toMatchObject({ planId: 'big', seq: state.seq, offset: 0, limit: 100, total: 2500, itemCount: 2500, nextOffset: 100, status: [] });
    expect(first.counts.completed).toBe(25);
    const second = itemPage(state, { offset: 100, limit: 100 });
    expect(second.items.map((i) => i.id)).toEqual(ids(100, 200));
    const last = itemPage(state, { offset: 2450, limit: 100 });
    expect(last.items.map((i) => i.id)).toEqual(ids(2450, 2500));
    expect(last.nextOffset).toBeNull();
    const past = itemPage(state, { offset: 10_000, limit: 5 });
    expect(past.items).toEqual([]);
    expect(past).toMatchObject({ total: 2500, nextOffset: null });
  });

  it('filters by status (any of), the total counting every match', () => {
    const failed = itemPage(state, { status: ['failed'] });
    expect(failed.items.map((i) => i.id)).toEqual([bigItemId(100), bigItemId(200)]);
    expect(failed).toMatchObject({ total: 2, nextOffset: null });
    const done = itemPage(state, { status: ['completed', 'in_progress'], offset: 20, limit: 3 });
    expect(done.items.map((i) => i.id)).toEqual(ids(20, 23));
    expect(done).toMatchObject({ total: 26, nextOffset: 23 });
    expect(itemPage(state, { status: ['completed', 'in_progress'], offset: 25 }).items.map((i) => i.id)).toEqual([bigItemId(300)]);
    expect(itemPage(state, { status: ['cancelled'] })).toMatchObject({ total: 0, items: [], nextOffset: null });
    // Every status: the same as no filter.
    expect(itemPage(state, { status: ['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'], offset: 7, limit: 2 }).items.map((i) => i.id)).toEqual(ids(7, 9));
  });

  it('walking every page of any filter gives exactly the matching items in plan order', () => {
    const all: ItemStatus[] = ['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'];
    fc.assert(
      fc.property(fc.subarray(all), fc.integer({ min: 1, max: 1000 }), (status, limit) => {
        const want = state.itemOrder.filter((id) => status.length === 0 || status.includes(state.items[id]!.status));
        const got: string[] = [];
        let offset: number | null = 0;
        let pages = 0;
        while (offset !== null) {
          const p = itemPage(state, { status, offset, limit });
          expect(p.total).toBe(want.length);
          expect(p.items.length).toBeLessThanOrEqual(limit);
          got.push(...p.items.map((i) => i.id));
          offset = p.nextOffset;
          pages += 1;
        }
        expect(got).toEqual(want);
        expect(pages).toBe(Math.max(1, Math.ceil(want.length / limit)));
      }),
      { numRuns: 60 },
    );
  });

  it('counts again when the plan moved on', () => {
    const moving = bigPlan('moving', { items: 30, batch: 10, completed: 0, failed: [], inProgress: [0] });
    expect(itemCounts(moving.state()).in_progress).toBe(1);
    moving.writer.decide([commands.commit('moving', bigItemId(0), 1), commands.settle('moving', bigItemId(0))]);
    expect(itemCounts(moving.state())).toMatchObject({ in_progress: 0, completed: 1, pending: 29 });
  });

  it('takes status as repeated or comma-separated values and names the parameter on an unknown one', () => {
    expect(parseItemStatuses(undefined)).toEqual([]);
    expect(parseItemStatuses('failed')).toEqual(['failed']);
    expect(parseItemStatuses(['completed,failed', ' failed ', ''])).toEqual(['completed', 'failed']);
    for (const bad of ['running', 'FAILED', '__proto__', 'x'.repeat(300), 'completed,nope']) {
      let err: unknown;
      try {
        parseItemStatuses(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(QueryError);
      expect((err as QueryError).field).toBe('status');
      expect((err as QueryError).message.length).toBeLessThan(200);
    }
  });
});

describe('plan header', () => {
  it('leaves the items out: the same size for 2,500 items as for 3', () => {
    const big = bigPlan('hdr').state();
    const small = bigPlan('hdr', { items: 3, batch: 3, completed: 0, failed: [], inProgress: [] }).state();
    const h = planHeader(big);
    expect(h).not.toHaveProperty('items');
    expect(h).not.toHaveProperty('itemOrder');
    expect(h).not.toHaveProperty('appliedCommandIds');
    expect(h).toMatchObject({ planId: 'hdr', seq: big.seq, digest: big.digest, status: 'running', itemCount: 2500, rejectionCount: 0, counts: { completed: 25, failed: 2 } });
    const bytes = (x: unknown) => Buffer.byteLength(JSON.stringify(x));
    expect(bytes(big)).toBeGreaterThan(500_000);
    expect(bytes(h)).toBeLessThan(2_000);
    expect(Math.abs(bytes(h) - bytes(planHeader(small)))).toBeLessThan(100);
  });
});

describe('header summary', () => {
  it('is the list summary, its progress from the counts', () => {
    const plan = bigPlan('sum', { items: 1200, batch: 400, completed: 30, failed: [50, 60], inProgress: [70, 80] });
    const view = { planId: 'sum', state: plan.state(), stalled: null };
    expect(headerSummary(view)).toEqual(summarize(view));
    expect(headerSummary(view).progress).toEqual({ total: 1200, pending: 1166, running: 2, completed: 30, failed: 2, cancelled: 0 });
    expect(headerSummary({ planId: 'none', state: undefined, stalled: null })).toEqual(summarize({ planId: 'none', state: undefined, stalled: null }));
  });
});

describe('audit windows', () => {
  const plan = bigPlan('aud', { items: 40, batch: 20, completed: 5, failed: [10], inProgress: [20] });
  const events = plan.events();

  it('pages the timeline newest first, with the attempts whose intent falls in the window', () => {
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual(Array.from({ length: events.length }, (_, i) => i + 1));
    const n = events.length; // 1 + 40 added + 5*3 + 3 + 1
    expect(n).toBe(60);
    const w1 = auditWindow(events, { limit: 10 });
    expect(w1.timeline.map((t) => t.seq)).toEqual(seqs.slice(-10));
    expect(w1.page).toEqual({ limit: 10, before: null, nextBefore: 51, events: 60, attempts: 7 });
    // Seqs 42..56 run items 0-4 (intent, result, settle each), 57..59 fail item 10, 60 is item 20's intent.
    expect(w1.attempts.map((a) => [a.itemId, a.settlement])).toEqual([
      [bigItemId(3), 'completed'],
      [bigItemId(4), 'completed'],
      [bigItemId(10), 'failed'],
      [bigItemId(20), null],
    ]);
    const w2 = auditWindow(events, { limit: 10, before: 52 });
    expect(w2.timeline.map((t) => t.seq)).toEqual(seqs.slice(41, 51));
    expect(w2.page.nextBefore).toBe(42);
    expect(w2.attempts.map((a) => a.itemId)).toEqual([bigItemId(0), bigItemId(1), bigItemId(2), bigItemId(3)]);
    // An attempt keeps its whole course even when it settled in a newer window (item 3: intent 51, settled 53).
    expect(w2.attempts.at(-1)).toMatchObject({ itemId: bigItemId(3), intentSeq: 51, settlement: 'completed' });
    const first = auditWindow(events, { limit: 10, before: 5 });
    expect(first.timeline.map((t) => t.seq)).toEqual([1, 2, 3, 4]);
    expect(first.page.nextBefore).toBeNull();
    expect(auditWindow(events, { limit: 10, before: 1 })).toMatchObject({ timeline: [], attempts: [], page: { nextBefore: null } });
    expect(auditWindow(events, { limit: 1000, before: 10_000 }).timeline).toHaveLength(60);
  });

  it('gives each attempt in a window the same course as the whole history does (retries included)', () => {
    const w = new LedgerWriter(undefined as never);
    for (const step of w.lifecycle('retried', 8, { failFirstTry: true })) w.decide(step);
    const history = w.events.get('retried')!;
    const all = attemptsOf(history);
    expect(all.map((a) => `${a.itemId}/${a.attempt}:${a.settlement}`).slice(0, 3)).toEqual(['it-0/1:completed', 'it-1/1:retry', 'it-1/2:completed']);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: history.length + 2 }), (limit, before) => {
        const win = auditWindow(history, { limit, before });
        const seqs = win.timeline.map((t) => t.seq);
        expect(win.attempts).toEqual(all.filter((a) => seqs.includes(a.intentSeq)));
        expect(win.page.attempts).toBe(all.length);
      }),
      { numRuns: 100 },
    );
  });
});
