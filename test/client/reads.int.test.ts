// The ledger client's reads over the real broker and registry, with a projector's snapshots and watermark
// in place: getPlan reads a plan's latest snapshot (live or archived) plus the events after the watermark,
// planEvents reads from the plan's creation (by record timestamp), listPlans pages from the index of
// snapshots with the tail after the watermark folded in. Counting the records the client's reads fetch
// proves they do not read the partition from its start.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { ensurePlanTopics, eventKey, newReadStats, partitionFor, type ReadStats } from '../../src/kafka/index.js';
import { stateDigest, type AnyCommand, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import { snapshotMessage, WATERMARK_KEY, watermarkMessage } from '../../src/projection/index.js';
import { startProjector } from '../../projector/index.js';
import { createCodec } from '../../src/codec/index.js';
import { topicNames } from '../../src/config.js';
import { commands, items, LedgerWriter, type TestLedger } from '../projector/support.js';
import { testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';

let l: TestLedger;
let writer: LedgerWriter;
let ledger: Ledger;
let stats: ReadStats;
let historyEvents = 0;
let tailEvents = 0;
/** Offset of the first event of the 'cancelled' wave (one partition, no transactions: offsets count events). */
let cancelledWaveStart = 0;
/** Offset of the first event of the plan 'skewed'. */
let skewedStart = 0;

/** Appends events as an owner does: each record stamped with its event's occurredAt (`skewMs` off it: a broker's clock). */
async function append(evs: PlanEvent[], skewMs = 0): Promise<void> {
  if (!evs.length) return;
  await l.writer.send(
    l.topics.events,
    evs.map((e) => ({ key: eventKey(e.planId, e.seq), value: l.codec.encodeEvent(e), partition: partitionFor(e.planId, l.config.partitions), timestamp: String(e.occurredAt + skewMs) })),
  );
}

async function run(cmds: AnyCommand[], skewMs = 0): Promise<number> {
  const evs = writer.decide(cmds);
  await append(evs, skewMs);
  return evs.length;
}

/** `count` plans driven round by round: `done` of each plan's items run through the whole protocol. */
async function wave(ids: string[], count: number, done: number, mode: 'execute' | 'propose' = 'execute', labels: Record<string, string> = {}): Promise<number> {
  let n = await run(ids.map((id) => commands.create(id, items(count), mode, labels)));
  for (let i = 0; i < done; i++) {
    const it = `it-${i}`;
    n += await run(ids.map((id) => commands.intent(id, it)));
    n += await run(ids.map((id) => commands.commit(id, it, 1)));
    n += await run(ids.map((id) => commands.settle(id, it)));
  }
  return n;
}

const ids = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${name}-${i}`);
const digestOf = (id: string) => stateDigest(writer.states.get(id)!);
const eventsRead = () => stats.records[l.topics.events] ?? 0;

async function watermark(): Promise<number> {
  let at = -1;
  await l.kafka.readToEnd({
    topic: l.topics.snapshots,
    onRecords: async (records) => {
      for (const r of records) if (r.key?.toString() === WATERMARK_KEY && r.value) at = (await l.codec.decodeSnapshot(r.value)).eventsOffset;
    },
  });
  return at;
}

beforeAll(async () => {
  const config = testConfig({ partitions: 1 });
  const kafka = testKafka(config);
  const admin = kafka.admin();
  await admin.connect();
  await ensurePlanTopics(admin, config);
  const recordWriter = kafka.writer();
  await recordWriter.connect();
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  l = { config, kafka, admin: Object.assign(admin, { track: () => {} }), codec, writer: recordWriter, topics: topicNames(config.topicPrefix) };
  writer = new LedgerWriter(l);
  // History two hours ago, in waves 10 minutes apart (record timestamps = occurredAt, as an owner writes them).
  writer.now = Date.now() - 2 * 3600_000;
  historyEvents += await wave(ids('done', 20), 4, 4, 'execute', { team: 'core' }); // completed: archived
  writer.now += 600_000;
  historyEvents += await wave(ids('half', 20), 4, 2, 'execute', { team: 'edge' }); // running: live snapshots
  writer.now += 600_000;
  historyEvents += await wave(ids('review', 20), 3, 0, 'propose', { team: 'core' });
  historyEvents += await run(ids('review', 20).map((id) => commands.propose(id)));
  writer.now += 600_000;
  cancelledWaveStart = historyEvents;
  historyEvents += await wave(ids('cancelled', 10), 2, 1, 'execute', { team: 'edge' });
  historyEvents += await run(ids('cancelled', 10).map((id) => commands.cancel(id)));
  // A plan whose records were stamped 30 s before its events' times (a broker stamping them, its clock
  // behind the owner's): its first record sits before its creation time, a later one (a minute on) after it.
  writer.now += 600_000;
  skewedStart = historyEvents;
  historyEvents += await run([commands.create('skewed', items(2))], -30_000);
  writer.now += 60_000;
  historyEvents += await run([commands.intent('skewed', 'it-0')], -30_000);

  // The projector snapshots the history and writes the watermark, then stops: nothing moves it on.
  const projector = await startProjector({ config: l.config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 100, defaultMetrics: false });
  try {
    await waitFor(async () => (await watermark()) >= historyEvents - 1, { timeoutMs: 60_000, message: 'the watermark covers the history' });
  } finally {
    await projector.stop();
  }

  // The tail after the watermark: a new plan, a step of a running one, a cancel of another.
  writer.now = Date.now();
  tailEvents += await wave(['late'], 3, 1, 'execute', { team: 'late' });
  tailEvents += await run([commands.intent('half-3', 'it-2')]);
  tailEvents += await run([commands.cancel('half-4')]);

  stats = newReadStats();
  ledger = await connectLedger(l.config, { logger: testLogger, readStats: stats });
}, 180_000);

afterAll(async () => {
  await ledger?.close();
  await l?.writer.disconnect();
  const mine = (await l.admin.listTopics()).filter((t) => t.startsWith(`${l.config.topicPrefix}.`));
  await l.admin.deleteTopics(mine).catch(() => {});
  await l.admin.disconnect();
});

describe('getPlan', () => {
  it('reads a plan from its live snapshot plus the tail after the watermark, not from the partition start', async () => {
    expect(historyEvents).toBeGreaterThan(500);
    const before = eventsRead();
    const s = await ledger.getPlan('half-3');
    expect(s?.status).toBe('running');
    expect(s?.items['it-2']?.status).toBe('in_progress');
    expect(stateDigest(s!)).toBe(digestOf('half-3'));
    const read = eventsRead() - before;
    expect(read).toBe(tailEvents); // exactly the records after the watermark
    expect(read).toBeLessThan(historyEvents / 20);
  });

  it('reads an archived plan (completed in the history) from its archive record; events read: the tail only', async () => {
    const before = eventsRead();
    const archiveBefore = stats.records[l.topics.archive] ?? 0;
    const s = await ledger.getPlan('done-7');
    expect(s?.status).toBe('completed');
    expect(s?.itemOrder).toHaveLength(4);
    expect(stateDigest(s!)).toBe(digestOf('done-7'));
    expect(eventsRead() - before).toBe(tailEvents);
    expect((stats.records[l.topics.archive] ?? 0) - archiveBefore).toBe(1); // the one record, at its offset
  });

  it('folds tail events of a plan the snapshots hold onto its snapshot, and a new plan from the tail alone', async () => {
    const cancelled = await ledger.getPlan('half-4');
    expect(cancelled?.status).toBe('cancelled');
    expect(stateDigest(cancelled!)).toBe(digestOf('half-4'));
    const late = await ledger.getPlan('late');
    expect(late?.status).toBe('running');
    expect(late?.items['it-0']?.status).toBe('completed');
    expect(stateDigest(late!)).toBe(digestOf('late'));
    expect(await ledger.getPlan('never-created')).toBeUndefined();
  });

  it('waitFor of a plan already there answers from the same flat read', async () => {
    const before = eventsRead();
    const s = await ledger.waitFor('review-5', 'proposed', { timeoutMs: 30_000 });
    expect(s.digest).toBe(writer.states.get('review-5')!.digest);
    expect(eventsRead() - before).toBe(tailEvents);
  });
});

describe('planEvents and audit', () => {
  it('read a plan created after the watermark from the watermark on', async () => {
    const before = eventsRead();
    const evs = await ledger.planEvents('late');
    expect(evs.map((r) => r.event.seq)).toEqual(writer.events.get('late')!.map((e) => e.seq));
    expect(evs.map((r) => r.event.hash)).toEqual(writer.events.get('late')!.map((e) => e.hash));
    expect(eventsRead() - before).toBe(tailEvents);
  });

  it('read an older plan from its creation (by record timestamp), not from the partition start', async () => {
    const before = eventsRead();
    const evs = await ledger.planEvents('cancelled-2');
    expect(evs.map((r) => r.event.type)).toEqual(writer.events.get('cancelled-2')!.map((e) => e.type));
    const read = eventsRead() - before;
    // The waves before it (60 plans, ten minutes earlier) are not read, nor its own wave's records before
    // its first event (found by its exact creation time, then checked: its seqs from 1 on); the rest is.
    const first = Number(evs[0]!.offset);
    expect(first).toBeGreaterThan(cancelledWaveStart);
    expect(read).toBe(historyEvents - first + tailEvents);
    expect(read).toBeLessThan(historyEvents / 4);
    const audit = await ledger.audit('cancelled-2');
    expect(audit.rows).toHaveLength(evs.length);
    expect(audit.state.state?.status).toBe('cancelled');
  });
});

describe('planEvents when record times are off', () => {
  it('a plan whose first record is stamped before its creation time: the exact start misses its seq 1, and the read goes again from a minute earlier', async () => {
    const before = eventsRead();
    const evs = await ledger.planEvents('skewed');
    expect(evs.map((r) => r.event.hash)).toEqual(writer.events.get('skewed')!.map((e) => e.hash));
    expect(Number(evs[0]!.offset)).toBe(skewedStart);
    // Two reads: from the record stamped at or after its creation (its intent, the last record of the
    // history), then from a minute before its creation (its own first record).
    expect(eventsRead() - before).toBe(1 + tailEvents + (historyEvents - skewedStart + tailEvents));
  });
});

describe('listPlans from the index', () => {
  const statusOf = (s: PlanState) => s.status;
  const expected = (pred: (s: PlanState) => boolean) => [...writer.states.values()].filter(pred).map((s) => s.planId).sort();

  it('pages every plan once, newest first, with totals that match the filters (tail after the watermark included)', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    for (;;) {
      const page = await ledger.listPlans({ limit: 7, ...(cursor ? { cursor } : {}) });
      expect(page.total).toBe(writer.states.size);
      seen.push(...page.plans.map((p) => p.planId));
      for (let i = 1; i < page.plans.length; i++) expect(page.plans[i - 1]!.createdAt! >= page.plans[i]!.createdAt!).toBe(true);
      pages += 1;
      if (!page.nextCursor) break;
      cursor = page.nextCursor;
    }
    expect(pages).toBe(Math.ceil(writer.states.size / 7));
    expect(seen).toHaveLength(writer.states.size);
    expect([...seen].sort()).toEqual([...writer.states.keys()].sort());
    expect(seen[0]).toBe('late'); // the newest, known from the tail only
  });

  it('filters by status (any of) and label (all of), as the states the events say', async () => {
    for (const status of ['completed', 'running', 'proposed', 'cancelled'] as const) {
      const page = await ledger.listPlans({ status, limit: 500 });
      expect(page.plans.map((p) => p.planId).sort(), status).toEqual(expected((s) => statusOf(s) === status));
      expect(page.total).toBe(page.plans.length);
    }
    const both = await ledger.listPlans({ status: ['cancelled', 'proposed'], label: 'team:edge', limit: 500 });
    expect(both.plans.map((p) => p.planId).sort()).toEqual(expected((s) => (s.status === 'cancelled' || s.status === 'proposed') && s.labels.team === 'edge'));
    expect(both.plans.map((p) => p.planId)).toContain('half-4'); // cancelled in the tail
    expect(both.total).toBe(11);
    const core = await ledger.listPlans({ label: 'team:core', limit: 5 });
    expect(core.total).toBe(40);
    expect(core.plans).toHaveLength(5);
    const half4 = (await ledger.listPlans({ label: 'team:edge', limit: 500 })).plans.find((p) => p.planId === 'half-4');
    expect(half4?.status).toBe('cancelled');
    expect(half4?.progress.cancelled).toBe(2);
  });

  it('a bad filter is a VALIDATION error naming the field', async () => {
    await expect(ledger.listPlans({ status: 'sleeping' as never })).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'status' } });
    await expect(ledger.listPlans({ cursor: 'nope' })).rejects.toMatchObject({ code: 'VALIDATION', details: { field: 'cursor' } });
  });

  it('reads no event of the history for a page', async () => {
    const before = eventsRead();
    await ledger.listPlans({ status: 'running', limit: 3 });
    expect(eventsRead() - before).toBe(tailEvents);
  });
});

describe('replay and verify of every plan, streamed', () => {
  it('{ all: true } rebuilds every plan once, each with the digest of its events', async () => {
    const results = await ledger.replay({ all: true });
    expect(results.map((r) => r.planId).sort()).toEqual([...writer.states.keys()].sort());
    for (const r of results) {
      expect(r.ok, r.planId).toBe(true);
      if (r.ok) expect(r.stateDigest, r.planId).toBe(digestOf(r.planId));
    }
  });

  it('{ all: true } verifies every plan once', async () => {
    const results = await ledger.verify({ all: true });
    expect(results.map((v) => v.planId).sort()).toEqual([...writer.states.keys()].sort());
    expect(results.filter((v) => !v.ok).map((v) => [v.planId, v.firstBroken])).toEqual([]);
  }, 120_000);
});

describe('waitFor follows the live tail', () => {
  it('reads the plan once (snapshot + tail), then applies what the tail brings: no second read of the partition', async () => {
    const before = eventsRead();
    const seq = writer.states.get('late')!.seq;
    const waiting = ledger.waitFor('late', (s) => s.items['it-1']?.status === 'completed', { timeoutMs: 30_000 });
    // Appended only once the wait has read the plan (its one read is counted), so the rest comes from the tail.
    await waitFor(() => eventsRead() - before === tailEvents, { message: 'the wait read the plan once' });
    const steps = await run([commands.intent('late', 'it-1')]);
    const more = (await run([commands.commit('late', 'it-1', 1)])) + (await run([commands.settle('late', 'it-1')]));
    tailEvents += steps + more;
    const s = await waiting;
    expect(s.seq).toBe(seq + steps + more);
    expect(stateDigest(s)).toBe(digestOf('late'));
    expect(eventsRead() - before).toBe(tailEvents - steps - more); // the appended events came by the tail, not by a read
  });
});

describe('a plan archived a moment ago', () => {
  // The projector tombstones a finished plan's live snapshot and writes its archive record in one
  // transaction, with the watermark past the plan's events; the client's index reads the two topics apart.
  // In between it sees the tombstone and the watermark but not the archive record yet: written here in
  // that order, the reads must still find every event of the plan.
  it('is read from its creation while its archive record is not read yet, and from the archive once it is', async () => {
    const planId = 'half-7';
    const mine = writer.events.get(planId)!;
    const events = (await l.admin.fetchTopicOffsets(l.topics.events)).find((o) => o.partition === 0)!;
    await l.writer.send(l.topics.snapshots, [
      { key: planId, value: null, partition: 0 },
      watermarkMessage(l.codec, 0, (BigInt(events.high) - 1n).toString(), 0, Date.now()),
    ]);
    await waitFor(async () => (await watermark()) === Number(events.high) - 1, { timeoutMs: 30_000, message: 'the new watermark is read' });

    expect((await ledger.planEvents(planId)).map((r) => r.event.seq)).toEqual(mine.map((e) => e.seq));
    expect(stateDigest((await ledger.getPlan(planId))!)).toBe(digestOf(planId));

    const archived = snapshotMessage(l.codec, writer.states.get(planId)!, 0, (BigInt(events.high) - 1n).toString(), Date.now());
    await l.writer.send(l.topics.archive, [archived]);
    expect(stateDigest((await ledger.getPlan(planId))!)).toBe(digestOf(planId));
    expect((await ledger.planEvents(planId)).map((r) => r.event.seq)).toEqual(mine.map((e) => e.seq));
  });
});
