// The projector against the real broker and registry: the same log gives the same digests as a
// from-scratch replay, live, after a restart from snapshots, and every snapshot is a replay up to its seq.
import { describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { canonicalJson, evolve, sha256Hex, stateDigest, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import { isWatermark, PLAN_STATUS_HEADER, restorePartition, SNAPSHOT_BOUNDARY_EVENTS, type PlanSnapshot } from '../../src/projection/index.js';
import { parseEventKey } from '../../src/projection/index.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, commands, interleave, items, LedgerWriter, readAll, testLedger } from './support.js';


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
    { timeoutMs: 45_000, message: 'projector digests equal the from-scratch replay' },
  );
}

describe('projector projection', () => {
  it('projects many interleaved plans to the digests of a from-scratch replay, and again after a restart from snapshots', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    // 23 plans on 3 partitions: runs with a retry, a propose/approve flow, a cancelled plan, a rejected command.
    const lifecycles = Array.from({ length: 20 }, (_, i) => writer.lifecycle(`plan-${i}`, 4 + (i % 4), { failFirstTry: i % 5 === 0 }));
    await interleave(writer, lifecycles);
    await writer.run([commands.create('review-1', items(3), 'propose', { team: 'core' }), commands.propose('review-1')]);
    await writer.run([commands.approve('review-1', writer.states.get('review-1')!.digest)]);
    await writer.run([commands.create('cancel-1', items(5)), commands.intent('cancel-1', 'it-0'), commands.cancel('cancel-1')]);
    await writer.run([commands.approve('plan-3', 'f'.repeat(64))]); // rejected: becomes CommandRejected
    await writer.run([commands.create('draft-1', items(2), 'propose')]);

    const expected = writer.replayDigests();
    expect(expected.size).toBe(23);
    const first = await projector(config);
    await caughtUpWith(first, expected);
    expect(first.plan('plan-0')?.state?.status).toBe('completed');
    expect(first.plan('review-1')?.state?.status).toBe('approved');
    expect(first.plan('cancel-1')?.state?.status).toBe('cancelled');
    expect(first.plan('plan-3')?.state?.rejections).toHaveLength(1);
    const totalEvents = [...writer.events.values()].reduce((n, l) => n + l.length, 0);
    // All of it came through the restore (no snapshots yet): the activity counts every event once.
    expect(first.service.model.activity(writer.now, 15 * 60_000).reduce((n, b) => n + b.events, 0)).toBe(totalEvents);
    await first.stop();

    // Restart from snapshots: restore reads snapshots + the tail after the watermark (here: nothing).
    const second = await projector(config);
    await caughtUpWith(second, expected);
    const replayed = Number(/plan_ledger_projector_events_applied_total\{partition="\d+"\} (\d+)/.exec(await second.service.metrics.registry.metrics())?.[1] ?? 'NaN');
    expect(replayed).toBeLessThan(totalEvents / 3);

    // More events while it runs: it keeps up, and the new plan appears.
    const more = Array.from({ length: 4 }, (_, i) => writer.lifecycle(`late-${i}`, 3));
    await interleave(writer, more);
    await caughtUpWith(second, writer.replayDigests());
    expect(second.stateDigests().size).toBe(27);
  });

  it('writes snapshots only at boundaries, each equal to a from-scratch replay up to its seq, and per-partition watermarks', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    // No periodic watermark while the rounds run (a watermark snapshots every plan with new events, so
    // its count would follow the machine's speed): only the policy writes snapshots, `flush` the watermarks.
    const p = await projector(config, { snapshotEveryEvents: 5, watermarkIntervalMs: 3_600_000 });
    await waitFor(() => p.caughtUp(), { message: 'projector running' });
    // Appended round by round while the projector keeps up, so it sees many small batches (one snapshot
    // per plan per batch at most) as it would in production.
    const lifecycles = Array.from({ length: 30 }, (_, i) => writer.lifecycle(`snap-${i}`, 3 + (i % 5), { failFirstTry: i % 7 === 0 }));
    for (let round = 0; round < Math.max(...lifecycles.map((l) => l.length)); round++) {
      await writer.run(lifecycles.flatMap((l) => l[round] ?? []));
      await waitFor(() => p.caughtUp(), { message: `projector caught up with round ${round}` });
    }
    await caughtUpWith(p, writer.replayDigests());
    await p.flush();

    const events = await readAll(ledger, ledger.topics.events);
    const where = new Map<string, { planId: string; seq: number; partition: number }>(); // "partition:offset" -> event
    for (const r of events) {
      const k = parseEventKey(r.key)!;
      where.set(`${r.partition}:${r.offset}`, { ...k, partition: r.partition });
    }
    // A finished plan's snapshot moves to the archive, leaving a tombstone in the snapshots topic.
    const live = await readAll(ledger, ledger.topics.snapshots);
    const archive = await readAll(ledger, ledger.topics.archive);
    const lastLive = new Map(live.map((r) => [r.key!.toString(), r]));
    const lastArchived = new Map(archive.map((r) => [r.key!.toString(), r]));
    const finished = [...writer.states.values()].filter((s) => s.status === 'completed');
    expect(finished.length).toBeGreaterThan(20);
    for (const s of finished) {
      expect(lastLive.get(s.planId)?.value, s.planId).toBeNull();
      const a = lastArchived.get(s.planId)!;
      expect(a.headers[PLAN_STATUS_HEADER]).toBe('completed');
      expect((await ledger.codec.decodeSnapshot(a.value!)).seq).toBe(s.seq);
    }
    expect([...lastArchived.keys()].sort()).toEqual(finished.map((s) => s.planId).sort());
    const records = [...live, ...archive].filter((r) => r.value !== null);
    const snapshots: PlanSnapshot[] = [];
    for (const r of records) snapshots.push(await ledger.codec.decodeSnapshot(r.value!));
    const planSnaps = snapshots.filter((s) => !isWatermark(s));
    const watermarks = snapshots.filter(isWatermark);
    expect(planSnaps.length).toBeGreaterThan(30);
    // Only at boundaries: at most one snapshot per boundary event (fewer where a batch held several of a
    // plan's boundaries, or 5 events had passed), and far from one per event.
    const boundaries = [...writer.events.values()].flat().filter((e) => SNAPSHOT_BOUNDARY_EVENTS.has(e.type)).length;
    expect(planSnaps.length).toBeLessThanOrEqual(boundaries);
    expect(planSnaps.length).toBeLessThan(events.length / 2);
    expect(new Set(watermarks.map((w) => w.partition))).toEqual(new Set([0, 1, 2]));

    for (const s of planSnaps) {
      const history = writer.events.get(s.planId)!;
      let state: PlanState | undefined;
      for (const e of history.filter((e: PlanEvent) => e.seq <= s.seq)) state = evolve(state, e);
      expect(s.stateJson).toBe(canonicalJson(state));
      expect(s.stateDigest).toBe(stateDigest(state!));
      expect(sha256Hex(s.stateJson)).toBe(s.stateDigest);
      // eventsOffset is the offset of the event with that seq, on the plan's partition.
      expect(where.get(`${s.partition}:${s.eventsOffset}`)).toEqual({ planId: s.planId, seq: s.seq, partition: s.partition });
    }
    // The watermark's promise: every plan with events at offsets <= W has a snapshot covering them all.
    const latest = new Map<string, PlanSnapshot>();
    for (const s of planSnaps) latest.set(s.planId, s);
    for (const w of watermarks.slice(-3)) {
      for (const r of events.filter((r) => r.partition === w.partition && Number(r.offset) <= w.eventsOffset)) {
        const k = parseEventKey(r.key)!;
        expect(latest.get(k.planId)?.seq ?? 0).toBeGreaterThanOrEqual(k.seq);
      }
    }
  });

  it('restorePartition replays only the tail after the watermark and equals a from-scratch rebuild', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    await interleave(writer, Array.from({ length: 18 }, (_, i) => writer.lifecycle(`r-${i}`, 6)));
    const p = await projector(config);
    await caughtUpWith(p, writer.replayDigests());
    await p.stop(); // leaves a watermark on every partition

    // The tail: more steps of new plans, plus one step of an old plan.
    const tail = await interleave(writer, Array.from({ length: 5 }, (_, i) => writer.lifecycle(`t-${i}`, 2)));
    const tail2 = await writer.run([commands.create('r-extra', items(1)), commands.intent('r-extra', 'it-0')]);
    const expected = writer.replayDigests();

    let replayed = 0;
    let fromSnapshot = 0;
    const restored = new Map<string, string>();
    for (let partition = 0; partition < config.partitions; partition++) {
      const steps: string[] = [];
      const r = await restorePartition({ kafka: ledger.kafka, codec: ledger.codec, config, partition, logger: testLogger, onStep: (s) => steps.push(s) });
      // Each read says where it is, so a slow take-over can name the step it waits in.
      expect(steps.slice(0, 2)).toEqual(['snapshots: offsets', 'snapshots: records']);
      expect(steps).toContain('dead letters: offsets');
      expect(steps).toContain('events: offsets');
      expect(r.watermark).not.toBeNull();
      replayed += r.eventsReplayed;
      fromSnapshot += r.fromSnapshot;
      for (const [id, s] of r.plans) restored.set(id, stateDigest(s));
      const end = (await ledger.admin.fetchTopicOffsets(ledger.topics.events)).find((o) => o.partition === partition)!;
      expect(r.nextOffset).toBe(end.high);
    }
    expect(fromSnapshot).toBe(18);
    expect(replayed).toBe(tail + tail2.length); // cost follows the tail, not the history
    expect(restored).toEqual(expected);
  });
});
