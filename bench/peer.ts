// The peer side by side (issue 12's table), in one run: plan-ledger against Restate, same work.
//
//   npm run bench -- peer [--quick] [--rounds 5] [--plans 200] [--sequential 10] [--in-flight 20] [--durability matched]
//   npm run bench -- peer-200 peer-durable-200        the same at 200 in flight (--in-flight 200)
//
// Work: N plans, each a chain of 10 items (each item depends on the previous one) with a no-op tool,
// 20 plans in flight (--in-flight; N is at least that), timed by a client from "start" to "completed" → steps/s; then plans one at a time
// → ms per step. plan-ledger: `connectLedger` in this process, `createPlan` → `waitFor('completed')`,
// against an executor (`startExecutor`, concurrency = in flight, no-op tool) in its own process. Restate:
// restate-server (1.7.x, from npm) on free loopback ports with a temp data dir, and an SDK service
// (`@restatedev/restate-sdk`, its own process) whose handler runs 10 no-op steps, one `ctx.run` each;
// the client calls the ingress (`POST /Chain/run`, request-response) and the call returns when the 10th
// step is journaled and the handler has returned. Warm-up on both sides, then rounds alternating which
// goes first; medians. Also: plan-ledger's command → first event, from Kafka record timestamps (the
// CreatePlan command record's timestamp vs the plan's first event record's, the executor's decide time).
//
// CPU per step of the whole machine (two cores shared by both sides, so this is what the comparison is
// about): every process of each side is sampled before and after each timed phase — /proc/<pid>/stat
// (utime+stime of it and its descendants, bench/lib/cpu.ts) for the local stack's broker and registry
// JVMs, the executor, restate-server and the SDK service; process.cpuUsage() for the client (this
// process, the client of both sides). The other side's processes are sampled too: idle, they show the
// background (the local stack may be shared with other work). Also per plan-ledger phase: the records
// the client's events tail was handed (every committed record of the events topic written during the
// phase) and the records it decoded, as the client counts them (ReadStats.tail).
//
// Durability: by default each side runs as it is configured out of the box: Restate's server with its
// defaults, the Kafka broker with its defaults (it does not flush its log to disk per write; a record is
// durable by replication, here one broker). `--durability matched` makes the broker flush every message
// too: the bench creates its plan topics with `flush.messages=1` (every write to them is fsynced before
// it is acknowledged, transaction markers included), and writes bench/results/peer-durable.json instead.
// The group offsets and transaction state topics keep the broker's defaults.
//
// Kafka requests per step, by type: after the timed rounds, a counted pass (one phase of each kind, not
// timed) runs the same work with a new executor process and a new client that count every request they
// send (librdkafka's protocol debug lines, bench/lib/requests.ts). The debug logging costs CPU, so the
// timed rounds run without it and the counts come from their own pass; the result's extra.kafkaRequests
// has them per step of each phase. BENCH_KAFKA_REQUESTS=0 skips the pass.
//
// --profile: then a profiled pass, one phase of 3 × --plans at --in-flight plans in flight (untimed): a new executor
// process profiling itself (V8, node:inspector), the client (this process, the same) and the local stack's
// broker (Java Flight Recorder through jcmd), each started and stopped around the phase; their summaries
// (where each process's CPU went: groups, top functions or frames by self time) go to extra.profiles.
// BENCH_PROFILE_DIR=<dir> also keeps the executor's and the client's raw .cpuprofile files there.
//
// Restate is installed with npm into a cache folder (PLAN_LEDGER_PEER_CACHE, default
// ~/.cache/plan-ledger/peer); it is not a dependency of plan-ledger. Writes bench/results/peer.json.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { configToEnv, topicNames, type LedgerConfig } from '../src/config.js';
import { ensureTopics, newReadStats, planTopicSpecs } from '../src/kafka/index.js';
import { eventKey, parseEventKey } from '../src/kafka/partitioner.js';
import { createLogger } from '../src/logging.js';
import { setting } from '../src/settings.js';
import { readStackInfo, REGISTRY, runningProcesses } from '../src/stack/discovery.js';
import { clockTicks, cpuMsPerStep, sampleCpu } from './lib/cpu.js';
import { benchArgs, fmt, median, metric, paired, quantile, until, writeResult, type Metric } from './lib/harness.js';
import { benchConfig, benchKafka, dropTopics, freePort, readAll, spawnTs, stopProc, waitLine, type Proc } from './lib/ledger.js';
import { profileSelf, recordJvm } from './lib/profiles.js';
import { requestCounter, requestsPerStep } from './lib/requests.js';

