// The ledger client's read side over the real broker and registry: listPlans, audit, replay and verify
// of plans an in-process executor ran to completion, from the log alone (no projector), and a forged
// record on a plan's events partition named by verify.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { connectLedger, type Ledger, type PlanStatusFilter } from '../../src/client/index.js';
import { createCodec } from '../../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { isLedgerError, type LedgerError } from '../../src/errors.js';
import { eventKey, partitionFor, type KafkaClient, type LedgerAdmin } from '../../src/kafka/index.js';
import { evolveAll, stateDigest, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import { tools } from '../fixtures/tools.js';
import { testConfig, testKafka } from '../support/helpers.js';

let config: LedgerConfig;
let kafka: KafkaClient;
let admin: LedgerAdmin;
let executor: ExecutorHandle;
let ledger: Ledger;

/** The plans of the run, by role; ids are per test prefix. */
const ids = { audited: 'audited', coreB: 'core-b', failing: 'edge-failing', proposed: 'core-proposed', forged: 'edge-forged' };
const all = Object.values(ids);

async function plan(planId: string): Promise<PlanState> {
  const s = await ledger.getPlan(planId);
  expect(s, planId).toBeDefined();
  return s!;
}

async function events(planId: string): Promise<PlanEvent[]> {
  return (await ledger.planEvents(planId)).map((r) => r.event);
}

async function failure(p: Promise<unknown>): Promise<LedgerError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(isLedgerError(e), String(e)).toBe(true);
  return e as LedgerError;
}

const set = (xs: Iterable<string>) => [...xs].sort();

beforeAll(async () => {
  config = testConfig();
  kafka = testKafka(config);
  admin = kafka.admin();
  await admin.connect();
  executor = await startExecutor({ tools, config, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, executorId: 'audit-exec' });
  ledger = await connectLedger(config);
  await executor.started;

  const retry = { maxAttempts: 3, initialBackoffMs: 50, backoffMultiplier: 2, maxBackoffMs: 1000 };
  // Created one after another, so createdAt orders them.
  await ledger.createPlan({
    planId: ids.audited,
    goal: 'audited work',
    mode: 'execute',
    labels: { team: 'core' },
    items: [
      { id: 'a', title: 'first', why: 'it comes first', tool: 'noop', input: { n: 1 } },
      { id: 'b', title: 'second', why: 'after a; fails once', tool: 'flaky', input: { succeedOn: 2 }, dependsOn: ['a'], retry },
    ],
  });
  await ledger.createPlan({ planId: ids.coreB, goal: 'one step', mode: 'execute', labels: { team: 'core' }, items: [{ id: 'x', title: 'x', why: 'x', tool: 'noop' }] });
  await ledger.createPlan({ planId: ids.failing, goal: 'doomed', mode: 'execute', labels: { team: 'edge' }, items: [{ id: 'x', title: 'x', why: 'x', tool: 'fatal' }] });
  await ledger.createPlan({ planId: ids.proposed, goal: 'under review', mode: 'propose', labels: { team: 'core' }, items: [{ id: 'x', title: 'x', why: 'x', tool: 'noop' }] });
  await ledger.propose(ids.proposed);
  await ledger.createPlan({
    planId: ids.forged,
    goal: 'to be tampered with',
    mode: 'execute',
    labels: { team: 'edge' },
    items: [
      { id: 'a', title: 'a', why: 'a', tool: 'noop' },
      { id: 'b', title: 'b', why: 'b', tool: 'noop', dependsOn: ['a'] },
    ],
  });
  for (const id of [ids.audited, ids.coreB, ids.forged]) await ledger.waitFor(id, 'completed', { timeoutMs: 60_000 });
  await ledger.waitFor(ids.failing, 'failed', { timeoutMs: 60_000 });
});

