// Reads benchmark (not a test): the ledger client's reads at two sizes of history, in one run.
// 1. getPlan and waitFor of a live plan on a partition whose history is 10k vs 1M events. History:
//    finished plans of 10 items decided by the domain's own `decide`, encoded by the real codec, produced to
//    one partition with record timestamps = occurredAt (as an owner writes them); their snapshots written
//    as the projector writes a finished plan's (`planSnapshotRecords`: archive record + tombstone) and the
//    watermark after the history (`watermarkMessage`). Then a fixed tail of live plans after the
//    watermark. `waitFor` is timed twice: on a plan already in the state asked for (the read alone), and
//    following the tail until one appended step (the read, then the live tail).
// 2. listPlans, first page, with 1k vs 100k plans in the index: snapshot records of the plans (90 %
//    completed in the archive, 10 % running in the snapshots topic), and the watermark. The plans' events
//    are not written: a page never reads them (only the events after the watermark, here none).
// The client is connected and its index warm before timing (its one-time index load is reported apart).
// Every size is prepared first; the rounds then alternate between the sizes (and the order of the calls),
// so both sides see the same machine load. Medians of the rounds.
// Run: npx tsx bench/reads.ts [--history 10000,1000000] [--plans 1000,100000] [--rounds 7] [--per-round 15]
//      → bench/results/reads.json
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { createCodec, type LedgerCodec } from '../src/codec/index.js';
import { loadConfig, topicNames, type LedgerConfig } from '../src/config.js';
import { createKafka, ensurePlanTopics, eventKey, newReadStats, type KafkaClient, type LedgerAdmin, type OutRecord, type RecordWriter } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';
import { decide, evolve, type AnyCommand, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { maxFencingTokenOf, planSnapshotRecords, watermarkMessage } from '../src/projection/index.js';
import { machine, median, writeResults } from './common.js';

const { values } = parseArgs({
  options: {
    history: { type: 'string', default: '10000,1000000' },
    plans: { type: 'string', default: '1000,100000' },
    rounds: { type: 'string', default: '7' },
    tail: { type: 'string', default: '100' },
    'per-round': { type: 'string', default: '15' },
  },
});
const historySizes = values.history.split(',').filter(Boolean).map(Number);
const planCounts = values.plans.split(',').filter(Boolean).map(Number);
const rounds = Math.max(5, Number(values.rounds));
const livePlans = Number(values.tail);
const perRound = Number(values['per-round']);
const logger = silentLogger();
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};

let clock = Date.now() - 3 * 3600_000;
function step(state: PlanState | undefined, command: AnyCommand, out: PlanEvent[]): PlanState | undefined {
  const d = decide(state, command, { now: clock++ });
  if (!d.ok) throw new Error(`${command.type}: ${d.rejection.code} ${d.rejection.message}`);
  for (const e of d.events) {
    state = evolve(state, e);
    out.push(e);
  }
  return state;
}
const meta = (planId: string, id: string) => ({ planId, commandId: id, issuedAt: clock, actor: 'bench', correlationId: id });
const createCommand = (planId: string, items: number, labels: Record<string, string> = {}) =>
  ({
    type: 'CreatePlan',
    ...meta(planId, `${planId}-c`),
    data: { goal: 'history', mode: 'execute', labels, parent: null, items: Array.from({ length: items }, (_, i) => ({ id: `i${i}`, title: `item ${i}`, why: 'benchmark history', dependsOn: [], tool: 'noop', inputJson: `{"i":${i}}`, retry: null })) },
  }) as AnyCommand;
/** The three commands of one item step: intent, result, settle. */
const itemSteps = (planId: string, i: number): AnyCommand[] => [
  { type: 'RecordIntent', ...meta(planId, `intent:${i}`), data: { itemId: `i${i}`, executorId: 'bench', fencingToken: 1 } } as AnyCommand,
  { type: 'CommitResult', ...meta(planId, `result:${i}`), data: { itemId: `i${i}`, attempt: 1, outcome: 'succeeded', outputJson: '{"ok":true}', error: null, durationMs: 1, executorId: 'bench', followUps: [] } } as AnyCommand,
  { type: 'SettleItem', ...meta(planId, `settle:${i}`), data: { itemId: `i${i}` } } as AnyCommand,
];

