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
// Run: npx tsx bench/reads.ts [--history 10000,1000000] [--plans 1000,100000] [--rounds 7]
//      → bench/results/reads.json
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Admin, Kafka, Message, Producer } from 'kafkajs';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { createCodec, type LedgerCodec } from '../src/codec/index.js';
import { loadConfig, topicNames, type LedgerConfig } from '../src/config.js';
import { createKafka } from '../src/kafka/client.js';
import { newReadStats } from '../src/kafka/log-reader.js';
import { eventKey } from '../src/kafka/partitioner.js';
import { ensurePlanTopics } from '../src/kafka/topics.js';
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
  },
});
const historySizes = values.history.split(',').filter(Boolean).map(Number);
const planCounts = values.plans.split(',').filter(Boolean).map(Number);
const rounds = Math.max(5, Number(values.rounds));
const livePlans = Number(values.tail);
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
  kafka: Kafka;
  admin: Admin;
  codec: LedgerCodec;
  producer: Producer;
  t: ReturnType<typeof topicNames>;
}

async function open(label: string): Promise<Env> {
  const config = loadConfig({ topicPrefix: `reads-${label}-${randomBytes(4).toString('hex')}`, partitions: 1 });
  const kafka = createKafka(config, logger, 'bench-reads');
  const admin = kafka.admin();
  await admin.connect();
  await ensurePlanTopics(admin, config);
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  return { config, kafka, admin, codec, producer, t: topicNames(config.topicPrefix) };
}

async function dispose(env: Env, ledger?: Ledger): Promise<void> {
  await ledger?.close();
  await env.producer.disconnect();
  await env.admin.deleteTopics({ topics: Object.values(env.t).filter((x) => x.includes('.plan-')) }).catch(() => {});
  await env.admin.disconnect();
}

async function sendAll(env: Env, topic: string, messages: Message[], per = 500): Promise<void> {
  for (let i = 0; i < messages.length; i += per) await env.producer.send({ topic, acks: -1, messages: messages.slice(i, i + per) });
}

const eventMessage = (env: Env, e: PlanEvent): Message => ({ key: eventKey(e.planId, e.seq), value: env.codec.encodeEvent(e), partition: 0, timestamp: String(e.occurredAt) });

async function timed<T>(fn: () => Promise<T>): Promise<number> {
  const s = performance.now();
  await fn();
  return performance.now() - s;
}

