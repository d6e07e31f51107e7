// What the Kafka client must get right for the ledger, against the real stack, through the port
// (scenarios in test/support/defect-scenarios.ts, so another client can be run through them too):
// overlapping aborted transactions on one partition are invisible to every read_committed reader — a
// ranged read, a live tail, a group member; and on a private 3-broker cluster whose leaders are killed
// (-9) and restarted under a stream of transactions, every committed transaction is in the log exactly
// once on every partition and every failed one nowhere.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig, type LedgerConfig } from '../../src/config.js';
import { createKafka, ensureTopics, type KafkaClient, type LedgerAdmin, type LogRecord } from '../../src/kafka/index.js';
import { stackReset, stackUp, startBroker, stopBroker, type StackInfo } from '../../stack/stack.js';
import {
  overlappingAbortedTransactions,
  transactionsThroughLeaderKills,
  type OpenWriter,
  type ScenarioReader,
  type SeenRecord,
} from '../support/defect-scenarios.js';
import { closeAfter, freeStackPorts, joinTestGroup, randomPrefix, testAdmin, testKafka, testLogger, waitFor } from '../support/helpers.js';

const seen = (r: LogRecord): SeenRecord => ({ partition: r.partition, offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null });

/** The scenarios' writer on the port: a FencedWriter per transactional id. */
function portWriters(kafka: KafkaClient): OpenWriter {
  return async (id) => {
    const w = kafka.fencedWriter(id);
    await w.connect();
    return {
      begin: async () => {
        const t = await w.transaction();
        return {
          send: async (topic, records) => void (await t.send(topic, records)),
          commit: () => t.commit(),
          abort: () => t.abort(),
        };
      },
      close: () => w.disconnect(),
    };
  };
}

/** A ranged read (KafkaClient.readToEnd) of [from, end). */
function rangeReader(kafka: KafkaClient, topic: string, partition: number): ScenarioReader {
  return {
    name: 'readToEnd',
    read: async (from, end) => {
      const out: SeenRecord[] = [];
      await kafka.readToEnd({ topic, partitions: [partition], from: new Map([[partition, from]]), until: new Map([[partition, end]]), onRecords: (rs) => void out.push(...rs.map(seen)) });
      return out;
    },
  };
}

/** Everything a live reader has delivered, and how far it has read. */
function collector() {
  const records: SeenRecord[] = [];
  let position = -1n;
  return {
    records,
    onRecords: (rs: LogRecord[]) => {
      records.push(...rs.map(seen));
      const last = BigInt(rs.at(-1)!.offset) + 1n;
      if (last > position) position = last;
    },
    onPosition: (next: bigint) => {
      if (next > position) position = next;
    },
    /**
     * Waits until the reader is past `end` (or has delivered `lastRecord`), then returns what it delivered
     * from `from`; after 30 s, what it delivered so far (the scenario counts what is missing).
     */
    async upTo(from: string, end: string, lastRecord: string): Promise<SeenRecord[]> {
      await waitFor(() => position >= BigInt(end) || records.some((r) => BigInt(r.offset) >= BigInt(lastRecord)), { timeoutMs: 30_000, intervalMs: 10 }).catch(() => {});
      return records.filter((r) => BigInt(r.offset) >= BigInt(from) && BigInt(r.offset) < BigInt(end));
    },
  };
}

describe('overlapping aborted transactions', () => {
  it('two writers interleave aborted transactions on one partition, a third commits: every reader returns exactly the committed records, round after round', async () => {
    const kafka = testKafka();
    const admin = await testAdmin(kafka);
    const topic = randomPrefix('overlap');
    await ensureTopics(admin, [{ topic, numPartitions: 1, replicationFactor: -1 }]);
    admin.track(topic);
    const partition = 0;
    const endOffset = async () => (await admin.fetchTopicOffsets(topic)).find((o) => o.partition === partition)!.high;

    // A live tail and a group member, both reading from the partition's start as the rounds are written.
    const tailed = collector();
    const tail = await kafka.tail({ topic, onRecords: (_p, rs) => tailed.onRecords(rs), onPosition: (_p, next) => tailed.onPosition(next) });
    closeAfter({ disconnect: () => tail.close() });
    await tail.add(partition, await endOffset());
    const grouped = collector();
    let assigned = false;
    await joinTestGroup(kafka, topic, {
      onAssigned: (ps) => void (assigned ||= ps.includes(partition)),
      onRecords: async (_p, rs) => {
        grouped.onRecords(rs);
        return undefined;
      },
    });
    await waitFor(() => assigned, { timeoutMs: 30_000, message: 'the group member holds the partition' });

    const id = randomPrefix('overlap-tx');
    const report = await overlappingAbortedTransactions({
      topic,
      partition,
      rounds: 20,
      committedPerRound: 5,
      ids: [`${id}.A`, `${id}.B`, `${id}.C`],
      openWriter: portWriters(kafka),
      endOffset,
      readers: [
        rangeReader(kafka, topic, partition),
        { name: 'tail', read: (from, end, last) => tailed.upTo(from, end, last) },
        { name: 'group member', read: (from, end, last) => grouped.upTo(from, end, last) },
      ],
      log: (l) => testLogger.info(l),
    });
    console.log(`overlapping aborted transactions: ${JSON.stringify(report)}`);
    for (const [name, n] of Object.entries(report.readers)) {
      expect({ name, ...n }).toEqual({ name, committed: 20 * 5, aborted: 0, missing: 0, duplicates: 0, errors: 0, wrongRounds: [] });
    }
  });
});

