// Full-log rebuild vs a raw read (the Kafka port's readToEnd) that decodes the same records, in the same run.
//
//   npm run bench -- rebuild [--quick] [--rounds 5] [--plans 3000]
//   PROFILE=/tmp/rebuild.cpuprofile ...   (a CPU profile of the rebuild rounds only, for Chrome DevTools)
//
// The log: `plans` plans × 10 items decided by the domain (45 events each), steps interleaved across
// plans as an executor appends them, on 3 partitions. plan-ledger: `restorePartition` on every partition
// in parallel (what the projector runs for its assignment with no snapshots yet): read_committed read,
// codec decode, fold; every rebuilt state digest is checked. Baseline: a raw `readToEnd` of every
// partition that decodes every value with raw avsc (the same writer schema, the 5-byte header skipped)
// and keeps nothing. Both timed from the start of the read to the end offsets. Also, once: the
// live projector's catch-up from nothing and its restart from the snapshots it wrote. Writes
// bench/results/rebuild.json.
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import avsc from 'avsc';
import { ProjectionService } from '../projector/projector.js';
import { createCodec } from '../src/codec/index.js';
import { loadConfig, topicNames } from '../src/config.js';
import { createKafka, ensurePlanTopics, eventKey, partitionFor, type KafkaClient } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';
import { planEventSchema, stateDigest, type PlanState } from '../src/plan/index.js';
import { restorePartition } from '../src/projection/index.js';
import { benchArgs, metric, paired, writeResult } from './lib/harness.js';
import { decideAll, ITEMS, lifecycle } from './lib/plans.js';

const args = benchArgs(['plans']);
const PLANS = Number(args.options.plans ?? (args.quick ? 500 : 3000));
const logger = silentLogger();
const avro = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: 'auto' });

// ---------------------------------------------------------------------------------------------------

async function rawConsume(kafka: KafkaClient, topic: string, ends: Map<number, bigint>): Promise<{ ms: number; records: number }> {
  const started = performance.now();
  let records = 0;
  await kafka.readToEnd({
    topic,
    partitions: [...ends.keys()],
    until: new Map([...ends].map(([p, end]) => [p, end.toString()])),
    timeoutMs: 600_000,
    onRecords: (batch) => {
      for (const m of batch) {
        if (!m.value) continue;
        if ((avro.fromBuffer(m.value.subarray(5)) as { seq: number }).seq > 0) records += 1;
      }
    },
  });
  return { ms: performance.now() - started, records };
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
  const producer = kafka.writer();
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
        await producer.send(
          names.events,
          events.slice(i, i + 5000).map((e) => ({ key: eventKey(e.planId, e.seq), value: codec.encodeEvent(e), partition: partitionFor(e.planId, config.partitions) })),
        );
      }
      total += events.length;
    }
    const offsets = await admin.fetchTopicOffsets(names.events);
    const ends = new Map(offsets.map((o) => [o.partition, BigInt(o.high)]));
    const expected = new Map([...states].map(([id, s]) => [id, stateDigest(s)]));
    console.log(`${total} events on ${config.partitions} partitions`);

    // 2. Rounds: raw readToEnd + decode vs restorePartition on every partition (in parallel, as the
    //    projector restores its assignment), no snapshots: the full-log rebuild. Alternating order.
    const profiler = process.env.PROFILE ? new Session() : null;
    const profiles: object[] = [];
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
    }
    const runRaw = async () => {
      const raw = await rawConsume(kafka, names.events, ends);
      if (raw.records !== total) throw new Error(`raw read decoded ${raw.records} of ${total}`);
      return { eventsPerSecond: total / (raw.ms / 1000), ms: raw.ms };
    };
    const runRebuild = async () => {
      if (profiler) await profiler.post('Profiler.start');
      const t = performance.now();
      const results = await Promise.all([...ends.keys()].map((partition) => restorePartition({ kafka, codec, config, partition, logger })));
      const ms = performance.now() - t;
      if (profiler) profiles.push((await profiler.post('Profiler.stop')).profile);
      const replayed = results.reduce((n, x) => n + x.eventsReplayed, 0);
      if (replayed !== total) throw new Error(`rebuild replayed ${replayed} of ${total}`);
      for (const x of results) for (const [id, s] of x.plans) if (stateDigest(s) !== expected.get(id)) throw new Error(`digest mismatch for ${id}`);
      return { eventsPerSecond: total / (ms / 1000), ms };
    };
    const rounds = await paired({ rounds: args.rounds, warmup: 1, label: 'rebuild ', subject: runRebuild, baseline: runRaw });

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

    writeResult({
      name: 'rebuild',
      title: 'Full-log rebuild (restorePartition: read, decode, fold) vs raw readToEnd + raw avsc decode',
      quick: args.quick,
      settings: { plans: PLANS, itemsPerPlan: ITEMS, events: total, partitions: config.partitions, eventsPerPlan: total / PLANS, rounds: args.rounds },
      metrics: [metric(rounds, { key: 'eventsPerSecond', label: `rebuild of ${total.toLocaleString('en-US')} events`, unit: 'events/s', better: 'higher', baselineLabel: 'raw readToEnd + avsc decode' })],
      rounds,
      notes: ['Decode on both sides; the rebuild also folds every event into plan states (the baseline keeps nothing) and checks every digest.'],
      extra: {
        liveCatchUp: {
          what: 'ProjectionService from an empty snapshots topic: group join, restore, consume, decode, evolve, snapshots at boundaries, watermarks',
          ms: Math.round(catchUpMs),
          eventsPerSec: Math.round(total / (catchUpMs / 1000)),
          snapshotWrites: Object.fromEntries(writes.map((v) => [String(v.labels['kind']), v.value])),
          restartFromSnapshots: { ms: Math.round(restartMs), eventsReplayed: restartReplayed },
        },
      },
    });
  } finally {
    await producer.disconnect();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`));
    await admin.deleteTopics(mine).catch(() => {});
    await admin.disconnect();
    await kafka.close();
  }
}

await main();
process.exit(0);