// 1. getPlan and waitFor against history size.
const planRows: Array<Record<string, number | string>> = [];
for (const size of historySizes) {
  const t0 = Date.now();
  const env = await open('hist');
  let batch: Message[] = [];
  const flush = async () => {
    if (batch.length) await env.producer.send({ topic: env.t.events, acks: -1, messages: batch });
    batch = [];
  };
  const snapshots: Message[] = [];
  const archived: Message[] = [];
  let offset = 0;
  let plans = 0;
  let maxToken = 0;
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
  // The tail after the watermark: live plans, 3 of 10 items done. The first is the one read.
  clock = Date.now();
  let target: PlanState | undefined;
  let tail = 0;
  for (let p = 0; p < livePlans; p++) {
    const { events, state } = planLog(`live-${p}`, 10, 3);
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
  const getPlan: number[] = [];
  const waitRead: number[] = [];
  const waitFollow: number[] = [];
  const eventsBefore = stats.records[env.t.events] ?? 0;
  let calls = 0;
  let nextItem = 3;
  let s = target!;
  for (let r = 0; r < rounds; r++) {
    // Alternate the order of the two reads each round.
    const a = async () => void getPlan.push(await timed(() => ledger.getPlan('live-0')));
    const b = async () => void waitRead.push(await timed(() => ledger.waitFor('live-0', 'running', { timeoutMs: 60_000 })));
    if (r % 2) await b().then(a);
    else await a().then(b);
    calls += 2;
    // waitFor following the tail: one item step appended once the wait is under way.
    const want = s.seq + 3;
    const started = performance.now();
    const waiting = ledger.waitFor('live-0', (x) => x.seq >= want, { timeoutMs: 60_000 });
    const evs: PlanEvent[] = [];
    let st: PlanState | undefined = s;
    for (const c of itemSteps('live-0', nextItem++)) st = step(st, c, evs);
    s = st!;
    await env.producer.send({ topic: env.t.events, acks: -1, messages: evs.map((e) => eventMessage(env, e)) });
    await waiting;
    waitFollow.push(performance.now() - started);
    calls += 1;
  }
  const eventsPerCall = ((stats.records[env.t.events] ?? 0) - eventsBefore) / calls;
  const row = {
    historyEvents: offset,
    historyPlans: plans,
    tailEvents: tail,
    getPlanMsMedian: median(getPlan),
    waitForMsMedian: median(waitRead),
    waitForFollowMsMedian: median(waitFollow),
    eventsReadPerCall: +eventsPerCall.toFixed(1),
    firstReadMs: warm,
    indexHeapMiB: +indexHeapMiB.toFixed(2),
  };
  planRows.push(row);
  console.log(
    `  getPlan median ${row.getPlanMsMedian.toFixed(1)} ms, waitFor (already there) ${row.waitForMsMedian.toFixed(1)} ms, waitFor following one appended step ${row.waitForFollowMsMedian.toFixed(1)} ms over ${rounds} rounds; ${row.eventsReadPerCall} events read per call; first read (index load) ${warm.toFixed(0)} ms, index ${row.indexHeapMiB} MiB`,
  );
  await dispose(env, ledger);
}

// 2. listPlans first page against the number of plans.
const listRows: Array<Record<string, number | string>> = [];
for (const count of planCounts) {
  const t0 = Date.now();
  const env = await open('list');
  const snapshots: Message[] = [];
  const archived: Message[] = [];
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
  const first: number[] = [];
  const running: number[] = [];
  const label: number[] = [];
  let totals = { all: 0, running: 0, label: 0 };
  for (let r = 0; r < rounds; r++) {
    const runs = [
      async () => first.push(await timed(async () => void (totals.all = (await ledger.listPlans({ limit: 50 })).total))),
      async () => running.push(await timed(async () => void (totals.running = (await ledger.listPlans({ status: 'running', limit: 50 })).total))),
      async () => label.push(await timed(async () => void (totals.label = (await ledger.listPlans({ label: 'shard:7', limit: 50 })).total))),
    ];
    for (const f of r % 2 ? runs.reverse() : runs) await f();
  }
  if (totals.all !== count || totals.running !== Math.ceil(count / 10) || totals.label !== count / 100) throw new Error(`unexpected totals ${JSON.stringify(totals)} for ${count} plans`);
  const row = { plans: count, firstPageMsMedian: median(first), runningPageMsMedian: median(running), labelPageMsMedian: median(label), firstListMs: warm, indexHeapMiB: +indexHeapMiB.toFixed(2) };
  listRows.push(row);
  console.log(
    `  listPlans first page median ${row.firstPageMsMedian.toFixed(1)} ms, status=running ${row.runningPageMsMedian.toFixed(1)} ms, label=shard:7 (a scan for the total) ${row.labelPageMsMedian.toFixed(1)} ms over ${rounds} rounds; first list (index load) ${warm.toFixed(0)} ms, index ${row.indexHeapMiB} MiB`,
  );
  await dispose(env, ledger);
}

const ratio = (rows: Array<Record<string, number | string>>, field: string) => (rows.length > 1 ? (rows.at(-1)![field] as number) / (rows[0]![field] as number) : null);
const summary = {
  machine: machine(),
  settings: { historySizes, planCounts, rounds, livePlans, itemsPerHistoryPlan: 10 },
  ratios: {
    getPlan: ratio(planRows, 'getPlanMsMedian'),
    waitFor: ratio(planRows, 'waitForMsMedian'),
    waitForFollow: ratio(planRows, 'waitForFollowMsMedian'),
    listPlansFirstPage: ratio(listRows, 'firstPageMsMedian'),
    listPlansRunning: ratio(listRows, 'runningPageMsMedian'),
    listPlansLabel: ratio(listRows, 'labelPageMsMedian'),
  },
  aims: { getPlan: 1.2, waitFor: 1.2, listPlansFirstPage: 1.5 },
  getPlan: planRows,
  listPlans: listRows,
};
console.log(`ratios largest/smallest: ${Object.entries(summary.ratios).map(([k, v]) => `${k} ${v?.toFixed(2)}`).join(', ')}`);
writeResults('bench/results/reads.json', summary);
process.exit(0);