describe('transactions through broker kills (3 brokers)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-defects-3b-'));
  let info: StackInfo;
  let config: LedgerConfig;

  beforeAll(async () => {
    const up = await stackUp({ dir, ...(await freeStackPorts(3)), brokers: 3 });
    info = up.info;
    config = loadConfig({ brokers: info.brokers, registryUrl: info.registryUrl, topicPrefix: randomPrefix('kills'), partitions: 6, replicationFactor: 3 });
  }, 300_000);

  afterAll(async () => {
    // The data would outlive the test in the stack folder: wipe it.
    await stackReset({ dir, confirm: true });
    rmSync(dir, { recursive: true, force: true });
  }, 90_000);

  it('every committed transaction is on every partition exactly once, every failed one on none, while leaders are killed -9 and restarted', { timeout: 240_000 }, async () => {
    const kafka = createKafka(config, testLogger, 'defects-3b', 'service');
    onTestFinished(() => kafka.close());
    const admin = kafka.admin();
    await admin.connect();
    onTestFinished(() => admin.disconnect());
    const topic = `${config.topicPrefix}.tx-kills`;
    const PARTITIONS = 6;
    await admin.createTopics([{ topic, numPartitions: PARTITIONS, replicationFactor: 3, configEntries: [{ name: 'min.insync.replicas', value: '2' }] }]);
    const leaders = async () => (await admin.fetchTopicMetadata([topic]))[0]!.partitions;
    const initial = await leaders();
    expect(initial).toHaveLength(PARTITIONS);
    for (const p of initial) expect(p.replicas).toHaveLength(3);
    expect(new Set(initial.map((p) => p.leader)).size).toBeGreaterThan(1); // leaders spread over the brokers

    const KILLS = 3;
    const chaos = async (): Promise<number> => {
      let kills = 0;
      for (let i = 0; i < KILLS; i++) {
        await sleep(2000);
        // The broker that leads the most partitions of the topic now.
        const counts = new Map<number, number>();
        for (const p of await leaders()) if (p.leader >= 0) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
        const node = [...counts].sort((a, b) => b[1] - a[1])[0]![0];
        testLogger.info({ node, counts: Object.fromEntries(counts) }, 'killing the broker');
        await stopBroker({ dir, node, hard: true });
        kills++;
        await sleep(3000);
        await startBroker({ dir, node });
        await fullyReplicated(admin, topic, 90_000);
      }
      return kills;
    };

    const report = await transactionsThroughLeaderKills({
      topic,
      partitions: PARTITIONS,
      minTransactions: 200,
      transactionalId: `${config.topicPrefix}.tx-kills.writer`,
      openWriter: portWriters(kafka),
      chaos,
      readPartition: async (partition) => {
        const out: SeenRecord[] = [];
        await kafka.readToEnd({ topic, partitions: [partition], timeoutMs: 120_000, onRecords: (rs) => void out.push(...rs.map(seen)) });
        return out;
      },
      pauseMs: 50,
      log: (l) => testLogger.info(l),
    });
    console.log(`transactions through broker kills: ${JSON.stringify(report)}`);
    expect(report.kills).toBe(KILLS);
    expect(report.transactions).toBeGreaterThanOrEqual(200);
    expect(report.committed).toBeGreaterThan(0);
    expect({ duplicates: report.duplicates, missing: report.missing, torn: report.torn }).toEqual({ duplicates: 0, missing: 0, torn: 0 });
  });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until every partition of the topic has its three replicas in sync again. */
async function fullyReplicated(admin: LedgerAdmin, topic: string, timeoutMs: number): Promise<void> {
  await waitFor(async () => (await admin.fetchTopicMetadata([topic]))[0]!.partitions.every((p) => p.isr.length === 3 && p.leader >= 0), {
    timeoutMs,
    intervalMs: 500,
    message: `${topic} fully replicated`,
  });
}
