import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LedgerError } from '../../src/errors.js';
import { evolve, PlanError, sealEvent, stateDigest, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import {
  auditAsOf,
  causeFromHeaders,
  withUnavailableRetry,
  classifyFailure,
  decodeCursor,
  dlqHeaders,
  parseAsOf,
  parseEventKey,
  parsePlanQuery,
  PartitionProjection,
  QueryError,
  queryPlans,
  snapshotOf,
  SnapshotPolicy,
  stateFromSnapshot,
  watermarkOf,
  type PlanView,
} from '../../src/projection/index.js';
import { commands, items } from './support.js';
import { LedgerWriter } from './support.js';

/** decide-only use of the writer (no Kafka is touched unless run/append are called). */
function history(planId: string, itemCount = 3, opts: { failFirstTry?: boolean } = {}): PlanEvent[] {
  const w = new LedgerWriter(undefined as never);
  for (const step of w.lifecycle(planId, itemCount, opts)) w.decide(step);
  return w.events.get(planId)!;
}

const key = (e: PlanEvent) => Buffer.from(`${e.planId}:${e.seq}`);

describe('snapshot policy', () => {
  it('is due after boundary events and every N events, never for other single events', () => {
    const p = new SnapshotPolicy({ everyEvents: 4 });
    expect(p.applied('a', 1, 'PlanCreated')).toBe(false);
    expect(p.applied('a', 2, 'ItemAdded')).toBe(true);
    expect(p.takeDue()).toEqual(['a']);
    p.written('a', 2);
    expect(p.applied('a', 3, 'IntentRecorded')).toBe(false);
    expect(p.applied('a', 4, 'ResultCommitted')).toBe(false);
    expect(p.applied('a', 5, 'IntentRecorded')).toBe(false);
    expect(p.applied('a', 6, 'ResultCommitted')).toBe(true); // 4 since the last snapshot
    expect(p.takeDue()).toEqual(['a']);
    p.written('a', 6);
    for (const type of ['ItemCompleted', 'ItemDelegated', 'PlanApproved', 'PlanCompleted', 'PlanFailed', 'PlanCancelled'] as const) {
      const seq = p.snapshotSeq('a') + 1;
      expect(p.applied('a', seq, type), type).toBe(true);
      p.written('a', seq);
    }
    expect(p.applied('a', 100, 'PlanProposed')).toBe(false);
    expect(p.applied('a', 100, 'ItemCompleted')).toBe(false); // a re-send changes nothing
  });

  it('coalesces a batch to one snapshot per plan and tracks dirty plans for the watermark', () => {
    const p = new SnapshotPolicy();
    for (let seq = 1; seq <= 21; seq++) p.applied('big', seq, seq === 1 ? 'PlanCreated' : 'ItemAdded');
    p.applied('small', 1, 'PlanCreated');
    expect(p.takeDue()).toEqual(['big']);
    expect(p.takeDue()).toEqual([]);
    expect(p.dirty().sort()).toEqual(['big', 'small']);
    p.written('big', 21);
    expect(p.dirty()).toEqual(['small']);
    p.unwritten('big');
    expect(p.dirty().sort()).toEqual(['big', 'small']);
  });

  it('never snapshots after every event over random histories (property)', () => {
    const types = ['IntentRecorded', 'ResultCommitted', 'ItemCompleted', 'ItemRetryScheduled', 'PlanProposed', 'CommandRejected'] as const;
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...types), { minLength: 1, maxLength: 300 }), fc.integer({ min: 2, max: 50 }), (seq, every) => {
        const p = new SnapshotPolicy({ everyEvents: every });
        let snapshots = 0;
        let since = 0;
        seq.forEach((type, i) => {
          p.applied('x', i + 1, type);
          since += 1;
          if (p.takeDue().length) {
            snapshots += 1;
            p.written('x', i + 1);
            expect(type === 'ItemCompleted' || since >= every).toBe(true);
            since = 0;
          }
        });
        expect(since).toBeLessThan(every); // never more than N events without one
        return snapshots <= seq.length;
      }),
    );
  });
});

