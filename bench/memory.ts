// Memory of the executor and the projector at 100k plans (quick: 10k), in process, no Kafka.
//
//   npm run bench -- memory [--quick] [--rounds 5] [--plans 100000]
//
// One plan of 10 items is decided by the domain (45 events when finished); every other plan gets the same
// events re-keyed (its own planId, event ids, idempotency keys, command ids; all new objects; hashes not
// recomputed, which the fold does not check beyond the chain).
//  - projector: every plan finished, each event applied with `PartitionProjection.applyEvent` (6
//    partitions: states, stalls, snapshot bookkeeping), as the live projector folds them.
//  - executor: every plan running (the first half of its life: 5 of 10 items done), folded with `evolve`
//    into one Map<planId, PlanState> per partition — what a partition owner holds for its live plans
//    (finished plans are archived, not held).
// Baseline: the same plans' states as canonical JSON strings in a Map (the data with no structure).
// heapUsed after three forced GCs, minus the heap before; per plan. Paired rounds, alternating order.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { partitionFor, eventKey } from '../src/kafka/partitioner.js';
import { canonicalJson, evolve, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { PartitionProjection } from '../src/projection/index.js';
import { benchArgs, metric, paired, writeResult } from './lib/harness.js';
import { decideAll, ITEMS, lifecycle } from './lib/plans.js';

const args = benchArgs(['plans']);
const plans = Number(args.options.plans ?? (args.quick ? 10_000 : 100_000));
const PARTITIONS = 6;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heap = () => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};

function template(stepsTaken?: number): { events: string[]; state: string } {
  const states = new Map<string, PlanState>();
  const steps = lifecycle('TMPLPLAN');
  const events = steps.slice(0, stepsTaken ?? steps.length).flatMap((step) => decideAll(step, states, 1_700_000_000_000));
  return { events: events.map((e) => JSON.stringify(e)), state: canonicalJson(states.get('TMPLPLAN')!) };
}
const finished = template();
const running = template(1 + Math.floor((lifecycle('x').length - 1) / 2));
const id = (i: number) => `plan-${String(i).padStart(7, '0')}`;

function projectorHeap(): number {
  const base = heap();
  let projections: PartitionProjection[] = Array.from({ length: PARTITIONS }, (_, p) => new PartitionProjection(p));
  for (let i = 0; i < plans; i++) {
    const planId = id(i);
    const proj = projections[partitionFor(planId, PARTITIONS)]!;
    finished.events.forEach((json, k) => {
      const e = JSON.parse(json.replaceAll('TMPLPLAN', planId)) as PlanEvent;
      proj.applyEvent(String(k), Buffer.from(eventKey(planId, e.seq)), e);
    });
  }
  const used = heap() - base;
  const held = projections.reduce((n, p) => n + p.plans.size, 0);
  projections = [];
  if (held !== plans) throw new Error(`projector holds ${held} of ${plans} plans`);
  return used / plans;
}

function executorHeap(): number {
  const base = heap();
  let owners: Array<Map<string, PlanState>> = Array.from({ length: PARTITIONS }, () => new Map());
  for (let i = 0; i < plans; i++) {
    const planId = id(i);
    let s: PlanState | undefined;
    for (const json of running.events) s = evolve(s, JSON.parse(json.replaceAll('TMPLPLAN', planId)) as PlanEvent);
    owners[partitionFor(planId, PARTITIONS)]!.set(planId, s!);
  }
  const used = heap() - base;
  const held = owners.reduce((n, m) => n + m.size, 0);
  owners = [];
  if (held !== plans) throw new Error(`executor holds ${held} of ${plans} plans`);
  return used / plans;
}

function jsonHeap(state: string): number {
  const base = heap();
  let m: Map<string, string> | undefined = new Map();
  for (let i = 0; i < plans; i++) {
    const planId = id(i);
    // A fresh flat string per plan (replaceAll alone may return slices of the template).
    m.set(planId, Buffer.from(state.replaceAll('TMPLPLAN', planId)).toString());
  }
  const used = heap() - base;
  if (m.size !== plans) throw new Error('json map');
  m = undefined;
  return used / plans;
}

const rounds = await paired({
  rounds: args.rounds,
  warmup: 1,
  label: 'memory ',
  subject: async () => ({ projectorBytesPerPlan: projectorHeap(), executorBytesPerPlan: executorHeap() }),
  baseline: async () => ({ projectorBytesPerPlan: jsonHeap(finished.state), executorBytesPerPlan: jsonHeap(running.state) }),
});
const k = plans >= 1000 ? `${plans / 1000}k` : String(plans);
writeResult({
  name: 'memory',
  title: `Memory at ${k} plans × ${ITEMS} items: executor (live plans) and projector (all plans) vs the states as JSON`,
  quick: args.quick,
  settings: { plans, itemsPerPlan: ITEMS, partitions: PARTITIONS, rounds: args.rounds, eventsPerFinishedPlan: finished.events.length, eventsPerRunningPlan: running.events.length, stateJsonBytes: { finished: Buffer.byteLength(finished.state), running: Buffer.byteLength(running.state) } },
  metrics: [
    metric(rounds, { key: 'executorBytesPerPlan', label: `executor heap per running plan (${k} plans)`, unit: 'bytes', better: 'lower', baselineLabel: 'its state as a JSON string' }),
    metric(rounds, { key: 'projectorBytesPerPlan', label: `projector heap per plan (${k} plans)`, unit: 'bytes', better: 'lower', baselineLabel: 'its state as a JSON string' }),
  ],
  rounds,
  notes: [
    `Totals: multiply by ${plans.toLocaleString('en-US')} plans. Event histories are not included (the projector keeps at most retainEvents, default 200,000, in an LRU).`,
  ],
  extra: {
    totalsMiB: {
      executor: (rounds.map((r) => r.subject.executorBytesPerPlan!).sort((a, b) => a - b)[Math.floor(rounds.length / 2)]! * plans) / 2 ** 20,
      projector: (rounds.map((r) => r.subject.projectorBytesPerPlan!).sort((a, b) => a - b)[Math.floor(rounds.length / 2)]! * plans) / 2 ** 20,
    },
  },
});
process.exit(0);
