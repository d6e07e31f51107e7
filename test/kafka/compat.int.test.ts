// Proof that kafkajs 2.2.4 and @kafkajs/confluent-schema-registry work against the pinned broker and
// registry for everything plan-ledger relies on. Each test asserts values, not "did not throw".
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { Kafka } from 'kafkajs';
import { topicNames } from '../../src/config.js';
import { connectFenced } from '../../src/kafka/client.js';
import { describeTopicConfig, ensurePlanTopics, ensureTopics } from '../../src/kafka/topics.js';
import { readToEnd, type LogRecord } from '../../src/kafka/log-reader.js';
import { closeAfter, randomGroupId, randomPrefix, testAdmin, testConfig, testKafka, waitFor } from '../support/helpers.js';

async function newTopic(kafka: Kafka, configEntries: Record<string, string> = {}, numPartitions = 1) {
  const admin = await testAdmin(kafka);
  const topic = randomPrefix('topic');
  await ensureTopics(admin, [
    { topic, numPartitions, replicationFactor: -1, configEntries: Object.entries(configEntries).map(([name, value]) => ({ name, value })) },
  ]);
  admin.track(topic);
  return { admin, topic };
}

async function readAll(kafka: Kafka, admin: Awaited<ReturnType<typeof testAdmin>>, topic: string) {
  const records: LogRecord[] = [];
  const next = await readToEnd({ kafka, admin, topic, groupPrefix: randomPrefix('r'), onRecords: (r) => void records.push(...r) });
  return { records, next };
}

const txProducer = (kafka: Kafka, transactionalId: string) =>
  closeAfter(kafka.producer({ transactionalId, idempotent: true, maxInFlightRequests: 1 }));

