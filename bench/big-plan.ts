// A plan of 100,000 items end to end (issue 13), and its per-step latency against a 10-item plan's in the
// same run.
//
//   npm run bench -- big-plan [--quick] [--items 100000] [--batch 2000]     (quick: 20,000 items)
//
// One partition; an executor (`startExecutor`, no-op tool, bench/procs/executor.ts) in its own process.
// The baseline runs at the same time on a prefix of its own with its own executor process, so both see
// the same machine load: 10-item chains, one after another, for as long as the big plan runs.
// No projector runs: today it writes the whole plan's snapshot after every batch that completes an item
// (O(items) per step; see the note in the results), so the new owner restores the plan from its events.
// 1. Baseline: plans of a 10-item chain, one after another on the other prefix, until step 3 is done.
// 2. The big plan: a chain of N items (each depends on the one before, so exactly one runs at a time and
//    the interval between two ItemCompleted events is one step: intent, invoke, result + completion + the
//    next intent in one transaction), created in propose mode with CreatePlan + AddItems of `batch` items,
//    then proposed and approved. A chain, because steps one after another are what a step's latency is;
//    independent items pipeline (16 tool slots, group commit), so their ms per item says little.
// 3. Half-way the executor is killed (SIGKILL); a new one restores the partition (from the log) and
//    finishes the plan.
// 4. `verify` of the plan (library call: seq, chain, determinism, every snapshot against a replay).
// Per-step latency: median interval between consecutive ItemCompleted `occurredAt` of a plan. The big
// plan's steps are cut into windows of equal length (the interval across the kill left out); each window
// is paired with the 10-item plans that ran during it (the median of their medians). Executor RSS is
// sampled from /proc every 500 ms.
// Writes bench/results/big-plan.json.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { configToEnv, topicNames } from '../src/config.js';
import type { PlanEvent } from '../src/plan/index.js';
import { benchArgs, median, metric, type PairedRound, until, writeResult } from './lib/harness.js';
import { benchConfig, benchKafka, dropTopics, spawnTs, stopProc, waitLine, type Proc } from './lib/ledger.js';

const args = benchArgs(['items', 'batch']);
const N = Number(args.options.items ?? (args.quick ? 20_000 : 100_000));
const BATCH = Number(args.options.batch ?? 2_000);
const SMALL = 10;
const ROUNDS = args.rounds;

const config = benchConfig('big-plan', { partitions: 1 });
const smallConfig = benchConfig('big-plan-small', { partitions: 1 });
const groupEnv = { PLAN_LEDGER_SESSION_TIMEOUT_MS: '6000', PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: '500', BENCH_CONCURRENCY: '16' };
const env = { ...configToEnv(config), ...groupEnv };
const executorScript = fileURLToPath(new URL('./procs/executor.ts', import.meta.url));

/** Resident set size of a process in MiB (0 once it has gone). */
function rssMiB(pid: number | undefined): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

/** Peak RSS of a process, sampled every 500 ms until stop(). */
function rssPeak(proc: Proc): { stop(): number; now(): number } {
  let peak = 0;
  const t = setInterval(() => (peak = Math.max(peak, rssMiB(proc.p.pid))), 500);
  return {
    now: () => rssMiB(proc.p.pid),
    stop: () => {
      clearInterval(t);
      return Math.max(peak, rssMiB(proc.p.pid));
    },
  };
}

const chain = (prefix: string, from: number, count: number) =>
  Array.from({ length: count }, (_, k) => {
    const i = from + k;
    return { id: `${prefix}${i}`, title: `step ${i}`, why: 'one step of a long chain', tool: 'noop', input: { i }, dependsOn: i === 0 ? [] : [`${prefix}${i - 1}`] };
  });

/** Intervals (ms) between consecutive ItemCompleted events, in seq order, with the item index of each. */
function stepIntervals(events: readonly PlanEvent[]): Array<{ at: number; ms: number; actor: string; prevActor: string }> {
  const done = events.filter((e) => e.type === 'ItemCompleted');
  const out: Array<{ at: number; ms: number; actor: string; prevActor: string }> = [];
  for (let i = 1; i < done.length; i++) out.push({ at: done[i]!.occurredAt, ms: done[i]!.occurredAt - done[i - 1]!.occurredAt, actor: done[i]!.actor, prevActor: done[i - 1]!.actor });
  return out;
}

