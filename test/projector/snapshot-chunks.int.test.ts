// Snapshots larger than a record, against the real broker: a plan of 3,000 items with ~1 KB `why` each
// gets a chunked snapshot that round-trips (a restarted projector and restorePartition restore it from
// the snapshot, same digest); a plan whose snapshot cannot be written (the broker refuses the record, or
// a hook throws) is skipped and listed as a watermark exception, and neither holds back the other plans'
// snapshots nor the watermark.
import { describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { LedgerLog } from '../../src/audit/log.js';
import { eventKey, partitionFor } from '../../src/kafka/partitioner.js';
import { decide, evolve, stateDigest, type AnyCommand, type ItemSpec, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import {
  isWatermark,
  parseSnapshotChunkKey,
  restorePartition,
  SNAPSHOT_CHUNKS_HEADER,
  snapshotExceptionsOf,
  stateFromSnapshot,
  summarize,
  summaryOfHead,
  WATERMARK_KEY,
} from '../../src/projection/index.js';
import { newReadStats, type LogRecord } from '../../src/kafka/index.js';
import { connectLedger } from '../../src/client/index.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, commands, readAll, testLedger, type TestLedger } from './support.js';

const CHUNK = 512 * 1024;

/** ~1 KB of text that does not compress to nothing. */
function why(i: number): string {
  let s = `item ${i} exists because `;
  while (s.length < 1000) s += `${(i * 7919 + s.length * 104729).toString(36)} `;
  return s.slice(0, 1000);
}

function bigItems(count: number, prefix: string): ItemSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    title: `step ${i}`,
    why: why(i),
    dependsOn: i === 0 ? [] : [`${prefix}-${i - 1}`],
    tool: 'noop',
    inputJson: `{"i":${i}}`,
    retry: null,
  }));
}

/**
 * Decides commands with the domain (limits raised: the executor's default item cap is not what is under
 * test here) and appends their events, a few hundred per produce request so each batch stays under the
 * events topic's record limit.
 */
class BigWriter {
  readonly states = new Map<string, PlanState>();
  private now = 1_700_000_000_000;
  constructor(private readonly l: TestLedger) {}

  async run(cmds: AnyCommand[]): Promise<PlanEvent[]> {
    const out: PlanEvent[] = [];
    for (const c of cmds) {
      this.now += 5;
      const d = decide(this.states.get(c.planId), c, { now: this.now, limits: { maxItems: 10_000 } });
      if (!d.ok) throw new Error(`rejected: ${d.rejection.code} ${d.rejection.message}`);
      let s = this.states.get(c.planId);
      for (const e of d.events) s = evolve(s, e);
      this.states.set(c.planId, s!);
      out.push(...d.events);
    }
    for (let i = 0; i < out.length; i += 300) {
      await this.l.writer.send(
        this.l.topics.events,
        out.slice(i, i + 300).map((e) => ({ key: eventKey(e.planId, e.seq), value: this.l.codec.encodeEvent(e), partition: partitionFor(e.planId, this.l.config.partitions) })),
      );
    }
    return out;
  }

  digests(): Map<string, string> {
    return new Map([...this.states].map(([id, s]) => [id, stateDigest(s)]));
  }
}

async function projector(config: ReturnType<typeof testConfig>, extra: Partial<Parameters<typeof startProjector>[0]> = {}): Promise<ProjectorHandle> {
  const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false, ...extra });
  cleanup(() => p.stop());
  return p;
}

async function caughtUpWith(p: ProjectorHandle, expected: Map<string, string>): Promise<void> {
  await waitFor(
    async () => {
      if (!(await p.caughtUp())) return false;
      const got = p.stateDigests();
      return [...expected].every(([id, d]) => got.get(id) === d);
    },
    { timeoutMs: 90_000, intervalMs: 250, message: 'projector digests equal the from-scratch replay' },
  );
}

/** Latest record per key of one partition of a topic. */
function latestByKey(records: LogRecord[], partition: number): Map<string, LogRecord> {
  const out = new Map<string, LogRecord>();
  for (const r of records) if (r.partition === partition && r.key !== null) out.set(r.key.toString(), r);
  return out;
}

