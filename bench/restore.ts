// Restore benchmark (not a test): how long an executor takes to restore a partition whose history is
// 10k vs 1M events, when the projector's snapshots and watermark cover the history and a fixed tail of
// live plans follows it. Times `restoreOwnedPartition` — exactly what a new owner runs on assignment.
// History: finished plans of 10 items (intent → result → settle each), decided by the domain's own
// `decide`, encoded by the real codec, produced to one partition; their snapshots written as the
// projector writes a finished plan's (`planSnapshotRecords`: the snapshot to the archive topic, a
// tombstone to the snapshots topic) and the watermark with `watermarkMessage`, at the offsets the events
// landed on. Measured twice per size: with the tombstones still in the snapshots topic (the first
// `delete.retention.ms`, 10 minutes, after plans finish) and after the log cleaner removed them (steady
// state; the bench lowers the topic's cleaner settings and waits for it). Also timed: the executor's
// background read of the archive (`archived.load()`), which the first command for an unknown plan awaits.
// Run: npm run bench -- restore [--quick] [--rounds 5] [--sizes 10000,100000,1000000]  (quick: 10k, 100k)
// → bench/results/restore.json. Each larger size is compared with the smallest in paired rounds
// (alternating which goes first); the aim is a restore that does not grow with history.
import { randomBytes } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createCodec } from '../src/codec/index.js';
import { loadConfig, topicNames } from '../src/config.js';
import { createKafka, ensurePlanTopics, eventKey, promptCompactionConfig, type OutRecord } from '../src/kafka/index.js';
import { alterTopicConfig } from '../stack/jvm-admin.js';
import { silentLogger } from '../src/logging.js';
import { decide, evolve, type AnyCommand, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { maxFencingTokenOf, planSnapshotRecords, WATERMARK_KEY, watermarkMessage } from '../src/projection/index.js';
import { restoreOwnedPartition } from '../executor/restore.js';
import { benchArgs, median, metric, paired, type PairedRound, writeResult } from './lib/harness.js';

const args = benchArgs(['sizes', 'tail']);
const sizes = (args.options.sizes ?? (args.quick ? '10000,100000' : '10000,100000,1000000')).split(',').map(Number).sort((a, b) => a - b);
const rounds = args.rounds;
const livePlans = Number(args.options.tail ?? 100);
const logger = silentLogger();
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
};

let clock = 1_700_000_000_000;
function run(state: PlanState | undefined, command: AnyCommand, out: PlanEvent[]): PlanState | undefined {
  const d = decide(state, command, { now: clock++ });
  if (!d.ok) throw new Error(`${command.type}: ${d.rejection.code} ${d.rejection.message}`);
  for (const e of d.events) {
    state = evolve(state, e);
    out.push(e);
  }
  return state;
}
const meta = (planId: string, id: string) => ({ planId, commandId: id, issuedAt: clock, actor: 'bench', correlationId: id });

/** A plan of `items` items; `progress` of them run through the whole protocol. */
function planLog(planId: string, items: number, progress: number): PlanEvent[] {
  const out: PlanEvent[] = [];
  let s = run(undefined, {
    type: 'CreatePlan',
    ...meta(planId, `${planId}-c`),
    data: { goal: 'history', mode: 'execute', labels: {}, parent: null, items: Array.from({ length: items }, (_, i) => ({ id: `i${i}`, title: `item ${i}`, why: 'benchmark history', dependsOn: [], tool: 'noop', inputJson: `{"i":${i}}`, retry: null })) },
  } as AnyCommand, out);
  for (let i = 0; i < progress; i++) {
    const itemId = `i${i}`;
    s = run(s, { type: 'RecordIntent', ...meta(planId, `intent:${i}`), data: { itemId, executorId: 'bench', fencingToken: 1 } } as AnyCommand, out);
    s = run(s, { type: 'CommitResult', ...meta(planId, `result:${i}`), data: { itemId, attempt: 1, outcome: 'succeeded', outputJson: '{"ok":true}', error: null, durationMs: 1, executorId: 'bench', followUps: [] } } as AnyCommand, out);
    s = run(s, { type: 'SettleItem', ...meta(planId, `settle:${i}`), data: { itemId } } as AnyCommand, out);
  }
  return out;
}