/** A plan of `items` items; `done` of them run through the whole protocol. */
function planLog(planId: string, items: number, done: number, labels: Record<string, string> = {}): { events: PlanEvent[]; state: PlanState } {
  const out: PlanEvent[] = [];
  let s = step(undefined, createCommand(planId, items, labels), out);
  for (let i = 0; i < done; i++) for (const c of itemSteps(planId, i)) s = step(s, c, out);
  return { events: out, state: s! };
}

interface Env {
  config: LedgerConfig;
  kafka: KafkaClient;
  admin: LedgerAdmin;
  codec: LedgerCodec;
  producer: RecordWriter;
  t: ReturnType<typeof topicNames>;
}

async function open(label: string): Promise<Env> {
  const config = loadConfig({ topicPrefix: `reads-${label}-${randomBytes(4).toString('hex')}`, partitions: 1 });
  const kafka = createKafka(config, logger, 'bench-reads');
  const admin = kafka.admin();
  await admin.connect();
  await ensurePlanTopics(admin, config);
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const producer = kafka.writer();
  await producer.connect();
  return { config, kafka, admin, codec, producer, t: topicNames(config.topicPrefix) };
}

async function dispose(env: Env, ledger?: Ledger): Promise<void> {
  await ledger?.close();
  await env.producer.disconnect();
  const mine = (await env.admin.listTopics()).filter((x) => x.startsWith(`${env.config.topicPrefix}.`));
  await env.admin.deleteTopics(mine).catch(() => {});
  await env.admin.disconnect();
  await env.kafka.close();
}

async function sendAll(env: Env, topic: string, messages: OutRecord[], per = 500): Promise<void> {
  for (let i = 0; i < messages.length; i += per) await env.producer.send(topic, messages.slice(i, i + per));
}

const eventMessage = (env: Env, e: PlanEvent): OutRecord => ({ key: eventKey(e.planId, e.seq), value: env.codec.encodeEvent(e), partition: 0, timestamp: String(e.occurredAt) });

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const s = performance.now();
  await fn();
  return performance.now() - s;
}

