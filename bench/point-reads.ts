// Point reads (issue 30): what one `getPlan` of a finished 10-item plan costs, on a warm client and on a
// new one, and what `plan-ledger show` and `plan-ledger --help` cost end to end — each beside the least
// the same answer can cost: a raw librdkafka consumer reading exactly the plan's records (it is told their
// offsets; the same 2 ms fetch and consume waits as the ledger's pooled readers), warm or new, and a bare
// `node -e 0` start for the CLI rows.
//
//   npm run bench -- point-reads [--quick] [--rounds 5] [--big-items 20000] [--per-round 15]
//
// Everything real and on one partition: an executor process (no-op tool) runs the plans, a projector
// process writes their snapshots and the watermark (as in production, the client locates a plan from
// them). Two places: a fresh topic (one 10-item plan), then the same partition after a plan of
// --big-items independent items (20,000: 80,000 events; --quick 2,000) and a second 10-item plan after it.
// Each round times `perRound` warm reads (their median), one new client's first read, one `show` and one
// `--help`, alternating with the raw side. Last, a new client's getPlan of the big plan itself, beside a raw
// consumer reading its events. The CLI runs as the checkout runs it (sources through tsx)
// unless dist/ is built, when it runs dist/ (PLAN_LEDGER_USE_DIST=1), as an installed package does.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { configToEnv, topicNames, type LedgerConfig } from '../src/config.js';
import { confluent } from '../src/kafka/native.js';
import { connectionConfig } from '../src/kafka/connection.js';
import { silentLogger } from '../src/logging.js';
import { benchArgs, median, metric, paired, writeResult, type PairedRound } from './lib/harness.js';
import { benchConfig, dropTopics, freePort, readAll, spawnJson, spawnTs, stopProc, waitLine } from './lib/ledger.js';

const args = benchArgs(['big-items', 'per-round']);
const bigItems = Number(args.options['big-items'] ?? (args.quick ? 2_000 : 20_000));
const perRound = Number(args.options['per-round'] ?? 15);
const root = fileURLToPath(new URL('..', import.meta.url));
const useDist = existsSync(`${root}dist/cli/main.js`);

type Consumer = InstanceType<ReturnType<typeof confluent>['KafkaConsumer']>;

/** A raw consumer (read_committed, as the ledger reads) that reads [first, last] of one partition and stops. */
async function rawConsumer(config: LedgerConfig): Promise<Consumer> {
  const { KafkaConsumer } = confluent();
  const c = new KafkaConsumer({ ...connectionConfig(config, 'bench-raw', silentLogger()), 'group.id': 'bench-raw', 'enable.auto.commit': false, 'isolation.level': 'read_committed', 'fetch.wait.max.ms': 2 } as never, {} as never);
  await new Promise<void>((res, rej) => c.connect({ timeout: 30_000 } as never, (e) => (e ? rej(e) : res())));
  (c as unknown as { setDefaultIsTimeoutOnlyForFirstMessage(on: boolean): void }).setDefaultIsTimeoutOnlyForFirstMessage(true);
  return c;
}

async function rawRead(c: Consumer, topic: string, first: string, last: string): Promise<number> {
  c.assign([{ topic, partition: 0, offset: Number(first) }]);
  let got = 0;
  try {
    for (;;) {
      const batch = await new Promise<Array<{ offset: number }>>((res, rej) => {
        c.setDefaultConsumeTimeout(2);
        c.consume(1000, (e, m) => (e ? rej(e) : res((m ?? []) as unknown as Array<{ offset: number }>)));
      });
      got += batch.length;
      if (batch.some((m) => BigInt(m.offset) >= BigInt(last))) return got;
    }
  } finally {
    c.unassign();
  }
}

const disconnect = (c: Consumer) => new Promise<void>((r) => c.disconnect(() => r()));

function cli(config: LedgerConfig, argv: string[]): number {
  const t = performance.now();
  const r = spawnSync(process.execPath, [`${root}bin/plan-ledger.js`, ...argv], { env: { ...process.env, ...configToEnv(config), ...(useDist ? { PLAN_LEDGER_USE_DIST: '1' } : {}) }, encoding: 'utf8' });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`plan-ledger ${argv.join(' ')} exited ${r.status}: ${r.stderr}`);
  return ms;
}

function nodeStart(): number {
  const t = performance.now();
  spawnSync(process.execPath, ['-e', '0']);
  return performance.now() - t;
}

const items = (n: number, chain: boolean) => Array.from({ length: n }, (_, i) => ({ id: `i${i}`, title: `item ${i}`, why: 'point reads', tool: 'noop', input: { i }, ...(chain && i ? { dependsOn: [`i${i - 1}`] } : {}) }));