function metric(text: string, name: string): number {
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\d+)`, 'm').exec(text)?.[1] ?? 'NaN');
}

/** Plan ids on the same partition as `anchor` (so they share its watermark). */
function samePartition(anchor: string, partitions: number, count: number, prefix: string): string[] {
  const p = partitionFor(anchor, partitions);
  const out: string[] = [];
  for (let i = 0; out.length < count; i++) if (partitionFor(`${prefix}-${i}`, partitions) === p) out.push(`${prefix}-${i}`);
  return out;
}

describe('chunked snapshots', () => {
  it('a plan of 3,000 items with ~1 KB why each gets a chunked snapshot that a restart restores with the same digest', { timeout: 240_000 }, async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new BigWriter(ledger);
    const big = 'big-plan';
    const [small] = samePartition(big, config.partitions, 1, 'small');
    await writer.run([commands.create(big, bigItems(1000, 'a'))]);
    await writer.run([{ ...commands.create(big, []), type: 'AddItems', data: { items: bigItems(1000, 'b') } } as AnyCommand]);
    await writer.run([{ ...commands.create(big, []), type: 'AddItems', data: { items: bigItems(1000, 'c') } } as AnyCommand]);
    await writer.run([commands.create(small!, bigItems(3, 's'))]);
    expect(Object.keys(writer.states.get(big)!.items)).toHaveLength(3000);
    const expected = writer.digests();

    const first = await projector(config);
    await caughtUpWith(first, expected);
    await first.flush();
    await first.stop();

    const p = partitionFor(big, config.partitions);
    const snaps = await readAll(ledger, ledger.topics.snapshots);
    const latest = latestByKey(snaps, p);
    const head = latest.get(big)!;
    const n = Number(head.headers[SNAPSHOT_CHUNKS_HEADER]);
    const stateBytes = Buffer.byteLength(JSON.stringify(writer.states.get(big)));
    expect(stateBytes).toBeGreaterThan(3_000_000);
    expect(n).toBe(Math.ceil((stateBytes + 200) / CHUNK)); // the encoded value is the state's JSON plus a few fields
    for (let i = 0; i < n; i++) {
      const c = latest.get(`__chunk:${big}/${i}`)!;
      expect(c.value!.length).toBeLessThanOrEqual(CHUNK);
      expect(parseSnapshotChunkKey(c.key!.toString())).toEqual({ planId: big, index: i });
    }
    for (const r of snaps) expect(r.value?.length ?? 0).toBeLessThanOrEqual(CHUNK); // no record over a chunk
    expect(latest.get(small!)?.headers[SNAPSHOT_CHUNKS_HEADER]).toBeUndefined(); // small plans stay one record

    // The ledger client's index assembles it too: the plan is read from its snapshot (no event read), a list
    // of the plans reads no events either (no partition rebuilt for a snapshot it could not read), and each
    // key's latest record is the only one decoded (the partition's live keys, not its records: the small
    // plan's and the big plan's heads are written again, as a projector re-snapshotting them would).
    await ledger.writer.send(ledger.topics.snapshots, [small!, big].map((k) => ({ key: k, value: latest.get(k)!.value, partition: p, headers: latest.get(k)!.headers })));
    const stats = newReadStats();
    const client = await connectLedger(config, { logger: testLogger, readStats: stats });
    cleanup(() => client.close());
    const read = await client.getPlan(big, { payloads: 'reference' });
    expect(read && stateDigest(read)).toBe(expected.get(big));
    expect(stats.records[ledger.topics.events] ?? 0).toBe(0);
    const liveKeys = [...latest].filter(([k, r]) => parseSnapshotChunkKey(k) === null && r.value !== null).length;
    expect(stats.snapshotsDecoded).toBe(liveKeys);
    expect(stats.snapshotsSummarized).toBe(1); // the big plan's head: its summary from its header, its state not parsed
    expect(stats.indexed?.[`${ledger.topics.snapshots}/${p}`]).toBe(snaps.filter((s) => s.partition === p).length + 2);
    const listed = await client.listPlans({ limit: 500 });
    expect(listed.plans.find((s) => s.planId === big)?.status).toBe(writer.states.get(big)!.status);
    expect(stats.records[ledger.topics.events] ?? 0).toBe(0);

    // restorePartition (the executor's restore too) reads the plan back from its chunks, not from its events.
    const r = await restorePartition({ kafka: ledger.kafka, codec: ledger.codec, config, partition: p, logger: testLogger });
    expect(r.warnings).toEqual([]);
    expect(r.fromSnapshot).toBe(2);
    expect(r.eventsReplayed).toBe(0);
    expect(stateDigest(r.plans.get(big)!)).toBe(expected.get(big));
    expect(r.snapshotChunks.get(big)).toBe(n);

    // The audit reader assembles it as well.
    const log = await LedgerLog.open(config, testLogger);
    cleanup(() => log.close());
    const history = await log.readSnapshots(big);
    const check = stateFromSnapshot(history.at(-1)!.snapshot);
    expect(check.ok && stateDigest(check.state)).toBe(expected.get(big));

    // A restarted projector restores it from the snapshot: nothing replayed on that partition.
    const second = await projector(config);
    await caughtUpWith(second, expected);
    const text = await second.service.metrics.registry.metrics();
    expect(metric(text, `plan_ledger_projector_events_applied_total\\{partition="${p}"\\}`)).toBe(0);
    expect(second.plan(big)?.state?.digest).toBe(writer.states.get(big)!.digest);
    await second.stop();

    // A corrupt chunk (its bytes flipped, its headers intact) after the head: a new client's index does not
    // trust the snapshot (it does not assemble), reads that plan from its events with the same answer, and
    // serves the other plan of the partition from its snapshot.
    const chunk0 = latest.get(`__chunk:${big}/0`)!;
    await ledger.writer.send(ledger.topics.snapshots, [{ key: `__chunk:${big}/0`, value: Buffer.from(chunk0.value!.map((b) => b ^ 0xff)), partition: p, headers: chunk0.headers }]);
    const afterStats = newReadStats();
    const after = await connectLedger(config, { logger: testLogger, readStats: afterStats });
    cleanup(() => after.close());
    const smallRead = await after.getPlan(small!, { payloads: 'reference' });
    expect(smallRead && stateDigest(smallRead)).toBe(expected.get(small!));
    expect(afterStats.records[ledger.topics.events] ?? 0).toBe(0);
    const replayed = await after.getPlan(big, { payloads: 'reference' });
    expect(replayed && stateDigest(replayed)).toBe(expected.get(big));
    expect(afterStats.records[ledger.topics.events]).toBeGreaterThanOrEqual(3000); // its events, read from the start
  });

  it('a cancelled plan\'s chunked snapshot moves to the archive, and both archive readers (load and defer) assemble it', { timeout: 180_000 }, async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new BigWriter(ledger);
    const big = 'archived-big';
    await writer.run([commands.create(big, bigItems(700, 'x'))]);
    await writer.run([commands.cancel(big)]);
    expect(writer.states.get(big)!.status).toBe('cancelled');
    const p = partitionFor(big, config.partitions);
    const proj = await projector(config);
    await caughtUpWith(proj, writer.digests());
    await proj.flush();
    await waitFor(async () => latestByKey(await readAll(ledger, ledger.topics.archive), p).has(big), { timeoutMs: 30_000, message: 'the archive record' });
    await proj.stop();

    const archive = latestByKey(await readAll(ledger, ledger.topics.archive), p);
    expect(Number(archive.get(big)!.headers[SNAPSHOT_CHUNKS_HEADER])).toBeGreaterThanOrEqual(2);
    expect(archive.get(big)!.headers['plan-status']).toBe('cancelled');
    // The snapshots topic holds tombstones for its key and its chunk keys (if it was ever chunked there).
    const live = latestByKey(await readAll(ledger, ledger.topics.snapshots), p);
    expect(live.get(big)?.value ?? null).toBeNull();
    for (const [key, r] of live) if (parseSnapshotChunkKey(key)?.planId === big) expect(r.value, key).toBeNull();

    const expected = stateDigest(writer.states.get(big)!);
    const loaded = await restorePartition({ kafka: ledger.kafka, codec: ledger.codec, config, partition: p, logger: testLogger });
    expect(loaded.warnings).toEqual([]);
    expect(stateDigest(loaded.plans.get(big)!)).toBe(expected);
    // The executor's way: archive deferred, finished plans dormant; the raw value it decodes is whole.
    const deferred = await restorePartition({ kafka: ledger.kafka, codec: ledger.codec, config, partition: p, logger: testLogger, archive: 'defer', dormantStatuses: ['completed', 'cancelled'] });
    expect(deferred.plans.has(big)).toBe(false);
    const raw = await deferred.archived.value(big);
    const check = stateFromSnapshot(await ledger.codec.decodeSnapshot(raw!));
    expect(check.ok && stateDigest(check.state)).toBe(expected);
    // The ledger client reads it from its archive head and the chunks right before it, no event: the
    // archive partition is read twice (the index's sync, then the plan's records), nothing else.
    const chunks = Number(archive.get(big)!.headers[SNAPSHOT_CHUNKS_HEADER]);
    const stats = newReadStats();
    const client = await connectLedger(config, { logger: testLogger, readStats: stats });
    cleanup(() => client.close());
    const read = await client.getPlan(big, { payloads: 'reference' });
    expect(read && stateDigest(read)).toBe(expected);
    expect(stats.records[ledger.topics.events] ?? 0).toBe(0);
    expect(stats.indexed?.[`${ledger.topics.archive}/${p}`]).toBe(chunks + 1);
    expect(stats.records[ledger.topics.archive]).toBe(chunks + 1);
    // The index took the plan from its head's summary (its state neither put together nor parsed until the
    // read), and lists it with the summary the projector wrote.
    expect(stats.snapshotsSummarized).toBe(1);
    const headSummary = summaryOfHead(archive.get(big)!.headers, await ledger.codec.decodeSnapshot(archive.get(big)!.value!));
    expect(headSummary).toEqual(summarize({ planId: big, state: writer.states.get(big)!, stalled: null }));
    const listed = await client.listPlans({ limit: 500 });
    expect(listed.plans.find((s) => s.planId === big)).toEqual(headSummary);

    // A corrupt chunk (bytes flipped, headers intact) written with a copy of the head after it: the index
    // takes the new head on its summary as before; the read that puts it together finds it does not
    // verify and reads the plan from its events (same digest), and so does every read after it.
    const headRecord = archive.get(big)!;
    const chunk0 = latestByKey(await readAll(ledger, ledger.topics.archive), p).get(`__chunk:${big}/0`)!;
    await ledger.writer.send(ledger.topics.archive, [
      { key: `__chunk:${big}/0`, value: Buffer.from(chunk0.value!.map((b) => b ^ 0xff)), partition: p, headers: chunk0.headers },
      { key: big, value: headRecord.value, partition: p, headers: headRecord.headers },
    ]);
    const afterStats = newReadStats();
    const after = await connectLedger(config, { logger: testLogger, readStats: afterStats });
    cleanup(() => after.close());
    const replayed = await after.getPlan(big, { payloads: 'reference' });
    expect(replayed && stateDigest(replayed)).toBe(expected);
    expect(afterStats.snapshotsSummarized).toBe(1);
    const eventsOfBig = (await readAll(ledger, ledger.topics.events)).filter((r) => r.partition === p && r.key?.toString().startsWith(`${big}:`)).length;
    expect(afterStats.records[ledger.topics.events]).toBeGreaterThanOrEqual(eventsOfBig);
    const archiveRead = afterStats.records[ledger.topics.archive];
    expect(archiveRead).toBeGreaterThan(0);
    const again = await after.getPlan(big, { payloads: 'reference' });
    expect(again && stateDigest(again)).toBe(expected);
    expect(afterStats.records[ledger.topics.events]).toBeGreaterThanOrEqual(2 * eventsOfBig);
    expect(afterStats.records[ledger.topics.archive]).toBe(archiveRead); // the second read went to the events only
  });

  it('a plan whose snapshot cannot be written holds back neither the other plans\' snapshots nor the watermark', { timeout: 240_000 }, async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new BigWriter(ledger);
    // On one partition: a plan the broker refuses (chunking off, its snapshot over 1 MiB), a plan whose
    // snapshot the hook fails, and good plans.
    const [refused, hooked, ...good] = samePartition('anchor', config.partitions, 5, 'w');
    const p = partitionFor(refused!, config.partitions);
    let hookCalls = 0;
    const failing = await projector(config, {
      snapshotChunkBytes: 64 * 1024 * 1024,
      beforeSnapshot: (id) => {
        if (id !== hooked) return;
        hookCalls += 1;
        throw new Error('snapshot store refused (injected)');
      },
    });
    await waitFor(() => failing.caughtUp(), { message: 'projector running' });
    await writer.run([commands.create(refused!, bigItems(1300, 'r')), commands.create(hooked!, bigItems(4, 'h'))]);
    for (const id of good) await writer.run([commands.create(id, bigItems(4, 'g'))]);
    await caughtUpWith(failing, writer.digests());
    await failing.flush();
    // More events after the first watermark: the good plans' snapshots and the watermark keep moving.
    for (const id of good) await writer.run([commands.intent(id, 'g-0')]);
    await writer.run([commands.intent(hooked!, 'h-0')]);
    await caughtUpWith(failing, writer.digests());
    const events = await readAll(ledger, ledger.topics.events);
    const lastOffset = events.filter((r) => r.partition === p).at(-1)!.offset;
    await waitFor(
      async () => {
        await failing.flush();
        const w = latestByKey(await readAll(ledger, ledger.topics.snapshots), p).get(WATERMARK_KEY);
        return w !== undefined && (await ledger.codec.decodeSnapshot(w.value!)).eventsOffset === Number(lastOffset);
      },
      { timeoutMs: 60_000, intervalMs: 300, message: 'the watermark reaches the last event of the partition' },
    );
    expect(hookCalls).toBeGreaterThan(0);
    const text = await failing.service.metrics.registry.metrics();
    expect(metric(text, 'plan_ledger_projector_snapshot_skipped_total')).toBeGreaterThanOrEqual(2);
    expect(metric(text, `plan_ledger_projector_snapshot_exceptions\\{partition="${p}"\\}`)).toBe(2);

    const latest = latestByKey(await readAll(ledger, ledger.topics.snapshots), p);
    const watermark = await ledger.codec.decodeSnapshot(latest.get(WATERMARK_KEY)!.value!);
    expect(isWatermark(watermark)).toBe(true);
    // Both failing plans are exceptions. The refused plan was snapshotted while it was still small (the
    // projector met its first events in a batch of their own): an exception's replay must start at or
    // before its first event that no landed snapshot covers.
    const exceptions = snapshotExceptionsOf(watermark);
    expect([...exceptions.keys()].sort()).toEqual([refused!, hooked!].sort());
    expect(latest.has(hooked!)).toBe(false);
    const staleSeq = new Map<string, number>();
    for (const id of [refused!, hooked!]) {
      const snap = latest.has(id) ? await ledger.codec.decodeSnapshot(latest.get(id)!.value!) : null;
      staleSeq.set(id, snap?.seq ?? 0);
      expect(snap?.seq ?? 0).toBeLessThan(writer.states.get(id)!.seq);
      const firstUncovered = events.find((r) => r.partition === p && r.key?.toString() === eventKey(id, (snap?.seq ?? 0) + 1))!;
      expect(BigInt(exceptions.get(id)!)).toBeLessThanOrEqual(BigInt(firstUncovered.offset));
    }
    for (const id of good) {
      const s = await ledger.codec.decodeSnapshot(latest.get(id)!.value!);
      expect(s.seq).toBe(writer.states.get(id)!.seq);
    }
    await failing.stop();

    // Readers replay the exceptions from their offset and trust the rest: every digest as a replay.
    const r = await restorePartition({ kafka: ledger.kafka, codec: ledger.codec, config, partition: p, logger: testLogger });
    expect(r.warnings).toEqual([]);
    expect(r.watermark).toBe(lastOffset);
    expect([...r.snapshotExceptions.keys()].sort()).toEqual([refused!, hooked!].sort());
    expect(r.fromSnapshot).toBe(good.length + (staleSeq.get(refused!)! > 0 ? 1 : 0));
    const onPartition = [...writer.states.values()].filter((s) => partitionFor(s.planId, config.partitions) === p);
    // Only the exceptions' events after their last landed snapshot are applied.
    expect(r.eventsReplayed).toBe(writer.states.get(refused!)!.seq - staleSeq.get(refused!)! + writer.states.get(hooked!)!.seq);
    for (const s of onPartition) expect(stateDigest(r.plans.get(s.planId)!), s.planId).toBe(stateDigest(s));

    // A projector that can write them (default chunking, no fault) snapshots them and clears the exceptions.
    const healthy = await projector(config);
    await caughtUpWith(healthy, writer.digests());
    await writer.run([commands.commit(good[0]!, 'g-0', 1)]);
    await caughtUpWith(healthy, writer.digests());
    await waitFor(
      async () => {
        await healthy.flush();
        const w = latestByKey(await readAll(ledger, ledger.topics.snapshots), p).get(WATERMARK_KEY)!;
        return snapshotExceptionsOf(await ledger.codec.decodeSnapshot(w.value!)).size === 0;
      },
      { timeoutMs: 60_000, intervalMs: 300, message: 'the exceptions clear once the plans are snapshotted' },
    );
    const after = await restorePartition({ kafka: ledger.kafka, codec: ledger.codec, config, partition: p, logger: testLogger });
    expect(after.fromSnapshot).toBe(onPartition.length);
    expect(after.eventsReplayed).toBe(0);
    expect(stateDigest(after.plans.get(refused!)!)).toBe(stateDigest(writer.states.get(refused!)!));
  });
});