describe('kafkajs against the real broker', () => {
  it('creates the plan topics idempotently, compacted events with explicit configs', async () => {
    const config = testConfig();
    const kafka = testKafka(config);
    const admin = await testAdmin(kafka);
    const t = topicNames(config.topicPrefix);
    for (const topic of [t.commands, t.events, t.snapshots, t.archive, t.dlq]) admin.track(topic);
    await ensurePlanTopics(admin, config);
    await ensurePlanTopics(admin, config); // second call is a no-op, not an error

    const events = await describeTopicConfig(admin, t.events, ['cleanup.policy', 'retention.ms', 'min.compaction.lag.ms']);
    expect(events).toEqual({ 'cleanup.policy': 'compact', 'retention.ms': '-1', 'min.compaction.lag.ms': '0' });
    const commands = await describeTopicConfig(admin, t.commands, ['cleanup.policy', 'retention.ms']);
    expect(commands).toEqual({ 'cleanup.policy': 'delete', 'retention.ms': String(7 * 24 * 3600 * 1000) });
    // Snapshots hold live plans only: cleaned often, tombstones (finished plans moved to the archive) soon gone.
    const snapshots = await describeTopicConfig(admin, t.snapshots, ['cleanup.policy', 'segment.ms', 'min.cleanable.dirty.ratio', 'delete.retention.ms']);
    expect(snapshots).toEqual({ 'cleanup.policy': 'compact', 'segment.ms': '3600000', 'min.cleanable.dirty.ratio': '0.1', 'delete.retention.ms': '600000' });
    expect(await describeTopicConfig(admin, t.archive, ['cleanup.policy', 'retention.ms'])).toEqual({ 'cleanup.policy': 'compact', 'retention.ms': '-1' });
    const meta = await admin.fetchTopicMetadata({ topics: [t.commands, t.events, t.snapshots, t.archive] });
    expect(meta.topics.map((m) => m.partitions.length)).toEqual([3, 3, 3, 3]);

    await expect(ensurePlanTopics(admin, { ...config, partitions: 5 })).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('produces idempotently: every record lands once, offsets contiguous', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const producer = closeAfter(kafka.producer({ idempotent: true, maxInFlightRequests: 1 }));
    await producer.connect();
    const sent = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: 0 }));
    const acks = await producer.send({ topic, messages: sent, acks: -1 });
    expect(acks[0]?.errorCode).toBe(0);
    const { records, next } = await readAll(kafka, admin, topic);
    expect(records.map((r) => r.value?.toString())).toEqual(sent.map((m) => m.value));
    expect(records.map((r) => Number(r.offset))).toEqual(sent.map((_, i) => i));
    expect(next.get(0)).toBe('50');
  });

  it('a consumer group consumes every record of every partition', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka, {}, 3);
    const producer = closeAfter(kafka.producer());
    await producer.connect();
    await producer.send({ topic, messages: Array.from({ length: 30 }, (_, i) => ({ value: `m${i}`, partition: i % 3 })) });
    const consumer = closeAfter(kafka.consumer({ groupId: randomGroupId() }));
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const seen = new Map<string, number>();
    await consumer.run({ eachMessage: async ({ message, partition }) => void seen.set(message.value!.toString(), partition) });
    await waitFor(() => seen.size === 30, { message: 'all 30 consumed' });
    expect([...seen.keys()].sort()).toEqual(Array.from({ length: 30 }, (_, i) => `m${i}`).sort());
    expect(seen.get('m4')).toBe(1);
  });

  it('commits output and input offsets in one transaction; an aborted one is invisible', async () => {
    const kafka = testKafka();
    const { admin, topic: input } = await newTopic(kafka);
    const { topic: output } = await newTopic(kafka);
    const groupId = randomGroupId();
    const plain = closeAfter(kafka.producer());
    await plain.connect();
    await plain.send({ topic: input, messages: [{ value: 'a' }, { value: 'b' }, { value: 'c' }] });

    const tx = txProducer(kafka, `${groupId}.tx`);
    await tx.connect();
    const t1 = await tx.transaction();
    await t1.send({ topic: output, messages: [{ value: 'A' }, { value: 'B' }] });
    await t1.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition: 0, offset: '2' }] }] });
    await t1.commit();

    const t2 = await tx.transaction();
    await t2.send({ topic: output, messages: [{ value: 'C' }] });
    await t2.sendOffsets({ consumerGroupId: groupId, topics: [{ topic: input, partitions: [{ partition: 0, offset: '3' }] }] });
    await t2.abort();

    const committed = await admin.fetchOffsets({ groupId, topics: [input] });
    expect(committed[0]?.partitions[0]?.offset).toBe('2');
    const { records } = await readAll(kafka, admin, output);
    expect(records.map((r) => r.value?.toString())).toEqual(['A', 'B']);
  });

  it('fences the older of two producers with the same transactionalId', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const id = `${randomPrefix('fence')}.executor.p0`;
    const older = txProducer(kafka, id);
    await older.connect();
    const zombie = await older.transaction();
    await zombie.send({ topic, messages: [{ value: 'from-older' }] });

    const newer = txProducer(kafka, id);
    await newer.connect(); // InitProducerId bumps the epoch: the older one is fenced, its open transaction aborted
    const t = await newer.transaction();
    await t.send({ topic, messages: [{ value: 'from-newer' }] });
    await t.commit();

    const err = await zombie.commit().then(
      () => undefined,
      (e: unknown) => e as Error & { type?: string },
    );
    expect(err).toBeDefined();
    expect(`${err?.name} ${err?.type} ${err?.message}`).toMatch(/fenc|epoch|INVALID_PRODUCER_EPOCH|PRODUCER_FENCED/i);
    // EndTxn returns before the broker has written the markers: a read that starts at once may find the
    // last stable offset still below them, so read until the committed record is stable.
    let records: LogRecord[] = [];
    await waitFor(async () => (records = (await readAll(kafka, admin, topic)).records).length > 0, { timeoutMs: 15_000, message: 'the committed record is stable' });
    expect(records.map((r) => r.value?.toString())).toEqual(['from-newer']);
  });

  it('kafkajs connect() alone does not fence an older producer of the same transactionalId; connectFenced does, at once', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const id = `${randomPrefix('fence')}.projector.p0`;
    const older = txProducer(kafka, id);
    await older.connect();
    const first = await older.transaction();
    await first.send({ topic, messages: [{ value: 'older-1' }] });
    await first.commit();

    // connect() initialises only an idempotent producer id: the older producer still commits.
    const plain = txProducer(kafka, id);
    await plain.connect();
    const second = await older.transaction();
    await second.send({ topic, messages: [{ value: 'older-2' }] });
    await second.commit();

    // connectFenced bumps the transactional epoch before it returns: the older producer is refused.
    const fencer = txProducer(kafka, id);
    await connectFenced(fencer);
    const third = await older.transaction();
    const err = await (async () => {
      await third.send({ topic, messages: [{ value: 'older-3' }] });
      await third.commit();
    })().then(
      () => undefined,
      (e: unknown) => e as Error & { type?: string },
    );
    expect(err?.type).toBe('INVALID_PRODUCER_EPOCH');
    const { records } = await readAll(kafka, admin, topic);
    expect(records.map((r) => r.value?.toString())).toEqual(['older-1', 'older-2']);
  });

  it('reads a partition to its end offset across transaction markers and aborted records, and stops', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const tx = txProducer(kafka, `${randomPrefix('tx')}.p0`);
    await tx.connect();
    const expected: string[] = [];
    for (let i = 0; i < 6; i++) {
      const t = await tx.transaction();
      await t.send({ topic, messages: [{ value: `v${i}-a` }, { value: `v${i}-b` }] });
      if (i % 3 === 1) {
        await t.abort();
      } else {
        await t.commit();
        expected.push(`v${i}-a`, `v${i}-b`);
      }
    }
    // 6 transactions x (2 records + 1 marker): the log is longer than the records a reader sees. The
    // coordinator writes the last commit marker asynchronously after commit() returns, so the stable end
    // reaches 18 a moment later.
    const end = await waitFor(async () => {
      const o = (await admin.fetchTopicOffsets(topic))[0]!;
      return Number(o.high) === 18 ? o : undefined;
    }, { message: 'last stable offset reaches 18' });
    expect(Number(end.high)).toBe(18);
    const { records, next } = await readAll(kafka, admin, topic);
    expect(records.map((r) => r.value?.toString())).toEqual(expected);
    expect(next.get(0)).toBe('18');

    // Reading again from the end returns nothing and does not hang.
    const again: LogRecord[] = [];
    const next2 = await readToEnd({ kafka, admin, topic, from: new Map([[0, '18']]), groupPrefix: randomPrefix('r'), onRecords: (r) => void again.push(...r) });
    expect(again).toHaveLength(0);
    expect(next2.get(0)).toBe('18');

    // An open transaction holds the stable end back: a read_committed read stops before it.
    const open = await tx.transaction();
    await open.send({ topic, messages: [{ value: 'pending' }] });
    const whileOpen = await readAll(kafka, admin, topic);
    expect(whileOpen.records.map((r) => r.value?.toString())).toEqual(expected);
    await open.abort();
  });

  it('compaction collapses duplicate keys and a tombstone removes a key', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka, {
      'cleanup.policy': 'compact',
      'segment.ms': '100',
      'min.cleanable.dirty.ratio': '0.01',
      'delete.retention.ms': '100',
      'min.compaction.lag.ms': '0',
    });
    const producer = closeAfter(kafka.producer({ idempotent: true }));
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'a', value: '1' }, { key: 'a', value: '2' }, { key: 'b', value: 'x' }, { key: 'a', value: '3' }] });
    await producer.send({ topic, messages: [{ key: 'b', value: null }] });
    // The active segment is never cleaned and a time roll happens only on append: keep appending a
    // filler key past segment.ms until the cleaner has run over the older segments.
    const compacted = await waitFor(
      async () => {
        await producer.send({ topic, messages: [{ key: 'filler', value: randomBytes(4).toString('hex') }] });
        const { records } = await readAll(kafka, admin, topic);
        const keys = records.filter((r) => r.key?.toString() !== 'filler').map((r) => `${r.key}=${r.value?.toString() ?? 'null'}`);
        return keys.length === 1 ? keys : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 400, message: 'compaction removed duplicates and the tombstoned key' },
    );
    expect(compacted).toEqual(['a=3']);
  });
});

