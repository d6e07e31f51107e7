// A chaos run: a private 3-broker stack, three executor processes and a projector, hundreds of plans
// calling an idempotent effects service, and faults arriving at random — executors killed (SIGKILL),
// stopped (SIGTERM), frozen past their session timeout (SIGSTOP, then SIGCONT: a zombie) and cut off from
// the brokers while they keep running (a network partition, through the proxies of network.ts), one broker
// killed and restarted, another killed while a partition's leadership moves, the registry restarted. At
// the end it checks what the ledger promises and writes a JSON and a Markdown report. Loopback only;
// bounded in plans and in time; stops by itself.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { loadConfig, topicNames, type LedgerConfig } from '../src/config.js';
import { createKafka, ensurePlanTopics, partitionFor } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';
import { LedgerError } from '../src/errors.js';
import type { PlanState } from '../src/plan/index.js';
import { moveLeader, prepareJvmAdmin } from '../stack/jvm-admin.js';
import { restartRegistry, stackDown, stackReset, stackUp, startBroker, stopBroker } from '../stack/stack.js';
import { EffectsService } from '../test/fixtures/effects-service.js';
import { WRITER_HEADER } from '../executor/appender.js';
import { lateEvents, type StampedRecord } from './late-events.js';
import { openLinks } from './network.js';
import { chaosPlan, type ChaosPlan } from './plans.js';
import { freePortBlock, freeStackPorts } from '../stack/processes.js';
import { CHAOS_API_TOKEN, executorProcess, projectorProcess, type LogLine, type ServiceProcess } from './processes.js';

export interface ChaosOptions {
  /** Root plans to run (each ten items; children and follow-ups come on top). */
  readonly plans: number;
  readonly executors: number;
  /** Hard bound on the whole run after the stack is up; the run reports what it saw and stops. */
  readonly maxMinutes: number;
  /** Share of the time bound over which the plans arrive (evenly spaced). */
  readonly arrivalShare: number;
  /** A fault every [min, max] ms. */
  readonly faultEveryMs: readonly [number, number];
  readonly sessionTimeoutMs: number;
  /**
   * `all` (default): executor faults (network partitions among them), plus one broker kill, one broker
   * killed while a partition's leadership moves, a registry restart and a projector kill.
   * `brokers`: only broker kills, one broker of three at a time, again and again until the work is done
   * (a broker is killed once the last one killed has been back `brokerGapMs`); every other one while a
   * partition's leadership moves.
   * `rolling`: a rolling restart, as an upgrade does it: each broker in turn (1, 2, 3, 1, …) stopped with
   * SIGTERM (a controlled shutdown: it hands its leaderships over first) and started again, the next one
   * once every replica is back in sync and `brokerGapMs` has passed; until the work is done.
   */
  readonly faults?: 'all' | 'brokers' | 'rolling';
  /** Each broker's `broker.session.timeout.ms`: how long the controller waits before it fences a silent broker (Kafka's default 9 s). */
  readonly brokerSessionMs?: number;
  /**
   * `dedicated`: the three brokers share one KRaft controller process of their own, which no fault touches,
   * as production clusters are laid out; `combined`: each broker is a controller too, so a broker killed
   * may be the active controller and the quorum elects another first. Default: dedicated in `brokers` and
   * `rolling` modes (they measure what the ledger's clients do when brokers go), combined in `all`.
   */
  readonly controller?: 'dedicated' | 'combined';
  /** In `brokers` mode, how long the restarted broker is left back before the next kill (default 15 s). */
  readonly brokerGapMs?: number;
  /**
   * Executor slot 1's clock runs this far ahead and slot 2's this far behind, for the whole run (every
   * executor started in those slots); slot 0 keeps the machine's clock. Default 0. The checks that read
   * record timestamps take each record's writer (its header) and correct by that writer's offset.
   */
  readonly clockSkewMs?: number;
  readonly seed: number;
  /** Where the report and the processes' logs go. */
  readonly outDir: string;
  /** The private stack's folder (wiped at the end unless keepStack). */
  readonly stackDir: string;
  readonly keepStack?: boolean;
  readonly label: string;
  readonly log: (line: string) => void;
}

/** The CI-sized run (`npm run chaos -- --short` and test/e2e/chaos.e2e.test.ts): 20 plans in at most 3 minutes of work. */
export const SHORT_RUN = { plans: 20, executors: 3, maxMinutes: 3, arrivalShare: 0.5, faultEveryMs: [3000, 6000], sessionTimeoutMs: 6000, clockSkewMs: 300_000 } as const satisfies Partial<ChaosOptions>;

/**
 * The seeds every short run repeats before a random one of its own: fault schedules that once went wrong,
 * or checked a fix.
 * A seed repeats the run's random choices (which fault, which executor, when), not the machine's timing.
 */
export const SHORT_SEEDS: ReadonlyArray<{ readonly seed: number; readonly found: string }> = [
  { seed: 797224394, found: 'restarted beside a broker kill, the registry took 39.8 s; executors started meanwhile exited at start-up and, the last one killed, no executor decided two createPlan calls for 60 s (fixed in 1230ce2: the two faults take turns, no executor fault strikes the last executor running)' },
  { seed: 867253643, found: 'the run that checked that fix: a network partition (taken over in 7.2 s) and a kill during a leadership move (writable in 9.8 s), OK' },
];

/** A seed for a random run: printed in its report, so `--seed` repeats its schedule. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 31);
}

/**
 * `kill9-pair`: two executors killed -9 at once (each a fault of its own); `network-partition`: an executor
 * cut off from every broker while it runs, until its partitions are taken over; `leader-move-kill`: a
 * broker killed -9 while an events-topic partition's leadership moves to or from it; `projector-kill`:
 * kill -9 and a new projector process.
 */
type FaultKind = 'kill9' | 'kill9-pair' | 'sigterm' | 'freeze' | 'network-partition' | 'broker-kill' | 'broker-restart' | 'leader-move-kill' | 'registry-restart' | 'projector-kill';

const isExecutorFault = (kind: FaultKind) => kind === 'kill9' || kind === 'kill9-pair' || kind === 'sigterm' || kind === 'freeze' || kind === 'network-partition';

interface Fault {
  readonly kind: FaultKind;
  readonly target: string;
  readonly at: number;
  /** Partitions the target owned (executor faults). */
  readonly partitions: number[];
  recoveredAt: number | null;
  /** For a freeze: when the process was continued; for a network partition: when it was healed. */
  continuedAt?: number;
  /** For a network partition: when the victim restored a partition again after the heal. */
  rejoinedAt?: number | null;
  /** What else the fault did (a leadership move: the partition, the leaders, the delay of the kill). */
  detail?: string;
}

