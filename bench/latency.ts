// Command → ItemCompleted visible in the projector, p50 / p99, vs the same Kafka path done raw (the Kafka port's
// writers and tails, no ledger on top).
//
//   npm run bench -- latency [--quick] [--rounds 5] [--samples 30]
//
// plan-ledger: an executor (`startExecutor`, no-op tool) in its own process; the projector
// (`startProjector`) and the client (`connectLedger`) here. One sample: createPlan of one item, then the
// clock stops when the projector's read model (`projector.plan(id)`, polled every millisecond) shows the
// item completed. Samples one after another.
// Baseline, the Kafka hops that path cannot avoid, done raw: a record written (idempotent, acks all, as
// the client sends a command) → a read_committed tail receives it (the executor's command consumer) → two
// transactions, one after the other (intent; result + completion) → a read_committed tail receives the
// second (the projector). Same number of samples, same rounds.
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { connectLedger } from '../src/client/index.js';
import { configToEnv, type LedgerConfig } from '../src/config.js';
import type { FencedWriter, KafkaClient, PartitionTail, RecordWriter } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';
import { startProjector } from '../projector/index.js';
import { benchArgs, median, metric, paired, quantile, until, writeResult } from './lib/harness.js';
import { benchConfig, benchKafka, dropTopics, spawnTs, stopProc, waitLine } from './lib/ledger.js';

const args = benchArgs(['samples']);
const samples = Number(args.options.samples ?? (args.quick ? 10 : 30));

class RawPath {
  private received = new Map<string, () => void>();
  private constructor(
    private readonly commandTopic: string,
    private readonly client: RecordWriter,
    private readonly relayWriter: FencedWriter,
    private readonly tails: PartitionTail[],
  ) {}

  static async start(kafka: KafkaClient, config: LedgerConfig): Promise<RawPath> {
    const commandTopic = `${config.topicPrefix}.raw-commands`;
    const eventTopic = `${config.topicPrefix}.raw-events`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics([commandTopic, eventTopic].map((topic) => ({ topic, numPartitions: 1, replicationFactor: config.replicationFactor })));
    await admin.disconnect();
    const client = kafka.writer();
    const relayWriter = kafka.fencedWriter(`${config.topicPrefix}.raw-relay`);
    await Promise.all([client.connect(), relayWriter.connect()]);
    const received = new Map<string, () => void>();
    const relay = await kafka.tail({
      topic: commandTopic,
      onRecords: async (_p, records) => {
        for (const r of records) {
          for (const step of ['intent', 'settle']) {
            const tx = await relayWriter.transaction();
            await tx.send(eventTopic, [{ key: r.key, value: Buffer.concat([Buffer.from(step), r.value ?? Buffer.alloc(0)]), partition: 0 }]);
            await tx.commit();
          }
        }
      },
    });
    const watcher = await kafka.tail({
      topic: eventTopic,
      onRecords: (_p, records) => {
        for (const r of records) {
          if (!r.value?.subarray(0, 6).equals(Buffer.from('settle'))) continue;
          const k = r.key?.toString() ?? '';
          received.get(k)?.();
          received.delete(k);
        }
      },
    });
    await relay.add(0, '0');
    await watcher.add(0, '0');
    const raw = new RawPath(commandTopic, client, relayWriter, [relay, watcher]);
    raw.received = received;
    return raw;
  }

  async once(): Promise<number> {
    const key = randomBytes(8).toString('hex');
    const seen = new Promise<void>((r) => this.received.set(key, r));
    const t0 = performance.now();
    await this.client.send(this.commandTopic, [{ key, value: Buffer.alloc(300, 1), partition: 0 }]);
    await seen;
    return performance.now() - t0;
  }

  async stop(): Promise<void> {
    await Promise.all(this.tails.map((t) => t.close().catch(() => {})));
    await Promise.all([this.client.disconnect(), this.relayWriter.disconnect()].map((p) => p.catch(() => {})));
  }
}

const config = benchConfig('latency');
const ledger = await connectLedger(config);
const executor = spawnTs(fileURLToPath(new URL('./procs/executor.ts', import.meta.url)), 'executor', { ...configToEnv(config), BENCH_CONCURRENCY: '20' });
const projector = await startProjector({ config, port: 0, logger: silentLogger(), apiToken: null, defaultMetrics: false });
let raw: RawPath | undefined;
const rawKafka = benchKafka(config);
const all = { subject: [] as number[], baseline: [] as number[] };
try {
  await waitLine(executor, 'ready', 120_000);
  await projector.caughtUp();
  raw = await RawPath.start(rawKafka, config);

  const ledgerOnce = async (): Promise<number> => {
    const t0 = performance.now();
    const { planId } = await ledger.createPlan({ goal: 'latency', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'latency', tool: 'noop' }] });
    await until(() => (projector.plan(planId)?.state?.items.a?.status === 'completed' ? true : undefined), 60_000, `plan ${planId} completed in the projector`, 1);
    return performance.now() - t0;
  };
  const batch = async (once: () => Promise<number>, into?: number[]) => {
    const xs: number[] = [];
    for (let i = 0; i < samples; i++) xs.push(await once());
    into?.push(...xs);
    return { p50: median(xs), p99: quantile(xs, 0.99) };
  };

  const rounds = await paired({
    rounds: args.rounds,
    warmup: 1,
    label: 'latency ',
    subject: () => batch(ledgerOnce, all.subject),
    baseline: () => batch(() => raw!.once(), all.baseline),
  });
  // The warm-up's samples went into `all` too; keep only the rounds'.
  all.subject.splice(0, samples);
  all.baseline.splice(0, samples);

  writeResult({
    name: 'latency',
    title: 'Command → ItemCompleted visible in the projector vs the same Kafka hops done raw',
    quick: args.quick,
    settings: { samplesPerRound: samples, rounds: args.rounds, partitions: config.partitions },
    metrics: [
      metric(rounds, { key: 'p50', label: 'command → ItemCompleted in the projector, p50', unit: 'ms', better: 'lower', baselineLabel: 'raw: write → read → 2 transactions → read_committed read' }),
      metric(rounds, { key: 'p99', label: `command → ItemCompleted in the projector, p99 of ${samples}`, unit: 'ms', better: 'lower', baselineLabel: 'raw, same path' }),
    ],
    rounds,
    notes: ['Samples one after another; the projector is polled every millisecond in process.'],
    extra: {
      pooled: {
        subject: { p50Ms: median(all.subject), p99Ms: quantile(all.subject, 0.99), samples: all.subject.length, how: 'plan-ledger, every sample of every round' },
        baseline: { p50Ms: median(all.baseline), p99Ms: quantile(all.baseline, 0.99), samples: all.baseline.length, how: 'raw path, every sample of every round' },
      },
    },
  });
} finally {
  await raw?.stop();
  await rawKafka.close();
  await projector.stop();
  await ledger.close();
  await stopProc(executor);
  await dropTopics(config, [`${config.topicPrefix}.raw-commands`, `${config.topicPrefix}.raw-events`]);
}
process.exit(0);
