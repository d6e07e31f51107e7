// Append throughput and single-append latency of the item protocol vs raw transactional writes (the Kafka
// port's FencedWriter, librdkafka) with the same payloads.
//
//   npm run bench -- executor [--quick] [--rounds 5] [--plans 50] [--items 20] [--chain 30]
//
// plan-ledger: an executor (`startExecutor`, 6 partitions, concurrency 20, no-op tool) in its own
// process and a client (`connectLedger`) here.
//  - throughput: `plans` plans of `items` independent items are created at once; the clock runs from the
//    first createPlan to the moment the client's `waitFor(planId, 'completed')` has resolved for every
//    plan — i.e. the PlanCompleted events are committed and visible to a read_committed consumer, never
//    the executor's in-memory state. → items/s and appended events/s.
//  - chain: one plan of `chain` items, each depending on the previous → ms per item, client-timed.
// Baseline (raw transactions, same run): after each protocol round its appended records (the same encoded
// events: keys, values, partitions) are read back from the events topic and grouped into the
// transactions the executor committed (a commit marker takes an offset, so a gap in the offsets of one
// partition's records is a transaction boundary). The raw side replays exactly those transactions with
// one transactional writer per partition (warmed: each has committed a transaction before any clock
// starts, so the producer-id set-up is excluded on both sides) onto a topic with the same partitions;
// its clock stops when a read_committed tail (reading before) has received every record.
//  - throughput: partitions in parallel, each partition's transactions one after another → events/s.
//  - chain: the chain's transactions one at a time, each visible to the tail before the next is
//    sent → ms per item.
import { fileURLToPath } from 'node:url';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { configToEnv, topicNames, type LedgerConfig } from '../src/config.js';
import type { FencedWriter, KafkaClient, LogRecord, PartitionTail } from '../src/kafka/index.js';
import { benchArgs, metric, paired, until, writeResult } from './lib/harness.js';
import { benchConfig, benchKafka, dropTopics, spawnTs, stopProc, waitLine } from './lib/ledger.js';

const args = benchArgs(['plans', 'items', 'chain']);
const plans = Number(args.options.plans ?? (args.quick ? 20 : 50));
const itemsPerPlan = Number(args.options.items ?? (args.quick ? 10 : 20));
const chain = Number(args.options.chain ?? (args.quick ? 10 : 30));
const CONCURRENCY = 20;
const PARTITIONS = 6;

type Tx = LogRecord[];

/** Transactions by partition, from one producer's records read back in offset order. */
function transactions(records: LogRecord[]): Map<number, Tx[]> {
  const out = new Map<number, Tx[]>();
  const last = new Map<number, bigint>();
  for (const r of records) {
    const o = BigInt(r.offset);
    const list = out.get(r.partition) ?? [];
    out.set(r.partition, list);
    const prev = last.get(r.partition);
    if (prev === undefined || o !== prev + 1n) list.push([]);
    list.at(-1)!.push(r);
    last.set(r.partition, o);
  }
  return out;
}

class Protocol {
  private offsets = new Map<number, string>();
  constructor(
    readonly config: LedgerConfig,
    readonly ledger: Ledger,
    readonly kafka: KafkaClient,
  ) {}

  /** Records appended to the events topic since the last call. */
  async appended(): Promise<LogRecord[]> {
    const out: LogRecord[] = [];
    this.offsets = await this.kafka.readToEnd({ topic: topicNames(this.config.topicPrefix).events, from: this.offsets, onRecords: (rs) => void out.push(...rs) });
    return out;
  }

  async throughput(): Promise<{ seconds: number; records: LogRecord[] }> {
    await this.appended();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: plans }, async (_, p) => {
        const { planId } = await this.ledger.createPlan({
          goal: `bench plan ${p}`,
          mode: 'execute',
          items: Array.from({ length: itemsPerPlan }, (_, i) => ({ id: `i${i}`, title: `item ${i}`, why: 'benchmark', tool: 'noop', input: { i } })),
        });
        await this.ledger.waitFor(planId, 'completed', { timeoutMs: 300_000 });
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, records: await this.appended() };
  }

  async chain(): Promise<{ ms: number; records: LogRecord[] }> {
    await this.appended();
    const t0 = performance.now();
    const { planId } = await this.ledger.createPlan({
      goal: 'bench chain',
      mode: 'execute',
      items: Array.from({ length: chain }, (_, i) => ({ id: `c${i}`, title: `c${i}`, why: 'chain', tool: 'noop', dependsOn: i ? [`c${i - 1}`] : [] })),
    });
    await this.ledger.waitFor(planId, 'completed', { timeoutMs: 300_000 });
    const ms = performance.now() - t0;
    return { ms, records: await this.appended() };
  }
}

class Raw {
  private seen = 0;
  private constructor(
    readonly topic: string,
    readonly producers: FencedWriter[],
    private watch?: PartitionTail,
  ) {}

  static async start(kafka: KafkaClient, config: LedgerConfig): Promise<Raw> {
    const topic = `${config.topicPrefix}.raw-events`;
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics([{ topic, numPartitions: PARTITIONS, replicationFactor: config.replicationFactor }]);
    await admin.disconnect();
    // The same writers as the executor's owners: one FencedWriter per partition.
    const producers = await Promise.all(
      Array.from({ length: PARTITIONS }, async (_, p) => {
        const w = kafka.fencedWriter(`${config.topicPrefix}.raw.p${p}`);
        await w.connect();
        return w;
      }),
    );
    const raw = new Raw(topic, producers);
    raw.watch = await kafka.tail({ topic, onRecords: (_p, records) => void (raw.seen += records.length) });
    for (let p = 0; p < PARTITIONS; p++) await raw.watch.add(p, '0');
    // Warm every writer: InitProducerId and the first transaction's coordinator look-up happen here.
    await Promise.all(producers.map((pr, p) => raw.send(pr, [{ key: Buffer.from('warm'), value: Buffer.from('warm'), partition: p } as LogRecord])));
    await raw.visible(PARTITIONS);
    return raw;
  }

