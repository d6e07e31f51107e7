// The executor's transactions against the real broker: the transaction coordinator is looked up once,
// not before every request (and kept through its own answers, such as a fence); a new partition owner
// fences every one of the partition's transactional ids, so a paused predecessor can commit on none.
// Forgetting a coordinator that failed is in coordinator-cache.unit.test.ts; a broker restart mid-run
// (test/e2e/broker-restart.e2e.test.ts) takes the remembered coordinator's connection down for real.
import { describe, expect, it } from 'vitest';
import type { Kafka, Producer } from 'kafkajs';
import { topicNames } from '../../src/config.js';
import { connectFenced, isFencingError, transactionalProducer } from '../../src/kafka/client.js';
import { coordinatorLookups } from '../../src/kafka/coordinator-cache.js';
import { ensurePlanTopics, ensureTopics } from '../../src/kafka/topics.js';
import { readToEnd, type LogRecord } from '../../src/kafka/log-reader.js';
import { partitionTransactionalIds } from '../../executor/partition-owner.js';
import { ledgerWithExecutor, chainOfItems } from '../executor/support.js';
import { closeAfter, randomPrefix, testAdmin, testConfig, testKafka } from '../support/helpers.js';

async function newTopic(kafka: Kafka) {
  const admin = await testAdmin(kafka);
  const topic = randomPrefix('tx');
  await ensureTopics(admin, [{ topic, numPartitions: 1, replicationFactor: -1 }]);
  admin.track(topic);
  return { admin, topic };
}

/** Counts the FindCoordinator requests (kafkajs names them GroupCoordinator) a producer sends. */
function countLookups(producer: Producer): { count: number } {
  const seen = { count: 0 };
  producer.on(producer.events.REQUEST, (e) => {
    if (e.payload.apiName === 'GroupCoordinator') seen.count++;
  });
  return seen;
}

async function values(kafka: Kafka, admin: Awaited<ReturnType<typeof testAdmin>>, topic: string): Promise<string[]> {
  const records: LogRecord[] = [];
  await readToEnd({ kafka, admin, topic, groupPrefix: randomPrefix('r'), onRecords: (r) => void records.push(...r) });
  return records.map((r) => r.value?.toString() ?? '');
}

describe('transactions', () => {
  it('look the transaction coordinator up once per transactional id, not before every request', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const producer = closeAfter(transactionalProducer(kafka, randomPrefix('tx-id')));
    const lookups = countLookups(producer);
    const before = coordinatorLookups.transaction;
    await connectFenced(producer);
    for (let i = 0; i < 20; i++) {
      const tx = await producer.transaction();
      await tx.send({ topic, messages: [{ value: `v${i}` }] });
      await tx.commit();
    }
    // InitProducerId, then 20 × (AddPartitionsToTxn + EndTxn): kafkajs alone sends 41 FindCoordinator.
    expect(lookups.count).toBe(1);
    expect(coordinatorLookups.transaction - before).toBe(1);
    expect(await values(kafka, admin, topic)).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`));
  });

  it('keep the coordinator through its answers about the transaction (fenced), and still fence', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const id = randomPrefix('tx-id');
    const older = closeAfter(transactionalProducer(kafka, id));
    await connectFenced(older);
    const lookups = countLookups(older);
    const t1 = await older.transaction();
    await t1.send({ topic, messages: [{ value: 'older-1' }] });
    await t1.commit();

    const newer = closeAfter(transactionalProducer(kafka, id));
    await connectFenced(newer); // bumps the epoch: the older producer is fenced

    const t2 = await older.transaction();
    const err = await t2.send({ topic, messages: [{ value: 'older-2' }] }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isFencingError(err)).toBe(true);
    expect(lookups.count).toBe(0); // the fencing answer came from the remembered coordinator itself

    const t3 = await newer.transaction();
    await t3.send({ topic, messages: [{ value: 'newer' }] });
    await t3.commit();
    expect(await values(kafka, admin, topic)).toEqual(['older-1', 'newer']);
  });

  it("a new partition owner fences every transactional id of the partition: a paused predecessor commits on none", async () => {
    const config = testConfig({ partitions: 1 });
    const kafka = testKafka(config);
    const admin = await testAdmin(kafka);
    const names = topicNames(config.topicPrefix);
    for (const t of [names.commands, names.events, names.snapshots, names.archive, names.dlq, names.blobs]) admin.track(t);
    await ensurePlanTopics(admin, config);

    // A paused predecessor whose open transaction is on the partition's second id (its appender has one
    // transaction open at a time): the primary id is fenced as it always was; this proves the second is too.
    const ids = partitionTransactionalIds(config.topicPrefix, 0);
    expect(ids).toEqual([`${config.topicPrefix}.executor.p0`, `${config.topicPrefix}.executor.p0.b`]);
    const zombie = closeAfter(transactionalProducer(kafka, ids[1]!));
    await connectFenced(zombie);
    const open = await zombie.transaction();
    await open.send({ topic: names.events, messages: [{ key: 'zombie:open', value: 'not an event', partition: 0 }] });

    // The new owner takes the partition over, then runs a plan through both of its producers.
    const { ledger } = await ledgerWithExecutor({ config, executorId: 'fencer' });
    const { planId } = await ledger.createPlan({ goal: 'after the fence', mode: 'execute', items: chainOfItems(6) });
    const state = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(Object.values(state.items).map((i) => i.status)).toEqual(Array(6).fill('completed'));

    const err = await open.commit().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isFencingError(err)).toBe(true);
    const keys: string[] = [];
    await readToEnd({ kafka, admin, topic: names.events, groupPrefix: randomPrefix('r'), onRecords: (r) => void keys.push(...r.map((x) => x.key?.toString() ?? '')) });
    expect(keys.filter((k) => k.startsWith('zombie:'))).toEqual([]);
    expect(keys.filter((k) => k.startsWith(`${planId}:`)).length).toBe(state.seq);
  });
});
