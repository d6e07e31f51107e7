// Failover benchmark (not a test): time from kill -9 of the owning executor to the survivor's first
// appended event, vs a raw two-member kafkajs consumer group with the same session/heartbeat settings
// (time from kill -9 of the owner to the survivor's first consumed record). One partition, so the
// owner is certain. Needs a broker and registry (env or `npx plan-ledger stack up`).
// Run: npx tsx bench/failover.ts [--rounds 3]   → bench/results/failover.json
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { connectLedger } from '../src/client/index.js';
import { loadConfig, type LedgerConfig } from '../src/config.js';
import { createKafka } from '../src/kafka/client.js';
import { silentLogger } from '../src/logging.js';
import { machine, median, writeResults } from './common.js';

const SESSION = 6000;
const HEARTBEAT = 500;
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } });
const rounds = Number(values.rounds);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Proc {
  p: ChildProcess;
  label: string;
  lines: Array<Record<string, unknown>>;
}

function run(args: string[], label: string, env: Record<string, string> = {}): Proc {
  const p = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Array<Record<string, unknown>> = [];
  let buf = '';
  p.stdout!.on('data', (c: Buffer) => {
    buf += c.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      try {
        lines.push({ ...(JSON.parse(buf.slice(0, i)) as object), seenAt: Date.now() });
      } catch {
        /* not a log line */
      }
      buf = buf.slice(i + 1);
    }
  });
  return { p, label, lines };
}

async function until<T>(f: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(20);
  }
}

const lastAssignment = (x: Proc) => [...x.lines].reverse().find((l) => l.msg === 'assignment') as { partitions?: number[] } | undefined;

async function ownerOf(a: Proc, b: Proc): Promise<[Proc, Proc]> {
  return until(() => {
    const la = lastAssignment(a);
    const lb = lastAssignment(b);
    if (la?.partitions?.includes(0) && lb && !lb.partitions?.includes(0)) return [a, b] as [Proc, Proc];
    if (lb?.partitions?.includes(0) && la && !la.partitions?.includes(0)) return [b, a] as [Proc, Proc];
    return undefined;
  });
}

async function executorRound(): Promise<number> {
  const config: LedgerConfig = loadConfig({ topicPrefix: `fo-${randomBytes(4).toString('hex')}`, partitions: 1 });
  const env = {
    PLAN_LEDGER_BROKERS: config.brokers.join(','),
    PLAN_LEDGER_REGISTRY_URL: config.registryUrl,
    PLAN_LEDGER_TOPIC_PREFIX: config.topicPrefix,
    PLAN_LEDGER_PARTITIONS: '1',
    PLAN_LEDGER_SESSION_TIMEOUT_MS: String(SESSION),
    PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT),
    PLAN_LEDGER_LOG_LEVEL: 'info',
  };
  const ledger = await connectLedger(config); // creates the topics
  const a = run(['bin/plan-ledger.js', 'executor', '--tools', 'test/fixtures/tools.ts', '--id', 'fo-A'], 'fo-A', env);
  await until(() => a.lines.find((l) => l.msg === 'partition restored'));
  const b = run(['bin/plan-ledger.js', 'executor', '--tools', 'test/fixtures/tools.ts', '--id', 'fo-B'], 'fo-B', env);
  const [owner, survivor] = await ownerOf(a, b);
  await until(() => owner.lines.find((l) => l.msg === 'partition restored' && Number(l.seenAt) > 0));
  const { planId } = await ledger.createPlan({
    goal: 'failover',
    mode: 'execute',
    items: Array.from({ length: 900 }, (_, i) => ({ id: `s${i}`, title: `s${i}`, why: 'keep the owner busy', tool: 'noop', dependsOn: i ? [`s${i - 1}`] : [] })),
  });
  await ledger.waitFor(planId, (s) => s.items.s20?.status === 'completed', { timeoutMs: 60_000 });
  // Watch for the survivor's first event, then kill the owner.
  let first: number | undefined;
  const consumer = createKafka(config, silentLogger(), 'fo-watch').consumer({ groupId: `${config.topicPrefix}.watch`, maxWaitTimeInMs: 20 });
  await consumer.connect();
  await consumer.subscribe({ topic: `${config.topicPrefix}.plan-events`, fromBeginning: false });
  const { createCodec } = await import('../src/codec/index.js');
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  await consumer.run({
    eachMessage: async ({ message }) => {
      if (first !== undefined || !message.value) return;
      const e = await codec.decodeEvent(message.value);
      if (e.actor === survivor.label) first = Date.now();
    },
  });
  await sleep(1500);
  const t0 = Date.now();
  owner.p.kill('SIGKILL');
  await until(() => first, 60_000);
  const ms = first! - t0;
  await consumer.disconnect();
  survivor.p.kill('SIGKILL');
  await ledger.close();
  return ms;
}

async function rawRound(): Promise<number> {
  const config = loadConfig({ topicPrefix: `fo-raw-${randomBytes(4).toString('hex')}` });
  const kafka = createKafka(config, silentLogger(), 'fo-raw');
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${config.topicPrefix}.records`;
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  const group = `${config.topicPrefix}.group`;
  const args = (label: string) => ['--import', 'tsx', 'bench/raw-consumer.ts', config.brokers.join(','), topic, group, label, String(SESSION), String(HEARTBEAT)];
  const a = run(args('raw-A'), 'raw-A');
  await until(() => lastAssignment(a)?.partitions?.length ? true : undefined);
  const b = run(args('raw-B'), 'raw-B');
  const [owner, survivor] = await ownerOf(a, b);
  const producer = kafka.producer();
  await producer.connect();
  let producing = true;
  const pump = (async () => {
    while (producing) {
      await producer.send({ topic, messages: [{ value: String(Date.now()) }] });
      await sleep(10);
    }
  })();
  await until(() => owner.lines.find((l) => l.msg === 'consumed'));
  await sleep(1500);
  const t0 = Date.now();
  owner.p.kill('SIGKILL');
  const firstLine = await until(() => survivor.lines.find((l) => l.msg === 'consumed' && Number(l.seenAt) >= t0), 60_000);
  const ms = Number(firstLine.seenAt) - t0;
  producing = false;
  await pump;
  survivor.p.kill('SIGKILL');
  await producer.disconnect();
  await admin.deleteTopics({ topics: [topic] }).catch(() => {});
  await admin.disconnect();
  return ms;
}

const rows: Array<{ executorMs: number; rawMs: number }> = [];
for (let r = 0; r < rounds; r++) {
  const rawMs = await rawRound();
  const executorMs = await executorRound();
  rows.push({ executorMs, rawMs });
  console.log(`round ${r + 1}: executor ${executorMs} ms, raw group ${rawMs} ms, ratio ${(executorMs / rawMs).toFixed(2)}`);
}
const summary = {
  machine: machine(),
  settings: { sessionTimeoutMs: SESSION, heartbeatIntervalMs: HEARTBEAT, partitions: 1, rounds },
  median: { executorMs: median(rows.map((r) => r.executorMs)), rawMs: median(rows.map((r) => r.rawMs)), ratio: median(rows.map((r) => r.executorMs / r.rawMs)) },
  rounds: rows,
};
console.table(summary.median);
writeResults('bench/results/failover.json', summary);
process.exit(0);
