// Executor and projector memory with many finished plans (issue 13).
//
//   npm run bench -- finished-memory [--quick] [--rounds 5] [--small 10000] [--large 100000] [--live 1000] [--cache-mib 64] [--projector-cache-mib 64]
//
// One partition owner's book (executor/partition-book.ts) holds `live` running plans and has finished
// `small` (baseline) or `large` (subject) plans of 10 items (45 events each, as bench/lib/plans.ts decides
// them): each finished plan is put in the book's live plans and retired the way the owner retires one
// once its last events committed (`PartitionBook.retire`: its state as JSON into the byte-bounded cache,
// least recently used out, only the id of an evicted plan kept). In process, no Kafka: what is measured is
// what the owner keeps. Memory = V8 heap used + array buffers (the cache's Buffers live outside the heap),
// after three forced GCs, minus the same before; paired rounds, alternating order.
// Projector: one partition's projection (src/projection) and the read model (projector/read-model.ts) with
// the same live and finished plans; each finished plan is seeded and reported archived at its seq, as the
// projector does once its archive record lands, and the read model lets the least recently used go cold
// past `projector-cache-mib` (the projector's own release: out of the projection, its list summary kept).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CacheBudget } from '../executor/dormant-cache.js';
import { PartitionBook } from '../executor/partition-book.js';
import type { LedgerCodec } from '../src/codec/index.js';
import { silentLogger } from '../src/logging.js';
import { canonicalJson, DEFAULT_LIMITS, type PlanState } from '../src/plan/index.js';
import { createExecutorMetrics } from '../executor/metrics.js';
import { ReadModel } from '../projector/read-model.js';
import { PartitionProjection, summarize } from '../src/projection/index.js';
import { benchArgs, metric, paired, writeResult } from './lib/harness.js';
import { decideAll, ITEMS, lifecycle } from './lib/plans.js';