describe('schema registry (Confluent API of the real registry)', () => {
  it('registers an Avro schema, round-trips a record, and refuses an incompatible change', async () => {
    const config = testConfig();
    const registry = new SchemaRegistry({ host: config.registryUrl });
    const subject = `${randomPrefix('subj')}-value`;
    const v1 = { type: 'record', name: 'Probe', namespace: 'planledger.test', fields: [{ name: 'id', type: 'string' }] };
    const { id } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) }, { subject });
    expect(id).toBeGreaterThan(0);
    const again = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v1) }, { subject });
    expect(again.id).toBe(id);

    const bytes = await registry.encode(id, { id: 'p-1' });
    expect(bytes[0]).toBe(0); // Confluent wire format: magic byte, then the schema id
    expect(bytes.readInt32BE(1)).toBe(id);
    expect(await registry.decode(bytes)).toEqual({ id: 'p-1' });

    const v2 = { ...v1, fields: [...v1.fields, { name: 'note', type: ['null', 'string'], default: null }] };
    const { id: id2 } = await registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(v2) }, { subject });
    expect(id2).not.toBe(id);

    const breaking = { ...v1, fields: [...v1.fields, { name: 'required', type: 'int' }] };
    await expect(registry.register({ type: SchemaType.AVRO, schema: JSON.stringify(breaking) }, { subject })).rejects.toThrow(
      /compatib|409|incompatible/i,
    );
  });
});