describe('poison decisions', () => {
  it('retries an unavailable registry and dead-letters everything else with a code and reason', () => {
    expect(classifyFailure(new LedgerError('UNAVAILABLE', 'registry down'))).toMatchObject({ action: 'retry', code: 'UNAVAILABLE' });
    for (const reason of ['bad_magic', 'too_short', 'unknown_schema_id', 'corrupt', 'wrong_schema', 'unknown_branch']) {
      expect(classifyFailure(new LedgerError('SCHEMA', 'x', { reason }))).toEqual({ action: 'dlq', code: 'SCHEMA', reason, message: 'x' });
    }
    expect(classifyFailure(new PlanError('INVALID_EVENT', 'p:3 (ItemAdded): seq gap: expected 2'))).toMatchObject({ action: 'dlq', code: 'INVALID_EVENT', reason: 'seq_gap' });
    expect(classifyFailure(new PlanError('INVALID_EVENT', 'p:3 (ItemCompleted): unknown item q'))).toMatchObject({ reason: 'unknown_item' });
    expect(classifyFailure(new TypeError('boom'))).toMatchObject({ action: 'dlq', code: 'INTERNAL', reason: 'unexpected_error', message: 'boom' });
  });

  it('waits out an unavailable registry with backoff (same record again), and gives up only when aborted', async () => {
    let calls = 0;
    const retries: number[] = [];
    const value = await withUnavailableRetry(
      async () => {
        calls += 1;
        if (calls < 3) throw new LedgerError('UNAVAILABLE', 'registry down');
        return 'decoded';
      },
      { initialDelayMs: 1, onRetry: (attempt) => void retries.push(attempt) },
    );
    expect(value).toBe('decoded');
    expect(retries).toEqual([1, 2]);
    // A SCHEMA error is not retried: it goes back to the caller at once (to be dead-lettered).
    let schemaCalls = 0;
    await expect(withUnavailableRetry(async () => { schemaCalls += 1; throw new LedgerError('SCHEMA', 'bad', { reason: 'corrupt' }); }, { initialDelayMs: 1 })).rejects.toMatchObject({ code: 'SCHEMA' });
    expect(schemaCalls).toBe(1);
    const abort = new AbortController();
    const pending = withUnavailableRetry(async () => { throw new LedgerError('UNAVAILABLE', 'still down'); }, { initialDelayMs: 5, signal: abort.signal, onRetry: (n) => { if (n === 2) abort.abort(); } });
    await expect(pending).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('parses event keys (plan ids may contain colons) and round-trips DLQ headers', () => {
    expect(parseEventKey(Buffer.from('a:b:12'))).toEqual({ planId: 'a:b', seq: 12 });
    for (const bad of [null, 'nocolon', ':3', 'p:', 'p:0', 'p:x', 'p:1.5']) expect(parseEventKey(bad)).toBeNull();
    const cause = { sourceTopic: 't.plan-events', sourcePartition: 2, sourceOffset: '41', code: 'SCHEMA', reason: 'bad_magic', message: 'm'.repeat(3000) };
    const headers = Object.fromEntries(Object.entries(dlqHeaders(cause)).map(([k, v]) => [k, Buffer.from(v)]));
    expect(causeFromHeaders(headers)).toEqual({ ...cause, message: 'm'.repeat(2000) });
    expect(causeFromHeaders({})).toBeNull();
  });

  it('a watermark covers the partition up to where it was read: transaction markers, and -1 for a partition with no record', () => {
    const empty = new PartitionProjection(1);
    expect(empty.watermarkOffset()).toBeNull();
    expect(empty.watermarkOffset(0n)).toBe('-1');
    const b = history('b');
    const p = new PartitionProjection(0);
    expect(p.applyEvent('0', key(b[0]!), b[0]!).kind).toBe('applied');
    expect(p.watermarkOffset()).toBe('0');
    expect(p.watermarkOffset(2n)).toBe('1'); // offset 1: the commit marker after it
    expect(p.watermarkOffset(1n)).toBe('0');
    expect(p.watermarkOffset(0n)).toBe('0'); // a read position behind what was applied never moves it back
  });

  it('stalls only the plan whose record is poison; later records of it are held, others apply', () => {
    const a = history('a');
    const b = history('b');
    const p = new PartitionProjection(0);
    let offset = 0;
    const feed = (e: PlanEvent) => p.applyEvent(String(offset++), key(e), e);
    feed(a[0]!);
    feed(b[0]!);
    expect(p.fail(String(offset++), Buffer.from('a:2'), { action: 'dlq', code: 'SCHEMA', reason: 'corrupt', message: 'bad body' })).toMatchObject({ kind: 'poison', planId: 'a', seq: 2 });
    expect(p.precheck(String(offset++), key(a[2]!), Buffer.from('x'))).toMatchObject({ kind: 'held', planId: 'a' });
    for (const e of b.slice(1)) expect(feed(e).kind).toBe('applied');
    expect(p.get('a')!.stalled).toMatchObject({ reason: 'corrupt', offset: '2', seq: 2, heldEvents: 1 });
    expect(p.get('a')!.state!.seq).toBe(1);
    expect(stateDigest(p.get('b')!.state!)).toBe(stateDigest(b.reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!));
    // A seq ahead of the plan waits (compaction may have moved the missing one later in the log);
    // still missing at the end of the partition, it stalls the plan as a seq gap.
    const q = new PartitionProjection(0);
    expect(q.applyEvent('0', key(b[0]!), b[0]!).kind).toBe('applied');
    expect(q.applyEvent('1', key(b[2]!), b[2]!, Buffer.from('bytes')).kind).toBe('deferred');
    expect(q.watermarkOffset()).toBe('0');
    expect(q.watermarkOffset(2n)).toBe('0'); // read past the waiting record: still held before it
    const gaps = q.settleGaps();
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toMatchObject({ outcome: { kind: 'poison', planId: 'b', seq: 3, offset: '1', decision: { code: 'INVALID_EVENT', reason: 'seq_gap' } }, value: Buffer.from('bytes') });
    expect(q.get('b')!.stalled).toMatchObject({ reason: 'seq_gap', seq: 3, offset: '1' });
    // A key that does not match the event is poison (never applied to the wrong plan).
    expect(q.applyEvent('2', Buffer.from('other:1'), b[1]!)).toMatchObject({ kind: 'poison', planId: 'other', decision: { reason: 'key_mismatch' } });
    // ...and the plan it stalled holds even a re-send back.
    expect(q.applyEvent('3', key(b[0]!), b[0]!).kind).toBe('held');
    // A re-sent event is a duplicate, not poison.
    const r = new PartitionProjection(0);
    r.applyEvent('0', key(b[0]!), b[0]!);
    expect(r.applyEvent('1', key(b[0]!), b[0]!).kind).toBe('duplicate');
  });

  it('applies events that compaction moved after a later seq, in seq order, once the missing one arrives', () => {
    const a = history('moved', 3);
    const p = new PartitionProjection(0);
    // log order after compaction kept the last copies of re-sent seqs 3..5: 1, 2, 6.., then 3, 4, 5
    const order = [...a.slice(0, 2), ...a.slice(5), ...a.slice(2, 5)];
    const kinds = order.map((e, i) => p.applyEvent(String(i), key(e), e).kind);
    expect(kinds.filter((k) => k === 'deferred')).toHaveLength(a.length - 5);
    expect(kinds.at(-1)).toBe('applied');
    expect(p.hasGaps()).toBe(false);
    expect(stateDigest(p.get('moved')!.state!)).toBe(stateDigest(a.reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!));
    expect(p.get('moved')!.lastOffset).toBe(String(order.length - 1));
    expect(p.settleGaps()).toEqual([]);
  });

  it('a forged event (same seq, different hash) is poison, not a silent overwrite', () => {
    const a = history('a');
    const p = new PartitionProjection(0);
    a.forEach((e, i) => p.applyEvent(String(i), key(e), e));
    const last = a[a.length - 1]!;
    const forged = sealEvent({ ...last, occurredAt: last.occurredAt + 1 } as never);
    expect(p.applyEvent('99', key(forged), forged)).toMatchObject({ kind: 'poison', decision: { reason: 'fork' } });
  });
});

describe('snapshots', () => {
  it('a snapshot is canonical state with its digest, verified on read; a watermark carries only the offset', () => {
    const events = history('s', 4, { failFirstTry: true });
    const state = events.reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!;
    const snap = snapshotOf(state, 1, '123', 42);
    expect(snap).toMatchObject({ planId: 's', partition: 1, seq: state.seq, eventsOffset: 123, stateDigest: stateDigest(state), takenAt: 42 });
    const back = stateFromSnapshot(snap);
    expect(back.ok && stateDigest(back.state)).toBe(stateDigest(state));
    expect(stateFromSnapshot({ ...snap, stateJson: snap.stateJson.replace('"completed"', '"failed"') })).toMatchObject({ ok: false });
    expect(stateFromSnapshot({ ...snap, schemaVersion: 99 })).toMatchObject({ ok: false });
    expect(watermarkOf(2, '77', 5)).toEqual({ planId: '__watermark', partition: 2, seq: 0, eventsOffset: 77, stateDigest: '', stateJson: '{}', schemaVersion: 1, takenAt: 5 });
  });

  it('restoring from any snapshot and replaying the rest gives the from-scratch digest (property)', () => {
    const events = history('prop', 6, { failFirstTry: true });
    const full = stateDigest(events.reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!);
    fc.assert(
      fc.property(fc.integer({ min: 1, max: events.length }), (cut) => {
        const at = events.slice(0, cut).reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!;
        const check = stateFromSnapshot(snapshotOf(at, 0, String(cut - 1), 0));
        if (!check.ok) return false;
        const p = new PartitionProjection(0);
        p.seed(check.state);
        // restore reads from the watermark, which may be before the snapshot: old events are duplicates
        events.forEach((e, i) => p.applyEvent(String(i), key(e), e));
        return stateDigest(p.get('prop')!.state!) === full && p.eventsApplied === events.length - cut;
      }),
    );
  });
});

describe('plan queries', () => {
  const views: PlanView[] = Array.from({ length: 25 }, (_, i) => {
    const events = history(`q-${String(i).padStart(2, '0')}`, 2);
    const upTo = i % 3 === 0 ? events.length : 4; // some completed, some running
    const state = events.slice(0, upTo).reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!;
    return { planId: state.planId, state: { ...state, createdAt: 1000 + (i % 5) }, stalled: null };
  });

  it('filters by status and label, and pages with a stable cursor without gaps or duplicates', () => {
    const completed = queryPlans(views, parsePlanQuery({ status: 'completed', limit: 100 }));
    expect(completed.plans.every((p) => p.status === 'completed')).toBe(true);
    expect(completed.total).toBe(9);
    const core = queryPlans(views, parsePlanQuery({ label: 'team:core' }));
    expect(core.plans.map((p) => p.planId).sort()).toEqual(['q-00', 'q-10', 'q-20']);
    expect(queryPlans(views, parsePlanQuery({ status: ['running', 'completed'], label: ['team:core'] })).total).toBe(3);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = queryPlans(views, parsePlanQuery({ limit: '7', cursor }));
      seen.push(...page.plans.map((p) => p.planId));
      cursor = page.nextCursor ?? undefined;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(4);
    expect(new Set(seen).size).toBe(25);
    // newest first, then by id
    const order = queryPlans(views, { limit: 500 }).plans.map((p) => [p.createdAt, p.planId] as const);
    expect(order).toEqual([...order].sort((x, y) => (y[0]! - x[0]!) || (x[1] < y[1] ? -1 : 1)));
    // a plan added while paging does not shift later pages
    const first = queryPlans(views, { limit: 10 });
    const extra: PlanView = { planId: 'a-new', state: { ...views[0]!.state!, planId: 'a-new', createdAt: 999_999 }, stalled: null };
    const second = queryPlans([...views, extra], { limit: 10, cursor: first.nextCursor! });
    expect(second.plans[0]!.planId).toBe(queryPlans(views, { limit: 10, cursor: first.nextCursor! }).plans[0]!.planId);
  });

  it('searches the plan id, the goal and the labels, case-insensitive, with the other filters', () => {
    const found = (q: Parameters<typeof parsePlanQuery>[0]) => queryPlans(views, parsePlanQuery({ limit: 100, ...q })).plans.map((p) => p.planId).sort();
    expect(found({ q: 'q-1' })).toEqual(Array.from({ length: 10 }, (_, i) => `q-1${i}`));
    expect(found({ q: 'GOAL OF Q-2' })).toEqual(['q-20', 'q-21', 'q-22', 'q-23', 'q-24']);
    expect(found({ q: 'team:core' })).toEqual(['q-00', 'q-10', 'q-20']);
    expect(found({ q: ' CORE ' })).toEqual(['q-00', 'q-10', 'q-20']);
    expect(found({ q: 'edge' })).toHaveLength(22);
    expect(found({ q: 'core', status: 'completed' })).toEqual(['q-00']); // q-10 and q-20 still run (i % 3)
    expect(found({ q: '<script>alert(1)</script>' })).toEqual([]);
    expect(found({ q: '   ' })).toHaveLength(25);
    expect(queryPlans(views, parsePlanQuery({ q: 'q-0', limit: 3 })).total).toBe(10);
    // A cold plan (summary only) is searched as its state would be.
    const cold: PlanView = { planId: 'cold-1', state: undefined, stalled: null, summary: { ...queryPlans(views, { limit: 1 }).plans[0]!, planId: 'cold-1', goal: 'Archived refund', labels: { team: 'billing' } } };
    expect(queryPlans([...views, cold], parsePlanQuery({ q: 'billing' })).plans.map((p) => p.planId)).toEqual(['cold-1']);
    expect(queryPlans([...views, cold], parsePlanQuery({ q: 'archived' })).plans.map((p) => p.planId)).toEqual(['cold-1']);
  });

  it('finds stalled plans and reports progress', () => {
    const stalledView: PlanView = { ...views[1]!, stalled: { code: 'SCHEMA', reason: 'bad_magic', message: 'm', offset: '3', seq: 5, heldEvents: 0, lastHeldOffset: null } };
    const page = queryPlans([...views.slice(2), stalledView], parsePlanQuery({ status: 'stalled' }));
    expect(page.plans.map((p) => p.planId)).toEqual(['q-01']);
    expect(page.plans[0]!.stalled).toMatchObject({ reason: 'bad_magic' });
    const done = queryPlans(views, { status: ['completed'], limit: 1 }).plans[0]!;
    expect(done.progress).toEqual({ total: 2, pending: 0, running: 0, completed: 2, failed: 0, cancelled: 0 });
  });

  it('rejects bad filters naming the parameter', () => {
    const field = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return e instanceof QueryError ? e.field : 'not a QueryError';
      }
      return 'no error';
    };
    expect(field(() => parsePlanQuery({ status: 'sleepy' }))).toBe('status');
    expect(field(() => parsePlanQuery({ label: 'nocolon' }))).toBe('label');
    expect(field(() => parsePlanQuery({ limit: '0' }))).toBe('limit');
    expect(field(() => parsePlanQuery({ limit: '501' }))).toBe('limit');
    expect(field(() => parsePlanQuery({ cursor: 'xyz' }))).toBe('cursor');
    expect(field(() => parsePlanQuery({ q: 'x'.repeat(201) }))).toBe('q');
    expect(field(() => parsePlanQuery({ q: 'a\u0000b' }))).toBe('q');
    expect(field(() => parsePlanQuery({ q: 'line\nbreak' }))).toBe('q');
    expect(field(() => parsePlanQuery({ q: 'a\u2028b' }))).toBe('q');
    expect(field(() => parsePlanQuery({ q: '\u202egnp.exe' }))).toBe('q');
    expect(() => parsePlanQuery({ q: 'a\u0007b' })).toThrow('q: a search cannot hold control characters (U+0007 at 2)');
    expect(() => parsePlanQuery({ q: 'x'.repeat(5000) })).toThrow('q: a search is at most 200 characters (this one has 5000)');
    expect(field(() => parsePlanQuery({ q: 'x'.repeat(200) }))).toBe('no error');
    expect(field(() => decodeCursor(Buffer.from('[1,2]').toString('base64url')))).toBe('cursor');
    expect(field(() => parseAsOf('yesterday'))).toBe('asOf');
  });
});

