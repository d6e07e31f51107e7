// The executor's write path and the candidates that would replace it, side by side at the Kafka level
// (issue 30: "a write path that needs no per-step transaction", measured before it is built). The same
// step records, the same plans, the same concurrency, through:
//
//   tx-partition  today's path: per partition a group commit (executor/appender.ts) on two transactional
//                 writers taking turns; a step's records commit in a transaction with whatever else of
//                 its partition is ready. No consumer offsets (a command's step adds them).
//   tx-executor   one group commit for every partition an executor owns: one appender on two writers,
//                 its transactions span partitions (what a KIP-447-style fence per executor would allow).
//   idempotent    no transaction: each step's records go to one idempotent producer (acks=all, the
//                 producer batches what is queued), the step is done when they are acknowledged (what an
//                 owner-epoch design, records that carry the owner's fence and readers that drop a fenced
//                 owner's, would write per step).
//
//   npm run bench -- write-paths [--quick] [--rounds 5] [--plans 200] [--in-flight 20] [--sequential 10]
//
// Work: N plans, hashed onto a 6-partition topic like the events topic; each plan writes 10 steps in
// sequence, a step being 4 records of the size of a chain step's events (key plan:seq, a 180-byte value,
// the writer header) that must be durable before the plan's next step starts. At --in-flight plans at
// once → steps/s; then plans one at a time → ms per step. CPU per step of the broker JVM and of this
// process (every thread, so librdkafka's count) from /proc and process.cpuUsage(), sampled around each
// timed phase; Kafka requests per step by type from a counted pass afterwards (librdkafka's protocol debug
// lines, not timed). Variants take turns within each round, in a rotating order; medians of the rounds.
// Writes bench/results/write-paths.json. Reading is left out: it is what a reader pays on any of them
// (a read_committed reader of the transactional paths also waits for the markers).
import { randomBytes } from 'node:crypto';
import { loadConfig, type LedgerConfig } from '../src/config.js';
import { createKafka, MAX_RECORD_BYTES, type FencedWriter, type GroupMember, type KafkaClient, type OutRecord, type RecordWriter } from '../src/kafka/index.js';
import { createLogger, silentLogger, type Logger } from '../src/logging.js';
import { setting } from '../src/settings.js';
import { readStackInfo, REGISTRY, runningProcesses } from '../src/stack/discovery.js';
import { TransactionalAppender } from '../executor/appender.js';
import { cpuMsPerStep, sampleCpu } from './lib/cpu.js';
import { benchArgs, fmt, median, metric, writeResult, type PairedRound } from './lib/harness.js';
import { requestCounter, requestsPerStep } from './lib/requests.js';

const args = benchArgs(['plans', 'in-flight', 'sequential']);
const PARTITIONS = 6;
const STEPS = 10;
const RECORDS_PER_STEP = 4;
const VALUE_BYTES = 180;
const IN_FLIGHT = Number(args.options['in-flight'] ?? 20);
const PLANS = Math.max(IN_FLIGHT, Number(args.options.plans ?? (args.quick ? 60 : 200)));
const SEQUENTIAL = Number(args.options.sequential ?? (args.quick ? 5 : 10));
const ROUNDS = args.quick ? Math.min(args.rounds, 3) : args.rounds;

const VARIANTS = ['tx-partition', 'tx-executor', 'idempotent'] as const;
type Variant = (typeof VARIANTS)[number];

/** A way to make a step's records durable: resolves once they are (committed, or acknowledged). */
interface Path {
  step(partition: number, records: OutRecord[]): Promise<void>;
  close(): Promise<void>;
}

const run = randomBytes(3).toString('hex');
const config: LedgerConfig = loadConfig({ topicPrefix: `wpb-${run}`, clientId: 'write-paths' });
const topic = `${config.topicPrefix}.events`;
const writerId = `executor-${run}`;
const value = Buffer.alloc(VALUE_BYTES, 'x');

/** The step records of plan `plan`'s step `seq`, as an executor writes a chain step's events. */
function stepRecords(plan: string, seq: number): OutRecord[] {
  const out: OutRecord[] = [];
  for (let i = 0; i < RECORDS_PER_STEP; i++) out.push({ key: `${plan}:${String(seq * RECORDS_PER_STEP + i).padStart(8, '0')}`, value, headers: { 'plan-ledger-writer': writerId } });
  return out;
}

/** A member stand-in for the appender: its offsets are never sent here (no request carries a commitOffset). */
const NO_MEMBER = undefined as unknown as GroupMember;

async function fencedWriters(kafka: KafkaClient, id: string): Promise<FencedWriter[]> {
  const ws = [kafka.fencedWriter(id), kafka.fencedWriter(`${id}.b`)];
  for (const w of ws) await w.connect();
  return ws;
}

