// Projector benchmark (not a test): full-log rebuild events/s against a raw kafkajs eachBatch consumer over
// the same events topic in the same run, the live projector's catch-up, and the memory of 100k plans.
//
//   npx tsx bench/projector.ts            (PLANS=3000 ROUNDS=5 MEMORY_PLANS=100000 to change the sizes)
//   PROFILE=/tmp/rebuild.cpuprofile ...   (a CPU profile of the rebuild rounds only, for Chrome DevTools)
//
// Needs the local stack (`node bin/plan-ledger.js stack up`). Writes bench/results/projector.json.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Kafka } from 'kafkajs';
import { ProjectionService } from '../projector/projector.js';
import { createCodec } from '../src/codec/index.js';
import { loadConfig, topicNames } from '../src/config.js';
import { createKafka } from '../src/kafka/client.js';
import { eventKey, partitionFor } from '../src/kafka/partitioner.js';
import { ensurePlanTopics } from '../src/kafka/topics.js';
import { silentLogger } from '../src/logging.js';
import { canonicalJson, decide, evolve, stateDigest, type AnyCommand, type ItemSpec, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { PartitionProjection, restorePartition, stateFromSnapshot, snapshotOf } from '../src/projection/index.js';
import { machine, median, writeResults } from './common.js';

const PLANS = Number(process.env.PLANS ?? 3000);
const ITEMS = 10;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const MEMORY_PLANS = Number(process.env.MEMORY_PLANS ?? 100_000);
const logger = silentLogger();

// ---------------------------------------------------------------------------------------------------
// A plan's whole life through the domain's decide: create with 10 items (a DAG), then each item
// intent → result → settle; item 1 fails once and is retried.

function items(): ItemSpec[] {
  return Array.from({ length: ITEMS }, (_, i) => ({
    id: `it-${i}`,
    title: `step ${i} of the plan`,
    why: `step ${i} is needed because the goal says so`,
    dependsOn: i === 0 ? [] : i % 3 === 0 ? [`it-${i - 1}`, `it-${i - 3}`] : [`it-${i - 1}`],
    tool: 'http.call',
    inputJson: `{"i":${i},"url":"https://example.test/api/${i}"}`,
    retry: i === 1 ? { maxAttempts: 3, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } : null,
  }));
}

function lifecycle(planId: string): AnyCommand[][] {
  let n = 0;
  const m = () => ({ commandId: `${planId}-c${++n}`, planId, issuedAt: 0, actor: 'bench', correlationId: planId });
  const steps: AnyCommand[][] = [[{ ...m(), type: 'CreatePlan', data: { goal: `goal of ${planId}`, mode: 'execute', labels: { team: 'bench' }, parent: null, items: items() } } as AnyCommand]];
  const attempt = (itemId: string, a: number, outcome: 'succeeded' | 'failed_retryable') => [
    [{ ...m(), type: 'RecordIntent', data: { itemId, executorId: 'ex-bench', fencingToken: 1 } }],
    [{ ...m(), type: 'CommitResult', data: { itemId, attempt: a, outcome, outputJson: outcome === 'succeeded' ? `{"item":"${itemId}","status":200}` : null, error: outcome === 'succeeded' ? null : { code: 'HTTP_503', message: 'unavailable', detailsJson: null }, durationMs: 12, executorId: 'ex-bench', followUps: [] } }],
    [{ ...m(), type: 'SettleItem', data: { itemId } }],
  ] as AnyCommand[][];
  for (let i = 0; i < ITEMS; i++) {
    if (i === 1) steps.push(...attempt('it-1', 1, 'failed_retryable'), ...attempt('it-1', 2, 'succeeded'));
    else steps.push(...attempt(`it-${i}`, 1, 'succeeded'));
  }
  return steps;
}

function decideAll(steps: AnyCommand[], states: Map<string, PlanState>, now: number): PlanEvent[] {
  const out: PlanEvent[] = [];
  for (const c of steps) {
    const d = decide(states.get(c.planId), c, { now });
    if (!d.ok) throw new Error(`${c.type} rejected: ${d.rejection.message}`);
    let s = states.get(c.planId);
    for (const e of d.events) s = evolve(s, e);
    states.set(c.planId, s!);
    out.push(...d.events);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------

async function rawConsume(kafka: Kafka, topic: string, ends: Map<number, bigint>): Promise<{ ms: number; records: number }> {
  const started = performance.now();
  const consumer = kafka.consumer({ groupId: `bench-raw-${randomBytes(4).toString('hex')}`, maxWaitTimeInMs: 100, maxBytesPerPartition: 4 * 1024 * 1024 });
  let records = 0;
  const next = new Map([...ends.keys()].map((p) => [p, 0n]));
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  consumer.on(consumer.events.END_BATCH_PROCESS, (e) => {
    next.set(e.payload.partition, BigInt(e.payload.lastOffset) + 1n);
    if ([...ends].every(([p, end]) => (next.get(p) ?? 0n) >= end)) done();
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch }) => {
      for (const m of batch.messages) if (m.value) records += 1;
    },
  });
  await finished;
  const ms = performance.now() - started;
  await consumer.disconnect();
  return { ms, records };
}

function gcFn(): () => void {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function heapAfterGc(gc: () => void): number {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

/**
 * Memory of the projection for many plans, in process: one plan's events come from decide; every other
 * plan gets the same events re-keyed (its own planId, eventIds, idempotency keys, command ids — new objects,
 * hashes not recomputed, which evolve does not check beyond the chain) and folded with evolve into the
 * projector's per-partition structure (PartitionProjection: states, stalls, snapshot bookkeeping).
 */
function measureMemory(plans: number) {
  const gc = gcFn();
  const states = new Map<string, PlanState>();
  const template = lifecycle('TMPLPLAN').flatMap((step) => decideAll(step, states, 1_700_000_000_000));
  const templateJson = template.map((e) => JSON.stringify(e));
  const stateJson = canonicalJson(states.get('TMPLPLAN')!);
  const partitions = 6;

  // The same plans as a restarted projector holds them: parsed from verified snapshots.
  const base2 = heapAfterGc(gc);
  let t = performance.now();
  let restored = Array.from({ length: partitions }, (_, p) => new PartitionProjection(p));
  for (let i = 0; i < plans; i++) {
    const id = `plan-${String(i).padStart(6, '0')}`;
    const json = stateJson.replaceAll('TMPLPLAN', id);
    const check = stateFromSnapshot(snapshotOf(JSON.parse(json) as PlanState, 0, '0', 0));
    if (!check.ok) throw new Error(check.reason);
    restored[partitionFor(id, partitions)]!.seed(check.state);
  }
  const restoreMs = performance.now() - t;
  const fromSnapshots = heapAfterGc(gc) - base2;
  // Read after measuring: V8 may collect a local it sees as dead before the measurement otherwise.
  const restoredPlans = restored.reduce((n, p) => n + p.plans.size, 0);
  restored = [];

  const base = heapAfterGc(gc);
  t = performance.now();
  let projections = Array.from({ length: partitions }, (_, p) => new PartitionProjection(p));
  for (let i = 0; i < plans; i++) {
    const id = `plan-${String(i).padStart(6, '0')}`;
    const proj = projections[partitionFor(id, partitions)]!;
    templateJson.forEach((json, k) => {
      const e = JSON.parse(json.replaceAll('TMPLPLAN', id)) as PlanEvent;
      proj.applyEvent(String(k), Buffer.from(eventKey(id, e.seq)), e);
    });
  }
  const evolveMs = performance.now() - t;
  const evolved = heapAfterGc(gc) - base;
  const eventsApplied = projections.reduce((n, p) => n + p.eventsApplied, 0);
  const sample = projections[0]!.plans.values().next().value!.state!;
  projections = [];

  return {
    plans,
    itemsPerPlan: ITEMS,
    eventsPerPlan: template.length,
    stateJsonBytesPerPlan: Buffer.byteLength(stateJson),
    method:
      'in process, no Kafka: one plan decided (45 events), re-keyed per plan and folded with evolve into PartitionProjection ' +
      '(6 partitions); heapUsed after 3 forced GCs minus the baseline. Events are not retained (retainEvents adds its own cache).',
    evolved: { heapMiB: +(evolved / 2 ** 20).toFixed(1), bytesPerPlan: Math.round(evolved / plans), foldMs: Math.round(evolveMs), eventsApplied, sampleStatus: sample.status },
    restoredFromSnapshots: { heapMiB: +(fromSnapshots / 2 ** 20).toFixed(1), bytesPerPlan: Math.round(fromSnapshots / plans), ms: Math.round(restoreMs), plans: restoredPlans },
    rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
  };
}

// ---------------------------------------------------------------------------------------------------

async function main() {
  const config = loadConfig({ topicPrefix: `bench-projector-${randomBytes(4).toString('hex')}`, partitions: 3 });
  const names = topicNames(config.topicPrefix);
  const kafka = createKafka(config, logger, 'bench');
  const admin = kafka.admin();
  await admin.connect();
  await ensurePlanTopics(admin, config);
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();

  try {
    // 1. The log: PLANS plans, their steps interleaved round-robin as an executor would append them.
    console.log(`writing ${PLANS} plans x ${ITEMS} items ...`);
    const states = new Map<string, PlanState>();
    const lifecycles = Array.from({ length: PLANS }, (_, i) => lifecycle(`plan-${i}`));
    let total = 0;
    const steps = Math.max(...lifecycles.map((l) => l.length));
    for (let r = 0; r < steps; r++) {
      const events = decideAll(lifecycles.flatMap((l) => l[r] ?? []), states, 1_700_000_000_000 + r * 10);
      for (let i = 0; i < events.length; i += 5000) {
        await producer.send({
          topic: names.events,
          acks: -1,
          messages: events.slice(i, i + 5000).map((e) => ({ key: eventKey(e.planId, e.seq), value: codec.encodeEvent(e), partition: partitionFor(e.planId, config.partitions) })),
        });
      }
      total += events.length;
    }
    const offsets = await admin.fetchTopicOffsets(names.events);
    const ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    const bytes = total; // count only
    const expected = new Map([...states].map(([id, s]) => [id, stateDigest(s)]));
    console.log(`${total} events on ${config.partitions} partitions`);

    // 2. Rounds: raw eachBatch consumer vs restorePartition on every partition (in parallel, as the
    //    projector restores its assignment), no snapshots: the full-log rebuild. Alternating order.
    const rounds: Array<{ rawEventsPerSec: number; rebuildEventsPerSec: number; ratio: number; rawMs: number; rebuildMs: number }> = [];
    const profiler = process.env.PROFILE ? new Session() : null;
    const profiles: object[] = [];
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
    }
    for (let r = 0; r < ROUNDS; r++) {
      const runRaw = () => rawConsume(kafka, names.events, ends);
      const runRebuild = async () => {
        if (profiler) await profiler.post('Profiler.start');
        const t = performance.now();
        const results = await Promise.all(
          [...ends.keys()].map((partition) => restorePartition({ kafka, admin, codec, config, partition, logger })),
        );
        const ms = performance.now() - t;
        if (profiler) profiles.push((await profiler.post('Profiler.stop')).profile);
        const replayed = results.reduce((n, x) => n + x.eventsReplayed, 0);
        if (replayed !== total) throw new Error(`rebuild replayed ${replayed} of ${total}`);
        for (const x of results) for (const [id, s] of x.plans) if (stateDigest(s) !== expected.get(id)) throw new Error(`digest mismatch for ${id}`);
        return { ms };
      };
      const [raw, rebuild] = r % 2 === 0 ? [await runRaw(), await runRebuild()] : await (async () => { const b = await runRebuild(); return [await runRaw(), b] as const; })();
      if (raw.records !== total) throw new Error(`raw consumer saw ${raw.records} of ${total}`);
      const row = {
        rawMs: Math.round(raw.ms),
        rebuildMs: Math.round(rebuild.ms),
        rawEventsPerSec: Math.round(total / (raw.ms / 1000)),
        rebuildEventsPerSec: Math.round(total / (rebuild.ms / 1000)),
        ratio: +(raw.ms / rebuild.ms).toFixed(3),
      };
      rounds.push(row);
      console.log(`round ${r + 1}: raw ${row.rawEventsPerSec}/s, rebuild ${row.rebuildEventsPerSec}/s, ratio ${row.ratio}`);
    }

    if (profiler) {
      writeFileSync(process.env.PROFILE!, JSON.stringify(profiles.at(-1)));
      profiler.disconnect();
    }

    // 3. The live projector catching up on the whole log from nothing (consumer group, restore of empty
    //    snapshots, decode + evolve, snapshot writes at boundaries, watermarks). Once: it leaves snapshots.
    const service = new ProjectionService({ config, logger, defaultMetrics: false, retainEvents: 0 });
    const t0 = performance.now();
    await service.start();
    while (!(await service.caughtUp())) await new Promise((r) => setTimeout(r, 50));
    const catchUpMs = performance.now() - t0;
    await service.writeWatermarks();
    const metrics = await service.metrics.registry.getMetricsAsJSON();
    const writes = metrics.find((m) => m.name === 'plan_ledger_projector_snapshot_writes_total')?.values ?? [];
    const digests = service.model.stateDigests();
    const matches = [...expected].every(([id, d]) => digests.get(id) === d);
    await service.stop();
    // ... and restarting it: restore from those snapshots (cost follows the tail: nothing after the watermark).
    const again = new ProjectionService({ config, logger, defaultMetrics: false, retainEvents: 0 });
    const t1 = performance.now();
    await again.start();
    while (!(await again.caughtUp())) await new Promise((r) => setTimeout(r, 50));
    const restartMs = performance.now() - t1;
    const restartDigests = again.model.stateDigests();
    const restartMatches = [...expected].every(([id, d]) => restartDigests.get(id) === d);
    const restartReplayed = (await again.metrics.registry.getMetricsAsJSON()).find((m) => m.name === 'plan_ledger_projector_events_applied_total')?.values.reduce((n, v) => n + v.value, 0);
    await again.stop();
    if (!restartMatches || !matches) throw new Error('projector digests differ from the decide-time states');

    console.log('measuring memory ...');
    const memory = measureMemory(MEMORY_PLANS);

    const results = {
      bench: 'projector',
      machine: machine(),
      command: 'npx tsx bench/projector.ts',
      log: { plans: PLANS, itemsPerPlan: ITEMS, events: total, partitions: config.partitions, eventsPerPlan: bytes / PLANS },
      rebuild: {
        what: 'full-log rebuild: restorePartition on every partition in parallel (readToEnd, read_committed, codec decode, evolve), no snapshots; digests checked against decide-time states',
        baseline: 'raw kafkajs consumer, eachBatch, same topic, counts records, no decoding; both timed from connect to the end offsets',
        medianRawEventsPerSec: median(rounds.map((r) => r.rawEventsPerSec)),
        medianRebuildEventsPerSec: median(rounds.map((r) => r.rebuildEventsPerSec)),
        medianRatio: median(rounds.map((r) => r.ratio)),
        rounds,
      },
      liveCatchUp: {
        what: 'ProjectionService from an empty snapshots topic: group join, restore, consume, decode, evolve, snapshots at boundaries, watermarks',
        ms: Math.round(catchUpMs),
        eventsPerSec: Math.round(total / (catchUpMs / 1000)),
        snapshotWrites: Object.fromEntries(writes.map((v) => [String(v.labels['kind']), v.value])),
        digestsMatch: matches,
        restartFromSnapshots: { ms: Math.round(restartMs), eventsReplayed: restartReplayed, digestsMatch: restartMatches },
      },
      memory,
    };
    writeResults('bench/results/projector.json', results);
    console.log(JSON.stringify({ rebuild: { ...results.rebuild, rounds: undefined }, liveCatchUp: results.liveCatchUp, memory }, null, 2));
  } finally {
    await producer.disconnect();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`));
    await admin.deleteTopics({ topics: mine }).catch(() => {});
    await admin.disconnect();
  }
}

if (process.env.ONLY === 'memory') console.log(JSON.stringify(measureMemory(MEMORY_PLANS), null, 2));
else await main();
