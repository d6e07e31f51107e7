// Proof that the Kafka port (src/kafka, over librdkafka) and @kafkajs/confluent-schema-registry work
// against the pinned broker and registry for everything plan-ledger relies on. Each test asserts values,
// not "did not throw".
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { topicNames } from '../../src/config.js';
import { abandonedWriters, newReadStats, ensurePlanTopics, ensureTopics, isFencingError, isWriterGivenUp, kafkaErrorName, MAX_RECORD_BYTES, type FencedWriter, type KafkaClient, type LogRecord } from '../../src/kafka/index.js';
import { closeAfter, joinTestGroup, randomGroupId, randomPrefix, testAdmin, testConfig, testKafka, waitFor } from '../support/helpers.js';
import { topicConfig } from '../support/kafka-tools.js';

async function newTopic(kafka: KafkaClient, configEntries: Record<string, string> = {}, numPartitions = 1) {
  const admin = await testAdmin(kafka);
  const topic = randomPrefix('topic');
  await ensureTopics(admin, [
    { topic, numPartitions, replicationFactor: -1, configEntries: Object.entries(configEntries).map(([name, value]) => ({ name, value })) },
  ]);
  admin.track(topic);
  return { admin, topic };
}

async function readAll(kafka: KafkaClient, topic: string) {
  const records: LogRecord[] = [];
  const next = await kafka.readToEnd({ topic, onRecords: (r) => void records.push(...r) });
  return { records, next };
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

/**
 * `attempt` (a call under a bound no broker answer can meet: it stands for a call that never answers) until
 * its writer is given up, at most `tries` times. On a loaded machine the broker's answer and the bound's
 * timer can come due in the same turn of the event loop, and the answer may be handled first: that attempt
 * answered in time and shows nothing, so it is handed to `answered` (to abort or record it) and another
 * is made. Any other error fails the test with it.
 */
async function untilGivenUp<T extends { err: unknown }>(attempt: (n: number) => Promise<T>, answered: (a: T) => Promise<unknown>, tries = 10): Promise<T & { answeredFirst: number }> {
  for (let n = 0; n < tries; n++) {
    const a = await attempt(n);
    if (isWriterGivenUp(a.err)) return { ...a, answeredFirst: n };
    if (a.err !== undefined) throw a.err;
    await answered(a);
  }
  throw new Error(`each of ${tries} calls answered within a bound meant to stand for no answer`);
}

describe('the Kafka port against the real broker', () => {
  it('creates the plan topics idempotently, compacted events with explicit configs', async () => {
    const config = testConfig();
    const kafka = testKafka(config);
    const admin = await testAdmin(kafka);
    const t = topicNames(config.topicPrefix);
    for (const topic of [t.commands, t.events, t.snapshots, t.archive, t.dlq]) admin.track(topic);
    await ensurePlanTopics(admin, config);
    await ensurePlanTopics(admin, config); // second call is a no-op, not an error

    const events = await topicConfig(t.events, ['cleanup.policy', 'retention.ms', 'min.compaction.lag.ms', 'max.message.bytes']);
    expect(events).toEqual({ 'cleanup.policy': 'compact', 'retention.ms': '-1', 'min.compaction.lag.ms': '0', 'max.message.bytes': String(MAX_RECORD_BYTES) });
    const commands = await topicConfig(t.commands, ['cleanup.policy', 'retention.ms']);
    expect(commands).toEqual({ 'cleanup.policy': 'delete', 'retention.ms': String(7 * 24 * 3600 * 1000) });
    // Snapshots hold live plans only: cleaned often, tombstones (finished plans moved to the archive) soon gone.
    const snapshots = await topicConfig(t.snapshots, ['cleanup.policy', 'segment.ms', 'min.cleanable.dirty.ratio', 'delete.retention.ms']);
    expect(snapshots).toEqual({ 'cleanup.policy': 'compact', 'segment.ms': '3600000', 'min.cleanable.dirty.ratio': '0.1', 'delete.retention.ms': '600000' });
    expect(await topicConfig(t.archive, ['cleanup.policy', 'retention.ms'])).toEqual({ 'cleanup.policy': 'compact', 'retention.ms': '-1' });
    const meta = await admin.fetchTopicMetadata([t.commands, t.events, t.snapshots, t.archive]);
    expect(meta.map((m) => m.name).sort()).toEqual([t.commands, t.events, t.snapshots, t.archive].sort());
    expect(meta.map((m) => m.partitions.length)).toEqual([3, 3, 3, 3]);
    // A topic that does not exist is asked of again for a few seconds (one created a moment ago may not
    // have reached every broker yet), then fails with Kafka's own error, naming the topic.
    const missing = `${config.topicPrefix}.missing`;
    const t0 = Date.now();
    const e = (await admin.fetchTopicMetadata([t.events, missing]).then(() => undefined, (x: unknown) => x)) as { code?: number; topic?: string } | undefined;
    expect(e).toMatchObject({ topic: missing });
    expect(kafkaErrorName(e)).toBe('UNKNOWN_TOPIC_OR_PART');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(10_000);

    await expect(ensurePlanTopics(admin, { ...config, partitions: 5 })).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('writes idempotently: every record lands once, offsets contiguous', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka);
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    const sent = Array.from({ length: 50 }, (_, i) => ({ key: `k${i}`, value: `v${i}`, partition: 0 }));
    const delivered = await writer.send(topic, sent);
    expect(delivered.map((d) => [d.topic, d.partition, Number(d.offset)])).toEqual(sent.map((_, i) => [topic, 0, i]));
    const { records, next } = await readAll(kafka, topic);
    expect(records.map((r) => r.value?.toString())).toEqual(sent.map((m) => m.value));
    expect(records.map((r) => r.key?.toString())).toEqual(sent.map((m) => m.key));
    expect(records.map((r) => Number(r.offset))).toEqual(sent.map((_, i) => i));
    expect(next.get(0)).toBe('50');
  });

  it('a group member gets every partition and reads every record of each, in order', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka, {}, 3);
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    await writer.send(topic, Array.from({ length: 30 }, (_, i) => ({ value: `m${i}`, partition: i % 3 })));
    const assigned = new Set<number>();
    const seen = new Map<string, number>();
    const order = new Map<number, string[]>();
    const member = await joinTestGroup(kafka, topic, {
      onAssigned: (ps) => ps.forEach((p) => assigned.add(p)),
      onRevoked: (ps) => ps.forEach((p) => assigned.delete(p)),
      onRecords: async (partition, records) => {
        for (const r of records) {
          seen.set(r.value!.toString(), partition);
          order.set(partition, [...(order.get(partition) ?? []), r.value!.toString()]);
        }
        return undefined;
      },
    });
    await waitFor(() => seen.size === 30, { message: 'all 30 read' });
    expect([...assigned].sort()).toEqual([0, 1, 2]);
    expect(member.assigned().sort()).toEqual([0, 1, 2]);
    expect([...seen.keys()].sort()).toEqual(Array.from({ length: 30 }, (_, i) => `m${i}`).sort());
    expect(seen.get('m4')).toBe(1);
    expect(order.get(1)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i * 3 + 1}`));
  });

  // A handler that names an earlier offset (the projector does on its first batch after a restore) makes the
  // member seek back. The member once made that seek while a read was in flight, and dropped what that read
  // returned as stale, including records fetched after the seek: lost for good (a chaos run's projector
  // missed a plan's first 12 events that way and wrote a watermark past them). Whether a read straddles the
  // seek is a matter of timing; this test holds the path to its promise, every record from there once.
  it('a group member asked to read again from an earlier offset delivers every record from there, none missing', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka, {}, 1);
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    await writer.send(topic, Array.from({ length: 200 }, (_, i) => ({ value: `m${i}`, partition: 0 })));
    const delivered: number[] = [];
    let rewinds = 0;
    await joinTestGroup(kafka, topic, {
      onRecords: async (_partition, records) => {
        const first = BigInt(records[0]!.offset);
        if (rewinds < 3) {
          // A batch from 100 on: "read again from 10", after a pause, as a slow handler would.
          if (first >= 100n) {
            rewinds++;
            await new Promise((r) => setTimeout(r, 150));
            return '10';
          }
          // Up to 99, then on from 100 (ahead of this batch's start: no seek).
          for (const r of records) if (BigInt(r.offset) < 100n) delivered.push(Number(r.offset));
          return BigInt(records.at(-1)!.offset) >= 100n ? '100' : undefined;
        }
        for (const r of records) delivered.push(Number(r.offset));
        return undefined;
      },
    });
    await writer.send(topic, Array.from({ length: 100 }, (_, i) => ({ value: `n${i}`, partition: 0 })));
    await waitFor(() => delivered.at(-1) === 299, { message: 'read to the last record', timeoutMs: 30_000 });
    expect(rewinds).toBe(3);
    // After the last rewind, every offset from 10 to the end exactly once, in order.
    const afterLast = delivered.slice(delivered.lastIndexOf(10));
    expect(afterLast).toEqual(Array.from({ length: 290 }, (_, i) => i + 10));
  });

  // A transaction call that never answers (librdkafka 2.15's sendOffsetsToTransaction can wait forever on
  // a coordinator lookup) must end: past its bound the writer is given up, every later call fails the same
  // way at once, and the next writer of the id fences it: nothing of the given-up transaction is ever read.
  it('gives up a writer whose offset commit does not answer within its bound; the next writer of the id fences it', async () => {
    const kafka = testKafka();
    const { topic: input } = await newTopic(kafka);
    const { topic: output } = await newTopic(kafka);
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    await writer.send(input, [{ value: 'a', partition: 0 }]);
    let held = false;
    const member = await joinTestGroup(kafka, input, { onAssigned: (ps) => void (held ||= ps.includes(0)), onRecords: async () => undefined });
    await waitFor(() => held, { message: 'the member holds the input partition', timeoutMs: 30_000 });

    const id = randomPrefix('given-up');
    // 1 ms: an offset commit hardly ever answers that fast, so this one stands for a call that never
    // answers; one that still answered first is aborted and made again (untilGivenUp).
    const hung = closeAfter(kafka.fencedWriter(id, { sendOffsetsMs: 1 }));
    await hung.connect();
    const { tx, err } = await untilGivenUp(
      async () => {
        const tx = await hung.transaction();
        await tx.send(output, [{ value: 'given up', partition: 0 }]);
        return { tx, err: await failure(tx.sendOffsets(member, [{ topic: input, partition: 0, offset: '1' }])) };
      },
      ({ tx }) => tx.abort(),
    );
    expect(err).toMatchObject({ code: 'TIMEOUT', details: { transactionalId: id, call: 'sendOffsetsToTransaction' } });
    await tx.abort(); // resolves: the fencing writer aborts it
    expect(await failure(hung.transaction())).toBe(err);
    // Closing it returns at once; its handle closes once the call in flight ends (it does here, the
    // broker answers a moment later), so nothing is left open. A call that never ends would leave it open.
    const closing = Date.now();
    await hung.disconnect();
    expect(Date.now() - closing).toBeLessThan(1_000);
    await waitFor(() => abandonedWriters() === 0, { message: 'the given-up handle is closed once its call ended', timeoutMs: 30_000 });

    const next = closeAfter(kafka.fencedWriter(id));
    await next.connect();
    const t2 = await next.transaction();
    await t2.send(output, [{ value: 'kept', partition: 0 }]);
    await t2.sendOffsets(member, [{ topic: input, partition: 0, offset: '1' }]);
    await t2.commit();
    await waitFor(async () => (await readAll(kafka, output)).records.length > 0, { message: 'the committed record is stable' });
    expect((await readAll(kafka, output)).records.map((r) => r.value?.toString())).toEqual(['kept']);
  });

  // A fence or a commit that librdkafka itself times out (its coordinator lookup can wait for a killed
  // broker to come back) gives the writer up too, so its owner retries on a fresh handle. A commit the
  // coordinator had already taken is completed when the next writer fences the id, anything else aborted:
  // the log holds each record at most once.
  it('gives up a writer whose fence or commit times out; the next writer of the id fences it', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka);
    const id = randomPrefix('fence-bound');
    // 1 ms: an InitProducerId hardly ever answers that fast. An EndTxn on this machine can (1-2 ms), so the
    // commit's bound is 0: librdkafka times it out at once and goes on with it in the background. Both
    // stand for calls that never answer; an attempt that still answered first is made again (untilGivenUp).
    const { err: fenceErr } = await untilGivenUp(
      async () => {
        const slowFence = closeAfter(kafka.fencedWriter(id, { fenceMs: 1 }));
        return { slowFence, err: await failure(slowFence.connect()) };
      },
      ({ slowFence }) => slowFence.disconnect(),
    );
    expect(fenceErr).toMatchObject({ code: 'TIMEOUT', details: { transactionalId: id, call: 'initTransactions' } });

    const slowCommit = closeAfter(kafka.fencedWriter(id, { commitMs: 0 }));
    await slowCommit.connect();
    // A commit that answered in time committed its record: each such one must be read exactly once.
    const committedFirst: string[] = [];
    const { tx, err: commitErr, value: maybe } = await untilGivenUp(
      async (n) => {
        const tx = await slowCommit.transaction();
        const value = `maybe ${n}`;
        await tx.send(topic, [{ value, partition: 0 }]);
        return { tx, value, err: await failure(tx.commit()) };
      },
      async ({ value }) => committedFirst.push(value),
    );
    expect(commitErr).toMatchObject({ code: 'TIMEOUT', details: { transactionalId: id, call: 'commitTransaction' } });
    await tx.abort(); // resolves: the fencing writer settles it
    expect(await failure(slowCommit.transaction())).toBe(commitErr);
    await slowCommit.disconnect();
    await waitFor(() => abandonedWriters() === 0, { message: 'no handle is left open', timeoutMs: 30_000 });

    const next = closeAfter(kafka.fencedWriter(id));
    await next.connect();
    const t2 = await next.transaction();
    await t2.send(topic, [{ value: 'kept', partition: 0 }]);
    await t2.commit();
    await waitFor(async () => (await readAll(kafka, topic)).records.some((r) => r.value?.toString() === 'kept'), { message: 'the committed record is stable' });
    const values = (await readAll(kafka, topic)).records.map((r) => r.value?.toString());
    expect(values.filter((v) => v === 'kept')).toEqual(['kept']);
    expect(values.filter((v) => v === maybe).length).toBeLessThanOrEqual(1);
    for (const v of committedFirst) expect(values.filter((w) => w === v)).toEqual([v]);
    expect(values.length).toBe(values.filter((v) => v === 'kept' || v === maybe || committedFirst.includes(v!)).length);
  });

  it('commits output and input offsets in one transaction; an aborted one is invisible', async () => {
    const kafka = testKafka();
    const { admin, topic: input } = await newTopic(kafka);
    const { topic: output } = await newTopic(kafka);
    const groupId = randomGroupId();
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    await writer.send(input, [{ value: 'a' }, { value: 'b' }, { value: 'c' }].map((r) => ({ ...r, partition: 0 })));

    // Offsets go in with the member's group metadata (KIP-447): the member must hold the partition.
    const read: string[] = [];
    const member = await kafka.join({
      groupId,
      topic: input,
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 1000,
      rebalanceTimeoutMs: 10_000,
      onAssigned: () => {},
      onRevoked: () => {},
      onRecords: async (_p, records) => {
        read.push(...records.map((r) => r.value!.toString()));
        return undefined;
      },
    });
    closeAfter({ disconnect: () => member.close() });
    await waitFor(() => read.length === 3, { message: 'the member read the input' });

    const tx = closeAfter(kafka.fencedWriter(`${groupId}.tx`));
    await tx.connect();
    const t1 = await tx.transaction();
    await t1.send(output, [{ value: 'A', partition: 0 }, { value: 'B', partition: 0 }]);
    await t1.sendOffsets(member, [{ topic: input, partition: 0, offset: '2' }]);
    await t1.commit();

    const t2 = await tx.transaction();
    await t2.send(output, [{ value: 'C', partition: 0 }]);
    await t2.sendOffsets(member, [{ topic: input, partition: 0, offset: '3' }]);
    await t2.abort();

    expect(await admin.fetchOffsets(groupId, input)).toEqual([{ partition: 0, offset: '2' }]);
    const { records } = await readAll(kafka, output);
    expect(records.map((r) => r.value?.toString())).toEqual(['A', 'B']);
  });

  it('fences the older of two writers with the same transactional id: its open transaction aborts', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka);
    const id = `${randomPrefix('fence')}.executor.p0`;
    const older = closeAfter(kafka.fencedWriter(id));
    await older.connect();
    const zombie = await older.transaction();
    await zombie.send(topic, [{ value: 'from-older', partition: 0 }]);

    const newer = closeAfter(kafka.fencedWriter(id));
    await newer.connect(); // the older one is fenced, its open transaction aborted
    const t = await newer.transaction();
    await t.send(topic, [{ value: 'from-newer', partition: 0 }]);
    await t.commit();

    const err = await failure(zombie.commit());
    expect(isFencingError(err)).toBe(true);
    // The commit marker may land a moment after commit() returns: read until the committed record is stable.
    let records: LogRecord[] = [];
    await waitFor(async () => (records = (await readAll(kafka, topic)).records).length > 0, { timeoutMs: 15_000, message: 'the committed record is stable' });
    expect(records.map((r) => r.value?.toString())).toEqual(['from-newer']);
  });

  it('connect() fences at once: an older writer between transactions commits nothing more', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka);
    const id = `${randomPrefix('fence')}.projector.p0`;
    const older = closeAfter(kafka.fencedWriter(id));
    await older.connect();
    const first = await older.transaction();
    await first.send(topic, [{ value: 'older-1', partition: 0 }]);
    await first.commit();

    // No transaction of the new writer yet: connecting alone fences the older one.
    const fencer = closeAfter(kafka.fencedWriter(id));
    await fencer.connect();
    const second = await attempt(older, topic, 'older-2');
    expect(second.committed).toBe(false);
    expect(second.errors.some(isFencingError)).toBe(true);
    const { records } = await readAll(kafka, topic);
    expect(records.map((r) => r.value?.toString())).toEqual(['older-1']);
  });

  it('reads a partition to its end offset across transaction markers and aborted records, and stops', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const tx = closeAfter(kafka.fencedWriter(`${randomPrefix('tx')}.p0`));
    await tx.connect();
    const expected: string[] = [];
    for (let i = 0; i < 6; i++) {
      const t = await tx.transaction();
      await t.send(topic, [{ value: `v${i}-a`, partition: 0 }, { value: `v${i}-b`, partition: 0 }]);
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
    const { records, next } = await readAll(kafka, topic);
    expect(records.map((r) => r.value?.toString())).toEqual(expected);
    expect(next.get(0)).toBe('18');

    // Reading again from the end returns nothing and does not hang.
    const again: LogRecord[] = [];
    const next2 = await kafka.readToEnd({ topic, from: new Map([[0, '18']]), onRecords: (r) => void again.push(...r) });
    expect(again).toHaveLength(0);
    expect(next2.get(0)).toBe('18');

    // An open transaction holds the stable end back: a read_committed read stops before it.
    const open = await tx.transaction();
    await open.send(topic, [{ value: 'pending', partition: 0 }]);
    const whileOpen = await readAll(kafka, topic);
    expect(whileOpen.records.map((r) => r.value?.toString())).toEqual(expected);
    expect(whileOpen.next.get(0)).toBe('18');
    await open.abort();
  });

  it('compaction collapses duplicate keys and a tombstone removes a key', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka, {
      'cleanup.policy': 'compact',
      'segment.ms': '100',
      'min.cleanable.dirty.ratio': '0.01',
      'delete.retention.ms': '100',
      'min.compaction.lag.ms': '0',
    });
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    await writer.send(topic, [{ key: 'a', value: '1' }, { key: 'a', value: '2' }, { key: 'b', value: 'x' }, { key: 'a', value: '3' }].map((r) => ({ ...r, partition: 0 })));
    await writer.send(topic, [{ key: 'b', value: null, partition: 0 }]);
    // The active segment is never cleaned and a time roll happens only on append: keep appending a
    // filler key past segment.ms until the cleaner has run over the older segments.
    const compacted = await waitFor(
      async () => {
        await writer.send(topic, [{ key: 'filler', value: randomBytes(4).toString('hex'), partition: 0 }]);
        const { records } = await readAll(kafka, topic);
        const keys = records.filter((r) => r.key?.toString() !== 'filler').map((r) => `${r.key}=${r.value?.toString() ?? 'null'}`);
        return keys.length === 1 ? keys : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 400, message: 'compaction removed duplicates and the tombstoned key' },
    );
    expect(compacted).toEqual(['a=3']);
  });
  // A client's ranged reads share consumers it keeps open (opening one per read cost ~30 ms, closing it
  // as much), and a read whose last records are followed by a commit marker ends once the consumer has
  // swallowed the marker, not after an end-of-partition fetch. A reused consumer must never carry its
  // last read's position into the next one: reads of the same partition from other offsets, alternating.
  it('reuses consumers across ranged reads, from any offset, past commit markers', async () => {
    const kafka = testKafka();
    const { topic } = await newTopic(kafka);
    const writer = closeAfter(kafka.fencedWriter(randomPrefix('pooled')));
    await writer.connect();
    for (let t = 0; t < 3; t++) {
      const tx = await writer.transaction();
      await tx.send(topic, Array.from({ length: 5 }, (_, i) => ({ value: `t${t}-${i}`, partition: 0 })));
      await tx.commit();
    }
    const stats = newReadStats();
    const read = async (from?: string, until?: string) => {
      const records: LogRecord[] = [];
      const next = await kafka.readToEnd({
        topic,
        partitions: [0],
        ...(from !== undefined ? { from: new Map([[0, from]]) } : {}),
        ...(until !== undefined ? { until: new Map([[0, until]]) } : {}),
        stats,
        onRecords: (r) => void records.push(...r),
      });
      return { values: records.map((r) => r.value?.toString()), offsets: records.map((r) => r.offset), next: next.get(0) };
    };
    const all = await read();
    const values = [0, 1, 2].flatMap((t) => Array.from({ length: 5 }, (_, i) => `t${t}-${i}`));
    expect(all.values).toEqual(values);
    // 15 records and 3 commit markers: the read ends past the last marker.
    expect(all.next).toBe('18');
    const sixth = all.offsets[5]!;
    for (let round = 0; round < 10; round++) {
      expect(await read(sixth)).toMatchObject({ values: values.slice(5), next: '18' });
      expect(await read()).toMatchObject({ values, next: '18' });
      expect(await read(sixth, String(BigInt(sixth) + 1n))).toMatchObject({ values: [values[5]], next: String(BigInt(sixth) + 1n) });
      expect(await read('18')).toMatchObject({ values: [], next: '18' });
    }
    // 41 reads that fetched (a read from the end fetches nothing), one after another: one consumer.
    expect(stats.reads).toBe(31);
    expect(stats.opened).toBe(1);
    // An offset far past the end reads nothing and opens nothing.
    expect(await read('1000000')).toMatchObject({ values: [], next: '18' });
    // A read that gives up (its time is out before the first batch) fails with its error and closes its
    // consumer instead of returning it half-read; the next read opens a fresh one and reads exactly.
    await expect(kafka.readToEnd({ topic, partitions: [0], timeoutMs: -1, stats, onRecords: () => {} })).rejects.toThrow(/timed out after -1 ms/);
    expect(await read()).toMatchObject({ values, next: '18' });
    expect(stats.opened).toBe(2);
  });
  // The client's plan index takes the end offsets of three topics at once and reads each up to them
  // (`ends`): no offsets of the read's own, and no wait at a partition's end for an open transaction.
  it('reads up to end offsets the caller took: every committed record below them, none above, none aborted', async () => {
    const kafka = testKafka();
    const { admin, topic } = await newTopic(kafka);
    const writer = closeAfter(kafka.fencedWriter(randomPrefix('ends')));
    await writer.connect();
    const txn = async (t: string, commit = true) => {
      const tx = await writer.transaction();
      await tx.send(topic, Array.from({ length: 4 }, (_, i) => ({ value: `${t}-${i}`, partition: 0 })));
      await (commit ? tx.commit() : tx.abort());
    };
    await txn('a');
    await txn('x', false);
    await txn('b');
    // The last stable offset trails a commit until the coordinator has written its marker (after it answered
    // EndTxn): asked at once it can still stop before b's records.
    const ends = await waitFor(
      async () => {
        const o = new Map((await admin.fetchTopicOffsets(topic)).map((x) => [x.partition, x.high]));
        return o.get(0) === '15' ? o : undefined;
      },
      { message: 'the last stable offset past the third transaction', timeoutMs: 10_000, intervalMs: 20 },
    );
    expect(ends.get(0)).toBe('15'); // 12 records and 3 markers
    const stats = newReadStats();
    const read = async (from?: string) => {
      const records: LogRecord[] = [];
      const next = await kafka.readToEnd({ topic, ends, ...(from !== undefined ? { from: new Map([[0, from]]) } : {}), stats, onRecords: (r) => void records.push(...r) });
      return { values: records.map((r) => r.value?.toString()), offsets: records.map((r) => r.offset), next: next.get(0) };
    };
    const committed = ['a', 'b'].flatMap((t) => Array.from({ length: 4 }, (_, i) => `${t}-${i}`));
    // Written after the ends were taken: one transaction committed, one left open while the reads run.
    await txn('c');
    const open = await writer.transaction();
    await open.send(topic, [{ value: 'open-0', partition: 0 }]);
    try {
      const all = await read();
      expect(all).toMatchObject({ values: committed, next: '15' });
      expect(await read(all.offsets[4])).toMatchObject({ values: committed.slice(4), next: '15' });
      expect(await read('15')).toMatchObject({ values: [], next: '15' });
      expect(stats.reads).toBe(2); // the read from the end fetched nothing
    } finally {
      await open.abort();
    }
    // Ends taken now take in the later committed transaction, not the aborted ones.
    const later = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, o.high]));
    const records: LogRecord[] = [];
    await kafka.readToEnd({ topic, ends: later, onRecords: (r) => void records.push(...r) });
    expect(records.map((r) => r.value?.toString())).toEqual([...committed, 'c-0', 'c-1', 'c-2', 'c-3']);
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