/** A partition with `size` events of history (finished plans, archived, watermark after them) and a live tail. */
async function historyEnv(size: number) {
  const t0 = Date.now();
  const env = await open('hist');
  let batch: OutRecord[] = [];
  const flush = async () => {
    if (batch.length) await env.producer.send(env.t.events, batch);
    batch = [];
  };
  const snapshots: OutRecord[] = [];
  const archived: OutRecord[] = [];
  let offset = 0;
  let plans = 0;
  let maxToken = 0;
  clock = Date.now() - 3 * 3600_000;
  while (offset < size) {
    const planId = `hist-${plans++}`;
    const { events, state } = planLog(planId, 10, 10);
    for (const e of events) {
      batch.push(eventMessage(env, e));
      offset++;
    }
    const records = planSnapshotRecords(env.codec, env.t, state, 0, String(offset - 1), clock);
    snapshots.push(...records.snapshots);
    archived.push(...records.archive);
    maxToken = Math.max(maxToken, maxFencingTokenOf(state));
    if (batch.length >= 1000) await flush();
  }
  await flush();
  snapshots.push(watermarkMessage(env.codec, 0, String(offset - 1), maxToken, clock));
  await sendAll(env, env.t.archive, archived, 100);
  await sendAll(env, env.t.snapshots, snapshots, 100);
  // The tail after the watermark: live plans, 3 items done. The first is the one read.
  clock = Date.now();
  let target: PlanState | undefined;
  let tail = 0;
  for (let p = 0; p < livePlans; p++) {
    // The one read has items enough for a step per round; the others have 10.
    const { events, state } = planLog(`live-${p}`, p === 0 ? 10 + rounds : 10, 3);
    if (p === 0) target = state;
    for (const e of events) batch.push(eventMessage(env, e));
    tail += events.length;
  }
  await flush();
  console.log(`history ${offset} events (${plans} plans) + tail ${tail} events written in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  const stats = newReadStats();
  const heapBefore = heapAfterGc();
  const ledger = await connectLedger(env.config, { logger, readStats: stats });
  const warm = await timed(() => ledger.getPlan('live-0')); // starts and fills the client's index
  const indexHeapMiB = (heapAfterGc() - heapBefore) / 2 ** 20;
  return { env, ledger, stats, size, historyEvents: offset, historyPlans: plans, tail, target: target!, nextItem: 3, warm, indexHeapMiB, getPlan: [] as number[], waitRead: [] as number[], waitFollow: [] as number[], calls: 0, eventsBefore: stats.records[env.t.events] ?? 0, skippedBefore: stats.skipped ?? 0 };
}

// 1. getPlan and waitFor against history size: every size prepared, then the rounds alternate between them.
const histories = [];
for (const size of historySizes) histories.push(await historyEnv(size));
for (let r = 0; r < rounds; r++) {
  for (const h of r % 2 ? [...histories].reverse() : histories) {
    const a = async () => void h.getPlan.push(await timed(() => h.ledger.getPlan('live-0')));
    const b = async () => void h.waitRead.push(await timed(() => h.ledger.waitFor('live-0', 'running', { timeoutMs: 60_000 })));
    if (r % 2) await b().then(a);
    else await a().then(b);
    h.calls += 2;
    // waitFor following the tail: one item step appended once the wait is under way.
    const want = h.target.seq + 3;
    const started = performance.now();
    const waiting = h.ledger.waitFor('live-0', (x) => x.seq >= want, { timeoutMs: 60_000 });
    const evs: PlanEvent[] = [];
    let st: PlanState | undefined = h.target;
    for (const c of itemSteps('live-0', h.nextItem++)) st = step(st, c, evs);
    h.target = st!;
    await h.env.producer.send(h.env.t.events, evs.map((e) => eventMessage(h.env, e)));
    await waiting;
    h.waitFollow.push(performance.now() - started);
    h.calls += 1;
  }
}
const planRows: Array<Record<string, number | string>> = [];
for (const h of histories) {
  const row = {
    historyEvents: h.historyEvents,
    historyPlans: h.historyPlans,
    tailEvents: h.tail,
    getPlanMsMedian: median(h.getPlan),
    waitForMsMedian: median(h.waitRead),
    waitForFollowMsMedian: median(h.waitFollow),
    eventsReadPerCall: +(((h.stats.records[h.env.t.events] ?? 0) - h.eventsBefore) / h.calls).toFixed(1),
    recordsSkippedPerCall: +(((h.stats.skipped ?? 0) - h.skippedBefore) / h.calls).toFixed(1),
    firstReadMs: h.warm,
    indexHeapMiB: +h.indexHeapMiB.toFixed(2),
  };
  planRows.push(row);
  console.log(
    `  ${h.historyEvents} events: getPlan median ${row.getPlanMsMedian.toFixed(1)} ms, waitFor (already there) ${row.waitForMsMedian.toFixed(1)} ms, waitFor following one appended step ${row.waitForFollowMsMedian.toFixed(1)} ms over ${rounds} rounds; ${row.eventsReadPerCall} events read per call (${row.recordsSkippedPerCall} fetched before the seek); first read (index load) ${h.warm.toFixed(0)} ms, index ${row.indexHeapMiB} MiB`,
  );
  await dispose(h.env, h.ledger);
}

/** `count` plans' snapshot records (90 % archived as completed, 10 % running) and a watermark; no events. */
async function listEnv(count: number) {
  const t0 = Date.now();
  const env = await open('list');
  const snapshots: OutRecord[] = [];
  const archived: OutRecord[] = [];
  clock = Date.now() - 3600_000;
  for (let p = 0; p < count; p++) {
    const running = p % 10 === 0;
    const { state } = planLog(`plan-${p}`, 2, running ? 1 : 2, { team: p % 2 ? 'a' : 'b', shard: String(p % 100) });
    const records = planSnapshotRecords(env.codec, env.t, state, 0, '0', clock);
    snapshots.push(...records.snapshots);
    archived.push(...records.archive);
  }
  snapshots.push(watermarkMessage(env.codec, 0, '-1', 0, clock));
  await sendAll(env, env.t.archive, archived);
  await sendAll(env, env.t.snapshots, snapshots);
  console.log(`${count} plans' snapshots written in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  const heapBefore = heapAfterGc();
  const ledger = await connectLedger(env.config, { logger });
  const warm = await timed(() => ledger.listPlans({ limit: 50 }));
  const indexHeapMiB = (heapAfterGc() - heapBefore) / 2 ** 20;
  return { env, ledger, count, warm, indexHeapMiB, first: [] as number[], running: [] as number[], label: [] as number[], both: [] as number[], totals: { all: 0, running: 0, label: 0, both: 0 } };
}

// 2. listPlans first page against the number of plans, rounds alternating between the sizes.
const lists = [];
for (const count of planCounts) lists.push(await listEnv(count));
for (let r = 0; r < rounds; r++) {
  for (const x of r % 2 ? [...lists].reverse() : lists) {
    // A page takes a few ms, mostly round trips to the broker: each round's figure is the median of
    // `perRound` calls, so one scheduling hiccup of this shared machine does not make a round.
    const burst = async (fn: () => Promise<void>) => {
      const xs: number[] = [];
      for (let i = 0; i < perRound; i++) xs.push(await timed(fn));
      return median(xs);
    };
    const runs = [
      async () => x.first.push(await burst(async () => void (x.totals.all = (await x.ledger.listPlans({ limit: 50 })).total))),
      async () => x.running.push(await burst(async () => void (x.totals.running = (await x.ledger.listPlans({ status: 'running', limit: 50 })).total))),
      async () => x.label.push(await burst(async () => void (x.totals.label = (await x.ledger.listPlans({ label: 'shard:7', limit: 50 })).total))),
      async () => x.both.push(await burst(async () => void (x.totals.both = (await x.ledger.listPlans({ status: 'running', label: 'shard:10', limit: 50 })).total))),
    ];
    for (const f of r % 2 ? runs.reverse() : runs) await f();
  }
}
const listRows: Array<Record<string, number | string>> = [];
for (const x of lists) {
  if (x.totals.all !== x.count || x.totals.running !== Math.ceil(x.count / 10) || x.totals.label !== x.count / 100 || x.totals.both !== x.count / 100) throw new Error(`unexpected totals ${JSON.stringify(x.totals)} for ${x.count} plans`);
  const row = { plans: x.count, firstPageMsMedian: median(x.first), runningPageMsMedian: median(x.running), labelPageMsMedian: median(x.label), bothPageMsMedian: median(x.both), firstListMs: x.warm, indexHeapMiB: +x.indexHeapMiB.toFixed(2) };
  listRows.push(row);
  console.log(
    `  ${x.count} plans: listPlans first page median ${row.firstPageMsMedian.toFixed(1)} ms, status=running ${row.runningPageMsMedian.toFixed(1)} ms, label=shard:7 ${row.labelPageMsMedian.toFixed(1)} ms, status=running + label=shard:10 (a scan for the total) ${row.bothPageMsMedian.toFixed(1)} ms over ${rounds} rounds of ${perRound} calls; first list (index load) ${x.warm.toFixed(0)} ms, index ${row.indexHeapMiB} MiB`,
  );
  await dispose(x.env, x.ledger);
}

const ratio = (rows: Array<Record<string, number | string>>, field: string) => (rows.length > 1 ? (rows.at(-1)![field] as number) / (rows[0]![field] as number) : null);
const summary = {
  machine: machine(),
  settings: { historySizes, planCounts, rounds, listCallsPerRound: perRound, livePlans, itemsPerHistoryPlan: 10 },
  ratios: {
    getPlan: ratio(planRows, 'getPlanMsMedian'),
    waitFor: ratio(planRows, 'waitForMsMedian'),
    waitForFollow: ratio(planRows, 'waitForFollowMsMedian'),
    listPlansFirstPage: ratio(listRows, 'firstPageMsMedian'),
    listPlansRunning: ratio(listRows, 'runningPageMsMedian'),
    listPlansLabel: ratio(listRows, 'labelPageMsMedian'),
    listPlansStatusAndLabel: ratio(listRows, 'bothPageMsMedian'),
  },
  aims: { getPlan: 1.2, waitFor: 1.2, listPlansFirstPage: 1.5 },
  getPlan: planRows,
  listPlans: listRows,
};
console.log(`ratios largest/smallest: ${Object.entries(summary.ratios).map(([k, v]) => `${k} ${v?.toFixed(2)}`).join(', ')}`);
writeResults('bench/results/reads.json', summary);
process.exit(0);
