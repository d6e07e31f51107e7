// Fenced writers against the real broker: one writer's transactions land in order, each once; connecting
// a new writer of a transactional id fences a paused predecessor that holds an open transaction (its
// commit fails, none of its records is ever read), and a new partition owner fences every one of the
// partition's transactional ids, so a paused predecessor can commit on none. A broker restart mid-run is
// test/e2e/broker-restart.e2e.test.ts; overlapping aborted transactions and leader kills are
// test/kafka/client-defects.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { topicNames } from '../../src/config.js';
import { ensurePlanTopics, ensureTopics, isFencingError, type FencedWriter, type KafkaClient } from '../../src/kafka/index.js';
import { partitionTransactionalIds } from '../../executor/partition-owner.js';
import { ledgerWithExecutor, chainOfItems } from '../executor/support.js';
import { closeAfter, randomPrefix, readAll, testAdmin, testConfig, testKafka } from '../support/helpers.js';

async function newTopic(kafka: KafkaClient) {
  const admin = await testAdmin(kafka);
  const topic = randomPrefix('tx');
  await ensureTopics(admin, [{ topic, numPartitions: 1, replicationFactor: -1 }]);
  admin.track(topic);
  return { admin, topic };
}

async function values(kafka: KafkaClient, topic: string): Promise<string[]> {
  return (await readAll(kafka, topic)).map((r) => r.value?.toString() ?? '');
}

/**
 * One transaction of one record, carried on past a failed send (a fenced writer's records may fail as
 * purged, its commit with the fencing error): whether it committed, and every error met on the way.
 */
async function attempt(writer: FencedWriter, topic: string, value: string): Promise<{ committed: boolean; errors: unknown[] }> {
  const errors: unknown[] = [];
  const tx = await writer.transaction().catch((e: unknown) => void errors.push(e));
  if (!tx) return { committed: false, errors };
  await tx.send(topic, [{ value, partition: 0 }]).catch((e: unknown) => errors.push(e));
  const committed = await tx.commit().then(
    () => true,
    (e: unknown) => (errors.push(e), false),
  );
  return { committed, errors };
}

/** The error `p` rejects with (undefined when it resolves). */
const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('transactions', () => {
  it("one writer's sequential transactions land in order, each exactly once", async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const writer = closeAfter(kafka.fencedWriter(randomPrefix('tx-id')));
    await writer.connect();
    for (let i = 0; i < 20; i++) {
      const tx = await writer.transaction();
      await tx.send(topic, [{ value: `v${i}`, partition: 0 }]);
      await tx.commit();
    }
    expect(await values(kafka, topic)).toEqual(Array.from({ length: 20 }, (_, i) => `v${i}`));
    // 20 records and 20 commit markers, nothing else.
    expect((await admin.fetchTopicOffsets(topic))[0]!.high).toBe('40');
  });

  it('a new writer of the id fences a paused predecessor holding an open transaction: its commit fails, none of its records is read', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const id = randomPrefix('tx-id');
    const older = closeAfter(kafka.fencedWriter(id));
    await older.connect();
    const t1 = await older.transaction();
    await t1.send(topic, [{ value: 'older-1', partition: 0 }]);
    await t1.commit();

    // The predecessor opens a transaction, writes into it, and pauses (a GC pause, SIGSTOP, a partition).
    const open = await older.transaction();
    await open.send(topic, [{ value: 'zombie-1', partition: 0 }, { value: 'zombie-2', partition: 0 }]);

    const newer = closeAfter(kafka.fencedWriter(id));
    await newer.connect(); // aborts the open transaction before it returns
    // The aborted records no longer hold the stable end back: it is past them already.
    const stable = BigInt((await admin.fetchTopicOffsets(topic))[0]!.high);
    expect(stable).toBeGreaterThanOrEqual(4n); // older-1, its marker, two aborted records (+ the abort marker)
    const t2 = await newer.transaction();
    await t2.send(topic, [{ value: 'newer', partition: 0 }]);
    await t2.commit();

    // The predecessor wakes up: its commit fails as fenced, and so does any later transaction.
    expect(isFencingError(await failure(open.commit()))).toBe(true);
    const later = await attempt(older, topic, 'zombie-3');
    expect(later.committed).toBe(false);
    expect(later.errors.some(isFencingError)).toBe(true);
    expect(await values(kafka, topic)).toEqual(['older-1', 'newer']);
  });

  it('a new partition owner fences every transactional id of the partition: a paused predecessor commits on none', async () => {
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
    const zombie = closeAfter(kafka.fencedWriter(ids[1]!));
    await zombie.connect();
    const open = await zombie.transaction();
    await open.send(names.events, [{ key: 'zombie:open', value: 'not an event', partition: 0 }]);

    // The new owner takes the partition over, then runs a plan through both of its writers.
    const { ledger } = await ledgerWithExecutor({ config, executorId: 'fencer' });
    const { planId } = await ledger.createPlan({ goal: 'after the fence', mode: 'execute', items: chainOfItems(6) });
    const state = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(Object.values(state.items).map((i) => i.status)).toEqual(Array(6).fill('completed'));

    expect(isFencingError(await failure(open.commit()))).toBe(true);
    const keys = (await readAll(kafka, names.events)).map((x) => x.key?.toString() ?? '');
    expect(keys.filter((k) => k.startsWith('zombie:'))).toEqual([]);
    expect(keys.filter((k) => k.startsWith(`${planId}:`)).length).toBe(state.seq);
  });
});