export interface ChaosReport {
  readonly label: string;
  readonly seed: number;
  /** Which faults the run made (see {@link ChaosOptions.faults}). */
  readonly faultMode: 'all' | 'brokers' | 'rolling';
  readonly startedAt: string;
  readonly seconds: number;
  readonly stack: { brokers: number; replicationFactor: number; partitions: number; upSeconds: number; brokerSessionMs: number | null; clockSkewMs: number; controller: 'dedicated' | 'combined' };
  /** Events records written by executors whose clock ran ahead and behind (`clockSkewMs`), by their writer header. */
  readonly skewedRecords: { ahead: number; behind: number };
  /** Seconds from the first plan submitted to the last plan settled (or the time bound). */
  readonly workSeconds: number;
  /** From the stack answering to the work's start (topics, executors owning every partition, the projector, poison) and from the work settled to this report (the checks). */
  readonly setupSeconds: number;
  readonly checkSeconds: number;
  /** Milliseconds of each check, in the order they ran (where checkSeconds goes). */
  readonly checkMs: Record<string, number>;
  readonly plans: { root: number; child: number; completed: number; failed: number; expectedFailed: number; other: number; wrongOutcome: string[] };
  readonly items: { total: number; effectItems: number; followUps: number };
  readonly effects: { keys: number; calls: number; replays: number; duplicates: number; lost: number; unexplainedKeys: string[] };
  /**
   * Tool calls repeated under one idempotency key, each examined: a repeat is explained when the call is
   * marked `recovering` (its owner found the intent recorded by an earlier owner and invoked it again);
   * any other repeat is a tool called twice for one attempt.
   */
  readonly repeats: { keys: number; calls: number; explained: number; unexplained: string[] };
  /** The second reader (the Python verifier's census, confluent-kafka + fastavro, no code shared): every topic at read_committed. */
  readonly independent: { ran: boolean; error: string | null; plans: number; events: number; chainsOk: number; findingsByKind: Record<string, number>; agrees: boolean; disagreements: string[]; uncommitted: Record<string, number[]> };
  readonly faults: { kill9: number; kill9Pairs: number; sigterm: number; freeze: number; networkPartitions: number; brokerKills: number; brokerRestarts: number; leaderMoveKills: number; registryRestarts: number; projectorKills: number };
  /**
   * Each network partition: how long the executor was cut off, whether every partition it owned was
   * restored by another executor before the heal, until when (the recovery, as for the other faults) and
   * until the first event a new owner appended there (null when none came); how long after the heal it
   * restored a partition again, and its log lines after the heal that say a writer of it was fenced.
   */
  readonly networkPartitions: Array<{ atS: number; target: string; partitions: number[]; cutMs: number | null; takenOverBeforeHeal: boolean; recoveredMs: number | null; firstEventMs: number | null; rejoinedMs: number | null; fencedAfterHeal: number }>;
  readonly recoveries: {
    count: number;
    medianMs: number | null;
    maxMs: number | null;
    unrecovered: number;
    brokerBackMs: number[];
    /** With `--faults brokers`: how long after a restart every replica was back in sync (the next kill waits for it). */
    brokerInSyncMs: number[];
    registryBackMs: number[];
    projectorBackMs: number[];
    /** Restarts of the killed broker whose JVM exited during start-up (started again, at most twice). */
    brokerStartsFailed: string[];
    /**
     * Executors that exited without a fault of the run (an executor started while the registry is down
     * exits: it registers its schemas at start-up); the run starts the slot again 2 s later, as a
     * supervisor would. Each: the process, its exit, its last log lines.
     */
    executorExits: string[];
  };
  /**
   * Every fault in order: seconds into the work, its target, the partitions it owned, and how long until
   * they (or it) were back; for a leadership move, until the partition had a live leader and the killed
   * broker was out of its in-sync replicas (writable with acks=all again).
   */
  readonly faultList: Array<{ atS: number; kind: FaultKind; target: string; partitions: number[]; recoveredMs: number | null; detail?: string }>;
  /**
   * `lateEvents`: events that follow, in their partition's log, an event a new owner decided after taking
   * the partition over, though they were decided before that take-over began (see late-events.ts); each is
   * also counted in `zombieAppendsVisible` and listed in `zombieEvents`.
   */
  readonly fencing: { fencedAppendsRefused: number; zombieAppendsVisible: number; lateEvents: number; intentsChecked: number; zombieEvents: string[] };
  readonly rebuilds: { plans: number; digestsEqual: boolean; mismatches: string[] };
  readonly chains: { verified: number; broken: string[] };
  /**
   * Every `createPlan` call of the run's clients: each one that threw (a timeout included) is a problem,
   * since two brokers of three and a registry can always serve; decision times of the ones answered.
   */
  readonly submissions: { calls: number; failed: number; rawErrors: number; failures: string[]; decisionMs: { p50: number | null; p99: number | null; max: number | null }; slowest: string[] };
  /** Event keys (planId:seq) found more than once in the events topic: byte-identical re-sends or not. */
  readonly resends: { keys: number; identical: number; differing: string[]; examples: string[] };
  /**
   * Records of the events topic that were never committed (aborted transactions of fenced or killed
   * owners), found by the second reader at read_uncommitted, and how many of them the ledger's own
   * reader (read_committed) was shown: any is a failure.
   */
  readonly aborted: { records: number; visible: number; examples: string[] };
  readonly dlq: { records: number; poisonSent: number; onlyPoison: boolean; unexpected: string[] };
  readonly lost: number;
  readonly duplicates: number;
  readonly ok: boolean;
  readonly problems: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const execFileAsync = promisify(execFile);

/** mulberry32: a small seeded generator, so a run's fault schedule can be repeated with its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function percentile(xs: number[], q: number): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

/** The five slowest decisions, each with the last fault before it was decided, timed from the call (+: during it). */
function slowestDecisions(decisions: ReadonlyArray<{ planId: string; began: number; ms: number }>, faults: readonly Fault[]): string[] {
  const s = (ms: number) => `${ms >= 0 ? '+' : ''}${(ms / 1000).toFixed(1)} s`;
  return [...decisions]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, 5)
    .map((d) => {
      const f = faults.filter((x) => x.at <= d.began + d.ms).sort((a, b) => b.at - a.at)[0];
      const fault = f ? `${f.kind} of ${f.target} at ${s(f.at - d.began)}${f.recoveredAt !== null ? `, back at ${s(f.recoveredAt - d.began)}` : ''}` : 'no fault before it';
      return `${d.planId} ${(d.ms / 1000).toFixed(1)} s (${fault})`;
    });
}

function median(xs: number[]): number | null {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : Math.round((s[m - 1]! + s[m]!) / 2);
}


/**
 * Runs the chaos scenario and returns its report (also written to `outDir`). Whatever happens, every
 * process it started — executors, projector, the stack's JVMs — is stopped before it returns or throws.
 */
export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    return await chaos(o, cleanups);
  } catch (e) {
    // A run that stops before its report still names its seed (and where its logs are): the one way to repeat it.
    const message = e instanceof Error ? e.message : String(e);
    throw new Error(`chaos run (seed ${o.seed}) stopped before its report: ${message} (logs in ${join(o.outDir, `${o.label}-logs`)})`, { cause: e });
  } finally {
    for (const c of cleanups.reverse()) await c().catch((e: unknown) => o.log(`clean-up: ${e instanceof Error ? e.message : String(e)}`));
  }
}