async function openPath(kafka: KafkaClient, variant: Variant, logger: Logger): Promise<Path> {
  const appenderOf = (writers: FencedWriter[], partition: number) =>
    new TransactionalAppender({ writers, member: NO_MEMBER, eventsTopic: topic, commandsTopic: `${topic}.unused`, partition, logger, maxRequestBytes: MAX_RECORD_BYTES });
  const id = `${config.topicPrefix}.${variant}.${randomBytes(3).toString('hex')}`;
  if (variant === 'tx-partition') {
    const writers: FencedWriter[][] = [];
    for (let p = 0; p < PARTITIONS; p++) writers.push(await fencedWriters(kafka, `${id}.p${p}`));
    const appenders = writers.map((ws, p) => appenderOf(ws, p));
    return {
      step: (partition, records) => appenders[partition]!.append({ events: records }),
      close: async () => {
        for (const ws of writers) for (const w of ws) await w.disconnect();
      },
    };
  }
  if (variant === 'tx-executor') {
    const writers = await fencedWriters(kafka, id);
    const appender = appenderOf(writers, 0);
    // The records ride as `extra`, which keeps each record's own partition.
    return {
      step: (partition, records) => appender.append({ events: [], extra: [{ topic, messages: records.map((r) => ({ ...r, partition })) }] }),
      close: async () => {
        for (const w of writers) await w.disconnect();
      },
    };
  }
  const writer: RecordWriter = kafka.writer();
  await writer.connect();
  return {
    step: async (partition, records) => {
      await writer.send(
        topic,
        records.map((r) => ({ ...r, partition })),
      );
    },
    close: () => writer.disconnect(),
  };
}

/** One plan: its steps in sequence, each durable before the next. */
async function plan(path: Path, name: string, partition: number): Promise<void> {
  for (let s = 0; s < STEPS; s++) await path.step(partition, stepRecords(name, s));
}

let planNo = 0;
function nextPlan(): { name: string; partition: number } {
  const n = planNo++;
  return { name: `plan-${run}-${n}`, partition: n % PARTITIONS };
}

/** `total` plans, `inFlight` at a time; steps per second. */
async function throughput(path: Path, total: number, inFlight: number): Promise<number> {
  let started = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (started < total) {
      started++;
      const p = nextPlan();
      await plan(path, p.name, p.partition);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
  return (total * STEPS) / ((performance.now() - t0) / 1000);
}

/** `count` plans one at a time; ms per step. */
async function sequential(path: Path, count: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i++) {
    const p = nextPlan();
    await plan(path, p.name, p.partition);
  }
  return (performance.now() - t0) / (count * STEPS);
}

function brokerPids(): Record<string, number> {
  const info = readStackInfo();
  if (!info || info.brokers.join(',') !== config.brokers.join(',')) return {};
  return Object.fromEntries(runningProcesses(info.dir).filter((r) => r.name !== REGISTRY).map((r) => [r.name, r.pid]));
}

const pids: Record<string, number | 'self'> = { ...brokerPids(), writer: 'self' };
const kafka = createKafka(config, silentLogger(), undefined, 'service');
const admin = kafka.admin();
await admin.connect();
await admin.createTopics([{ topic, numPartitions: PARTITIONS, replicationFactor: config.replicationFactor }]);

interface RoundRow {
  stepsPerSecond: number;
  msPerStep: number;
  cpuInFlight: Record<string, number>;
  cpuOneAtATime: Record<string, number>;
}