describe('audit', () => {
  it('shows the state as of a seq or a time, the timeline and the attempts with durations', () => {
    const w = new LedgerWriter(undefined as never);
    w.decide([commands.create('au', items(2))]);
    w.decide([commands.intent('au', 'it-0')]);
    w.now += 100;
    w.decide([commands.commit('au', 'it-0', 1), commands.settle('au', 'it-0')]);
    w.decide([commands.intent('au', 'it-1'), commands.commit('au', 'it-1', 1, 'failed_retryable'), commands.settle('au', 'it-1')]);
    const events = w.events.get('au')!;
    expect(parseAsOf('4')).toEqual({ seq: 4 });
    expect(parseAsOf('2024-01-02T03:04:05Z')).toEqual({ time: Date.parse('2024-01-02T03:04:05Z') });
    const at3 = auditAsOf('au', events, { seq: 3 });
    expect(at3.state!.seq).toBe(3);
    expect(at3.timeline.map((t) => t.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded']);
    const byTime = auditAsOf('au', events, { time: events[4]!.occurredAt });
    expect(byTime.asOf.seq).toBe(events.filter((e) => e.occurredAt <= events[4]!.occurredAt).at(-1)!.seq);
    const now = auditAsOf('au', events, null);
    expect(now.attempts.map((a) => [a.itemId, a.attempt, a.settlement, a.outcome, a.executorId])).toEqual([
      ['it-0', 1, 'completed', 'succeeded', 'ex-test'],
      ['it-1', 1, 'retry', 'failed_retryable', 'ex-test'],
    ]);
    expect(now.attempts[0]!.totalMs).toBeGreaterThanOrEqual(100);
    expect(now.timeline.find((t) => t.type === 'IntentRecorded')).toMatchObject({ itemId: 'it-0', attempt: 1, actor: 'test' });
  });
});