afterAll(async () => {
  await ledger?.close();
  await executor?.stop();
  if (admin) {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`));
    await admin.deleteTopics(topics).catch(() => {});
    await admin.disconnect();
  }
});

describe('listPlans (from the log, no projector)', () => {
  it('lists every plan newest first with the summary the projector serves', async () => {
    const page = await ledger.listPlans({ limit: 500 });
    expect(page.total).toBe(5);
    expect(page.nextCursor).toBeNull();
    expect(page.plans.map((p) => p.planId)).toEqual([...all].reverse());
    const created = page.plans.map((p) => p.createdAt!);
    expect(created).toEqual([...created].sort((a, b) => b - a));

    const s = await plan(ids.audited);
    expect(page.plans.find((p) => p.planId === ids.audited)).toEqual({
      planId: ids.audited,
      goal: 'audited work',
      mode: 'execute',
      status: 'completed',
      labels: { team: 'core' },
      parent: null,
      seq: 13,
      digest: s.digest,
      createdAt: s.createdAt,
      updatedAt: s.updatedAt,
      progress: { total: 2, pending: 0, running: 0, completed: 2, failed: 0, cancelled: 0 },
      stalled: null,
    });
    expect(page.plans.find((p) => p.planId === ids.failing)).toMatchObject({ status: 'failed', progress: { total: 1, failed: 1 } });
    expect(page.plans.find((p) => p.planId === ids.proposed)).toMatchObject({ status: 'proposed', mode: 'propose', seq: 3 });
  });

  it('filters by status (any of) and label (all of)', async () => {
    const ofPage = async (f: Parameters<Ledger['listPlans']>[0]) => {
      const page = await ledger.listPlans(f);
      expect(page.total).toBe(page.plans.length);
      return set(page.plans.map((p) => p.planId));
    };
    expect(await ofPage({ status: 'completed' })).toEqual(set([ids.audited, ids.coreB, ids.forged]));
    expect(await ofPage({ status: ['failed', 'proposed'] })).toEqual(set([ids.failing, ids.proposed]));
    expect(await ofPage({ label: 'team:core' })).toEqual(set([ids.audited, ids.coreB, ids.proposed]));
    expect(await ofPage({ label: ['team:edge'], status: ['completed'] })).toEqual([ids.forged]);
    expect(await ofPage({ label: ['team:core', 'team:edge'] })).toEqual([]);
    expect(await ofPage({ status: 'stalled' })).toEqual([]);
    expect(await ofPage({ status: 'running' })).toEqual([]);
  });

  it('pages with a cursor: every plan once, no gaps, the same order as one page', async () => {
    const one = (await ledger.listPlans({ limit: 500 })).plans.map((p) => p.planId);
    const seen: string[] = [];
    const sizes: number[] = [];
    let cursor: string | undefined;
    for (let n = 0; n < 10; n++) {
      const page = await ledger.listPlans({ limit: 2, cursor });
      expect(page.total).toBe(5);
      sizes.push(page.plans.length);
      seen.push(...page.plans.map((p) => p.planId));
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(one);
    expect(new Set(seen).size).toBe(5);

    const first = await ledger.listPlans({ status: 'completed', limit: 2 });
    const second = await ledger.listPlans({ status: 'completed', limit: 2, cursor: first.nextCursor! });
    expect(first.plans.map((p) => p.planId)).toEqual([ids.forged, ids.coreB]);
    expect(second.plans.map((p) => p.planId)).toEqual([ids.audited]);
    expect(second.nextCursor).toBeNull();
  });

  it('a bad filter is a VALIDATION error naming the field', async () => {
    const field = async (f: Parameters<Ledger['listPlans']>[0]) => {
      const e = await failure(ledger.listPlans(f));
      expect(e.code).toBe('VALIDATION');
      return e.details.field;
    };
    expect(await field({ status: 'sleepy' as PlanStatusFilter })).toBe('status');
    expect(await field({ label: 'nocolon' })).toBe('label');
    expect(await field({ limit: 0 })).toBe('limit');
    expect(await field({ limit: 501 })).toBe('limit');
    expect(await field({ cursor: 'xyz' })).toBe('cursor');
  });
});

describe('audit', () => {
  it('the timeline: types, seqs, attempts, idempotency keys and outcomes, then the plan now', async () => {
    const a = await ledger.audit(ids.audited);
    const p = ids.audited;
    expect(a).toMatchObject({ planId: p, topic: topicNames(config.topicPrefix).events, partition: partitionFor(p, config.partitions), events: 13, asOf: null });
    expect(a.rows.map((r) => [r.seq, r.type, r.itemId, r.attempt, r.idempotencyKey, r.outcome])).toEqual([
      [1, 'PlanCreated', null, null, null, null],
      [2, 'ItemAdded', 'a', null, null, null],
      [3, 'ItemAdded', 'b', null, null, null],
      [4, 'IntentRecorded', 'a', 1, `${p}/a/1`, null],
      [5, 'ResultCommitted', 'a', 1, `${p}/a/1`, 'succeeded'],
      [6, 'ItemCompleted', 'a', 1, `${p}/a/1`, 'completed'],
      [7, 'IntentRecorded', 'b', 1, `${p}/b/1`, null],
      [8, 'ResultCommitted', 'b', 1, `${p}/b/1`, 'failed_retryable'],
      [9, 'ItemRetryScheduled', 'b', 1, `${p}/b/1`, 'retry'],
      [10, 'IntentRecorded', 'b', 2, `${p}/b/2`, null],
      [11, 'ResultCommitted', 'b', 2, `${p}/b/2`, 'succeeded'],
      [12, 'ItemCompleted', 'b', 2, `${p}/b/2`, 'completed'],
      [13, 'PlanCompleted', null, null, null, 'completed'],
    ]);
    const records = await ledger.planEvents(p);
    expect(a.rows.map((r) => [r.partition, r.offset, r.hash, r.causationId])).toEqual(records.map((r) => [r.partition, r.offset, r.event.hash, r.event.causationId]));
    expect(a.rows.filter((r) => r.type === 'IntentRecorded').every((r) => r.actor === 'audit-exec')).toBe(true);
    expect(a.rows[7]!.sinceIntentMs).toBeGreaterThanOrEqual(0);
    expect(a.rows[7]!.toolMs).toBeGreaterThanOrEqual(0);
    const now = await plan(p);
    expect(a.state).toEqual({ kind: 'state', planId: p, seq: 13, at: a.rows[12]!.at, state: now, stateDigest: stateDigest(now) });
  });

  it('as of a seq (number or digits) or a time: the timeline stops there and the state is the plan then', async () => {
    const p = ids.audited;
    const full = await ledger.audit(p);
    const at8 = await ledger.audit(p, { asOf: 8 });
    expect(at8.asOf).toEqual({ seq: 8 });
    expect(at8.events).toBe(13);
    expect(at8.rows).toEqual(full.rows.slice(0, 8));
    const then = evolveAll(undefined, (await events(p)).slice(0, 8))!;
    expect(at8.state).toEqual({ kind: 'state', planId: p, seq: 8, at: full.rows[7]!.at, state: then, stateDigest: stateDigest(then) });
    expect(at8.state.state!.status).toBe('running');
    expect(at8.state.state!.items.a!.status).toBe('completed');
    expect(at8.state.state!.items.b!.attempts.map((x) => x.outcome)).toEqual(['failed_retryable']);
    expect(await ledger.audit(p, { asOf: '8' })).toEqual(at8);

    const time = new Date(full.rows[5]!.at);
    const byTime = await ledger.audit(p, { asOf: time });
    expect(byTime.asOf).toEqual({ time: time.getTime() });
    expect(byTime.rows).toEqual(full.rows.slice(0, byTime.rows.length));
    expect(byTime.rows.length).toBeGreaterThanOrEqual(6);
    expect(full.rows.slice(byTime.rows.length).every((r) => Date.parse(r.at) > time.getTime())).toBe(true);
    expect(byTime.state.seq).toBe(byTime.rows.at(-1)!.seq);
    expect(await ledger.audit(p, { asOf: full.rows[5]!.at })).toEqual(byTime);

    const before = await ledger.audit(p, { asOf: 0 });
    expect(before.rows).toEqual([]);
    expect(before.state).toMatchObject({ seq: 0, state: null, stateDigest: null });

    const bad = await failure(ledger.audit(p, { asOf: 'last tuesday' }));
    expect([bad.code, bad.details.field]).toEqual(['VALIDATION', 'asOf']);
  });
});

describe('replay', () => {
  it('rebuilds one plan from the log alone: the digest of getPlan, and up to a point', async () => {
    const p = ids.audited;
    const now = await plan(p);
    const r = await ledger.replay(p);
    expect(r).toEqual({ ok: true, planId: p, status: 'completed', seq: 13, items: 2, digest: now.digest, stateDigest: stateDigest(now), events: 13, state: now });

    const early = evolveAll(undefined, (await events(p)).slice(0, 5))!;
    const until5 = await ledger.replay(p, { until: 5 });
    expect(until5).toMatchObject({ ok: true, status: 'running', seq: 5, events: 13, stateDigest: stateDigest(early) });
    expect(until5.stateDigest).not.toBe(r.stateDigest);

    const notYet = await failure(ledger.replay(p, { until: 0 }));
    expect(notYet.code).toBe('NOT_FOUND');
    expect(notYet.message).toBe(`plan ${p} did not exist yet at 0`);
  });

  it('{ all: true } rebuilds every plan, each with the digest getPlan gives', async () => {
    const results = await ledger.replay({ all: true });
    expect(set(results.map((r) => r.planId))).toEqual(set(all));
    for (const r of results) {
      expect(r.ok).toBe(true);
      if (!r.ok) continue;
      expect(r.stateDigest).toBe(stateDigest(await plan(r.planId)));
    }
    const until3 = await ledger.replay({ all: true }, { until: 3 });
    expect(until3.map((r) => (r.ok ? r.seq : -1))).toEqual(until3.map(() => 3));
  });
});

describe('verify', () => {
  it('an intact plan verifies: seq, chain, determinism, snapshots', async () => {
    const p = ids.audited;
    const last = (await events(p)).at(-1)!;
    const v = await ledger.verify(p);
    expect(v).toMatchObject({ planId: p, ok: true, events: 13, head: last.hash, stateDigest: stateDigest(await plan(p)), firstBroken: null });
    expect(v.checks.map((c) => [c.name, c.ok])).toEqual([
      ['duplicates', true],
      ['seq', true],
      ['chain', true],
      ['determinism', true],
      ['snapshots', true],
    ]);
    const everything = await ledger.verify({ all: true });
    expect(set(everything.map((x) => x.planId))).toEqual(set(all));
    expect(everything.every((x) => x.ok)).toBe(true);
  });

  it('a forged record with the key of an existing seq: not ok, naming that seq; the others still verify', async () => {
    const p = ids.forged;
    expect((await ledger.verify(p)).ok).toBe(true);
    const originalRecord = (await ledger.planEvents(p)).find((r) => r.event.seq === 8)!;
    const original = originalRecord.event;
    expect(original.type).toBe('ResultCommitted');
    // Same key, same hash and prevHash, another output: what an edit of the stored event would look like.
    const forged = { ...original, data: { ...original.data, outputJson: '{"echo":"forged"}' } } as PlanEvent;
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
    const writer = kafka.writer();
    await writer.connect();
    let offset: string;
    try {
      const [delivered] = await writer.send(topicNames(config.topicPrefix).events, [{ key: eventKey(p, 8), value: codec.encodeEvent(forged), partition: partitionFor(p, config.partitions) }]);
      offset = delivered!.offset;
    } finally {
      await writer.disconnect();
    }

    const v = await ledger.verify(p);
    expect(v.ok).toBe(false);
    // Two records under one key come first (the original's offset, then the forgery's), then the broken chain.
    expect(v.firstBroken).toMatchObject({ check: 'duplicates', seq: 8, eventId: original.eventId, partition: partitionFor(p, config.partitions), offset });
    expect(v.firstBroken!.reason).toBe(`1 key written more than once: seq 8 at offsets ${partitionFor(p, config.partitions)}/${originalRecord.offset}, ${partitionFor(p, config.partitions)}/${offset} (differing)`);
    expect(v.checks.find((c) => c.name === 'chain')).toMatchObject({ ok: false });
    expect(v.checks.find((c) => c.name === 'chain')!.detail).toMatch(/hash mismatch/);
    expect(v.checks.find((c) => c.name === 'seq')).toMatchObject({ ok: true });
    expect(v.head).toBeNull();

    const everything = await ledger.verify({ all: true });
    expect(everything.filter((x) => !x.ok).map((x) => [x.planId, x.firstBroken?.seq])).toEqual([[p, 8]]);
    expect(everything.filter((x) => x.ok)).toHaveLength(4);
    // The audit shows the record as the log now holds it: seq 8 at its new offset.
    expect((await ledger.audit(p)).rows.find((r) => r.seq === 8)).toMatchObject({ offset, hash: original.hash });
  });
});

describe('an unknown plan', () => {
  it('is NOT_FOUND (the CLI exit 3) for audit, replay and verify', async () => {
    for (const call of [() => ledger.audit('no-such-plan'), () => ledger.replay('no-such-plan'), () => ledger.verify('no-such-plan'), () => ledger.audit('no-such-plan', { asOf: 3 })]) {
      const e = await failure(call());
      expect(e.code).toBe('NOT_FOUND');
      expect(e.message).toBe(`plan no-such-plan not found on prefix "${config.topicPrefix}"`);
      expect(e.details).toEqual({ planId: 'no-such-plan' });
    }
  });

  it('a target that is neither a plan id nor { all: true } is a VALIDATION error', async () => {
    expect((await failure(ledger.replay('' as string))).code).toBe('VALIDATION');
    expect((await failure(ledger.verify({ all: false } as unknown as { all: true }))).code).toBe('VALIDATION');
  });
});