async function chaos(o: ChaosOptions, cleanups: Array<() => Promise<unknown>>): Promise<ChaosReport> {
  const t0 = Date.now();
  const random = rng(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const logDir = join(o.outDir, `${o.label}-logs`);
  mkdirSync(logDir, { recursive: true });
  const problems: string[] = [];
  const runId = `chaos${randomBytes(3).toString('hex')}`;

  o.log(`seed ${o.seed} (--seed ${o.seed} repeats this fault schedule); starting a 3-broker stack in ${o.stackDir}`);
  const { kafkaPort, registryPort } = await freeStackPorts(3);
  cleanups.push(async () => {
    // The brokers' and the registry's own logs go beside the services' before the stack's data is wiped.
    for (const name of readdirSync(o.stackDir)) {
      for (const log of ['server.log', 'registry.log']) {
        const file = join(o.stackDir, name, log);
        if (existsSync(file)) copyFileSync(file, join(logDir, `${name}-${log}`));
      }
    }
    await (o.keepStack ? stackDown({ dir: o.stackDir }) : stackReset({ dir: o.stackDir, confirm: true }));
  });
  const brokerSettings: Record<string, string> = o.brokerSessionMs === undefined ? {} : { 'broker.session.timeout.ms': String(o.brokerSessionMs), 'broker.heartbeat.interval.ms': String(Math.min(2000, Math.max(100, Math.floor(o.brokerSessionMs / 6)))) };
  // Each executor slot reaches the brokers through proxies of its own, in front of a listener of its own
  // on every broker: cutting one slot's link partitions that executor alone (see network.ts).
  const links = await openLinks(await freePortBlock(2 * o.executors * 3 - 1), o.executors, 3);
  cleanups.push(() => Promise.all(links.map((l) => l.close())));
  const controller = o.controller ?? (o.faults === 'brokers' || o.faults === 'rolling' ? 'dedicated' : 'combined');
  const up = await stackUp({ dir: o.stackDir, brokers: 3, dedicatedController: controller === 'dedicated', kafkaPort, registryPort, brokerSettings, extraListeners: links.map((l) => l.listener), log: o.log });
  o.log(`stack up in ${up.seconds.toFixed(1)}s: ${up.info.brokers.join(',')}`);
  const partitions = 6;
  const config: LedgerConfig = loadConfig({
    brokers: up.info.brokers,
    registryUrl: up.info.registryUrl,
    topicPrefix: runId,
    partitions,
    replicationFactor: up.info.replicationFactor,
  });
  const topics = topicNames(config.topicPrefix);
  const kafka = createKafka(config, silentLogger(), 'chaos');
  const admin = kafka.admin();
  await admin.connect();
  cleanups.push(() => admin.disconnect());
  cleanups.push(() => kafka.close());
  await ensurePlanTopics(admin, config);
  prepareJvmAdmin(); // java found and the admin tool compiled now, not during the faults

  const effects = await new EffectsService().start();
  cleanups.push(() => effects.stop());
  const cwd = process.cwd();
  const projectorPort = await freePortBlock(0);
  let projector = projectorProcess(config, projectorPort, { logDir, cwd });
  cleanups.push(() => projector.stop());
  const projectorUrl = `http://127.0.0.1:${projectorPort}`;

  const all: ServiceProcess[] = [];
  cleanups.push(() => Promise.all(all.map((p) => p.stop())));
  const slots: ServiceProcess[] = [];
  const generation: number[] = [];
  /** Each executor's clock offset, by its id (the label), for the checks that read record timestamps. */
  const clockOffsets = new Map<string, number>();
  const slotClockOffset = (i: number) => (i === 1 ? (o.clockSkewMs ?? 0) : i === 2 ? -(o.clockSkewMs ?? 0) : 0);
  /** Executors that exited without a fault (e.g. at start-up, the registry down): each started again, like a supervisor would. */
  const unplannedExits: string[] = [];
  let supervising = true;
  const spawnSlot = (i: number) => {
    generation[i] = (generation[i] ?? 0) + 1;
    const label = `exec${i}-g${generation[i]}`;
    clockOffsets.set(label, slotClockOffset(i));
    const p = executorProcess({ ...config, brokers: links[i]!.brokers }, label, { logDir, cwd, effectsUrl: effects.url, sessionTimeoutMs: o.sessionTimeoutMs, clockOffsetMs: slotClockOffset(i) });
    slots[i] = p;
    all.push(p);
    void p.exited.then(async ({ code, signal }) => {
      if (p.expectedExit || !supervising || slots[i] !== p) return;
      unplannedExits.push(`${p.label} exited (${code ?? signal}): ${tailOf(join(logDir, `${p.label}.log`), 2)}`);
      o.log(`${p.label} exited on its own (${code ?? signal}); starting the slot again in 2 s`);
      await sleep(2000);
      if (supervising && slots[i] === p) spawnSlot(i);
    });
  };
  for (let i = 0; i < o.executors; i++) spawnSlot(i);

  // Who owns what, from the executors' own words: the last 'partition restored' line per partition.
  const restores = () =>
    all.flatMap((p) =>
      p.lines
        .filter((l) => l.line.msg === 'partition restored' && l.line.component === 'partition-owner')
        // The executor's own clock (pino's time), not when this process read the line.
        .map((l) => ({ label: p.label, at: Number(l.line.time ?? l.at), partition: Number(l.line.partition), ms: Number(l.line.ms ?? 0) })),
    );
  const ownedBy = (label: string) => {
    const last = new Map<number, { label: string; at: number }>();
    for (const r of restores().sort((a, b) => a.at - b.at)) last.set(r.partition, r);
    return [...last].filter(([, r]) => r.label === label).map(([p]) => p);
  };
  const waitAllOwned = async (timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (new Set(restores().map((r) => r.partition)).size < partitions) {
      if (Date.now() > deadline) throw new Error('executors did not take all partitions');
      await sleep(250);
    }
  };
  await waitAllOwned(180_000);
  o.log(`${o.executors} executors own all ${partitions} partitions; projector on ${projectorUrl}`);

  // Deliberate poison: undecodable command records. They must end in the DLQ, and nothing else may.
  const poisonKeys = ['poison-0', 'poison-1', 'poison-2'];
  const writer = kafka.writer();
  await writer.connect();
  await writer.send(
    topics.commands,
    poisonKeys.map((key, i) => ({ key, value: Buffer.from(`not a command ${i}`), partition: partitionFor(key, partitions) })),
  );
  await writer.disconnect();

  // The client's own log (librdkafka's warnings among it), beside the services': a slow decision can be
  // the client's as well as an executor's.
  const clientLog = pino({ level: 'info', base: { name: 'chaos-client' } }, pino.destination({ dest: join(logDir, 'client.log'), sync: true }));
  const ledger: Ledger = await connectLedger(config, { logger: clientLog });
  cleanups.push(() => ledger.close());
  const workStart = Date.now();
  const deadline = workStart + o.maxMinutes * 60_000;
  const plans: ChaosPlan[] = Array.from({ length: o.plans }, (_, n) => chaosPlan(runId, n));
  const terminal = new Map<string, string>();
  let submitted = 0;

  // Plans arrive from a few concurrent clients over the first part of the run, while the faults go on.
  // A submission answered with a timeout may still have been accepted: retrying with the same planId
  // then meets PLAN_EXISTS, which counts as submitted.
  const queue = [...plans];
  const decisionMs: number[] = [];
  const decisions: Array<{ planId: string; began: number; ms: number }> = [];
  const submitFailures: string[] = [];
  let submitCalls = 0;
  let rawErrors = 0;
  const submitOne = async (p: ChaosPlan) => {
    for (let tries = 0; ; tries++) {
      const began = Date.now();
      submitCalls++;
      try {
        await ledger.createPlan(p.input, { timeoutMs: 60_000 });
        decisionMs.push(Date.now() - began);
        decisions.push({ planId: p.planId, began, ms: Date.now() - began });
        return;
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        // The retry of a call that timed out after its command was accepted: the first call is the failure.
        if (tries > 0 && /PLAN_EXISTS|already exists/i.test(msg)) return;
        if (!(e instanceof LedgerError)) rawErrors++;
        submitFailures.push(`${p.planId} after ${Date.now() - began} ms: ${e instanceof LedgerError ? e.code : (e as Error)?.name ?? 'raw'}: ${msg}`);
        if (tries >= 20 || Date.now() > deadline) {
          problems.push(`could not submit ${p.planId}: ${msg}`);
          return;
        }
        await sleep(1000);
      }
    }
  };
  // Arrivals are spread over the first part of the time bound, so the faults meet work in every phase.
  const paceMs = (o.maxMinutes * 60_000 * o.arrivalShare) / plans.length;
  const submitAll = Promise.all(
    Array.from({ length: 6 }, async () => {
      for (let p = queue.shift(); p && Date.now() < deadline; p = queue.shift()) {
        const n = plans.indexOf(p);
        const wait = workStart + n * paceMs - Date.now();
        if (wait > 0) await sleep(wait);
        await submitOne(p);
        submitted++;
      }
    }),
  );

  const pollTerminal = (async () => {
    while (Date.now() < deadline && terminal.size < plans.length) {
      for (const p of plans) {
        if (terminal.has(p.planId)) continue;
        const res = await fetch(`${projectorUrl}/api/plans/${p.planId}`, { headers: { authorization: `Bearer ${CHAOS_API_TOKEN}` } }).catch(() => null);
        if (!res?.ok) continue;
        const body = (await res.json()) as { state: PlanState | null };
        const s = body.state?.status;
        if (s === 'completed' || s === 'failed' || s === 'cancelled') terminal.set(p.planId, s);
      }
      await sleep(1000);
    }
  })();

  // Faults, one at a time, until the work is done.
  const faults: Fault[] = [];
  const brokerBackMs: number[] = [];
  const registryBackMs: number[] = [];
  const projectorBackMs: number[] = [];
  const brokerStartsFailed: string[] = [];
  let lastProgress = '';
  // The broker kill and the registry restart come on their own clock, so they overlap executor faults:
  // each when a share of the plans has settled or a share of the time has passed, whichever is first.
  const due = (share: number) => terminal.size >= plans.length * share || Date.now() >= workStart + (deadline - workStart) * share;
  const inSyncMs: number[] = [];
  /** Until every partition of the run's topics and of the brokers' own (offsets, transactions) has all its replicas in sync (at most 3 minutes). */
  const waitInSync = async () => {
    for (const until = Date.now() + 180_000; Date.now() < until; await sleep(500)) {
      const names = (await admin.listTopics().catch(() => [] as string[])).filter((t) => t.startsWith(`${config.topicPrefix}.`) || t === '__consumer_offsets' || t === '__transaction_state');
      const meta = names.length ? await admin.fetchTopicMetadata(names).catch(() => undefined) : undefined;
      if (meta && meta.every((t) => t.partitions.every((p) => p.isr.length === p.replicas.length))) return;
    }
    o.log('replicas not all back in sync after 3 minutes; killing the next broker anyway');
  };
  const killBroker = async () => {
    const node = 1 + Math.floor(random() * 3);
    const b: Fault = { kind: 'broker-kill', target: `kafka-${node}`, at: Date.now(), partitions: [], recoveredAt: null };
    faults.push(b);
    o.log(`fault: kill -9 broker kafka-${node}`);
    await stopBroker({ dir: o.stackDir, node, hard: true });
    b.recoveredAt = await restartKilledBroker(node, b.at);
    o.log(`broker kafka-${node} back after ${b.recoveredAt - b.at} ms`);
  };
  /** One step of a rolling restart: the broker stopped with SIGTERM (a controlled shutdown) and started again at once. */
  let rollingNext = 1;
  const rollBroker = async () => {
    const node = rollingNext;
    rollingNext = (rollingNext % 3) + 1;
    const b: Fault = { kind: 'broker-restart', target: `kafka-${node}`, at: Date.now(), partitions: [], recoveredAt: null };
    faults.push(b);
    o.log(`fault: rolling restart of broker kafka-${node} (SIGTERM)`);
    await stopBroker({ dir: o.stackDir, node });
    b.recoveredAt = await restartKilledBroker(node, b.at, 0);
    o.log(`broker kafka-${node} back after ${b.recoveredAt - b.at} ms`);
  };
  /**
   * A leadership move on an events-topic partition (its replicas reordered so another in-sync replica is
   * the preferred one, then a preferred-leader election), and the new or the old leader killed -9 within
   * 300 ms of asking for the election. Recovered once the partition has a live leader and the killed
   * broker is out of its in-sync replicas (writes with acks=all go through again); then the broker restarts.
   */
  const leaderMoveKill = async () => {
    const p = Math.floor(random() * partitions);
    const meta = (await admin.fetchTopicMetadata([topics.events]))[0]!.partitions.find((x) => x.partitionId === p)!;
    const from = meta.leader;
    const others = meta.isr.filter((r) => r !== from);
    if (from < 0 || !others.length) {
      o.log(`events p${p} has leader ${from} and in-sync replicas ${meta.isr.join(',')}: no leadership to move; a plain broker kill instead`);
      return killBroker();
    }
    const to = pick(others);
    const killNew = random() < 0.5;
    const node = killNew ? to : from;
    const delay = Math.floor(random() * 300);
    const move = moveLeader({ brokers: up.info.brokers }, topics.events, p, to);
    cleanups.push(async () => move.cancel());
    let asked: { at: number; leaderBefore: number };
    try {
      asked = await move.moving;
    } catch (e) {
      problems.push(`the leadership move of events p${p} (${from} → ${to}) did not start: ${(e as Error).message}`);
      move.cancel();
      return;
    }
    await sleep(delay);
    const f: Fault = { kind: 'leader-move-kill', target: `kafka-${node}`, at: Date.now(), partitions: [], recoveredAt: null, detail: `events p${p}: leader ${asked.leaderBefore} → ${to}, the ${killNew ? 'new' : 'old'} leader killed ${Date.now() - asked.at} ms after the election was asked for` };
    faults.push(f);
    o.log(`fault: kill -9 broker kafka-${node} while ${f.detail}`);
    await stopBroker({ dir: o.stackDir, node, hard: true });
    move.killed(node);
    // The tool (Kafka's Java AdminClient) looks at the partition every 100 ms until it is writable.
    const writable = await Promise.race([move.writable.catch(() => null), sleep(180_000).then(() => null)]);
    f.recoveredAt = writable?.at ?? null;
    f.detail += `; ${writable ? `led by ${writable.leader}, in sync without ${node}` : 'NOT writable again within 3 minutes'}`;
    void move.elected.then((e) => (f.detail += `; the election's answer: ${e}`));
    o.log(`events p${p} writable again ${writable === null ? 'NOT within 3 minutes' : `after ${writable.at - f.at} ms (leader ${writable.leader})`}`);
    const back = await restartKilledBroker(node, f.at);
    o.log(`broker kafka-${node} back after ${back - f.at} ms`);
  };
  /** A stopped broker started again (`downMs` after it was stopped: 5 s after a kill) on its storage; returns when it is back. */
  const restartKilledBroker = async (node: number, killedAt: number, downMs = 5000) => {
    await sleep(Math.max(0, killedAt + downMs - Date.now()));
    // A restarted JVM that exits during start-up (the harness's problem, not the ledger's; seen in 1 of 4
    // CI rehearsals, cause not found yet) is started again, at most twice; each such start is counted.
    for (let attempt = 1; ; attempt++) {
      try {
        await startBroker({ dir: o.stackDir, node });
        break;
      } catch (e) {
        if (attempt >= 3 || !(e instanceof LedgerError) || e.code !== 'ENVIRONMENT') throw e;
        brokerStartsFailed.push(`kafka-${node} start ${attempt}: ${e.message}; its log ends: ${tailOf(join(o.stackDir, `kafka-${node}`, 'server.log'))}`);
        o.log(`broker kafka-${node} exited during start-up (start ${attempt}); starting it again`);
        await sleep(2000);
      }
    }
    const back = Date.now();
    brokerBackMs.push(back - killedAt);
    return back;
  };
  // A broker fault and the registry's restart never overlap: a registry restarting with a broker down
  // takes four times as long, and every executor started meanwhile exits at start-up.
  let infraTurn: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(fault: () => Promise<T>): Promise<T> => {
    const run = infraTurn.then(fault);
    infraTurn = run.catch(() => {});
    return run;
  };
  /** One broker killed, then — once every replica is back in sync — another while a partition's leadership moves. */
  const brokerFaults = async () => {
    while (!due(0.15)) await sleep(250);
    if (terminal.size >= plans.length) return;
    await oneAtATime(killBroker);
    await waitInSync();
    while (!due(0.25)) await sleep(250);
    if (terminal.size >= plans.length) return;
    await oneAtATime(leaderMoveKill);
  };
  /** The registry killed and restarted (one at a time with the broker faults). */
  const registryFault = async () => {
    while (!due(0.4)) await sleep(250);
    if (terminal.size >= plans.length) return;
    await oneAtATime(async () => {
      const r: Fault = { kind: 'registry-restart', target: 'registry', at: Date.now(), partitions: [], recoveredAt: null };
      faults.push(r);
      o.log('fault: kill -9 and restart the registry');
      await restartRegistry({ dir: o.stackDir, hard: true });
      r.recoveredAt = Date.now();
      registryBackMs.push(r.recoveredAt - r.at);
      o.log(`registry back after ${r.recoveredAt - r.at} ms`);
    });
  };
  /**
   * The projector killed -9 while it projects and writes snapshots (it writes them after every batch that
   * changes a plan, and a watermark every interval); a new process restores from what it wrote. On a clock
   * of its own, and killed even when the work settled first: its restore is checked either way.
   */
  const projectorFault = async () => {
    while (!due(0.3)) await sleep(250);
    const pk: Fault = { kind: 'projector-kill', target: 'projector', at: Date.now(), partitions: [], recoveredAt: null };
    faults.push(pk);
    o.log('fault: kill -9 the projector');
    projector.signal('SIGKILL');
    await projector.exited;
    await sleep(500 + random() * 1500);
    projector = projectorProcess(config, projectorPort, { logDir, cwd });
    for (const until = Date.now() + 180_000; ; ) {
      if (Date.now() > until) {
        problems.push('the projector did not serve again within 3 minutes of its kill');
        return;
      }
      const res = await fetch(`${projectorUrl}/api/plans?limit=1`, { headers: { authorization: `Bearer ${CHAOS_API_TOKEN}` } }).catch(() => null);
      if (res?.ok) break;
      if (!projector.alive) {
        // Exited at start-up (the registry restarting meanwhile, say): started again, as a supervisor would.
        unplannedExits.push(`${projector.label} exited (${projector.exitStatus}): ${tailOf(join(logDir, `${projector.label}.log`), 2)}`);
        o.log('the projector exited on its own; starting it again in 2 s');
        await sleep(2000);
        projector = projectorProcess(config, projectorPort, { logDir, cwd });
      }
      await sleep(250);
    }
    pk.recoveredAt = Date.now();
    projectorBackMs.push(pk.recoveredAt - pk.at);
    o.log(`projector back after ${pk.recoveredAt - pk.at} ms`);
  };
  const brokersOnly = o.faults === 'brokers' || o.faults === 'rolling';
  const infraFaults = (async () => {
    if (brokersOnly) {
      // One broker of three at a time, again and again, while the plans arrive and run.
      while (Date.now() < deadline && terminal.size < plans.length) {
        // One broker of three at a time: the next fault waits until the last broker is back in every
        // partition's in-sync replicas (else a second kill leaves fewer than min.insync.replicas, an outage
        // no client can ride out), then the gap.
        const t = Date.now();
        await waitInSync();
        if (faults.length) inSyncMs.push(Date.now() - t);
        await sleep(o.brokerGapMs ?? 15_000);
        if (terminal.size >= plans.length) return;
        // A rolling restart stops each in turn; in kill mode every other kill lands while a partition's leadership moves.
        await (o.faults === 'rolling' ? rollBroker() : faults.length % 2 === 1 ? leaderMoveKill() : killBroker());
      }
      return;
    }
    // The brokers' faults and the services' go on two clocks of their own.
    await Promise.all([brokerFaults(), registryFault(), projectorFault()]);
  })();
  /** One executor fault: the victim's partitions as it owned them, then its kind; a killed or stopped executor's slot is filled again. */
  const strike = async (slot: number, kind: FaultKind) => {
    const victim = slots[slot]!;
    const f: Fault = { kind, target: victim.label, at: Date.now(), partitions: ownedBy(victim.label), recoveredAt: null };
    faults.push(f);
    o.log(`fault: ${kind} ${victim.label} (owns ${f.partitions.join(',') || 'nothing'})`);
    if (kind === 'freeze') {
      victim.signal('SIGSTOP');
      victim.frozen = true;
      await sleep(o.sessionTimeoutMs + 3000);
      victim.signal('SIGCONT');
      victim.frozen = false;
      f.continuedAt = Date.now();
    } else if (kind === 'network-partition') {
      // Cut off from every broker while it runs: its group session expires (it revokes its partitions as
      // lost), another executor fences and restores them; what it had in flight reaches the brokers only
      // after the heal, where the new owners' fencing refuses it. The cut lasts past the session timeout
      // and until its partitions have been taken over (at most a minute past the session timeout: other
      // faults at the same time, a broker's above all, can hold a take-over up).
      const link = links[slot]!;
      link.cut();
      await sleep(o.sessionTimeoutMs + 4000);
      while (f.recoveredAt === null && f.partitions.length && Date.now() < f.at + o.sessionTimeoutMs + 60_000) await sleep(250);
      link.heal();
      f.continuedAt = Date.now();
      o.log(`healed ${victim.label} after ${f.continuedAt - f.at} ms${f.partitions.length ? `; its partitions ${f.recoveredAt === null ? 'were NOT all taken over' : `were taken over after ${f.recoveredAt - f.at} ms`}` : ''}`);
      // Back in the group, it owns partitions again (at most a minute).
      const since = f.continuedAt;
      const rejoined = () => restores().find((r) => r.label === victim.label && r.at >= since)?.at ?? null;
      while ((f.rejoinedAt = rejoined()) === null && Date.now() < since + 60_000 && victim.alive) await sleep(250);
      o.log(`${victim.label} ${f.rejoinedAt === null ? 'did NOT restore a partition within a minute of the heal' : `restored a partition ${f.rejoinedAt - since} ms after the heal`}`);
    } else {
      victim.expectedExit = true;
      victim.signal(kind === 'sigterm' ? 'SIGTERM' : 'SIGKILL');
      const t = setTimeout(() => victim.signal('SIGKILL'), 30_000);
      await victim.exited;
      clearTimeout(t);
      await sleep(500 + random() * 1500);
      spawnSlot(slot);
    }
  };
  const faultLoop = (async () => {
    while (!brokersOnly && Date.now() < deadline && terminal.size < plans.length) {
      await sleep(o.faultEveryMs[0] + random() * (o.faultEveryMs[1] - o.faultEveryMs[0]));
      if (terminal.size >= plans.length) break;
      const progress = `${terminal.size}/${plans.length} plans settled, ${submitted} submitted, ${effects.effects.size} effects`;
      if (progress !== lastProgress) o.log(progress);
      lastProgress = progress;
      // Prefer an executor that owns partitions: one that has just restarted and owns nothing yet would
      // test little. Now and then two at once (kill -9 both; the first chance after the second fault, then
      // one in six): one executor is left to take everything over.
      // Never the last executor running: with none left (the others restarting, perhaps unable to start
      // while the registry is down) nothing can be decided, an outage no ledger rides out. Running means in
      // the group: a process still starting (no assignment yet since it started) cannot take anything over.
      const running = slots.filter((p) => p.alive && !p.frozen && p.lines.some((l) => l.line.msg === 'assignment')).length;
      if (running < 2) continue;
      const owners = slots.map((p, i) => ({ i, owns: ownedBy(p.label).length })).filter((x) => x.owns > 0);
      const pairs = faults.filter((f) => f.kind === 'kill9-pair').length;
      const executorFaultsSoFar = faults.filter((f) => isExecutorFault(f.kind)).length;
      // A network partition at the first chance after the first fault, then among the others.
      if (owners.length && executorFaultsSoFar >= 1 && !faults.some((f) => f.kind === 'network-partition')) {
        await strike(pick(owners).i, 'network-partition');
        continue;
      }
      if (owners.length >= 2 && running >= 3 && ((pairs === 0 && executorFaultsSoFar >= 2) || random() < 1 / 6)) {
        const first = pick(owners);
        const second = pick(owners.filter((x) => x.i !== first.i));
        await Promise.all([strike(first.i, 'kill9-pair'), strike(second.i, 'kill9-pair')]);
        continue;
      }
      const slot = owners.length ? pick(owners).i : Math.floor(random() * slots.length);
      // A network partition only of an executor that owns partitions: cutting one off that owns nothing shows nothing.
      await strike(slot, pick<FaultKind>(owners.length ? ['kill9', 'kill9', 'sigterm', 'freeze', 'network-partition'] : ['kill9', 'kill9', 'sigterm', 'freeze']));
    }
  })();

  // A fault is recovered once every partition its target owned has been restored after it by another
  // process — or, for a freeze (a partition), by the target itself once it was continued (healed): a member that comes back after
  // its session expired has lost its partitions, and the group may hand them straight back to it, which
  // fences and restores them afresh like any new owner.
  const trackRecoveries = () => {
    for (const f of faults) {
      if (f.recoveredAt !== null || !f.partitions.length || !isExecutorFault(f.kind)) continue;
      const after = restores().filter((r) => r.at >= f.at && (r.label !== f.target || (f.continuedAt !== undefined && r.at >= f.continuedAt)));
      const times = f.partitions.map((p) => after.filter((r) => r.partition === p).map((r) => r.at).sort((a, b) => a - b)[0]);
      if (times.every((x) => x !== undefined)) f.recoveredAt = Math.max(...(times as number[]));
    }
  };
  const recoveryTimer = setInterval(trackRecoveries, 250);

  await Promise.all([submitAll, pollTerminal, faultLoop, infraFaults]);
  const settledAt = Date.now();
  supervising = false;
  // Give the last faults' take-overs a moment to show up.
  const settle = Date.now() + 30_000;
  while (Date.now() < settle && faults.some((f) => f.recoveredAt === null && f.partitions.length)) {
    trackRecoveries();
    await sleep(250);
  }
  clearInterval(recoveryTimer);
  trackRecoveries();
  o.log(`work settled: ${terminal.size}/${plans.length} plans; checking`);

  // ---- Checks ----
  const checkMs: Record<string, number> = {};
  let lapAt = Date.now();
  const lap = (name: string) => {
    checkMs[name] = Date.now() - lapAt;
    lapAt = Date.now();
  };
  const expectedById = new Map(plans.map((p) => [p.planId, p]));
  // Rebuild 1: the client folds every plan from the log.
  const replays = await ledger.replay({ all: true });
  const ours = replays.filter((r) => r.planId.startsWith(runId) || !expectedById.has(r.planId));
  const rootIds = new Set(plans.map((p) => p.planId));
  const childIds = ours.filter((r) => !rootIds.has(r.planId)).map((r) => r.planId);
  // Child plans finish before their parents' items do; wait until the projector has them too.
  const projected = async (planId: string) => {
    const res = await fetch(`${projectorUrl}/api/plans/${planId}`, { headers: { authorization: `Bearer ${CHAOS_API_TOKEN}` } }).catch(() => null);
    if (!res?.ok) return null;
    return (await res.json()) as { stateDigest: string | null; state: PlanState | null };
  };
  // Rebuild 2: the projector process folded the same log on its own.
  const mismatches: string[] = [];
  const states = new Map<string, PlanState>();
  for (const r of ours) {
    let view = await projected(r.planId);
    for (let i = 0; i < 20 && (!view || !r.ok || view.stateDigest !== r.stateDigest); i++) {
      await sleep(500);
      view = await projected(r.planId);
    }
    if (!r.ok) mismatches.push(`${r.planId}: the log does not fold (${r.reason})`);
    else if (!view) mismatches.push(`${r.planId}: unknown to the projector`);
    else if (view.stateDigest !== r.stateDigest) mismatches.push(`${r.planId}: projector ${view.stateDigest} vs replay ${r.stateDigest}`);
    if (view?.state) states.set(r.planId, view.state);
  }

  lap('replay and projector views');
  // Chains: every plan's hash chain, seq order and independent rebuilds agree.
  const verified = await ledger.verify({ all: true });
  lap('verify');

  // Outcomes and effects.
  const wrongOutcome: string[] = [];
  let completed = 0;
  let failed = 0;
  let other = 0;
  let lost = 0;
  let duplicates = 0;
  let itemsTotal = 0;
  let followUps = 0;
  let effectItems = 0;
  const keysByItem = new Map<string, Set<string>>();
  for (const [key, e] of effects.effects) {
    const planId = key.slice(0, key.indexOf('/'));
    const k = `${planId}/${e.itemId}`;
    if (!keysByItem.has(k)) keysByItem.set(k, new Set());
    keysByItem.get(k)!.add(key);
  }
  const explained = new Set<string>();
  for (const p of plans) {
    const s = states.get(p.planId);
    if (!s) {
      lost++;
      wrongOutcome.push(`${p.planId}: not in the ledger`);
      continue;
    }
    if (s.status === 'completed') completed++;
    else if (s.status === 'failed') failed++;
    else other++;
    if (s.status !== p.expected) wrongOutcome.push(`${p.planId}: ${s.status}, expected ${p.expected}`);
    itemsTotal += s.itemOrder.length;
    followUps += s.itemOrder.filter((id) => s.items[id]!.followUpOf !== null).length;
    for (const id of p.effectItems) {
      effectItems++;
      const item = s.items[id]!;
      const keys = keysByItem.get(`${p.planId}/${id}`) ?? new Set<string>();
      for (const a of item.attempts) explained.add(a.idempotencyKey);
      if (item.status === 'completed') {
        // Exactly one effect, under the key of the attempt the ledger completed.
        const done = item.attempts.find((a) => a.outcome === 'succeeded');
        if (keys.size > 1) duplicates += keys.size - 1;
        if (keys.size === 0 || !done || !keys.has(done.idempotencyKey)) {
          lost++;
          wrongOutcome.push(`${p.planId}/${id}: completed without its effect`);
        }
      } else if (s.status === 'completed') {
        lost++;
        wrongOutcome.push(`${p.planId}/${id}: ${item.status} in a completed plan`);
      }
    }
  }
  for (const c of childIds) {
    const s = states.get(c);
    if (s?.status !== 'completed') wrongOutcome.push(`child ${c}: ${s?.status ?? 'unknown'}`);
    if (s) itemsTotal += s.itemOrder.length;
  }
  const unexplainedKeys = [...effects.effects.keys()].filter((k) => !explained.has(k));

  // Repeated calls, one by one: after a key's first call, each further call must be a recovery's.
  const callsByKey = new Map<string, typeof effects.calls>();
  for (const c of effects.calls) callsByKey.set(c.key, [...(callsByKey.get(c.key) ?? []), c]);
  const repeated = [...callsByKey].filter(([, cs]) => cs.length > 1);
  const unexplainedRepeats = repeated.flatMap(([key, cs]) =>
    cs
      .slice(1)
      .filter((c) => !c.recovering)
      .map((c) => `${key}: call ${cs.indexOf(c) + 1} of ${cs.length} by ${c.executorId} was not a recovery (earlier: ${cs.slice(0, cs.indexOf(c)).map((x) => `${x.executorId}${x.recovering ? ' recovering' : ''}`).join(', ')})`),
  );
  const repeats = { keys: repeated.length, calls: repeated.reduce((n, [, cs]) => n + cs.length - 1, 0), explained: 0, unexplained: unexplainedRepeats.slice(0, 50) };
  repeats.explained = repeats.calls - unexplainedRepeats.length;

  // Zombies: a frozen executor wakes up after its session expired and another executor took its
  // partitions over, fencing them (each new owner of a partition records intents with a fencing token
  // above every earlier one). A zombie's late append would show in the partition's log as an intent whose
  // token is below one recorded before it, or as a second, different record at a taken plan position
  // (counted with the re-sends below). Intents are read with their log offsets, partition by partition.
  let zombieAppendsVisible = 0;
  const zombieEvents: string[] = [];
  const intents = new Map<number, Array<{ offset: bigint; token: number; where: string }>>();
  for (const planId of states.keys()) {
    for (const r of await ledger.planEvents(planId)) {
      if (r.event.type !== 'IntentRecorded') continue;
      const list = intents.get(r.partition) ?? [];
      list.push({ offset: BigInt(r.offset), token: r.event.data.fencingToken, where: `${planId} seq ${r.event.seq} (${r.event.actor}, token ${r.event.data.fencingToken}, p${r.partition}@${r.offset})` });
      intents.set(r.partition, list);
    }
  }
  for (const list of intents.values()) {
    list.sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
    let highest = 0;
    for (const i of list) {
      if (i.token < highest) {
        zombieAppendsVisible++;
        zombieEvents.push(`${i.where} after token ${highest}`);
      }
      highest = Math.max(highest, i.token);
    }
  }
  const intentsChecked = [...intents.values()].reduce((n, l) => n + l.length, 0);
  lap('outcomes, effects and intents');
  const fencedAppendsRefused = all.reduce((n, p) => n + p.lines.filter(saysFenced).length, 0);

  // Re-sends: the events topic read raw. The design allows an exact re-send of an event (same key, same
  // bytes; the fold ignores it and compaction removes it); a second record under a key with other bytes
  // would be two different facts at one position.
  const byKey = new Map<string, Array<{ offset: string; partition: number; value: string }>>();
  /** Every offset the ledger's reader returned, by partition (for the aborted-records check). */
  const seenOffsets = new Map<number, Set<number>>();
  const stamped = new Map<number, StampedRecord[]>();
  /** Events records written by an executor whose clock ran ahead, and behind. */
  const skewedRecords = { ahead: 0, behind: 0 };
  await kafka.readToEnd({
    topic: topics.events,
    onRecords: (records) => {
      for (const r of records) {
        const key = r.key?.toString() ?? '(null)';
        if (!seenOffsets.has(r.partition)) seenOffsets.set(r.partition, new Set());
        seenOffsets.get(r.partition)!.add(Number(r.offset));
        if (!byKey.has(key)) byKey.set(key, []);
        byKey.get(key)!.push({ offset: r.offset, partition: r.partition, value: r.value?.toString('base64') ?? '' });
        if (r.value === null) continue;
        const list = stamped.get(r.partition) ?? [];
        // On the machine's clock: less the offset of the executor that wrote it (a skewed one stamps its own time).
        const writer = r.headers[WRITER_HEADER];
        const offset = writer === undefined ? 0 : (clockOffsets.get(writer.toString()) ?? 0);
        if (offset > 0) skewedRecords.ahead++;
        else if (offset < 0) skewedRecords.behind++;
        list.push({ offset: BigInt(r.offset), stamp: Number(r.timestamp) - offset, key });
        stamped.set(r.partition, list);
      }
    },
  });
  lap('events read raw');
  // Late events: decided by an owner before a take-over began, appended after the new owner's first event.
  const late = lateEvents(stamped, restores());
  const resent = [...byKey].filter(([, rs]) => rs.length > 1);
  const resends = {
    keys: resent.length,
    identical: resent.filter(([, rs]) => rs.every((r) => r.value === rs[0]!.value)).length,
    differing: resent.filter(([, rs]) => rs.some((r) => r.value !== rs[0]!.value)).map(([k, rs]) => `${k} at ${rs.map((r) => `p${r.partition}@${r.offset}`).join(', ')}`),
    examples: resent.slice(0, 10).map(([k, rs]) => `${k} at ${rs.map((r) => `p${r.partition}@${r.offset}`).join(', ')}`),
  };

  // The second reader: every topic of the run read at read_committed by code that shares nothing with the
  // ledger, each plan's chain verified from the spec; it must see the plans and events the ledger does.
  const folded = ours.filter((r): r is Extract<(typeof ours)[number], { ok: true }> => r.ok);
  const independent = await independentCensus(config, { plans: folded.length, events: folded.reduce((n, r) => n + r.events, 0) }, o.log);
  lap('independent reader (Python)');
  // Aborted records: what the second reader found at read_uncommitted and not at read_committed; the
  // ledger's reader must have been shown none of them.
  const abortedAt = Object.entries(independent.uncommitted).flatMap(([p, offsets]) => offsets.map((offset) => ({ partition: Number(p), offset })));
  const abortedSeen = abortedAt.filter((a) => seenOffsets.get(a.partition)?.has(a.offset));
  const aborted = { records: abortedAt.length, visible: abortedSeen.length, examples: abortedSeen.slice(0, 10).map((a) => `p${a.partition}@${a.offset}`) };

  // Every plan that does not verify is broken, whatever the cause (a re-sent event included).
  const broken = verified.filter((x) => !x.ok).map((v) => `${v.planId}: ${v.firstBroken?.check} at seq ${v.firstBroken?.seq}: ${v.firstBroken?.reason}`);

  // DLQ: exactly the poison, nothing else.
  const dlqKeys: string[] = [];
  await kafka.readToEnd({
    topic: topics.dlq,
    onRecords: (records) => {
      for (const r of records) dlqKeys.push(r.key?.toString() ?? '(null)');
    },
  });
  const unexpectedDlq = dlqKeys.filter((k) => !poisonKeys.includes(k));
  const onlyPoison = unexpectedDlq.length === 0 && poisonKeys.every((k) => dlqKeys.includes(k));

  // The processes and the stack stop in runChaos's clean-up.

  const executorFaults = faults.filter((f) => isExecutorFault(f.kind));
  const measured = executorFaults.filter((f) => f.partitions.length && f.recoveredAt !== null).map((f) => f.recoveredAt! - f.at);
  const unrecovered = executorFaults.filter((f) => f.partitions.length && f.recoveredAt === null).length;
  const calls = effects.calls.length;
  if ((o.clockSkewMs ?? 0) > 0 && (skewedRecords.ahead === 0 || skewedRecords.behind === 0)) {
    problems.push(`clock skew did not happen: ${skewedRecords.ahead} events written by an executor ahead, ${skewedRecords.behind} by one behind`);
  }
  if (terminal.size < plans.length) problems.push(`${plans.length - terminal.size} plans had not settled within ${o.maxMinutes} minutes of work`);
  if (wrongOutcome.length) problems.push(`${wrongOutcome.length} plans or items ended otherwise than their tools dictate`);
  if (mismatches.length) problems.push(`${mismatches.length} plans rebuild differently`);
  if (broken.length) problems.push(`${broken.length} chains do not verify`);
  if (!onlyPoison) problems.push(`the DLQ holds ${dlqKeys.length} records, unexpected: ${unexpectedDlq.join(', ') || 'none'}; poison missing: ${poisonKeys.filter((k) => !dlqKeys.includes(k)).join(', ') || 'none'}`);
  if (aborted.visible) problems.push(`${aborted.visible} aborted records were shown to the ledger's reader: ${aborted.examples.join(', ')}`);
  if (resends.keys) problems.push(`${resends.keys} events re-sent (${resends.identical} identical, ${resends.differing.length} differing)`);
  if (submitFailures.length) problems.push(`${submitFailures.length} createPlan calls failed (${rawErrors} with a raw client error)`);
  if (zombieAppendsVisible) problems.push(`${zombieAppendsVisible} intents with a fencing token below an earlier one are in the log`);
  if (late.length) problems.push(`${late.length} events decided before an owner took their partition over were appended after its first event (a fenced owner's events)`);
  if (unexplainedKeys.length) problems.push(`${unexplainedKeys.length} effects under keys the ledger never recorded`);
  if (unexplainedRepeats.length) problems.push(`${unexplainedRepeats.length} tool calls repeated under a key without a recovery`);
  if (!independent.agrees) problems.push(`the independent reader disagrees: ${independent.error ?? independent.disagreements.join('; ')}`);
  if (unrecovered) problems.push(`${unrecovered} executor faults whose partitions were not taken over`);
  const networkPartitions = partitionFigures(faults, all, restores(), stamped, workStart);
  for (const n of networkPartitions) {
    if (!n.takenOverBeforeHeal) problems.push(`network partition of ${n.target} at ${n.atS} s: its partitions ${n.partitions.join(',')} were not all taken over while it was cut off`);
    if (n.rejoinedMs === null && n.partitions.length) problems.push(`network partition of ${n.target} at ${n.atS} s: it did not own a partition again within a minute of the heal`);
  }
  for (const f of faults.filter((x) => x.kind === 'leader-move-kill' && x.recoveredAt === null)) problems.push(`${f.detail}: not writable again within 3 minutes`);
  lap('the rest');
  const report: ChaosReport = {
    label: o.label,
    seed: o.seed,
    faultMode: o.faults ?? 'all',
    startedAt: new Date(t0).toISOString(),
    seconds: Math.round((Date.now() - t0) / 1000),
    workSeconds: Math.round((settledAt - workStart) / 1000),
    setupSeconds: Math.round((workStart - t0) / 1000 - up.seconds),
    checkSeconds: Math.round((Date.now() - settledAt) / 1000),
    checkMs,
    stack: { brokers: up.info.nodes, replicationFactor: up.info.replicationFactor, partitions, upSeconds: Math.round(up.seconds), brokerSessionMs: o.brokerSessionMs ?? null, clockSkewMs: o.clockSkewMs ?? 0, controller },
    skewedRecords,
    plans: { root: plans.length, child: childIds.length, completed, failed, expectedFailed: plans.filter((p) => p.expected === 'failed').length, other, wrongOutcome: wrongOutcome.slice(0, 50) },
    items: { total: itemsTotal, effectItems, followUps },
    effects: { keys: effects.effects.size, calls, replays: calls - effects.effects.size, duplicates, lost, unexplainedKeys: unexplainedKeys.slice(0, 50) },
    repeats,
    aborted,
    independent,
    faults: {
      kill9: faults.filter((f) => f.kind === 'kill9').length,
      kill9Pairs: faults.filter((f) => f.kind === 'kill9-pair').length / 2,
      projectorKills: faults.filter((f) => f.kind === 'projector-kill').length,
      sigterm: faults.filter((f) => f.kind === 'sigterm').length,
      freeze: faults.filter((f) => f.kind === 'freeze').length,
      networkPartitions: networkPartitions.length,
      brokerKills: faults.filter((f) => f.kind === 'broker-kill').length,
      brokerRestarts: faults.filter((f) => f.kind === 'broker-restart').length,
      leaderMoveKills: faults.filter((f) => f.kind === 'leader-move-kill').length,
      registryRestarts: faults.filter((f) => f.kind === 'registry-restart').length,
    },
    networkPartitions,
    faultList: faults.map((f) => ({ atS: Math.round((f.at - workStart) / 100) / 10, kind: f.kind, target: f.target, partitions: f.partitions, recoveredMs: f.recoveredAt === null ? null : f.recoveredAt - f.at, ...(f.detail !== undefined ? { detail: f.detail } : {}) })),
    recoveries: { count: measured.length, medianMs: median(measured), maxMs: measured.length ? Math.max(...measured) : null, unrecovered, brokerBackMs, brokerInSyncMs: inSyncMs, registryBackMs, projectorBackMs, brokerStartsFailed, executorExits: unplannedExits.slice(0, 50) },
    fencing: { fencedAppendsRefused, zombieAppendsVisible: zombieAppendsVisible + resends.differing.length + late.length, lateEvents: late.length, intentsChecked, zombieEvents: [...zombieEvents, ...late].slice(0, 50) },
    rebuilds: { plans: ours.length, digestsEqual: mismatches.length === 0, mismatches: mismatches.slice(0, 50) },
    chains: { verified: verified.length, broken: broken.slice(0, 50) },
    submissions: { calls: submitCalls, failed: submitFailures.length, rawErrors, failures: submitFailures.slice(0, 50), decisionMs: { p50: percentile(decisionMs, 0.5), p99: percentile(decisionMs, 0.99), max: decisionMs.length ? Math.max(...decisionMs) : null }, slowest: slowestDecisions(decisions, faults) },
    resends,
    dlq: { records: dlqKeys.length, poisonSent: poisonKeys.length, onlyPoison, unexpected: unexpectedDlq.slice(0, 50) },
    lost,
    duplicates,
    ok: problems.length === 0,
    problems,
  };
  writeFileSync(join(o.outDir, `${o.label}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(o.outDir, `${o.label}.md`), renderMarkdown(report));
  return report;
}

const ms = (x: number | null) => (x === null ? 'n/a' : `${(x / 1000).toFixed(1)} s`);

/** A log line of an executor that says one of its writers was fenced by a newer owner. */
const saysFenced = (l: LogLine) => /fenced/i.test(String(l.line.msg ?? '')) || (l.line.err as { code?: string } | undefined)?.code === 'FENCED' || l.line.reason === 'fenced';

/** The report's figures of each network partition (see {@link ChaosReport.networkPartitions}). */
function partitionFigures(
  faults: readonly Fault[],
  processes: readonly ServiceProcess[],
  restores: ReadonlyArray<{ label: string; at: number; partition: number }>,
  events: ReadonlyMap<number, readonly StampedRecord[]>,
  workStart: number,
): ChaosReport['networkPartitions'] {
  return faults
    .filter((f) => f.kind === 'network-partition')
    .map((f) => {
      const healed = f.continuedAt ?? null;
      const victim = processes.find((p) => p.label === f.target);
      // The first event a new owner decided in each partition the victim owned: stamped at or after its take-over.
      const firsts = f.partitions.map((p) => {
        const takeover = restores.filter((r) => r.partition === p && r.at >= f.at && r.label !== f.target).sort((a, b) => a.at - b.at)[0];
        const stamps = (events.get(p) ?? []).map((r) => r.stamp).filter((t) => takeover !== undefined && t >= takeover.at);
        return stamps.length ? Math.min(...stamps) : undefined;
      });
      return {
        atS: Math.round((f.at - workStart) / 100) / 10,
        target: f.target,
        partitions: f.partitions,
        cutMs: healed === null ? null : healed - f.at,
        takenOverBeforeHeal: f.partitions.length === 0 || (f.recoveredAt !== null && healed !== null && f.recoveredAt <= healed),
        recoveredMs: f.recoveredAt === null ? null : f.recoveredAt - f.at,
        firstEventMs: f.partitions.length && firsts.every((t) => t !== undefined) ? Math.max(...(firsts as number[])) - f.at : null,
        rejoinedMs: f.rejoinedAt == null || healed === null ? null : f.rejoinedAt - healed,
        fencedAfterHeal: healed === null || !victim ? 0 : victim.lines.filter((l) => Number(l.line.time ?? l.at) >= healed && saysFenced(l)).length,
      };
    });
}

function faultRows(r: ChaosReport): string[] {
  return [
    '| at (s) | fault | target | owned | back after | |',
    '|---:|---|---|---|---:|---|',
    ...r.faultList.map((f) => `| ${f.atS} | ${f.kind} | ${f.target} | ${f.partitions.join(',') || '-'} | ${f.recoveredMs === null ? (f.partitions.length || !isExecutorFault(f.kind) ? '**not**' : '-') : ms(f.recoveredMs)} | ${f.detail ?? ''} |`),
  ];
}

/**
 * The block `npm run chaos -- --docs` writes into docs/operations/chaos.md between its markers: the
 * command, when and where it ran, the verdict, the figures and the faults, all from the report.
 */
export function renderDocsBlock(r: ChaosReport, command: string, machine: string): string {
  return [
    `\`${command}\` (seed ${r.seed}) on ${machine}, ${r.startedAt.slice(0, 10)}: **${r.ok ? 'OK' : 'PROBLEMS'}** — ${r.seconds} s in all (3-broker stack up in ${r.stack.upSeconds} s, ${r.workSeconds} s of work under faults, checks after).`,
    '',
    '| | |',
    '|---|---|',
    ...reportRows(r).map(([k, v]) => `| ${k} | ${v} |`),
    '',
    ...(r.problems.length ? ['Problems:', '', ...r.problems.map((p) => `- ${p}`), ''] : []),
    '<details><summary>The faults of this run</summary>',
    '',
    ...faultRows(r),
    '',
    '</details>',
  ].join('\n');
}

/** RELIABILITY.md's summary of one run (`--docs`): each promise as a count, the faults, the recoveries. */
export function renderSummaryBlock(r: ChaosReport, command: string, machine: string): string {
  const f = r.faults;
  const plansVerified = r.plans.root + r.plans.child;
  return [
    `\`${command}\` (seed ${r.seed}) on ${machine}, ${r.startedAt.slice(0, 10)}: **${r.ok ? 'OK' : 'PROBLEMS'}**, ${r.plans.root} plans and ${r.plans.child} child plans (${r.items.total} items, ${r.effects.keys} effects) under ${r.faultList.length} faults in ${r.workSeconds} s of work. Whole report: [docs/operations/chaos.md](docs/operations/chaos.md).`,
    '',
    `- Faults: executors killed -9 ${f.kill9} times (${f.kill9Pairs} of them two at once), stopped with SIGTERM ${f.sigterm}, frozen past their session ${f.freeze}, cut off from every broker ${f.networkPartitions}; a broker killed ${f.brokerKills}, a broker killed while a partition's leadership moved ${f.leaderMoveKills}; the registry restarted ${f.registryRestarts}, the projector killed -9 ${f.projectorKills}; ${r.stack.clockSkewMs ? `one executor's clock ${r.stack.clockSkewMs / 60_000} min ahead and one ${r.stack.clockSkewMs / 60_000} min behind throughout (${r.skewedRecords.ahead} and ${r.skewedRecords.behind} events written by them)` : 'every clock on the machine\'s time'}.`,
    `- Lost: **${r.lost}**. Duplicated effects: **${r.duplicates}**. Events re-sent: **${r.resends.keys}**. Aborted records shown to a reader: **${r.aborted.visible}** (of ${r.aborted.records} in the log). Zombie events: **${r.fencing.zombieAppendsVisible + r.fencing.lateEvents}**. Tool calls repeated without a recovery: **${r.repeats.unexplained.length}** (${r.repeats.explained} by recoveries). \`createPlan\` calls failed: **${r.submissions.failed}** of ${r.submissions.calls}.`,
    `- Chains verified: ${r.chains.verified} of ${plansVerified} by the ledger's \`verify\`, ${r.independent.chainsOk} of ${r.independent.plans} by the Python reader (${r.independent.agrees ? 'it agrees: same plans, same events, no finding' : `**it disagrees**: ${r.independent.error ?? r.independent.disagreements.slice(0, 3).join('; ')}`}); rebuilds ${r.rebuilds.digestsEqual ? 'equal' : '**differ**'}; the DLQ holds ${r.dlq.onlyPoison ? 'only the deliberate poison' : '**more than the poison**'}.`,
    `- Recoveries: ${r.recoveries.count} take-overs, median ${ms(r.recoveries.medianMs)}, max ${ms(r.recoveries.maxMs)}${r.recoveries.unrecovered ? ` (**${r.recoveries.unrecovered} not**)` : ''}; a command decided in ${r.submissions.decisionMs.p50 ?? 'n/a'} / ${r.submissions.decisionMs.p99 ?? 'n/a'} / ${r.submissions.decisionMs.max ?? 'n/a'} ms (p50 / p99 / max).`,
    ...(r.problems.length ? ['', 'Problems:', '', ...r.problems.map((p) => `- ${p}`)] : []),
  ].join('\n');
}

function reportRows(r: ChaosReport): Array<[string, string]> {
  return [
    ['plans (root + child)', `${r.plans.root} + ${r.plans.child}`],
    ['completed / failed (expected failed)', `${r.plans.completed} / ${r.plans.failed} (${r.plans.expectedFailed})`],
    ['items (follow-ups)', `${r.items.total} (${r.items.followUps})`],
    ['effects performed / tool calls', `${r.effects.keys} / ${r.effects.calls}`],
    ['executor kill -9 / two at once / SIGTERM', `${r.faults.kill9} / ${r.faults.kill9Pairs} / ${r.faults.sigterm}`],
    ['zombie freezes (SIGSTOP past the session timeout)', String(r.faults.freeze)],
    ['network partitions (an executor cut off from every broker while it runs)', String(r.faults.networkPartitions)],
    ...(r.networkPartitions.length
      ? [
          [
            'partitions: cut for / taken over / first event of the new owner / owning again after the heal / fenced lines after the heal',
            r.networkPartitions.map((n) => `${ms(n.cutMs)} / ${n.takenOverBeforeHeal ? ms(n.recoveredMs) : '**not before the heal**'} / ${ms(n.firstEventMs)} / ${ms(n.rejoinedMs)} / ${n.fencedAfterHeal}`).join('; '),
          ] as [string, string],
        ]
      : []),
    ['broker kills (kill -9, of 3)', String(r.faults.brokerKills)],
    ['broker restarts of a rolling restart (SIGTERM, one at a time)', String(r.faults.brokerRestarts ?? 0)],
    ['broker kills while a partition\'s leadership moves (kill -9 the new or old leader)', String(r.faults.leaderMoveKills)],
    ['registry restarts (kill -9)', String(r.faults.registryRestarts)],
    ['projector kills (kill -9, a new process)', String(r.faults.projectorKills)],
    ['recoveries (partitions taken over)', `${r.recoveries.count}${r.recoveries.unrecovered ? `, ${r.recoveries.unrecovered} not` : ''}`],
    ['median / max recovery', `${ms(r.recoveries.medianMs)} / ${ms(r.recoveries.maxMs)}`],
    ['broker starts that exited during start-up (started again)', String(r.recoveries.brokerStartsFailed.length)],
    ['executors that exited without a fault (started again, as a supervisor would)', String(r.recoveries.executorExits.length)],
    ['broker / registry / projector back after', [r.recoveries.brokerBackMs, r.recoveries.registryBackMs, r.recoveries.projectorBackMs].map((xs) => xs.map((x) => ms(x)).join(', ') || 'n/a').join(' / ')],
    ...(r.faults.leaderMoveKills
      ? [['moved partition writable again (a live leader, the killed broker out of its in-sync replicas)', r.faultList.filter((f) => f.kind === 'leader-move-kill').map((f) => (f.recoveredMs === null ? '**not**' : ms(f.recoveredMs))).join(', ')] as [string, string]]
      : []),
    ...(r.recoveries.brokerInSyncMs.length ? [['every replica in sync again, after each restart (before the next kill)', r.recoveries.brokerInSyncMs.map((x) => ms(x)).join(', ')] as [string, string]] : []),
    ['fenced appends refused', String(r.fencing.fencedAppendsRefused)],
    ['zombie events visible (intents below an earlier fencing token, a second record at a position, or an event decided before a take-over after the new owner\'s first)', `${r.fencing.zombieAppendsVisible} (of ${r.fencing.intentsChecked} intents; ${r.fencing.lateEvents} late)`],
    ['events written by an executor whose clock ran ahead / behind', r.stack.clockSkewMs ? `${r.skewedRecords.ahead} / ${r.skewedRecords.behind} (±${r.stack.clockSkewMs / 1000} s)` : 'n/a (no skew)'],
    ['rebuilds equal (replay vs projector)', `${r.rebuilds.digestsEqual ? 'yes' : 'NO'} (${r.rebuilds.plans} plans)`],
    ['chains verified / broken', `${r.chains.verified} / ${r.chains.broken.length}`],
    ['createPlan calls / failed (raw client errors)', `${r.submissions.calls} / ${r.submissions.failed} (${r.submissions.rawErrors})`],
    ['command decided after: p50 / p99 / max', `${r.submissions.decisionMs.p50 ?? 'n/a'} / ${r.submissions.decisionMs.p99 ?? 'n/a'} / ${r.submissions.decisionMs.max ?? 'n/a'} ms`],
    ['slowest decisions', r.submissions.slowest.join('; ') || 'n/a'],
    ['events records never committed (aborted transactions) / shown to the ledger\'s reader', `${r.aborted.records} / ${r.aborted.visible}`],
    ['events re-sent (identical / differing)', `${r.resends.keys} (${r.resends.identical} / ${r.resends.differing.length})`],
    ['tool calls repeated under a key: recoveries / unexplained', `${r.repeats.explained} / ${r.repeats.unexplained.length} (${r.repeats.keys} keys)`],
    ['independent reader (Python census): plans / events / chains OK / findings', r.independent.ran ? `${r.independent.plans} / ${r.independent.events} / ${r.independent.chainsOk} / ${Object.entries(r.independent.findingsByKind).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'} (${r.independent.agrees ? 'agrees' : 'DISAGREES'})` : `did not run: ${r.independent.error}`],
    ['DLQ records (all deliberate poison)', `${r.dlq.records} (${r.dlq.onlyPoison ? 'yes' : 'NO'})`],
    ['**duplicated effects**', `**${r.duplicates}**`],
    ['**lost**', `**${r.lost}**`],
  ];
}

export function renderMarkdown(r: ChaosReport): string {
  const rows = reportRows(r);
  return [
    `# Chaos run \`${r.label}\` — ${r.ok ? 'OK' : 'PROBLEMS'}`,
    '',
    `Started ${r.startedAt}; ${r.seconds} s in all (stack up ${r.stack.upSeconds} s, set-up ${r.setupSeconds} s, work under faults ${r.workSeconds} s, checks ${r.checkSeconds} s: ${Object.entries(r.checkMs).map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`).join(', ')}), seed ${r.seed}; ${r.stack.brokers} brokers (RF ${r.stack.replicationFactor}, ${r.stack.controller === 'dedicated' ? 'a KRaft controller of their own' : 'each a KRaft controller too'}), ${r.stack.partitions} partitions, 3 executors; faults: ${r.faultMode === 'brokers' ? 'broker kills only, one broker at a time, repeatedly' : r.faultMode === 'rolling' ? 'a rolling restart of the brokers (SIGTERM, each in turn), repeatedly' : 'all kinds'}; broker session timeout ${r.stack.brokerSessionMs === null ? "Kafka's default (9 s)" : `${r.stack.brokerSessionMs} ms`}; executor clocks ${r.stack.clockSkewMs ? `+0 / +${r.stack.clockSkewMs / 1000} s / −${r.stack.clockSkewMs / 1000} s (slots 0 / 1 / 2)` : 'all on the machine\'s clock'}.`,
    '',
    '| | |',
    '|---|---|',
    ...rows.map(([k, v]) => `| ${k} | ${v} |`),
    '',
    ...(r.problems.length ? ['## Problems', '', ...r.problems.map((p) => `- ${p}`), ''] : []),
    ...(r.fencing.zombieEvents.length ? ['## Zombie events in the log', '', ...r.fencing.zombieEvents.map((b) => `- ${b}`), ''] : []),
    ...(r.chains.broken.length ? ['## Chains that did not verify', '', ...r.chains.broken.map((b) => `- ${b}`), ''] : []),
    '## Faults',
    '',
    ...faultRows(r),
    '',
    ...(r.submissions.failures.length ? ['## createPlan calls that failed', '', ...r.submissions.failures.map((b) => `- ${b}`), ''] : []),
    ...(r.recoveries.executorExits.length ? ['## Executors that exited without a fault', '', ...r.recoveries.executorExits.map((b) => `- ${b}`), ''] : []),
    ...(r.resends.keys ? ['## Re-sent events (first ten)', '', ...r.resends.examples.map((b) => `- ${b}`), ''] : []),
    ...(r.repeats.unexplained.length ? ['## Tool calls repeated without a recovery', '', ...r.repeats.unexplained.map((b) => `- ${b}`), ''] : []),
  ].join('\n');
}

const VERIFIER = join('verifiers', 'python');

/**
 * Runs the Python verifier's census over the run's topics (its venv made first when missing: PyPI only)
 * and compares it with what the ledger read: the same plans, the same events, every chain intact and no
 * finding (a second record under a key, a gap, an undecodable record).
 */
async function independentCensus(config: LedgerConfig, ledgerSaw: { plans: number; events: number }, log: (l: string) => void): Promise<ChaosReport['independent']> {
  const none = { plans: 0, events: 0, chainsOk: 0, findingsByKind: {}, disagreements: [], uncommitted: {} };
  const python = join(VERIFIER, '.venv', 'bin', 'python');
  try {
    if (!existsSync(python)) await execFileAsync('bash', [join(VERIFIER, 'setup.sh')], { timeout: 300_000 });
    const { stdout } = await execFileAsync(python, [join(VERIFIER, 'plan_ledger_verify.py'), '--json', 'census', '--brokers', config.brokers.join(','), '--registry', config.registryUrl, '--prefix', config.topicPrefix], {
      timeout: 600_000,
      maxBuffer: 64 * 1024 * 1024,
    }).catch((e: { stdout?: string; message: string }) => {
      // Exit 1 is a census with findings: its JSON is on stdout all the same.
      if (e.stdout?.trim().startsWith('{')) return { stdout: e.stdout };
      throw e;
    });
    const c = JSON.parse(stdout) as { plans: number; events: number; chainsOk: number; findingsByKind: Record<string, number>; findings: Array<{ kind: string; planId: string; seq: number; detail: string }>; uncommitted: { records: number; offsets: Record<string, number[]> } };
    const disagreements = [
      ...(c.plans !== ledgerSaw.plans ? [`${c.plans} plans, the ledger folded ${ledgerSaw.plans}`] : []),
      ...(c.events !== ledgerSaw.events ? [`${c.events} events, the ledger read ${ledgerSaw.events}`] : []),
      ...(c.chainsOk !== c.plans ? [`${c.plans - c.chainsOk} chains broken`] : []),
      ...c.findings.slice(0, 20).map((f) => `${f.kind} ${f.planId}:${f.seq}: ${f.detail}`),
    ];
    log(`independent reader: ${c.plans} plans, ${c.events} events, ${c.chainsOk} chains OK, findings ${JSON.stringify(c.findingsByKind)}`);
    return { ran: true, error: null, plans: c.plans, events: c.events, chainsOk: c.chainsOk, findingsByKind: c.findingsByKind, agrees: disagreements.length === 0, disagreements, uncommitted: c.uncommitted.offsets };
  } catch (e) {
    return { ...none, ran: false, error: (e as Error).message.split('\n')[0]!.slice(0, 300), agrees: false };
  }
}

/** The last lines of a log file, on one line (for a report), or why it could not be read. */
function tailOf(file: string, lines = 8): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join(' | ').slice(-2000);
  } catch (e) {
    return `(unreadable: ${(e as Error).message})`;
  }
}