const args = benchArgs(['small', 'large', 'live', 'cache-mib', 'projector-cache-mib']);
const small = Number(args.options.small ?? 10_000);
const large = Number(args.options.large ?? (args.quick ? 50_000 : 100_000));
const live = Number(args.options.live ?? 1000);
const cacheMib = Number(args.options['cache-mib'] ?? 64);
const projectorCacheMib = Number(args.options['projector-cache-mib'] ?? 64);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const memory = () => {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

function template(stepsTaken?: number): string {
  const states = new Map<string, PlanState>();
  const steps = lifecycle('TMPLPLAN');
  steps.slice(0, stepsTaken ?? steps.length).forEach((step) => decideAll(step, states, 1_700_000_000_000));
  return canonicalJson(states.get('TMPLPLAN')!);
}
const finishedJson = template();
const runningJson = template(1 + Math.floor((lifecycle('x').length - 1) / 2));
const id = (i: number) => `plan-${String(i).padStart(7, '0')}`;
const metrics = createExecutorMetrics();

/** A fresh state (all new objects) of plan `planId` from a template. */
const stateOf = (json: string, planId: string) => JSON.parse(json.replaceAll('TMPLPLAN', planId)) as PlanState;

function book(): PartitionBook {
  return new PartitionBook(
    {
      codec: {} as LedgerCodec, // not used: nothing is decided or encoded here
      limits: { maxRecordBytes: 1 << 20, toolTimeoutMs: 1000, abortGraceMs: 1000, decide: DEFAULT_LIMITS, payload: { inlineBytes: 65536, maxPayloadBytes: 1 << 26 }, checkpointIntervalMs: 1000 },
      metrics,
      executorId: 'bench',
      now: () => 0,
      cacheBudget: new CacheBudget(cacheMib * 1024 * 1024),
    },
    silentLogger(),
  );
}

function owner(finished: number): { bytes: number; held: { live: number; cached: number; evicted: number } } {
  const base = memory();
  let b: PartitionBook | undefined = book();
  for (let i = 0; i < live; i++) b.plans.set(id(i), stateOf(runningJson, id(i)));
  for (let i = 0; i < finished; i++) {
    const planId = id(live + i);
    b.plans.set(planId, stateOf(finishedJson, planId));
    b.retire(planId);
  }
  const bytes = memory() - base;
  const held = { live: b.plans.size, cached: b.dormant.size, evicted: b.dormant.evicted.size };
  if (held.live !== live || held.cached + held.evicted !== finished) throw new Error(`book holds ${JSON.stringify(held)}`);
  b.dormant.clear();
  b = undefined;
  return { bytes, held };
}

function projector(finished: number): { bytes: number; held: { hot: number; cold: number } } {
  const base = memory();
  let projection: PartitionProjection | undefined = new PartitionProjection(0);
  const proj = projection;
  let model: ReadModel | undefined = new ReadModel({
    retainEvents: 0,
    loader: () => Promise.resolve([]),
    cache: {
      cacheBytes: projectorCacheMib * 1024 * 1024,
      release: (planId) => {
        const e = proj.get(planId)!;
        const summary = summarize(e);
        proj.plans.delete(planId);
        proj.policy.forget(planId);
        return { partition: 0, offset: '0', summary };
      },
      loadCold: () => Promise.reject(new Error('not read in this bench')),
    },
  });
  model.setPartition(0, proj);
  for (let i = 0; i < live; i++) proj.seed(stateOf(runningJson, id(i)));
  const snapshotBytes = Buffer.byteLength(finishedJson);
  for (let i = 0; i < finished; i++) {
    const planId = id(live + i);
    proj.seed(stateOf(finishedJson, planId));
    model.archived(planId, 0, snapshotBytes);
  }
  const bytes = memory() - base;
  const held = { hot: proj.plans.size, cold: model.cold.size };
  if (held.hot + held.cold !== live + finished) throw new Error(`projector holds ${JSON.stringify(held)}`);
  model.close();
  model = undefined;
  projection = undefined;
  return { bytes, held };
}

let lastHeld: Record<string, unknown> = {};
const rounds = await paired({
  rounds: args.rounds,
  warmup: 1,
  label: 'finished-memory ',
  subject: async () => {
    const r = owner(large);
    const q = projector(large);
    lastHeld = { ...lastHeld, large: { executor: r.held, projector: q.held } };
    return { ownerMiB: r.bytes / 2 ** 20, projectorMiB: q.bytes / 2 ** 20 };
  },
  baseline: async () => {
    const r = owner(small);
    const q = projector(small);
    lastHeld = { ...lastHeld, small: { executor: r.held, projector: q.held } };
    return { ownerMiB: r.bytes / 2 ** 20, projectorMiB: q.bytes / 2 ** 20 };
  },
});
const k = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));
writeResult({
  name: 'finished-memory',
  title: `Executor and projector memory with ${k(large)} vs ${k(small)} finished plans (+ ${k(live)} live), caches ${cacheMib} / ${projectorCacheMib} MiB`,
  quick: args.quick,
  settings: { small, large, live, cacheMib, projectorCacheMib, itemsPerPlan: ITEMS, rounds: args.rounds, stateJsonBytes: { finished: Buffer.byteLength(finishedJson), running: Buffer.byteLength(runningJson) } },
  metrics: [
    metric(rounds, {
      key: 'ownerMiB',
      label: `owner memory (heap + buffers), ${k(live)} live plans and ${k(large)} finished`,
      unit: 'MiB',
      better: 'lower',
      subjectLabel: `${k(large)} finished`,
      baselineLabel: `${k(small)} finished`,
      aim: 'flat: ≤ 1.2× (issue 13)',
    }),
    metric(rounds, {
      key: 'projectorMiB',
      label: `projector memory (heap + buffers), ${k(live)} live plans and ${k(large)} finished`,
      unit: 'MiB',
      better: 'lower',
      subjectLabel: `${k(large)} finished`,
      baselineLabel: `${k(small)} finished`,
      aim: 'flat: ≤ 1.2× (issue 13)',
    }),
  ],
  rounds,
  notes: [
    `Without eviction an owner held every finished plan's state: ~${Math.round(Buffer.byteLength(finishedJson) / 1024)} KiB of JSON each, ~7.5 KiB of heap per plan as bench/memory.ts measures, so ${k(large)} finished plans would take ~${Math.round((7.5 * large) / 1024)} MiB.`,
    'What still grows with the plans run: the id of each evicted plan (a Map entry with its first-event time), so a command for it is read back from its events instead of treated as a new plan.',
    'The projector keeps a list summary of every cold plan (the plan list stays complete without a read): that part grows with the plans run, by the summary\'s size per plan.',
    'In process, one owner / one partition projection, no Kafka: what each holds, not process RSS.',
  ],
  extra: { held: lastHeld },
});
process.exit(0);
