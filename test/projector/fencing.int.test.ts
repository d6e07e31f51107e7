// Projector snapshot writers are fenced per partition: a projector that lost a partition while it was
// paused or cut off (a zombie) cannot land a snapshot after the new owner's, against the real broker.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { partitionFor } from '../../src/kafka/index.js';
import { stateDigest } from '../../src/plan/index.js';
import { PLAN_STATUS_HEADER, stateFromSnapshot, type PlanSnapshot } from '../../src/projection/index.js';
import { closeAfter, testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, LedgerWriter, readAll, testLedger, type TestLedger } from './support.js';

async function projector(config: ReturnType<typeof testConfig>, beforeFence?: (partition: number) => Promise<void>): Promise<ProjectorHandle> {
  const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false, ...(beforeFence ? { beforeFence } : {}) });
  cleanup(() => p.stop());
  return p;
}

/**
 * The committed snapshot records of `planId` (read_committed: an aborted or fenced write never shows), in
 * the snapshots topic and then the archive (where a finished plan's snapshot goes).
 */
async function snapshotsOf(l: TestLedger, planId: string): Promise<PlanSnapshot[]> {
  const out: PlanSnapshot[] = [];
  for (const r of [...(await readAll(l, l.topics.snapshots)), ...(await readAll(l, l.topics.archive))]) {
    if (r.key?.toString() !== planId || r.value === null) continue;
    out.push(await l.codec.decodeSnapshot(r.value));
  }
  return out;
}

function fencedCount(metrics: string, partition: number): number {
  return Number(new RegExp(`plan_ledger_projector_fenced_total\\{partition="${partition}"\\} (\\d+)`).exec(metrics)?.[1] ?? 0);
}