const total = (cpu: Record<string, number>) => Object.values(cpu).reduce((s, v) => s + v, 0);
const rows: Array<Record<Variant, RoundRow>> = [];
try {
  const paths = new Map<Variant, Path>();
  for (const v of VARIANTS) paths.set(v, await openPath(kafka, v, silentLogger()));
  // Warm every path: connections, coordinators, the partitions' leaders.
  for (const v of VARIANTS) await throughput(paths.get(v)!, IN_FLIGHT, IN_FLIGHT);
  for (let r = 0; r < ROUNDS; r++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]!);
    const row = {} as Record<Variant, RoundRow>;
    for (const v of order) {
      const path = paths.get(v)!;
      const c0 = sampleCpu(pids);
      const stepsPerSecond = await throughput(path, PLANS, IN_FLIGHT);
      const c1 = sampleCpu(pids);
      const msPerStep = await sequential(path, SEQUENTIAL);
      const c2 = sampleCpu(pids);
      row[v] = { stepsPerSecond, msPerStep, cpuInFlight: cpuMsPerStep(c0, c1, PLANS * STEPS), cpuOneAtATime: cpuMsPerStep(c1, c2, SEQUENTIAL * STEPS) };
      console.log(`round ${r + 1} ${v}: ${fmt(stepsPerSecond)} steps/s at ${IN_FLIGHT} in flight (CPU ${fmt(total(row[v].cpuInFlight))} ms/step), ${fmt(msPerStep)} ms per step one at a time (CPU ${fmt(total(row[v].cpuOneAtATime))} ms/step)`);
    }
    rows.push(row);
  }
  for (const p of paths.values()) await p.close();

  // The counted pass: a new client whose handles log every request they send, one phase of each kind per path.
  const counter = requestCounter();
  const debugBefore = setting('PLAN_LEDGER_KAFKA_DEBUG');
  process.env.PLAN_LEDGER_KAFKA_DEBUG = 'protocol';
  const counted = createKafka(config, createLogger({ level: 'trace' }, counter.stream), 'counted', 'service');
  const requests: Record<string, { inFlight: Record<string, number>; oneAtATime: Record<string, number> }> = {};
  try {
    for (const v of VARIANTS) {
      const path = await openPath(counted, v, silentLogger());
      await throughput(path, IN_FLIGHT, IN_FLIGHT);
      await new Promise((r) => setTimeout(r, 200)); // the warm-up's lines are written
      const a = { ...counter.counts };
      await throughput(path, PLANS, IN_FLIGHT);
      await new Promise((r) => setTimeout(r, 200));
      const b = { ...counter.counts };
      await sequential(path, SEQUENTIAL);
      await new Promise((r) => setTimeout(r, 200));
      const c = { ...counter.counts };
      await path.close();
      requests[v] = { inFlight: requestsPerStep(a, b, PLANS * STEPS), oneAtATime: requestsPerStep(b, c, SEQUENTIAL * STEPS) };
      console.log(`requests per step, ${v}: at ${IN_FLIGHT} in flight ${JSON.stringify(requests[v].inFlight)}; one at a time ${JSON.stringify(requests[v].oneAtATime)}`);
    }
  } finally {
    process.env.PLAN_LEDGER_KAFKA_DEBUG = debugBefore ?? '';
    await counted.close();
  }

  // Each candidate against today's path, round by round.
  const pairedWith = (v: Variant, key: (x: RoundRow) => number): PairedRound[] =>
    rows.map((row, i) => ({ round: i + 1, first: 'subject', subject: { x: key(row[v]) }, baseline: { x: key(row['tx-partition']) } }));
  const metrics = (['tx-executor', 'idempotent'] as const).flatMap((v) => [
    metric(pairedWith(v, (x) => x.stepsPerSecond), { key: 'x', label: `steps/s at ${IN_FLIGHT} in flight: ${v} vs today's per-partition transactions`, unit: 'steps/s', better: 'higher', subjectLabel: v, baselineLabel: 'tx-partition' }),
    metric(pairedWith(v, (x) => x.msPerStep), { key: 'x', label: `per step, one plan at a time: ${v} vs today's`, unit: 'ms', better: 'lower', subjectLabel: v, baselineLabel: 'tx-partition' }),
    metric(pairedWith(v, (x) => total(x.cpuInFlight)), { key: 'x', label: `CPU per step at ${IN_FLIGHT} in flight (broker + writer): ${v} vs today's`, unit: 'ms', better: 'lower', subjectLabel: v, baselineLabel: 'tx-partition' }),
  ]).map((m) => ({ ...m, key: `${m.subjectLabel}-${m.unit === 'steps/s' ? 'stepsPerSecond' : m.label.startsWith('CPU') ? 'cpuMsPerStep' : 'msPerStep'}` }));
  const medianCpu = (v: Variant, which: 'cpuInFlight' | 'cpuOneAtATime') => Object.fromEntries(Object.keys(rows[0]![v][which]).map((k) => [k, Number(median(rows.map((r) => r[v][which][k]!)).toFixed(3))]));
  writeResult({
    name: 'write-paths',
    title: `Write paths at the Kafka level: ${PLANS} plans × ${STEPS} steps of ${RECORDS_PER_STEP} records, per-partition transactions (today) vs one transaction per executor vs idempotent appends`,
    quick: args.quick,
    settings: { plans: PLANS, steps: STEPS, recordsPerStep: RECORDS_PER_STEP, valueBytes: VALUE_BYTES, inFlight: IN_FLIGHT, sequentialPlans: SEQUENTIAL, partitions: PARTITIONS, rounds: ROUNDS },
    metrics,
    rounds: rows,
    notes: [
      'A step is durable when its transaction committed (tx-partition, tx-executor) or its records were acknowledged by the in-sync replicas (idempotent); here one broker with its defaults.',
      'CPU per step: the broker JVM and this process (the writer, librdkafka threads included) during the timed phase ÷ its steps.',
      'What each candidate would cost the ledger’s guarantees is in docs/design.md#write-path-candidates.',
    ],
    extra: {
      cpuMsPerStep: Object.fromEntries(VARIANTS.map((v) => [v, { inFlight: medianCpu(v, 'cpuInFlight'), oneAtATime: medianCpu(v, 'cpuOneAtATime') }])),
      stepsPerSecond: Object.fromEntries(VARIANTS.map((v) => [v, Number(median(rows.map((r) => r[v].stepsPerSecond)).toFixed(1))])),
      msPerStep: Object.fromEntries(VARIANTS.map((v) => [v, Number(median(rows.map((r) => r[v].msPerStep)).toFixed(3))])),
      kafkaRequests: { perStep: requests, how: 'a counted pass after the timed rounds (not timed): new handles logging every request they send (librdkafka protocol debug lines), per step' },
    },
  });
} finally {
  await admin.deleteTopics([topic]).catch(() => {});
  await admin.disconnect();
  await kafka.close();
}