const RESTATE_SERVER_VERSION = process.env.BENCH_RESTATE_SERVER_VERSION ?? '1.7.12';
const RESTATE_SDK_VERSION = process.env.BENCH_RESTATE_SDK_VERSION ?? '1.17.2';
const STEPS = 10;

const args = benchArgs(['plans', 'sequential', 'durability', 'in-flight']);
const IN_FLIGHT = Number(args.options['in-flight'] ?? 20);
if (!Number.isInteger(IN_FLIGHT) || IN_FLIGHT < 1) {
  console.error(`peer: --in-flight must be a positive integer, got ${args.options['in-flight']}`);
  process.exit(2);
}
const durability = args.options.durability ?? 'default';
if (durability !== 'default' && durability !== 'matched') {
  console.error(`peer: --durability must be default or matched, got ${durability}`);
  process.exit(2);
}
const countRequests = process.env.BENCH_KAFKA_REQUESTS !== '0';
const profilePass = process.argv.includes('--profile');
/** restate-server's defaults (`restate-server --dump-config`): its log's RocksDB WAL is fsynced. */
const RESTATE_DEFAULTS = 'restate-server defaults: [bifrost.local] rocksdb-disable-wal-fsync = false, so its log\'s WAL is fsynced';
/** What each side does to make a step durable, as the result records it. */
const DURABILITY =
  durability === 'matched'
    ? { broker: 'flush.messages=1 on every plan topic: each write (and transaction marker) is fsynced before it is acknowledged; one broker', restate: RESTATE_DEFAULTS }
    : { broker: 'broker defaults: no flush per write (the OS writes back; durability by replication, here one broker)', restate: RESTATE_DEFAULTS };
// Fewer plans than in flight would never reach that many in flight.
// Twice as many plans as in flight at the least, so the figure is not only the ramp up and down.
const plans = Number(args.options.plans ?? Math.max(args.quick ? 40 : 200, 2 * IN_FLIGHT));
if (plans < IN_FLIGHT) {
  console.error(`peer: --plans ${plans} is fewer than --in-flight ${IN_FLIGHT}`);
  process.exit(2);
}
const sequentialPlans = Number(args.options.sequential ?? (args.quick ? 3 : 10));

// ---- Restate from npm, into the cache folder --------------------------------------------------------

const cacheDir = setting('PLAN_LEDGER_PEER_CACHE');
const platformPkg = `@restatedev/restate-server-${process.platform}-${process.arch}`;

function installedVersion(pkg: string): string | undefined {
  try {
    return (createRequire(join(cacheDir, 'package.json'))(`${pkg}/package.json`) as { version: string }).version;
  } catch {
    return undefined;
  }
}

function installPeer(): { server: string; sdk: string; serverVersion: string; sdkVersion: string } {
  const want = { server: RESTATE_SERVER_VERSION, sdk: RESTATE_SDK_VERSION };
  if (installedVersion('@restatedev/restate-server') !== want.server || installedVersion(platformPkg) !== want.server || installedVersion('@restatedev/restate-sdk') !== want.sdk) {
    console.log(`peer: installing @restatedev/restate-server@${want.server} and @restatedev/restate-sdk@${want.sdk} into ${cacheDir}`);
    execFileSync('npm', ['install', '--prefix', cacheDir, '--no-audit', '--no-fund', '--loglevel=error', `@restatedev/restate-server@${want.server}`, `@restatedev/restate-sdk@${want.sdk}`], { stdio: 'inherit' });
  }
  const req = createRequire(join(cacheDir, 'package.json'));
  const server = join(cacheDir, 'node_modules', platformPkg, 'bin', 'restate-server');
  if (!existsSync(server)) throw new Error(`peer: ${platformPkg} has no restate-server binary at ${server} (no binary for this platform in the npm package?)`);
  const sdkDir = join(cacheDir, 'node_modules', '@restatedev', 'restate-sdk');
  const sdkPkg = req('@restatedev/restate-sdk/package.json') as { exports: Record<string, { import: string }> };
  return { server, sdk: join(sdkDir, sdkPkg.exports['.']!.import), serverVersion: installedVersion(platformPkg)!, sdkVersion: installedVersion('@restatedev/restate-sdk')! };
}