/** The plan's first and last event offsets on its partition (the raw side's range). */
async function rangeOf(config: LedgerConfig, planId: string): Promise<{ first: string; last: string; events: number }> {
  const records = (await readAll(config, topicNames(config.topicPrefix).events)).filter((r) => r.key?.toString().startsWith(`${planId}:`));
  return { first: records[0]!.offset, last: records.at(-1)!.offset, events: records.length };
}

/** Waits until the projector's snapshot of the plan is what a new client finds (its read starts from it). */
async function snapshotted(ledger: Ledger, planId: string): Promise<void> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; ) {
    const page = await ledger.listPlans({ status: 'completed', limit: 500 });
    if (page.plans.some((p) => p.planId === planId)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`the projector did not snapshot ${planId} within 120 s`);
}

/** Every timed read must have returned the finished 10-item plan, or the round's figure means nothing. */
function whole(planId: string, state: Awaited<ReturnType<Ledger['getPlan']>>): void {
  if (state?.status !== 'completed' || Object.keys(state.items).length !== 10) throw new Error(`getPlan(${planId}) returned ${state?.status ?? 'nothing'} with ${Object.keys(state?.items ?? {}).length} items`);
}

async function place(label: string, config: LedgerConfig, ledger: Ledger, planId: string): Promise<PairedRound[]> {
  const t = topicNames(config.topicPrefix);
  const range = await rangeOf(config, planId);
  const state = await ledger.getPlan(planId);
  if (state?.status !== 'completed' || Object.keys(state.items).length !== 10) throw new Error(`${planId}: ${state?.status}`);
  const warmRaw = await rawConsumer(config);
  try {
    return await paired({
      rounds: args.rounds,
      label: `${label} `,
      subject: async () => {
        const warm: number[] = [];
        for (let i = 0; i < perRound; i++) {
          const s = performance.now();
          const got = await ledger.getPlan(planId);
          warm.push(performance.now() - s);
          whole(planId, got);
        }
        const c0 = performance.now();
        const fresh = await connectLedger(config);
        const connected = performance.now();
        const got = await fresh.getPlan(planId);
        const read = performance.now();
        await fresh.close();
        whole(planId, got);
        return { warm: median(warm), connect: connected - c0, newRead: read - connected, show: cli(config, ['show', planId]), help: cli(config, ['--help']) };
      },
      baseline: async () => {
        const warm: number[] = [];
        for (let i = 0; i < perRound; i++) {
          const s = performance.now();
          const got = await rawRead(warmRaw, t.events, range.first, range.last);
          warm.push(performance.now() - s);
          if (got < range.events) throw new Error(`raw read took ${got} of ${range.events} records`);
        }
        const c0 = performance.now();
        const c = await rawConsumer(config);
        const connected = performance.now();
        await rawRead(c, t.events, range.first, range.last);
        const read = performance.now();
        await disconnect(c);
        return { warm: median(warm), connect: connected - c0, newRead: read - connected, show: nodeStart(), help: nodeStart() };
      },
    });
  } finally {
    await disconnect(warmRaw);
  }
}

