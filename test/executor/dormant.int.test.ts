// Archived finished plans: the projector moves a completed or cancelled plan's snapshot to the archive
// topic (status in header `plan-status`) and its watermark carries the highest fencing token of the
// partition (header `max-fencing-token`); a new owner restores only the live plans and loads an archived
// one only when a command or a tail event needs it.
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { restoreOwnedPartition } from '../../executor/restore.js';
import { createCodec } from '../../src/codec/index.js';
import { isLedgerError } from '../../src/errors.js';
import type { LogRecord } from '../../src/kafka/index.js';
import { topicNames } from '../../src/config.js';
import { startProjector } from '../../projector/index.js';
import { stateDigest, verifyChain, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import { MAX_FENCING_TOKEN_HEADER, PLAN_STATUS_HEADER, restorePartition, WATERMARK_KEY } from '../../src/projection/index.js';
import type { Ledger } from '../../src/client/index.js';
import type { LedgerConfig } from '../../src/config.js';
import { tools } from '../fixtures/tools.js';
import { readAll, testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';
import { chainOfItems, ledgerWithExecutor } from './support.js';

async function executor(config: LedgerConfig, executorId: string): Promise<ExecutorHandle> {
  const e = await startExecutor({ tools, config, executorId, concurrency: 8, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
  onTestFinished(() => e.stop());
  await e.started;
  return e;
}

/** Runs the projector until it has projected every event, then stops it: snapshots and a watermark are left behind. */
async function snapshotEverything(config: LedgerConfig, expected: Map<string, string>): Promise<void> {
  const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false });
  try {
    await waitFor(
      async () => {
        if (!(await p.caughtUp())) return false;
        const got = p.stateDigests();
        return [...expected].every(([id, d]) => got.get(id) === d);
      },
      { timeoutMs: 45_000, message: 'projector caught up' },
    );
  } finally {
    await p.stop();
  }
}

async function chainOf(ledger: Ledger, planId: string): Promise<PlanEvent[]> {
  const events = (await ledger.planEvents(planId)).map((r) => r.event);
  expect(verifyChain(events).ok).toBe(true);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events;
}

function tokensOf(events: PlanEvent[]): number[] {
  return events.flatMap((e) => (e.type === 'IntentRecorded' ? [e.data.fencingToken] : []));
}

describe('dormant finished plans (real broker and registry)', () => {
  it('restores completed and cancelled plans undecoded; a later command on one is decided against its real state', async () => {
    const config = testConfig({ partitions: 1 });
    const { ledger, executor: a } = await ledgerWithExecutor({ config, executorId: 'dormant-A', logger: testLogger });
    const { planId: done } = await ledger.createPlan({ goal: 'finished before the restart', mode: 'execute', items: chainOfItems(3) });
    const completed = await ledger.waitFor(done, 'completed', { timeoutMs: 30_000 });
    const { planId: dropped } = await ledger.createPlan({ goal: 'cancelled before it ran', mode: 'propose', items: chainOfItems(2) });
    await ledger.cancel(dropped);
    const cancelled = await ledger.waitFor(dropped, 'cancelled', { timeoutMs: 30_000 });
    const { planId: waiting } = await ledger.createPlan({ goal: 'waits for approval', mode: 'propose', items: chainOfItems(2) });
    await ledger.propose(waiting);
    const proposed = await ledger.waitFor(waiting, 'proposed', { timeoutMs: 30_000 });
    await a.stop();
    await snapshotEverything(config, new Map([completed, cancelled, proposed].map((s) => [s.planId, stateDigest(s)])));

    // The projector archived the finished plans (a tombstone in the snapshots topic, the full snapshot
    // with its status in the archive); the live one stays; the watermark carries the partition's top token.
    const kafka = testKafka(config);
    const names = topicNames(config.topicPrefix);
    const lastOf = async (topic: string) => {
      const last = new Map<string, LogRecord>();
      for (const r of await readAll(kafka, topic)) last.set(r.key!.toString(), r);
      return last;
    };
    const snaps = await lastOf(names.snapshots);
    const archive = await lastOf(names.archive);
    expect(snaps.get(done)?.value).toBeNull();
    expect(snaps.get(dropped)?.value).toBeNull();
    expect(snaps.get(waiting)?.headers[PLAN_STATUS_HEADER]).toBe('proposed');
    expect(archive.get(done)?.headers[PLAN_STATUS_HEADER]).toBe('completed');
    expect(archive.get(dropped)?.headers[PLAN_STATUS_HEADER]).toBe('cancelled');
    expect([...archive.keys()].sort()).toEqual([done, dropped].sort());
    const maxToken = Math.max(...tokensOf(await chainOf(ledger, done)));
    expect(snaps.get(WATERMARK_KEY)?.headers[MAX_FENCING_TOKEN_HEADER]).toBe(String(maxToken));

    // Loading the archive (the projector, the CLI) gives every plan; deferring it (an executor) gives the
    // live plans only, with the archived ones raw, on demand.
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
    const base = { kafka, codec, config, partition: 0, logger: testLogger };
    const full = await restorePartition(base);
    const lean = await restorePartition({ ...base, dormantStatuses: ['completed', 'cancelled'], archive: 'defer' });
    expect(full.plans).toEqual(new Map([[done, completed], [dropped, cancelled], [waiting, proposed]]));
    expect(lean.plans).toEqual(new Map([[waiting, proposed]]));
    expect(lean.dormant.size).toBe(0);
    expect(lean.erased.size).toBe(0);
    expect(full.archived.read).toBe(true);
    expect(lean.archived.read).toBe(false); // the restore itself did not read the archive
    expect([...(await lean.archived.load()).offsets.keys()].sort()).toEqual([done, dropped].sort());
    expect(lean.archived.read).toBe(true);
    // The index holds offsets; a value is read on demand, from the record at its offset.
    const doneSnapshot = await codec.decodeSnapshot((await lean.archived.value(done))!);
    expect(doneSnapshot).toMatchObject({ planId: done, seq: completed.seq });
    expect(await lean.archived.value(waiting)).toBeUndefined(); // live, not archived
    expect(await lean.archived.value('never-existed')).toBeUndefined();
    expect(lean.maxFencingToken).toBe(maxToken);
    expect(full.maxFencingToken).toBe(maxToken);
    expect(lean.eventsReplayed).toBe(0);
    expect(lean.warnings).toEqual([]);
    const owned = await restoreOwnedPartition(base);
    expect([...owned.plans.keys()]).toEqual([waiting]);
    expect([...(await owned.archived!.load()).offsets.keys()].sort()).toEqual([done, dropped].sort());

    // A new owner: RetryItem on the archived completed plan is rejected at the next seq, chain intact;
    // CreatePlan with its id is refused (the owner read the archive before deciding).
    const b = await executor(config, 'dormant-B');
    expect(b.planState(done)).toBeUndefined(); // archived until a command needs it
    const refused = await ledger.retryItem(done, 'item-00').catch((e: unknown) => e);
    expect(isLedgerError(refused, 'REJECTED')).toBe(true);
    expect((refused as { details: { rejection: string } }).details.rejection).toBe('PLAN_FINISHED');
    let events = await chainOf(ledger, done);
    expect(events).toHaveLength(completed.seq + 1);
    expect(events.at(-1)).toMatchObject({ type: 'CommandRejected', seq: completed.seq + 1 });
    expect(b.planState(done)?.seq).toBe(completed.seq + 1);
    await expect(ledger.createPlan({ planId: dropped, goal: 'same id again', mode: 'execute', items: chainOfItems(1) })).rejects.toMatchObject({ details: { rejection: 'PLAN_EXISTS' } });
    expect((await chainOf(ledger, dropped)).at(-1)).toMatchObject({ type: 'CommandRejected', seq: cancelled.seq + 1 });

    // The next owner meets those rejections in its tail (after the watermark): it loads the plans from the
    // archive and applies the events — no seq gap, no stall — and a further command goes to seq + 2.
    await b.stop();
    const tail = await restoreOwnedPartition(base);
    expect(tail.archived!.read).toBe(true); // its tail needed two archived plans
    expect(tail.stalled.size).toBe(0);
    expect(tail.plans.get(done)?.seq).toBe(completed.seq + 1);
    expect(tail.plans.get(dropped)?.seq).toBe(cancelled.seq + 1);
    const c = await executor(config, 'dormant-C');
    expect(c.planState(done)?.seq).toBe(completed.seq + 1);
    await expect(ledger.retryItem(done, 'item-01')).rejects.toMatchObject({ details: { rejection: 'PLAN_FINISHED' } });
    events = await chainOf(ledger, done);
    expect(events.at(-1)).toMatchObject({ type: 'CommandRejected', seq: completed.seq + 2 });

    // ErasePlan on an archived (cancelled) plan erases every one of its events and its archive record.
    const erased = await ledger.erase(dropped, { by: 'dpo' });
    expect(erased.erasure).toMatchObject({ statusAtErasure: 'cancelled', forced: false });
    expect(await ledger.planEvents(dropped)).toEqual([]);
    expect(c.planState(dropped)).toBeUndefined();
    expect((await lastOf(names.archive)).get(dropped)?.value).toBeNull();
    expect((await (await restorePartition({ ...base, archive: 'defer' })).archived.load()).erased).toEqual(new Set([dropped]));
    await ledger.approve(waiting, proposed.digest, { by: 'ops' });
    await ledger.waitFor(waiting, 'completed', { timeoutMs: 30_000 });
  });

  it("a new owner fences above every token of the partition even when all earlier plans are dormant", async () => {
    const config = testConfig({ partitions: 1 });
    const { ledger, executor: a } = await ledgerWithExecutor({ config, executorId: 'fence-A', logger: testLogger });
    const { planId: first } = await ledger.createPlan({ goal: 'first owner', mode: 'execute', items: chainOfItems(2) });
    const firstState: PlanState = await ledger.waitFor(first, 'completed', { timeoutMs: 30_000 });
    const before = Math.max(...tokensOf(await chainOf(ledger, first)));
    await a.stop();
    await snapshotEverything(config, new Map([[first, stateDigest(firstState)]]));

    const kafka = testKafka(config);
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
    const r = await restoreOwnedPartition({ kafka, codec, config, partition: 0, logger: testLogger });
    expect(r.plans.size).toBe(0); // nothing live: the only plan is archived
    expect([...(await r.archived!.load()).offsets.keys()]).toEqual([first]);
    expect(r.maxFencingToken).toBe(before);

    await executor(config, 'fence-B');
    const { planId: second } = await ledger.createPlan({ goal: 'second owner', mode: 'execute', items: chainOfItems(2) });
    await ledger.waitFor(second, 'completed', { timeoutMs: 30_000 });
    const after = tokensOf(await chainOf(ledger, second));
    expect(after.length).toBe(2);
    for (const t of after) expect(t).toBeGreaterThan(before);
  });
});