interface RestatePeer {
  ingress: string;
  /** Its processes, for their CPU. */
  pids: Record<string, number>;
  stop(): Promise<void>;
}

async function startRestate(server: string, sdk: string): Promise<RestatePeer> {
  const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-peer-'));
  const [fabric, ingress, admin, pg, svc] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  writeFileSync(
    join(dir, 'restate.toml'),
    [
      `base-dir = "${join(dir, 'data')}"`,
      'listen-mode = "tcp"',
      `bind-address = "127.0.0.1:${fabric}"`,
      `advertised-address = "http://127.0.0.1:${fabric}/"`,
      '[ingress]',
      `bind-address = "127.0.0.1:${ingress}"`,
      '[admin]',
      `bind-address = "127.0.0.1:${admin}"`,
      '[admin.query-engine]',
      `pgsql-bind-address = "127.0.0.1:${pg}"`,
      '',
    ].join('\n'),
  );
  const log = openSync(join(dir, 'restate-server.log'), 'a');
  const srv: ChildProcess = spawn(server, ['--no-logo', '--config-file', join(dir, 'restate.toml')], { stdio: ['ignore', log, log], env: { ...process.env, RESTATE_LOG_FORMAT: 'compact', RUST_LOG: 'warn' } });
  let service: Proc | undefined;
  const stop = async () => {
    if (service) await stopProc(service, 5000);
    if (srv.exitCode === null && srv.signalCode === null) {
      const exited = new Promise((r) => srv.once('exit', r));
      srv.kill('SIGTERM');
      const t = setTimeout(() => srv.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until(async () => {
      if (srv.exitCode !== null) throw new Error(`restate-server exited (${srv.exitCode}); log in ${dir}`);
      const ok = await fetch(`http://127.0.0.1:${admin}/health`).then((r) => r.ok, () => false);
      return ok || undefined;
    }, 60_000, 'restate-server admin health', 100);
    service = spawnTs(fileURLToPath(new URL('./procs/restate-service.ts', import.meta.url)), 'restate-service', { BENCH_RESTATE_SDK: sdk, BENCH_PORT: String(svc) });
    await waitLine(service, 'ready', 60_000);
    await until(async () => {
      const r = await fetch(`http://127.0.0.1:${admin}/deployments`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ uri: `http://127.0.0.1:${svc}`, force: true }) }).catch(() => undefined);
      return r && r.ok ? true : undefined;
    }, 60_000, 'registering the SDK service with restate-server', 200);
    // The ingress learns the deployment shortly after registration.
    const url = `http://127.0.0.1:${ingress}`;
    await until(async () => {
      const r = await fetch(`${url}/Chain/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ steps: 1 }) }).catch(() => undefined);
      return r && r.ok ? true : undefined;
    }, 60_000, 'the Chain service at the ingress', 200);
    return { ingress: url, pids: { 'restate-server': srv.pid!, 'sdk-service': service.p.pid! }, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function restateChain(ingress: string): Promise<void> {
  const r = await fetch(`${ingress}/Chain/run`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ steps: STEPS }) });
  const body = (await r.json()) as { done?: number };
  if (!r.ok || body.done !== STEPS) throw new Error(`restate: Chain/run answered ${r.status} ${JSON.stringify(body)}`);
}

// ---- plan-ledger ------------------------------------------------------------------------------------

const chainItems = Array.from({ length: STEPS }, (_, i) => ({ id: `s${i}`, title: `step ${i}`, why: 'benchmark', tool: 'noop', dependsOn: i ? [`s${i - 1}`] : [] }));
const sequentialIds: string[] = [];
/** Wall-clock (ms since epoch) of each one-at-a-time plan's createPlan call and waitFor return. */
const sequentialClock = new Map<string, { start: number; created: number; done: number }>();

async function ledgerChain(ledger: Ledger, record?: string[]): Promise<void> {
  const start = Date.now();
  const { planId } = await ledger.createPlan({ goal: 'peer bench chain', mode: 'execute', items: chainItems });
  const created = Date.now();
  record?.push(planId);
  const s = await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
  if (record) sequentialClock.set(planId, { start, created, done: Date.now() });
  if (Object.values(s.items).some((i) => i.status !== 'completed')) throw new Error(`plan ${planId}: not every item completed`);
}

// ---- the work, the same on both sides ---------------------------------------------------------------

async function throughput(run: () => Promise<void>, n: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(IN_FLIGHT, n) }, async () => {
      while (next < n) {
        next++;
        await run();
      }
    }),
  );
  return (n * STEPS) / ((performance.now() - t0) / 1000);
}

async function sequential(run: () => Promise<void>, n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await run();
  return (performance.now() - t0) / (n * STEPS);
}

// ---- what a phase costs the whole machine -----------------------------------------------------------

type SideName = 'plan-ledger' | 'restate';
type Phase = 'inFlight' | 'oneAtATime';

/** One timed phase of one side: CPU ms per step of every sampled process, and what plan-ledger's client and executor did. */
interface PhaseCost {
  readonly side: SideName;
  readonly phase: Phase;
  readonly steps: number;
  /** Wall clock (ms since epoch) around the phase, to find the records written during it. */
  readonly from: number;
  readonly to: number;
  readonly cpuMsPerStep: Record<string, number>;
  readonly received?: number;
  readonly decoded?: number;
}

/** The local stack's Kafka nodes and registry when the bench's brokers are that stack's (a remote cluster's processes cannot be sampled here). */
function stackPids(config: LedgerConfig): Record<string, number> {
  const info = readStackInfo();
  if (!info || info.brokers.join(',') !== config.brokers.join(',')) return {};
  return Object.fromEntries(runningProcesses(info.dir).map((r) => [r.name === REGISTRY ? 'registry' : r.name, r.pid]));
}

// What the client's events tail was handed and decoded (ReadStats.tail, counted by the client itself).
const readStats = newReadStats();
const tailCounts = () => ({ received: readStats.tail?.received ?? 0, decoded: readStats.tail?.decoded ?? 0 });

/** The result's name: peer / peer-durable, with the in-flight count when it is not the usual 20. */
const resultName = `${durability === 'matched' ? 'peer-durable' : 'peer'}${IN_FLIGHT === 20 ? '' : `-${IN_FLIGHT}`}`;

// ---- main -------------------------------------------------------------------------------------------

const peer = installPeer();
console.log(`peer: restate-server ${peer.serverVersion}, @restatedev/restate-sdk ${peer.sdkVersion}; ${plans} plans × ${STEPS} steps at ${IN_FLIGHT} in flight, ${sequentialPlans} plans one at a time, ${args.rounds} rounds`);
// The Kafka side's config first: a missing broker ends the bench before restate-server is started (and left behind).
const config = benchConfig('peer');
const restate = await startRestate(peer.server, peer.sdk);
if (durability === 'matched') {
  // The plan topics exist before the ledger connects: it finds them and keeps their configs.
  const kafka = benchKafka(config, 'peer-topics');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensureTopics(admin, planTopicSpecs(config).map((s) => ({ ...s, configEntries: [...(s.configEntries ?? []), { name: 'flush.messages', value: '1' }] })));
  } finally {
    await admin.disconnect();
    await kafka.close();
  }
}
const ledger = await connectLedger(config, { readStats });
const executorEnv = { ...configToEnv(config), BENCH_CONCURRENCY: String(IN_FLIGHT) };
const executorScript = fileURLToPath(new URL('./procs/executor.ts', import.meta.url));
let executor = spawnTs(executorScript, 'executor', executorEnv);
try {
  await waitLine(executor, 'ready', 120_000);
  const sides: Record<SideName, Record<string, number | 'self'>> = {
    'plan-ledger': { ...stackPids(config), executor: executor.p.pid!, client: 'self' },
    restate: { ...restate.pids, client: 'self' },
  };
  const watched = { ...sides['plan-ledger'], ...sides.restate };
  const costs: PhaseCost[] = [];
  /** Runs a timed phase with every process sampled before and after it; returns the phase's figure and the side's CPU ms per step. */
  const measured = async (side: SideName, phase: Phase, steps: number, run: () => Promise<number>) => {
    const ledgerSide = side === 'plan-ledger';
    const tail0 = tailCounts();
    const cpu0 = sampleCpu(watched);
    const from = Date.now();
    const value = await run();
    const to = Date.now();
    const perProcess = cpuMsPerStep(cpu0, sampleCpu(watched), steps);
    const cost: PhaseCost = { side, phase, steps, from, to, cpuMsPerStep: perProcess };
    if (ledgerSide) {
      costs.push({ ...cost, received: tailCounts().received - tail0.received, decoded: tailCounts().decoded - tail0.decoded });
    } else {
      costs.push(cost);
    }
    return { value, cpu: Object.keys(sides[side]).reduce((sum, name) => sum + (perProcess[name] ?? 0), 0) };
  };
  const ledgerRun = () => ledgerChain(ledger);
  const restateRun = () => restateChain(restate.ingress);
  // Warm-up on both sides: registry ids, producers, coordinators, connections, JIT.
  await throughput(ledgerRun, IN_FLIGHT);
  await sequential(ledgerRun, 1);
  await throughput(restateRun, IN_FLIGHT * 2);
  await sequential(restateRun, 2);

  const rounds = await paired({
    rounds: args.rounds,
    warmup: 0,
    label: 'peer ',
    subject: async () => {
      const tp = await measured('plan-ledger', 'inFlight', plans * STEPS, () => throughput(ledgerRun, plans));
      const seq = await measured('plan-ledger', 'oneAtATime', sequentialPlans * STEPS, () => sequential(() => ledgerChain(ledger, sequentialIds), sequentialPlans));
      return { stepsPerSecond: tp.value, msPerStep: seq.value, cpuMsPerStepInFlight: tp.cpu, cpuMsPerStepOneAtATime: seq.cpu };
    },
    baseline: async () => {
      const tp = await measured('restate', 'inFlight', plans * STEPS, () => throughput(restateRun, plans));
      const seq = await measured('restate', 'oneAtATime', sequentialPlans * STEPS, () => sequential(restateRun, sequentialPlans));
      return { stepsPerSecond: tp.value, msPerStep: seq.value, cpuMsPerStepInFlight: tp.cpu, cpuMsPerStepOneAtATime: seq.cpu };
    },
  });

  // Command → first event, from record timestamps of the plans run one at a time.
  const names = topicNames(config.topicPrefix);
  const [commands, events] = await Promise.all([readAll(config, names.commands), readAll(config, names.events)]);
  const commandAt = new Map<string, number>();
  for (const r of commands) {
    const k = r.key?.toString();
    if (k && !commandAt.has(k)) commandAt.set(k, Number(r.timestamp));
  }
  const firstEventAt = new Map<string, number>();
  for (const r of events) firstEventAt.set(r.key?.toString() ?? '', Number(r.timestamp));
  const firstEvent = sequentialIds.map((id) => firstEventAt.get(eventKey(id, 1))! - commandAt.get(id)!).filter((x) => Number.isFinite(x));
  // Where a one-at-a-time plan's time goes, from record timestamps and the client's clock (one machine):
  // createPlan → command record, command → first event, first → last event (the executor's chain), last
  // event → createPlan returned / waitFor returned.
  const lastEventAt = new Map<string, number>();
  for (const r of events) {
    const id = parseEventKey(r.key)?.planId;
    if (id) lastEventAt.set(id, Math.max(lastEventAt.get(id) ?? 0, Number(r.timestamp)));
  }
  const phases = { clientToCommand: [] as number[], commandToFirstEvent: [] as number[], chain: [] as number[], lastEventToCreateReturn: [] as number[], lastEventToWaitForReturn: [] as number[] };
  for (const id of sequentialIds) {
    const c = sequentialClock.get(id);
    const cmd = commandAt.get(id);
    const first = firstEventAt.get(eventKey(id, 1));
    const last = lastEventAt.get(id);
    if (!c || cmd === undefined || first === undefined || last === undefined) continue;
    phases.clientToCommand.push(cmd - c.start);
    phases.commandToFirstEvent.push(first - cmd);
    phases.chain.push(last - first);
    phases.lastEventToCreateReturn.push(c.created - first);
    phases.lastEventToWaitForReturn.push(c.done - last);
  }
  const phaseMedians = Object.fromEntries(Object.entries(phases).map(([k, v]) => [k, median(v)]));

  // Per side and phase, medians over the rounds.
  const round3 = (v: number) => Math.round(v * 1000) / 1000;
  const medianBy = (rows: ReadonlyArray<Readonly<Record<string, number>>>, names: readonly string[]) => Object.fromEntries(names.map((n) => [n, round3(median(rows.map((r) => r[n] ?? 0)))]));
  const costOf = (side: SideName, phase: Phase) => {
    const cs = costs.filter((c) => c.side === side && c.phase === phase);
    const own = Object.keys(sides[side]);
    const others = Object.keys(watched).filter((n) => !own.includes(n));
    const out: Record<string, unknown> = {
      totalCpuMsPerStep: round3(median(cs.map((c) => own.reduce((sum, n) => sum + (c.cpuMsPerStep[n] ?? 0), 0)))),
      cpuMsPerStep: medianBy(cs.map((c) => c.cpuMsPerStep), own),
      otherSideIdleCpuMsPerStep: medianBy(cs.map((c) => c.cpuMsPerStep), others),
    };
    if (side === 'plan-ledger') {
      out.clientRecordsPerStep = {
        received: round3(median(cs.map((c) => (c.received ?? 0) / c.steps))),
        decoded: round3(median(cs.map((c) => (c.decoded ?? 0) / c.steps))),
      };
    }
    return out;
  };
  const cost = Object.fromEntries((['plan-ledger', 'restate'] as const).map((side) => [side, { inFlight: costOf(side, 'inFlight'), oneAtATime: costOf(side, 'oneAtATime') }]));

  // The counted pass: the same two phases once more, untimed, with an executor and a client that count
  // every Kafka request they send. The timed executor hands its partitions over first (a graceful stop).
  let kafkaRequests: Record<string, unknown> | undefined;
  if (countRequests) {
    await stopProc(executor);
    executor = spawnTs(executorScript, 'executor-counted', { ...executorEnv, BENCH_KAFKA_REQUESTS: '1', PLAN_LEDGER_KAFKA_DEBUG: 'protocol' });
    await waitLine(executor, 'ready', 120_000);
    const counted = executor;
    const executorRequests = async () => {
      const from = counted.lines.length;
      counted.p.kill('SIGUSR2');
      return (await waitLine(counted, 'kafka-requests', 30_000, from)) as unknown as { requests: Record<string, number>; steps: number };
    };
    const clientRequests = requestCounter();
    const debugBefore = setting('PLAN_LEDGER_KAFKA_DEBUG');
    process.env.PLAN_LEDGER_KAFKA_DEBUG = 'protocol';
    const countingLedger = await connectLedger(config, { logger: createLogger({ level: 'trace' }, clientRequests.stream) });
    // Handles this process opens later get the debug contexts they had before (an empty value is none).
    process.env.PLAN_LEDGER_KAFKA_DEBUG = debugBefore ?? '';
    try {
      const countPhase = async (steps: number, run: () => Promise<unknown>) => {
        const exec0 = await executorRequests();
        const client0 = { ...clientRequests.counts };
        await run();
        const exec1 = await executorRequests();
        if (exec1.steps - exec0.steps !== steps) throw new Error(`peer: the counted executor recorded ${exec1.steps - exec0.steps} steps, not ${steps}`);
        return { executor: requestsPerStep(exec0.requests, exec1.requests, steps), client: requestsPerStep(client0, clientRequests.counts, steps) };
      };
      // Warm the counting client's connections and the new owner's writers, as the timed rounds were.
      await throughput(() => ledgerChain(countingLedger), IN_FLIGHT);
      const inFlight = await countPhase(plans * STEPS, () => throughput(() => ledgerChain(countingLedger), plans));
      const oneAtATime = await countPhase(sequentialPlans * STEPS, () => sequential(() => ledgerChain(countingLedger), sequentialPlans));
      kafkaRequests = {
        perStep: { inFlight, oneAtATime },
        how: 'a counted pass after the timed rounds (not timed): a new executor process and a new client doing the same two phases once, each counting the requests it sends by type (librdkafka protocol debug lines), per item step of the phase',
      };
      for (const [phase, byProc] of Object.entries({ inFlight, oneAtATime })) {
        for (const [proc, perStep] of Object.entries(byProc)) console.log(`${proc} Kafka requests per step (${phase}): ${Object.entries(perStep).map(([k, v]) => `${k} ${v}`).join(', ')}`);
      }
    } finally {
      await countingLedger.close();
    }
  }

  // The profiled pass: where each plan-ledger process's CPU goes at --in-flight plans in flight.
  let profiles: Record<string, unknown> | undefined;
  if (profilePass) {
    await stopProc(executor);
    executor = spawnTs(executorScript, 'executor-profiled', { ...executorEnv, BENCH_PROFILE: '1' });
    await waitLine(executor, 'ready', 120_000);
    const profiled = executor;
    const toggle = async (msg: string) => {
      const from = profiled.lines.length;
      profiled.p.kill('SIGUSR2');
      return waitLine(profiled, msg, 30_000, from);
    };
    await throughput(() => ledgerChain(ledger), IN_FLIGHT);
    const brokerPid = stackPids(config)['kafka-1'];
    const jfrFile = join(tmpdir(), `plan-ledger-peer-${process.pid}.jfr`);
    const stopBroker = brokerPid === undefined ? undefined : recordJvm(brokerPid, jfrFile);
    const stopClient = await profileSelf();
    await toggle('profiling');
    // Three times the timed phase's plans: the broker's recorder samples every 10-20 ms per running thread.
    await throughput(() => ledgerChain(ledger), 3 * plans);
    const executorProfile = (await toggle('profile')).summary;
    const client = await stopClient();
    const broker = stopBroker?.();
    rmSync(jfrFile, { force: true });
    profiles = {
      phase: `${3 * plans} plans at ${IN_FLIGHT} in flight, untimed`,
      executor: executorProfile,
      client,
      broker: broker ?? 'not recorded: no local stack broker here, or no jcmd on PATH',
      how: 'executor and client: the V8 profiler (node:inspector) started and stopped around the phase, self time by group and by function (bench/profile-summary.ts); broker: Java Flight Recorder execution samples (bench/lib/profiles.ts)',
    };
    const head = (s: { groups?: ReadonlyArray<{ group: string; pctOfBusy: number }> }) => (s.groups ?? []).filter((g) => g.group !== 'idle').slice(0, 6).map((g) => `${g.group} ${fmt(g.pctOfBusy)}%`).join(', ');
    console.log(`profile, executor (% of busy): ${head(executorProfile as never)}`);
    console.log(`profile, client (% of busy): ${head(client)}`);
    if (broker) console.log(`profile, broker (% of samples): ${broker.top.slice(0, 6).map((f) => `${f.frame} ${fmt(f.pct)}%`).join(', ')}`);
  }

  const restateLabel = `Restate ${peer.serverVersion}`;
  const result = writeResult({
    name: resultName,
    title: `The peer side by side: N plans × a ${STEPS}-item chain, no-op tool (plan-ledger vs ${restateLabel})${durability === 'matched' ? ', the broker flushing every message' : ''}`,
    quick: args.quick,
    settings: { plans, steps: STEPS, inFlight: IN_FLIGHT, sequentialPlans, rounds: args.rounds, partitions: config.partitions, executorConcurrency: IN_FLIGHT, restateServer: peer.serverVersion, restateSdk: peer.sdkVersion, restateConfig: 'defaults, loopback ports, temp data dir', durability, brokerDurability: DURABILITY.broker, restateDurability: DURABILITY.restate },
    metrics: [
      metric(rounds, { key: 'stepsPerSecond', label: `steps/s at ${IN_FLIGHT} in flight`, unit: 'steps/s', better: 'higher', baselineLabel: restateLabel, aim: '≥ 1.5×' }),
      metric(rounds, { key: 'msPerStep', label: 'per step, one plan at a time', unit: 'ms', better: 'lower', baselineLabel: restateLabel, aim: '≤ 1.5×' }),
      metric(rounds, { key: 'cpuMsPerStepInFlight', label: `CPU per step at ${IN_FLIGHT} in flight, every process of the side`, unit: 'ms', better: 'lower', baselineLabel: restateLabel }),
      metric(rounds, { key: 'cpuMsPerStepOneAtATime', label: 'CPU per step, one plan at a time, every process of the side', unit: 'ms', better: 'lower', baselineLabel: restateLabel }),
    ],
    rounds,
    notes: [
      'Client-timed on both sides: plan-ledger from createPlan to waitFor(completed); Restate from the ingress call to its response.',
      'Executor and SDK service each run in their own node process; restate-server and the Kafka broker are separate processes on the same machine.',
      `Durability: plan-ledger's broker: ${DURABILITY.broker}; Restate: ${DURABILITY.restate}.`,
      `CPU per step: the CPU time every process of a side used during the timed phase ÷ its steps — plan-ledger: ${Object.keys(sides['plan-ledger']).join(', ')}; Restate: ${Object.keys(sides.restate).join(', ')} (client = the bench process, which runs both sides' clients).`,
    ],
    extra: {
      oneAtATimePhasesMedianMs: { ...phaseMedians, samples: phases.chain.length, how: 'record timestamps and the client clock; chain = first to last event of the plan (all its 10 steps); lastEventToCreateReturn is from the first event' },
      cost: {
        ...cost,
        processes: sides,
        clockTicksPerSecond: clockTicks(),
        phases: costs,
        how: 'medians over the rounds. CPU: /proc/<pid>/stat utime+stime (+ its descendants, + children waited for) of each process, process.cpuUsage() for the client (this process), sampled before and after each timed phase; otherSideIdleCpuMsPerStep: the other side’s processes, idle meanwhile (background, e.g. other work on a shared stack). clientRecordsPerStep: received and decoded = records the client’s events tail was handed and decoded during the phase (ReadStats.tail). Kafka requests per step: extra.kafkaRequests',
      },
      ...(kafkaRequests ? { kafkaRequests } : {}),
      ...(profiles ? { profiles } : {}),
      commandToFirstEvent: { p50Ms: median(firstEvent), p99Ms: quantile(firstEvent, 0.99), samples: firstEvent.length, aimP50Ms: 10, how: 'Kafka record timestamps: CreatePlan command record vs the plan’s first event record (the executor’s decide time)' },
    },
  });
  const [tp, lat, cpuTp, cpuLat] = result.metrics as [Metric, Metric, Metric, Metric];
  console.log(`\n| | steps/s at ${IN_FLIGHT} in flight | per step, one plan at a time | CPU ms/step at ${IN_FLIGHT} in flight | CPU ms/step, one at a time |\n|---|---:|---:|---:|---:|`);
  console.log(`| ${restateLabel} | ${fmt(tp.baseline.median)} | ${fmt(lat.baseline.median)} ms | ${fmt(cpuTp.baseline.median)} | ${fmt(cpuLat.baseline.median)} |`);
  console.log(`| plan-ledger | ${fmt(tp.subject.median)} (${fmt(tp.ratio)}×) | ${fmt(lat.subject.median)} ms (${fmt(lat.ratio)}×) | ${fmt(cpuTp.subject.median)} (${fmt(cpuTp.ratio)}×) | ${fmt(cpuLat.subject.median)} (${fmt(cpuLat.ratio)}×) |`);
  for (const [side, byPhase] of Object.entries(cost)) for (const [phase, c] of Object.entries(byPhase)) console.log(`${side} ${phase}: ${JSON.stringify(c)}`);
  console.log(`plan-ledger one plan at a time, medians (ms): ${Object.entries(phaseMedians).map(([k, v]) => `${k} ${fmt(v)}`).join(', ')}`);
  console.log(`plan-ledger command → first event p50 ${fmt(median(firstEvent))} ms (p99 ${fmt(quantile(firstEvent, 0.99))} ms, ${firstEvent.length} plans)`);
} finally {
  await ledger.close();
  await stopProc(executor);
  await restate.stop();
  await dropTopics(config);
}
process.exit(0);