const config = benchConfig('point-reads', { partitions: 1 });
const executor = spawnTs(fileURLToPath(new URL('./procs/executor.ts', import.meta.url)), 'executor', { ...configToEnv(config), BENCH_CONCURRENCY: '50' });
const port = await freePort();
const projector = spawnJson(process.execPath, [`${root}bin/plan-ledger.js`, 'projector', '--port', String(port)], 'projector', { ...configToEnv(config), PLAN_LEDGER_LOG_LEVEL: 'info' });
const ledger = await connectLedger(config);
try {
  await waitLine(executor, 'ready', 120_000);
  await waitLine(projector, 'projector started', 120_000).catch(() => undefined);
  const run = async (goal: string, n: number, chain: boolean, timeoutMs: number) => {
    const { planId } = await ledger.createPlan({ goal, mode: 'execute', items: items(n, chain) });
    await ledger.waitFor(planId, 'completed', { timeoutMs });
    return planId;
  };
  const fresh = await run('point read, fresh topic', 10, true, 60_000);
  await snapshotted(ledger, fresh);
  const freshRounds = await place('fresh topic', config, ledger, fresh);
  const bigStart = Date.now();
  const big = await run(`${bigItems} independent items`, bigItems, false, 900_000);
  const bigEvents = (await rangeOf(config, big)).events;
  console.log(`big plan: ${bigItems} items, ${bigEvents} events in ${((Date.now() - bigStart) / 1000).toFixed(1)} s`);
  const beside = await run('point read, beside the big plan', 10, true, 60_000);
  await snapshotted(ledger, beside);
  const besideRounds = await place(`beside ${bigEvents} events`, config, ledger, beside);
  // The big plan itself, on a new client: from its snapshot (the archive head and its chunks), beside a raw
  // consumer reading the plan's events (what a read without a usable snapshot has to fetch).
  await snapshotted(ledger, big);
  const bigRange = await rangeOf(config, big);
  const bigRounds = await paired({
    rounds: args.rounds,
    label: 'the big plan, new client',
    subject: async () => {
      const fresh = await connectLedger(config);
      const t0 = performance.now();
      const state = await fresh.getPlan(big);
      const ms = performance.now() - t0;
      await fresh.close();
      if (Object.keys(state?.items ?? {}).length !== bigItems) throw new Error(`getPlan(${big}) read ${Object.keys(state?.items ?? {}).length} items`);
      return { bigRead: ms };
    },
    baseline: async () => {
      const c = await rawConsumer(config);
      const t0 = performance.now();
      const got = await rawRead(c, topicNames(config.topicPrefix).events, bigRange.first, bigRange.last);
      const ms = performance.now() - t0;
      await disconnect(c);
      if (got < bigRange.events) throw new Error(`raw read took ${got} of ${bigRange.events} records`);
      return { bigRead: ms };
    },
  });
  const m = (rounds: PairedRound[], where: string, key: string, label: string, baselineLabel: string, aim?: string) =>
    metric(rounds, { key: `${key}${where === 'fresh' ? '' : 'Beside'}`, subjectKey: key, baselineKey: key, label: `${label} (${where === 'fresh' ? 'fresh topic' : `beside ${bigEvents} events`})`, unit: 'ms', better: 'lower', baselineLabel, ...(aim ? { aim } : {}) });
  writeResult({
    name: 'point-reads',
    title: 'Point reads: getPlan of a finished 10-item plan, warm and new client; plan-ledger show and --help end to end',
    quick: args.quick,
    settings: { rounds: args.rounds, perRound, bigItems, bigEvents, partitions: 1, cli: useDist ? 'dist (PLAN_LEDGER_USE_DIST=1)' : 'checkout (sources through tsx)', threadPool: process.env.UV_THREADPOOL_SIZE ?? '4' },
    metrics: [
      m(freshRounds, 'fresh', 'warm', 'getPlan, warm client', 'raw consumer, warm, told the offsets', '≤ 20 ms'),
      m(besideRounds, 'beside', 'warm', 'getPlan, warm client', 'raw consumer, warm, told the offsets', '≤ 20 ms'),
      m(freshRounds, 'fresh', 'newRead', 'getPlan, new client (after connect)', 'raw consumer, new (after connect)', '≤ 250 ms'),
      m(besideRounds, 'beside', 'newRead', 'getPlan, new client (after connect)', 'raw consumer, new (after connect)', '≤ 250 ms'),
      metric(bigRounds, { key: 'bigRead', subjectKey: 'bigRead', baselineKey: 'bigRead', label: `getPlan of the ${bigItems}-item plan itself, new client (after connect)`, unit: 'ms', better: 'lower', baselineLabel: `raw consumer, new, reading its ${bigEvents} events` }),
      m(freshRounds, 'fresh', 'connect', 'connectLedger', 'raw consumer connect'),
      m(freshRounds, 'fresh', 'show', 'plan-ledger show, end to end', 'node -e 0', '≤ 500 ms'),
      m(besideRounds, 'beside', 'show', 'plan-ledger show, end to end', 'node -e 0'),
      m(freshRounds, 'fresh', 'help', 'plan-ledger --help', 'node -e 0', '≤ 300 ms'),
    ],
    rounds: [...freshRounds.map((r) => ({ where: 'fresh', ...r })), ...besideRounds.map((r) => ({ where: 'beside', ...r })), ...bigRounds.map((r) => ({ where: 'big', ...r }))],
    notes: [
      'One broker, one partition; an executor process (no-op tool) ran the plans and a projector process wrote their snapshots, so reads locate a plan as in production.',
      'Raw side: one librdkafka consumer told the plan\'s first and last offsets, reading them and stopping — the least a read of the same records costs.',
      `The CLI ran from ${useDist ? 'dist/ (as an installed package)' : 'the checkout, its sources through tsx (no dist/ built)'}.`,
    ],
  });
} finally {
  await ledger.close();
  await stopProc(executor);
  await stopProc(projector);
  await dropTopics(config);
}