async function prepare(historyEvents: number) {
  const config = loadConfig({ topicPrefix: `restore-${randomBytes(4).toString('hex')}`, partitions: 1 });
  const kafka = createKafka(config, logger, 'bench-restore');
  const admin = kafka.admin();
  await admin.connect();
  await ensurePlanTopics(admin, config);
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const t = topicNames(config.topicPrefix);
  const producer = kafka.writer();
  await producer.connect();
  let offset = 0;
  let batch: OutRecord[] = [];
  const flush = async () => {
    if (batch.length) await producer.send(t.events, batch);
    batch = [];
  };
  const snapshots: OutRecord[] = [];
  const archived: OutRecord[] = [];
  let plans = 0;
  let maxToken = 0;
  while (offset < historyEvents) {
    const planId = `hist-${plans++}`;
    const events = planLog(planId, 10, 10);
    let state: PlanState | undefined;
    for (const e of events) {
      state = evolve(state, e);
      batch.push({ key: eventKey(planId, e.seq), value: codec.encodeEvent(e), partition: 0 });
      offset++;
    }
    const records = planSnapshotRecords(codec, t, state!, 0, String(offset - 1), clock);
    snapshots.push(...records.snapshots);
    archived.push(...records.archive);
    maxToken = Math.max(maxToken, maxFencingTokenOf(state!));
    if (batch.length >= 1000) await flush();
  }
  await flush();
  const watermark = watermarkMessage(codec, 0, String(offset - 1), maxToken, clock);
  snapshots.push(watermark);
  for (let i = 0; i < archived.length; i += 100) await producer.send(t.archive, archived.slice(i, i + 100));
  for (let i = 0; i < snapshots.length; i += 100) await producer.send(t.snapshots, snapshots.slice(i, i + 100));
  // The tail: live plans after the watermark, half-way through their items.
  let tail = 0;
  for (let p = 0; p < livePlans; p++) {
    const planId = `live-${p}`;
    for (const e of planLog(planId, 10, 3)) {
      batch.push({ key: eventKey(planId, e.seq), value: codec.encodeEvent(e), partition: 0 });
      tail++;
    }
  }
  await flush();
  const end = (await admin.fetchTopicOffsets(t.events))[0]!;
  /**
   * Lets the log cleaner remove the snapshots topic's tombstones (as it does once delete.retention.ms
   * passed): prompt cleaner settings, set with Kafka's own admin tool (librdkafka's binding has no AlterConfigs).
   */
  const compactSnapshots = async () => {
    alterTopicConfig({ brokers: config.brokers }, t.snapshots, Object.fromEntries(promptCompactionConfig().map((e) => [e.name, e.value])));
    const deadline = Date.now() + 180_000;
    for (;;) {
      // The cleaner only cleans closed segments: the projector rewrites its watermark, which rolls them.
      await producer.send(t.snapshots, [{ ...watermark, value: watermark.value }]);
      await new Promise((r) => setTimeout(r, 500));
      let left = 0;
      await kafka.readToEnd({ topic: t.snapshots, partitions: [0], onRecords: (rs) => rs.forEach((x) => (left += x.key?.toString() === WATERMARK_KEY ? 0 : 1)) });
      if (left === 0) return;
      if (Date.now() > deadline) throw new Error(`the cleaner left ${left} tombstones in ${t.snapshots}`);
    }
  };
  return { config, kafka, admin, codec, producer, compactSnapshots, history: offset, historyPlans: plans, tail, end: Number(end.high) };
}