describe('projector fencing', () => {
  it('a fenced projector writes nothing more to that partition, serves the others, and restores it when the group still assigns it a session later', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    // Two plans on different partitions.
    const a = 'fenced-a';
    const pa = partitionFor(a, config.partitions);
    const b = Array.from({ length: 50 }, (_, i) => `other-${i}`).find((id) => partitionFor(id, config.partitions) !== pa)!;
    const pb = partitionFor(b, config.partitions);
    const [stepsA, stepsB] = [writer.lifecycle(a, 3), writer.lifecycle(b, 3)];
    const half = 3; // create + the first item's intent and result
    for (let i = 0; i < half; i++) await writer.run([...stepsA[i]!, ...stepsB[i]!]);

    const first = await projector(config);
    await first.flush();
    await waitFor(async () => (await snapshotsOf(ledger, a)).length > 0, { message: 'a snapshot of plan a' });
    const beforeFence = await snapshotsOf(ledger, a);
    const seqBeforeFence = Math.max(...beforeFence.map((s) => s.seq));

    // A new owner of partition pa (as another projector of the group would) initialises its writer id.
    const usurper = closeAfter(ledger.kafka.fencedWriter(`${ledger.topics.projectorGroup}.p${pa}`));
    await usurper.connect();

    // The rest of both plans: the fenced projector applies them, but only pb's snapshots may land.
    for (let i = half; i < stepsA.length; i++) await writer.run([...stepsA[i]!, ...(stepsB[i] ?? [])]);
    for (let i = stepsA.length; i < stepsB.length; i++) await writer.run(stepsB[i]!);
    const expected = writer.replayDigests();
    const finalA = writer.states.get(a)!;
    const finalB = writer.states.get(b)!;
    expect(finalA.status).toBe('completed');

    await waitFor(async () => fencedCount(await first.service.metrics.registry.metrics(), pa) >= 1, { timeoutMs: 30_000, message: 'the projector noticed it was fenced' });
    await waitFor(async () => (await snapshotsOf(ledger, b)).some((s) => s.seq === finalB.seq), { timeoutMs: 30_000, message: "plan b's final snapshot (its partition is still ours)" });
    await first.flush();
    // Nothing the fenced projector wrote for pa after the fence is visible.
    const afterFence = await snapshotsOf(ledger, a);
    expect(afterFence.map((s) => s.seq)).toEqual(beforeFence.map((s) => s.seq));
    expect(Math.max(...afterFence.map((s) => s.seq))).toBe(seqBeforeFence);
    expect(seqBeforeFence).toBeLessThan(finalA.seq);
    // It no longer serves pa's plans (the owner of pa does), keeps serving pb's, and stays healthy.
    expect(first.plan(a)).toBeUndefined();
    expect(first.plan(b)?.state?.seq).toBe(finalB.seq);
    expect(first.service.health().ok).toBe(true);
    expect(first.service.partitions().map((x) => x.partition)).not.toContain(pa);
    expect(pb).not.toBe(pa);

    // The usurper is no member of the group, which never moves pa: a session timeout and a heartbeat
    // after the fence, the projector still holds pa's assignment and restores it — fencing the usurper in
    // turn — and its snapshots are written again, up to plan a's final state.
    await waitFor(async () => (await first.caughtUp()) && first.stateDigests().get(a) === expected.get(a), { timeoutMs: 60_000, message: 'first projector owns pa again' });
    await first.flush();
    await waitFor(async () => (await snapshotsOf(ledger, a)).some((s) => s.seq === finalA.seq), { timeoutMs: 30_000, message: "plan a's final snapshot" });
    const last = (await snapshotsOf(ledger, a)).find((s) => s.seq === finalA.seq)!;
    const check = stateFromSnapshot(last);
    expect(check.ok && stateDigest(check.state)).toBe(expected.get(a));
    // The usurper, fenced in turn, can commit nothing.
    const tx = await usurper.transaction();
    await expect(
      (async () => {
        await tx.send(ledger.topics.snapshots, [{ key: a, value: Buffer.from('stale'), partition: pa, headers: { [PLAN_STATUS_HEADER]: 'running' } }]);
        await tx.commit();
      })(),
    ).rejects.toThrow();
    await tx.abort().catch(() => {});
    expect((await snapshotsOf(ledger, a)).at(-1)?.seq).toBe(finalA.seq);
  }, 150_000);

  it('a partition moves to a new projector only once its old owner\'s fence in flight has ended, so the old fence never fences the new owner', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    // A round of plans: one finished plan on every partition.
    const round = async (name: string): Promise<string[]> => {
      const ids = Array.from({ length: config.partitions }, (_, p) => Array.from({ length: 200 }, (_, i) => `${name}-${i}`).find((id) => partitionFor(id, config.partitions) === p)!);
      const lifecycles = ids.map((id) => writer.lifecycle(id, 2));
      for (let i = 0; i < Math.max(...lifecycles.map((l) => l.length)); i++) await writer.run(lifecycles.flatMap((l) => l[i] ?? []));
      return ids;
    };
    const before = await round('before');

    // The first projector's fences are held until 9 s after the second joined the group (as while a
    // transaction coordinator loads): the group takes some partitions from the first a few seconds after
    // the join, mid-fence, and a revocation may wait 8 s for its owner to let go.
    const fencing = new Set<number>();
    let fenced = 0;
    let joined = 0; // when the second projector joined
    const first = await projector(config, async (p) => {
      fencing.add(p);
      await waitFor(() => joined > 0, { timeoutMs: 30_000, message: 'the second projector joined' });
      await sleep(joined + 9000 - Date.now());
      fenced++;
    });
    await waitFor(() => fencing.size === config.partitions, { timeoutMs: 30_000, message: "the first projector's fences began" });
    const second = await projector(config);
    joined = Date.now();
    await waitFor(
      () => {
        const a = first.service.partitions().map((x) => x.partition);
        const b = second.service.partitions().map((x) => x.partition);
        return b.length > 0 && new Set([...a, ...b]).size === config.partitions && a.length + b.length === config.partitions;
      },
      { timeoutMs: 60_000, message: 'the two projectors share every partition' },
    );
    const moved = second.service.partitions().map((x) => x.partition);

    // Once every fence of the first has ended, a second round of plans: each owner snapshots its own.
    // Before the change, the first's fence of a moved partition landed after the second's and fenced it, so
    // the second could not write that partition's snapshots until it restored it again a session later.
    await waitFor(() => fenced === config.partitions, { timeoutMs: 30_000, message: "the first projector's fences ended" });
    const after = await round('after');
    for (const id of [...before, ...after]) {
      const p = partitionFor(id, config.partitions);
      const owner = moved.includes(p) ? second : first;
      await waitFor(async () => (await snapshotsOf(ledger, id)).some((s) => s.seq === writer.states.get(id)!.seq), { timeoutMs: 20_000, message: `plan ${id}'s final snapshot` });
      expect(owner.plan(id)?.state?.seq).toBe(writer.states.get(id)!.seq);
    }
    const firstMetrics = await first.service.metrics.registry.metrics();
    const secondMetrics = await second.service.metrics.registry.metrics();
    const fences = Array.from({ length: config.partitions }, (_, p) => fencedCount(firstMetrics, p) + fencedCount(secondMetrics, p));
    expect(fences).toEqual(Array.from({ length: config.partitions }, () => 0));
    expect(moved.length).toBeGreaterThan(0);
    expect(second.service.partitions().map((x) => x.partition)).toEqual(moved);
  }, 150_000);

  it('a fence of the old owner that never ends holds a revoked partition back 8 s at most: the new projector serves it, the old one its own, and neither is fenced', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    const ids = Array.from({ length: config.partitions }, (_, p) => Array.from({ length: 200 }, (_, i) => `never-${i}`).find((id) => partitionFor(id, config.partitions) === p)!);
    const lifecycles = ids.map((id) => writer.lifecycle(id, 2));
    for (let i = 0; i < Math.max(...lifecycles.map((l) => l.length)); i++) await writer.run(lifecycles.flatMap((l) => l[i] ?? []));

    // The first projector's fences are held, each until the test lets its partition go; those the group
    // moves to the second projector are never let go (a fence that never answers).
    const gates = new Map<number, () => void>();
    const held = new Map(Array.from({ length: config.partitions }, (_, p) => [p, new Promise<void>((resolve) => gates.set(p, resolve))]));
    const letGo = (p: number) => gates.get(p)!();
    const fencing = new Set<number>();
    const first = await projector(config, (p) => {
      fencing.add(p);
      return held.get(p)!;
    });
    cleanup(async () => [...gates.keys()].forEach(letGo));
    await waitFor(() => fencing.size === config.partitions, { timeoutMs: 30_000, message: "the first projector's fences began" });
    const second = await projector(config);
    const joined = Date.now();
    await waitFor(() => second.service.partitions().length > 0, { timeoutMs: 60_000, message: 'the second projector has a partition' });
    const handedOn = Date.now() - joined;
    const moved = second.service.partitions().map((x) => x.partition);
    const kept = Array.from({ length: config.partitions }, (_, p) => p).filter((p) => !moved.includes(p));
    kept.forEach(letGo);

    // Each serves its own partitions' plans up to their final state; nobody's writer was fenced.
    for (const [p, id] of ids.entries()) {
      await waitFor(async () => (await snapshotsOf(ledger, id)).some((s) => s.seq === writer.states.get(id)!.seq), { timeoutMs: 30_000, message: `plan ${id}'s final snapshot` });
      expect((moved.includes(p) ? second : first).plan(id)?.state?.seq).toBe(writer.states.get(id)!.seq);
    }
    // The group held the moved partitions back for the revocation's 8 s wait, and no longer.
    expect(handedOn).toBeGreaterThanOrEqual(7_500);
    expect(handedOn).toBeLessThan(40_000);
    expect(kept.length).toBeGreaterThan(0);
    expect(first.service.partitions().map((x) => x.partition).sort()).toEqual(kept);
    const metrics = [await first.service.metrics.registry.metrics(), await second.service.metrics.registry.metrics()];
    expect(Array.from({ length: config.partitions }, (_, p) => fencedCount(metrics[0]!, p) + fencedCount(metrics[1]!, p))).toEqual(Array.from({ length: config.partitions }, () => 0));
  }, 150_000);
});