  private async send(pr: FencedWriter, tx: Tx): Promise<void> {
    const t = await pr.transaction();
    try {
      await t.send(this.topic, tx.map((r) => ({ key: r.key, value: r.value, partition: r.partition, headers: r.headers })));
      await t.commit();
    } catch (e) {
      await t.abort().catch(() => {});
      throw e;
    }
  }

  private async visible(target: number): Promise<void> {
    await until(() => (this.seen >= target ? true : undefined), 300_000, `raw watcher at ${target} records`, 1);
  }

  async throughput(byPartition: Map<number, Tx[]>): Promise<number> {
    const total = [...byPartition.values()].flat(2).length;
    const target = this.seen + total;
    const t0 = performance.now();
    await Promise.all([...byPartition].map(async ([p, txs]) => {
      for (const tx of txs) await this.send(this.producers[p]!, tx);
    }));
    await this.visible(target);
    return total / ((performance.now() - t0) / 1000);
  }

  async sequential(byPartition: Map<number, Tx[]>): Promise<number> {
    const txs = [...byPartition].flatMap(([p, list]) => list.map((tx) => ({ p, tx })));
    const t0 = performance.now();
    for (const { p, tx } of txs) {
      const target = this.seen + tx.length;
      await this.send(this.producers[p]!, tx);
      await this.visible(target);
    }
    return performance.now() - t0;
  }

  async stop(): Promise<void> {
    await this.watch?.close().catch(() => {});
    await Promise.all(this.producers.map((p) => p.disconnect().catch(() => {})));
  }
}

const config = benchConfig('executor', { partitions: PARTITIONS });
const ledger = await connectLedger(config);
const kafka = benchKafka(config);
const executor = spawnTs(fileURLToPath(new URL('./procs/executor.ts', import.meta.url)), 'executor', { ...configToEnv(config), BENCH_CONCURRENCY: String(CONCURRENCY) });
let raw: Raw | undefined;
try {
  await waitLine(executor, 'ready', 120_000);
  const protocol = new Protocol(config, ledger, kafka);
  raw = await Raw.start(kafka, config);
  // Warm-up on both sides; it also gives the raw side its first payloads.
  let lastThroughput = transactions((await protocol.throughput()).records);
  let lastChain = transactions((await protocol.chain()).records);
  await raw.throughput(lastThroughput);
  await raw.sequential(lastChain);

  const rounds = await paired({
    rounds: args.rounds,
    warmup: 0,
    label: 'executor ',
    subject: async () => {
      const t = await protocol.throughput();
      const c = await protocol.chain();
      lastThroughput = transactions(t.records);
      lastChain = transactions(c.records);
      const txCount = [...lastThroughput.values()].reduce((n, l) => n + l.length, 0);
      return {
        itemsPerSecond: (plans * itemsPerPlan) / t.seconds,
        eventsPerSecond: t.records.length / t.seconds,
        events: t.records.length,
        eventsPerTransaction: t.records.length / txCount,
        chainMsPerItem: c.ms / chain,
        chainTransactionsPerItem: [...lastChain.values()].reduce((n, l) => n + l.length, 0) / chain,
      };
    },
    baseline: async () => {
      const events = [...lastThroughput.values()].flat(2).length;
      const eventsPerSecond = await raw!.throughput(lastThroughput);
      const chainMs = await raw!.sequential(lastChain);
      return { eventsPerSecond, events, chainMsPerItem: chainMs / chain };
    },
  });

  writeResult({
    name: 'executor',
    title: 'Append throughput and single-append latency: the item protocol vs raw transactions (the port’s FencedWriter), same payloads',
    quick: args.quick,
    settings: { plans, itemsPerPlan, chain, concurrency: CONCURRENCY, partitions: PARTITIONS, rounds: args.rounds },
    metrics: [
      metric(rounds, { key: 'eventsPerSecond', label: `append throughput (${plans} plans × ${itemsPerPlan} items at once)`, unit: 'events/s', better: 'higher', baselineLabel: 'raw transactions, same transactions', aim: '≥ 0.9×' }),
      metric(rounds, { key: 'chainMsPerItem', label: `${chain}-item chain, per item`, unit: 'ms', better: 'lower', baselineLabel: 'raw, the same transactions one at a time, each visible before the next' }),
    ],
    rounds,
    notes: [
      'Both clocks stop at read_committed visibility: plan-ledger at waitFor(completed) for every plan, raw when its tail has every record.',
      'The raw side replays the very records (keys, values, partitions) and transaction boundaries the executor produced in the round before; its writers are warmed.',
    ],
    extra: {
      itemsPerSecond: rounds.map((r) => r.subject.itemsPerSecond),
      eventsPerTransaction: rounds.map((r) => r.subject.eventsPerTransaction),
      chainTransactionsPerItem: rounds.map((r) => r.subject.chainTransactionsPerItem),
    },
  });
} finally {
  await raw?.stop();
  await ledger.close();
  await kafka.close();
  await stopProc(executor);
  await dropTopics(config, [`${config.topicPrefix}.raw-events`]);
}
process.exit(0);