/** One 10-item chain: its median step and when its first and last step completed. */
async function smallPlan(ledger: Ledger, round: number): Promise<{ stepMs: number; from: number; to: number }> {
  const { planId } = await ledger.createPlan({ goal: `ten steps, round ${round}`, mode: 'execute', items: chain('s', 0, SMALL) });
  await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
  const events = (await ledger.planEvents(planId)).map((r) => r.event);
  const done = events.filter((e) => e.type === 'ItemCompleted');
  return { stepMs: median(stepIntervals(events).map((s) => s.ms)), from: done[0]!.occurredAt, to: done.at(-1)!.occurredAt };
}

const log = (m: string) => console.log(`big-plan: ${m}`);
const kafka = benchKafka(config);
const admin = kafka.admin();
let a = spawnTs(executorScript, 'executor-A', { ...env, BENCH_EXECUTOR_ID: 'executor-A' });
const s = spawnTs(executorScript, 'executor-S', { ...configToEnv(smallConfig), ...groupEnv, BENCH_EXECUTOR_ID: 'executor-S' });
let ledger: Ledger | undefined;
let smallLedger: Ledger | undefined;
let baselineDone = false;
let baseline: Promise<Array<{ stepMs: number; from: number; to: number }>> | undefined;
try {
  await waitLine(a, 'ready');
  await waitLine(s, 'ready');
  const aRss = rssPeak(a);
  await admin.connect();
  ledger = await connectLedger(config);
  smallLedger = await connectLedger(smallConfig);

  // 1. The baseline: 10-item chains on their own prefix and executor, until the big plan is done.
  const sl = smallLedger;
  await smallPlan(sl, 0); // warm-up
  baseline = (async () => {
    const out: Array<{ stepMs: number; from: number; to: number }> = [];
    for (let r = 1; !baselineDone; r++) out.push(await smallPlan(sl, r));
    return out;
  })();
  baseline.catch(() => {});

  // 2. The big plan, in batches.
  const t0 = Date.now();
  const { planId } = await ledger.createPlan({ goal: `${N} steps`, mode: 'propose', items: chain('i', 0, Math.min(BATCH, N)) }, { timeoutMs: 120_000 });
  for (let from = BATCH; from < N; from += BATCH) await ledger.addItems(planId, chain('i', from, Math.min(BATCH, N - from)), { timeoutMs: 120_000 });
  const createMs = Date.now() - t0;
  const { digest } = await ledger.propose(planId, { timeoutMs: 120_000 });
  await ledger.approve(planId, digest, { by: 'bench', timeoutMs: 120_000 });
  const approvedAt = Date.now();
  log(`created ${N} items in ${createMs} ms (${Math.ceil(N / BATCH)} commands); approved`);

  // 3. Kill -9 half-way (progress from the events topic's end offset: ~3 records per step after the N
  //    ItemAdded, transaction markers included, which is close enough to choose the moment).
  const events = topicNames(config.topicPrefix).events;
  const createdEnd = Number((await admin.fetchTopicOffsets(events))[0]!.high);
  await until(async () => (Number((await admin.fetchTopicOffsets(events))[0]!.high) - createdEnd >= 2 * N ? true : undefined), 6 * 3600_000, 'half of the steps', 1000);
  const aPeak = aRss.stop();
  a.p.kill('SIGKILL');
  await a.exited;
  const killedAt = Date.now();
  log(`killed executor A after ${((killedAt - approvedAt) / 1000).toFixed(0)} s; its peak RSS ${aPeak.toFixed(0)} MiB`);

  const b = spawnTs(executorScript, 'executor-B', { ...env, BENCH_EXECUTOR_ID: 'executor-B' });
  a = b;
  const bRss = rssPeak(b);
  const bStarted = Date.now();
  await waitLine(b, 'ready', 600_000);
  const restoreMs = Date.now() - bStarted;
  const bAfterRestore = bRss.now();
  log(`executor B restored in ${restoreMs} ms (RSS ${bAfterRestore.toFixed(0)} MiB)`);
  const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 6 * 3600_000 });
  const runMs = Date.now() - approvedAt;
  const bPeak = bRss.stop();
  if (Object.keys(done.items).length !== N) throw new Error(`the plan has ${Object.keys(done.items).length} items, expected ${N}`);
  log(`completed after ${(runMs / 1000).toFixed(0)} s; executor B peak RSS ${bPeak.toFixed(0)} MiB`);

  // 4. Verify.
  const tv = Date.now();
  const v = await ledger.verify(planId);
  const verifyMs = Date.now() - tv;
  if (!v.ok) throw new Error(`verify failed: ${v.firstBroken?.reason}`);
  log(`verify: ok, ${v.events} events, ${v.checks.map((c) => c.name).join(', ')} in ${verifyMs} ms`);

  const planEvents = (await ledger.planEvents(planId)).map((r) => r.event);
  const perItem = new Map<string, number>();
  for (const e of planEvents) if (e.type === 'ItemCompleted') perItem.set(e.data.itemId, (perItem.get(e.data.itemId) ?? 0) + 1);
  if (perItem.size !== N || [...perItem.values()].some((n) => n !== 1)) throw new Error('an item did not complete exactly once');
  baselineDone = true;
  const small = await baseline;
  const intervals = stepIntervals(planEvents).filter((x) => x.actor === x.prevActor); // not the one across the kill
  // Windows of equal step count, each with at least one 10-item plan that ran inside it.
  const windows: Array<{ bigMs: number; smallMs: number; steps: number; smallPlans: number }> = [];
  const WINDOWS = Math.max(ROUNDS, 10);
  const size = Math.ceil(intervals.length / WINDOWS);
  for (let w = 0; w < WINDOWS; w++) {
    const part = intervals.slice(w * size, (w + 1) * size);
    if (!part.length) continue;
    const from = part[0]!.at - part[0]!.ms;
    const to = part.at(-1)!.at;
    const during = small.filter((p) => p.from >= from && p.to <= to);
    if (during.length) windows.push({ bigMs: median(part.map((x) => x.ms)), smallMs: median(during.map((p) => p.stepMs)), steps: part.length, smallPlans: during.length });
  }
  if (windows.length < ROUNDS) throw new Error(`only ${windows.length} windows had a 10-item plan inside them`);
  log(`per step by window (big | 10-item): ${windows.map((w) => `${w.bigMs.toFixed(1)}|${w.smallMs.toFixed(1)}`).join(', ')} ms`);

  const rounds: PairedRound[] = windows.map((w, i) => ({ round: i + 1, first: 'baseline', subject: { stepMs: w.bigMs }, baseline: { stepMs: w.smallMs } }));
  writeResult({
    name: 'big-plan',
    title: `A plan of ${N.toLocaleString('en-US')} items: per-step latency vs a 10-item plan's, create / restore / verify times, memory`,
    quick: args.quick,
    settings: { items: N, batch: BATCH, smallItems: SMALL, partitions: 1, concurrency: 16, shape: 'chain (each item depends on the one before)', baseline: '10-item chains one after another on their own prefix and executor process, during the big plan; paired by time window' },
    metrics: [
      metric(rounds, {
        key: 'stepMs',
        label: `ms per item step, ${N.toLocaleString('en-US')}-item plan`,
        unit: 'ms',
        better: 'lower',
        baselineLabel: '10-item plans, run at the same time',
        aim: '≤ 1.5×',
      }),
    ],
    rounds,
    notes: [
      `${N.toLocaleString('en-US')} items: created in ${(createMs / 1000).toFixed(1)} s (${Math.ceil(N / BATCH)} commands of ≤ ${BATCH} items), run in ${(runMs / 1000).toFixed(0)} s with a kill -9 half-way; the new owner restored in ${(restoreMs / 1000).toFixed(1)} s; verify of ${v.events.toLocaleString('en-US')} events ${(verifyMs / 1000).toFixed(1)} s.`,
      `Executor peak RSS: ${aPeak.toFixed(0)} MiB before the kill, ${bPeak.toFixed(0)} MiB after it (${bAfterRestore.toFixed(0)} MiB right after the restore).`,
      'Per step grows with the items left in a chain: the executor looks for ready items from the settled front (scanItems) until it has its slot budget of them, and a chain has one, so each step walks the rest of the plan (O(items left)); the windows show it falling as the chain shortens. Independent items do not pay it, but their intents run ahead of the tool slots (the budget is at least 1 per call), and scanning past that backlog slows a 100,000-item run of independent items down as the backlog grows (about 450 event records per second falling to 150 within 3 minutes).',
      'No projector ran: it writes the whole plan\'s snapshot after every batch that completes an item, O(items) per step (866 MB of snapshots for a 20,000-item run whose events are 28 MB), and a new owner reads them back until the cleaner compacts the topic. The new owner here restored from the log.',
    ],
    extra: {
      createMs,
      runMs,
      restoreMs,
      verifyMs,
      events: v.events,
      rssMiB: { executorBeforeKill: aPeak, executorAfterRestore: bAfterRestore, executorAfterRestorePeak: bPeak },
      windows,
      smallPlans: small.length,
      stepsMeasured: intervals.length,
    },
  });
} finally {
  baselineDone = true;
  await baseline?.catch(() => {});
  await ledger?.close();
  await smallLedger?.close();
  await stopProc(a);
  await stopProc(s);
  await admin.disconnect().catch(() => {});
  await dropTopics(config, [`${config.topicPrefix}.plan-blobs`]);
  await dropTopics(smallConfig, [`${smallConfig.topicPrefix}.plan-blobs`]);
}