type Env = Awaited<ReturnType<typeof prepare>>;
const envs: Env[] = [];
for (const size of sizes) {
  const t0 = Date.now();
  const env = await prepare(size);
  envs.push(env);
  console.log(`history ${env.history} events (${env.historyPlans} plans) + tail ${env.tail} events written in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}

const details: Array<Record<string, number | string>> = [];
/** One restore of the partition, as a new owner runs it; then the archive index read it starts in the background. */
async function restoreOnce(env: Env, phase: string) {
  const s = performance.now();
  const restored = await restoreOwnedPartition({ kafka: env.kafka, codec: env.codec, config: env.config, partition: 0, logger });
  const restoreMs = performance.now() - s;
  const before = heapAfterGc();
  const a = performance.now();
  const archive = await restored.archived!.load();
  const archiveLoadMs = performance.now() - a;
  const archiveIndexHeapMiB = (heapAfterGc() - before) / 2 ** 20;
  if (archive.offsets.size === 0) throw new Error('empty archive index');
  if (restored.plans.size !== livePlans) throw new Error(`restore holds ${restored.plans.size} live plans, expected ${livePlans}`);
  details.push({ phase, historyEvents: env.history, restoreMs, archiveLoadMs, archiveIndexHeapMiB: +archiveIndexHeapMiB.toFixed(2), eventsReplayed: restored.eventsReplayed, plans: restored.plans.size, dormant: restored.dormant.size, archived: archive.offsets.size });
  return { restoreMs, archiveLoadMs };
}

async function compare(phase: string): Promise<Array<{ size: number; rounds: PairedRound[] }>> {
  const out: Array<{ size: number; rounds: PairedRound[] }> = [];
  for (const env of envs.slice(1)) {
    out.push({ size: env.history, rounds: await paired({ rounds, warmup: 1, label: `restore ${phase} ${env.history} vs ${envs[0]!.history}: `, subject: () => restoreOnce(env, phase), baseline: () => restoreOnce(envs[0]!, phase) }) });
  }
  return out;
}

// The first ten minutes after plans finish (tombstones still in the snapshots topic), then steady state.
// (Quick runs skip the tombstone phase.)
const withTombstones = args.quick ? [] : await compare('tombstones');
for (const env of envs) await env.compactSnapshots();
const compacted = await compare('compacted');
for (const env of envs) {
  await env.producer.disconnect();
  await env.admin.deleteTopics(Object.values(topicNames(env.config.topicPrefix)).filter((x) => x.includes('.plan-'))).catch(() => {});
  await env.admin.disconnect();
  await env.kafka.close();
}
const k = (n: number) => (n >= 1_000_000 ? `${n / 1_000_000}M` : `${Math.round(n / 1000)}k`);
writeResult({
  name: 'restore',
  title: `Restore of a partition (snapshots + a ${livePlans}-plan tail) at ${envs.map((e) => k(e.history)).join(' / ')} events of history`,
  quick: args.quick,
  settings: { sizes: envs.map((e) => e.history), rounds, livePlans, itemsPerPlan: 10, tailEvents: envs[0]!.tail },
  metrics: compacted.map(({ size, rounds: rs }) => metric(rs, { key: 'restoreMs', label: `restore at ${k(size)} events (cleaned)`, unit: 'ms', better: 'lower', baselineLabel: `the same restore at ${k(envs[0]!.history)} events`, aim: '≤ 1.2×' })),
  rounds: compacted,
  notes: ['Steady state: the log cleaner has removed finished plans’ tombstones from the snapshots topic; the figures with the tombstones still there (full runs only) are in extra.'],
  extra: {
    withTombstones: withTombstones.map(({ size, rounds: rs }) => ({ size, restoreMs: median(rs.map((r) => r.subject.restoreMs!)), baselineMs: median(rs.map((r) => r.baseline.restoreMs!)), ratio: median(rs.map((r) => r.subject.restoreMs!)) / median(rs.map((r) => r.baseline.restoreMs!)) })),
    archiveLoadMs: Object.fromEntries(envs.map((e) => [e.history, median(details.filter((d) => d.historyEvents === e.history).map((d) => d.archiveLoadMs as number))])),
    details,
  },
});
process.exit(0);
