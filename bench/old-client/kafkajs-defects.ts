// The two client-defect scenarios of test/kafka/client-defects.e2e.test.ts, driven through kafkajs 2.2.4 —
// the client the ledger used before the port — to count how often each defect shows. kafkajs is not a
// dependency: install it beside the repo for the run and point KAFKAJS_DIR at it.
//
//   (mkdir -p /tmp/kjs && cd /tmp/kjs && npm init -y && npm install kafkajs@2.2.4)
//   KAFKAJS_DIR=/tmp/kjs/node_modules/kafkajs node --import tsx bench/old-client/kafkajs-defects.ts [--runs 3] [--kills]
//
// Overlap: writers and the reader are kafkajs (a consumer group reading the partition at read_committed).
// Kills (--kills, a private 3-broker stack): the writer is kafkajs; the log is read back with the port's
// librdkafka reader, which counts what the broker holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { createKafka, ensureTopics } from '../../src/kafka/index.js';
import { createLogger } from '../../src/logging.js';
import { stackReset, stackUp, startBroker, stopBroker } from '../../stack/stack.js';
import { overlappingAbortedTransactions, transactionsThroughLeaderKills, type OpenWriter, type SeenRecord } from '../../test/support/defect-scenarios.js';

// Not a dependency, so no types: the few calls below are kafkajs 2.2.4's documented API.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type KafkaJS = any;
const dirArg = process.env.KAFKAJS_DIR;
if (!dirArg) throw new Error('set KAFKAJS_DIR to an installed kafkajs 2.2.4 (see the header of this file)');
const kafkajs = createRequire(import.meta.url)(dirArg) as KafkaJS;
process.env.KAFKAJS_NO_PARTITIONER_WARNING = '1';

const args = process.argv.slice(2);
const runs = Number(args[args.indexOf('--runs') + 1] ?? 3) || 3;
const logger = createLogger({ level: 'warn' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function kjsWriters(brokers: string[]): OpenWriter {
  const kafka = new kafkajs.Kafka({ brokers, clientId: 'kjs-defects', logLevel: kafkajs.logLevel.NOTHING });
  return async (transactionalId) => {
    const p = kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 });
    await p.connect();
    return {
      begin: async () => {
        const tx = await p.transaction();
        return {
          send: async (topic, records) => void (await tx.send({ topic, acks: -1, messages: records.map((r) => ({ partition: r.partition, key: r.key, value: r.value })) })),
          commit: () => tx.commit(),
          abort: () => tx.abort(),
        };
      },
      close: () => p.disconnect(),
    };
  };
}

async function overlap(run: number): Promise<unknown> {
  const config = loadConfig({ topicPrefix: `kjs-overlap-${Date.now()}-${run}` });
  const kafka = createKafka(config, logger);
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${config.topicPrefix}.t`;
  await ensureTopics(admin, [{ topic, numPartitions: 1, replicationFactor: 1 }]);
  const endOffset = async () => (await admin.fetchTopicOffsets(topic))[0]!.high;
  // The kafkajs reader: a consumer group on the partition, read_committed, from the beginning.
  const seen: SeenRecord[] = [];
  let position = -1n;
  const kjs = new kafkajs.Kafka({ brokers: [...config.brokers], clientId: 'kjs-reader', logLevel: kafkajs.logLevel.NOTHING });
  const consumer = kjs.consumer({ groupId: `${config.topicPrefix}.g`, readUncommitted: false, maxWaitTimeInMs: 50 });
  consumer.on(consumer.events.END_BATCH_PROCESS, (ev: { payload: { lastOffset: string } }) => {
    const next = BigInt(ev.payload.lastOffset) + 1n;
    if (next > position) position = next;
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({ eachBatch: async ({ batch }: { batch: { partition: number; messages: Array<{ offset: string; key: Buffer | null; value: Buffer | null }> } }) => void seen.push(...batch.messages.map((m) => ({ partition: batch.partition, offset: m.offset, key: m.key?.toString() ?? null, value: m.value?.toString() ?? null }))) });
  try {
    return await overlappingAbortedTransactions({
      topic,
      partition: 0,
      rounds: 20,
      committedPerRound: 5,
      ids: [`${topic}.A`, `${topic}.B`, `${topic}.C`],
      openWriter: kjsWriters([...config.brokers]),
      endOffset,
      readers: [
        {
          name: 'kafkajs consumer',
          read: async (from, end, last) => {
            const deadline = Date.now() + 15_000;
            while (Date.now() < deadline && position < BigInt(end) && !seen.some((r) => BigInt(r.offset) >= BigInt(last))) await sleep(10);
            return seen.filter((r) => BigInt(r.offset) >= BigInt(from) && BigInt(r.offset) < BigInt(end));
          },
        },
      ],
    });
  } finally {
    await consumer.disconnect().catch(() => {});
    await admin.deleteTopics([topic]).catch(() => {});
    await admin.disconnect();
    await kafka.close();
  }
}

async function kills(run: number): Promise<unknown> {
  const dir = mkdtempSync(join(tmpdir(), 'kjs-defects-3b-'));
  const base = 19100 + run * 20;
  const up = await stackUp({ dir, kafkaPort: base, registryPort: base + 10, brokers: 3 });
  const config = loadConfig({ brokers: up.info.brokers, registryUrl: up.info.registryUrl, topicPrefix: `kjs-kills-${run}`, partitions: 6, replicationFactor: 3 });
  const kafka = createKafka(config, logger, 'kjs-kills', 'service');
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${config.topicPrefix}.tx-kills`;
  try {
    await admin.createTopics([{ topic, numPartitions: 6, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }]);
    const leaders = async () => (await admin.fetchTopicMetadata([topic]))[0]!.partitions;
    return await transactionsThroughLeaderKills({
      topic,
      partitions: 6,
      minTransactions: 200,
      transactionalId: `${topic}.writer`,
      openWriter: kjsWriters(up.info.brokers),
      chaos: async () => {
        let n = 0;
        for (let i = 0; i < 3; i++) {
          await sleep(2000);
          const counts = new Map<number, number>();
          for (const p of await leaders()) if (p.leader >= 0) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
          const node = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
          await stopBroker({ dir, node, hard: true });
          n++;
          await sleep(3000);
          await startBroker({ dir, node });
          for (const deadline = Date.now() + 90_000; Date.now() < deadline; await sleep(500)) if ((await leaders()).every((p) => p.isr.length === 3 && p.leader >= 0)) break;
        }
        return n;
      },
      readPartition: async (partition) => {
        const out: SeenRecord[] = [];
        await kafka.readToEnd({ topic, partitions: [partition], timeoutMs: 120_000, onRecords: (rs) => void out.push(...rs.map((r) => ({ partition: r.partition, offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null }))) });
        return out;
      },
      pauseMs: 50,
    });
  } finally {
    await admin.disconnect().catch(() => {});
    await kafka.close();
    await stackReset({ dir, confirm: true }).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

for (let run = 1; run <= runs; run++) console.log(`overlap run ${run}: ${JSON.stringify(await overlap(run))}`);
if (args.includes('--kills')) for (let run = 1; run <= runs; run++) console.log(`kills run ${run}: ${JSON.stringify(await kills(run))}`);
process.exit(0);
