// A second executor joins the group: a partition that stays with the first keeps its owner (no second
// restore, its running tool goes on, whether the rebalance revoked and returned it or left it alone); a
// partition that moves is restored by the new owner, which re-invokes in-flight items with the same key.
// A tool that never answers and ignores its abort holds no hand-over up. A fence from no owner (a past
// owner's late initTransactions) does not leave the partition unserved, and an executor whose group
// member is fenced for good (another member under its id) joins again and serves.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { topicNames } from '../../src/config.js';
import { partitionFor } from '../../src/kafka/index.js';
import { startExecutor } from '../../executor/index.js';
import { partitionTransactionalIds } from '../../executor/partition-owner.js';
import { defineTool } from '../../src/tools.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { tools } from '../fixtures/tools.js';
import { closeAfter, testConfig, testKafka, waitFor } from '../support/helpers.js';

/** The owner's own line (restorePartition logs one of the same name under component 'restore'). */
const ownerRestored = (l: Record<string, unknown>) => l.msg === 'partition restored' && l.component === 'partition-owner';

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
  process.env.EFFECTS_URL = effects.url;
});
afterAll(() => effects.stop());

describe('rebalance', () => {
  it('keeps the partitions that come back (no second restore, running tools continue); moved ones resume with the same key', async () => {
    const config = testConfig({ partitions: 4 });
    const a = capturingLogger();
    const execA = await startExecutor({ tools, config, logger: a.logger, executorId: 'reb-A', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execA.stop());
    await execA.started;
    await waitFor(() => execA.ownedPartitions().length === 4);
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());

    // One plan per partition, each with an item whose effect call is held for 3 s.
    const planIds: string[] = [];
    for (let i = 0; planIds.length < 4; i++) {
      const id = `reb-plan-${i}`;
      if (planIds.some((p) => partitionFor(p, 4) === partitionFor(id, 4))) continue;
      planIds.push(id);
    }
    for (const planId of planIds) {
      await ledger.createPlan({ planId, goal: 'rebalance', mode: 'execute', items: [{ id: 'slow', title: 'slow', why: 'spans the rebalance', tool: 'effect', input: { holdMs: 3000 } }] });
    }
    await waitFor(() => planIds.every((p) => effects.calls.some((c) => c.key === `${p}/slow/1`)), { message: 'all four slow calls started' });
    const restoredBefore = a.lines.filter(ownerRestored).map((l) => l.partition);
    expect(restoredBefore.sort()).toEqual([0, 1, 2, 3]);

    const b = capturingLogger();
    const execB = await startExecutor({ tools, config, logger: b.logger, executorId: 'reb-B', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execB.stop());
    await waitFor(() => execA.ownedPartitions().length + execB.ownedPartitions().length === 4 && execB.ownedPartitions().length > 0, { message: 'partitions split' });
    const kept = execA.ownedPartitions();
    const moved = execB.ownedPartitions();
    expect(kept.length).toBeGreaterThan(0);

    for (const planId of planIds) await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    // Kept partitions were restored exactly once by A; moved ones once by B.
    const restoredByA = a.lines.filter(ownerRestored).map((l) => l.partition as number);
    for (const p of kept) expect(restoredByA.filter((x) => x === p)).toHaveLength(1);
    const restoredByB = b.lines.filter(ownerRestored).map((l) => l.partition as number);
    expect(restoredByB.sort()).toEqual([...moved].sort());

    for (const planId of planIds) {
      const calls = effects.calls.filter((c) => c.key.startsWith(`${planId}/`));
      expect(new Set(calls.map((c) => c.key))).toEqual(new Set([`${planId}/slow/1`])); // one key, one effect
      const plan = await ledger.getPlan(planId);
      const result = plan!.items.slow!.attempts[0]!;
      if (kept.includes(partitionFor(planId, 4))) {
        expect(calls).toHaveLength(1); // the running tool was not thrown away
        expect(result.executorId).toBe('reb-A');
      } else {
        expect(calls.map((c) => c.recovering)).toEqual([false, true]); // re-invoked by the new owner, same key
      }
    }
    expect([...effects.effects.keys()].filter((k) => planIds.some((p) => k.startsWith(`${p}/`)))).toHaveLength(4);
  });

  it('a hand-over while a tool ignores its abort and never answers: the partition moves, its new owner completes the plan, and both partitions serve new plans', async () => {
    const config = testConfig({ partitions: 2 });
    // The first call of each plan's item never answers and ignores ctx.signal, until the test ends; calls
    // made once `hang` is off answer at once.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    onTestFinished(() => release());
    let hang = true;
    const calls: Array<{ planId: string; recovering: boolean }> = [];
    const stuck = defineTool({
      name: 'stuck',
      run: async (_input: unknown, ctx) => {
        calls.push({ planId: ctx.planId, recovering: ctx.recovering });
        if (hang) await released;
        return { answered: true };
      },
    });
    const a = capturingLogger();
    const execA = await startExecutor({ tools: [...tools, stuck], config, logger: a.logger, executorId: 'stuck-A', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execA.stop());
    await execA.started;
    await waitFor(() => execA.ownedPartitions().length === 2, { message: 'A owns both partitions' });
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const planOn = (p: number, tag: string) => {
      for (let i = 0; ; i++) if (partitionFor(`stuck-${tag}-${i}`, 2) === p) return `stuck-${tag}-${i}`;
    };
    const stuckPlans = [planOn(0, 'hung'), planOn(1, 'hung')];
    for (const planId of stuckPlans) await ledger.createPlan({ planId, goal: 'hand-over', mode: 'execute', items: [{ id: 'hung', title: 'hung', why: 'a tool that never answers', tool: 'stuck', input: {} }] });
    await waitFor(() => calls.length === 2, { message: 'both first calls hang' });
    hang = false;

    const b = capturingLogger();
    const execB = await startExecutor({ tools: [...tools, stuck], config, logger: b.logger, executorId: 'stuck-B', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execB.stop());
    await waitFor(() => execA.ownedPartitions().length === 1 && execB.ownedPartitions().length === 1, { timeoutMs: 30_000, message: 'one partition each' });
    const [moved] = execB.ownedPartitions();
    const [kept] = execA.ownedPartitions();

    // The moved plan: A's owner let go (its tool aborted, still unanswered), B invoked it again and completed it.
    await ledger.waitFor(stuckPlans[moved!]!, 'completed', { timeoutMs: 60_000 });
    expect(calls.filter((c) => c.planId === stuckPlans[moved!]).map((c) => c.recovering)).toEqual([false, true]);
    expect(a.lines.filter((l) => l.component === 'partition-owner' && l.partition === moved && l.msg === 'partition released').map((l) => l.reason)).toEqual(['revoked']);
    expect(a.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('revoked partitions handed back before'))).toEqual([]);
    // Both partitions serve new plans, the kept one beside its call that still hangs.
    for (const p of [0, 1]) {
      const { planId } = await ledger.createPlan({ planId: planOn(p, 'after'), goal: 'after the hand-over', mode: 'execute', items: [{ id: 'one', title: 'one', why: 'served', tool: 'noop', input: { p } }] });
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    }
    expect((await ledger.getPlan(stuckPlans[kept!]!))!.status).toBe('running');
    expect(calls.filter((c) => c.planId === stuckPlans[kept!])).toHaveLength(1);
  }, 120_000);

  it('a fence from no owner (a past owner\'s initTransactions that ended late) does not orphan the partition: the executor takes it again and decides its commands', async () => {
    const config = testConfig({ partitions: 2 });
    const a = capturingLogger();
    const exec = await startExecutor({ tools, config, logger: a.logger, executorId: 'refence-A', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => exec.stop());
    await exec.started;
    await waitFor(() => exec.ownedPartitions().length === 2);
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const planOn = (p: number, tag: string) => {
      for (let i = 0; ; i++) if (partitionFor(`refence-${tag}-${i}`, 2) === p) return `refence-${tag}-${i}`;
    };

    // Writers of partition 0's transactional ids that no group member owns start after the owner's: the
    // owner's writers are fenced, and the group never moves the partition (nobody else is in it).
    const kafka = testKafka(config);
    for (const id of partitionTransactionalIds(config.topicPrefix, 0)) {
      const stranger = closeAfter(kafka.fencedWriter(id));
      await stranger.connect();
      await stranger.disconnect();
    }

    // The owner meets the fence on its next transaction (this plan's CreatePlan), stops, and once a
    // revocation would have come (session timeout + heartbeat), takes partition 0 again and decides it.
    const fencedPlan = planOn(0, 'fenced');
    const other = planOn(1, 'other');
    const item = (id: string) => ({ planId: id, goal: 'refence', mode: 'execute' as const, items: [{ id: 'one', title: 'one', why: 'an effect after the fence', tool: 'effect', input: {} }] });
    const [created] = await Promise.all([ledger.createPlan(item(fencedPlan), { timeoutMs: 60_000 }), ledger.createPlan(item(other), { timeoutMs: 60_000 })]);
    expect(created.planId).toBe(fencedPlan);
    await ledger.waitFor(fencedPlan, 'completed', { timeoutMs: 60_000 });
    await ledger.waitFor(other, 'completed', { timeoutMs: 60_000 });

    const p0 = a.lines.filter((l) => l.partition === 0 && l.component === 'partition-owner');
    expect(p0.filter((l) => l.msg === 'partition released').map((l) => l.reason)).toEqual(['fenced']);
    const restored = p0.filter((l) => l.msg === 'partition restored');
    expect(restored).toHaveLength(2);
    expect(a.lines.filter((l) => l.msg === 'fenced, yet the group still assigns the partition here: taking it again').map((l) => l.partition)).toEqual([0]);
    // Partition 1 was never fenced or restored again; each plan's effect ran once.
    expect(a.lines.filter((l) => l.partition === 1 && l.component === 'partition-owner' && l.msg === 'partition restored')).toHaveLength(1);
    for (const id of [fencedPlan, other]) expect(effects.calls.filter((c) => c.key.startsWith(`${id}/`)).map((c) => c.key)).toEqual([`${id}/one/1`]);
  }, 150_000);

  it('an executor whose group member is fenced for good joins the group again under its id and serves its partitions', async () => {
    const config = testConfig({ partitions: 2 });
    const a = capturingLogger();
    const exec = await startExecutor({ tools, config, logger: a.logger, executorId: 'fence-A', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => exec.stop());
    await exec.started;
    await waitFor(() => exec.ownedPartitions().length === 2, { message: 'the executor owns both partitions' });

    // A member joins under the executor's id: the coordinator fences the executor's member, and librdkafka
    // makes that fatal (as after its own rejoin when its session lapsed behind a dead coordinator).
    const kafka = testKafka(config);
    const intruder = { revoked: [] as Array<{ partitions: number[]; lost: boolean }>, fenced: 0 };
    const member = await kafka.join({
      groupId: topicNames(config.topicPrefix).executorsGroup,
      topic: topicNames(config.topicPrefix).commands,
      instanceId: 'fence-A',
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 500,
      rebalanceTimeoutMs: 10_000,
      onAssigned: () => {},
      onRevoked: (partitions, lost) => void intruder.revoked.push({ partitions: [...partitions].sort(), lost }),
      onFenced: () => void intruder.fenced++,
      onRecords: async () => undefined,
    });
    closeAfter({ disconnect: () => member.close() });
    await waitFor(() => a.lines.some((l) => l.msg === 'group member fenced for good; joining the group again under the same id'), { timeoutMs: 30_000, message: 'the executor saw its member fenced' });
    expect(exec.ownedPartitions()).toEqual([]);

    // It joins again after 1 s, fencing the intruder in turn, and owns both partitions again.
    await waitFor(() => intruder.fenced === 1, { timeoutMs: 30_000, message: 'the intruder fenced by the executor joining again' });
    await waitFor(() => exec.ownedPartitions().length === 2, { timeoutMs: 30_000, message: 'the executor owns both partitions again' });
    expect(a.lines.filter((l) => l.msg === 'joined the group again')).toHaveLength(1);
    expect(await exec.metrics()).toContain('plan_ledger_executor_group_fences_total 1');

    // And it serves them: a plan on each partition completes, each effect once.
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const ids = [0, 1].map((p) => {
      for (let i = 0; ; i++) if (partitionFor(`refenced-${p}-${i}`, 2) === p) return `refenced-${p}-${i}`;
    });
    for (const planId of ids) await ledger.createPlan({ planId, goal: 'after a fence', mode: 'execute', items: [{ id: 'one', title: 'one', why: 'served after joining again', tool: 'effect', input: {} }] }, { timeoutMs: 60_000 });
    for (const planId of ids) await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    for (const planId of ids) expect(effects.calls.filter((c) => c.key.startsWith(`${planId}/`)).map((c) => c.key)).toEqual([`${planId}/one/1`]);
  }, 150_000);

  /**
   * Executor A's first fence of each partition is held until `letGo(partition)` (a transaction coordinator
   * that is loading); B joins, takes a partition mid-fence (A's revocation waits its 8 s, then hands it on),
   * and leaves, so the partition comes back to A while A's first owner of it is still fencing.
   */
  async function backMidFence(tag: string) {
    const config = testConfig({ partitions: 2 });
    const fences: Array<{ partition: number; began: number; ended?: number }> = [];
    const gates = new Map<number, () => void>();
    const held = new Map([0, 1].map((p) => [p, new Promise<void>((resolve) => gates.set(p, resolve))]));
    const letGo = (p: number) => gates.get(p)!();
    onTestFinished(() => [0, 1].forEach(letGo));
    const a = capturingLogger();
    const execA = await startExecutor({
      tools,
      config,
      logger: a.logger,
      executorId: `${tag}-A`,
      sessionTimeoutMs: 6000,
      heartbeatIntervalMs: 500,
      beforeFence: async (partition) => {
        const fence: { partition: number; began: number; ended?: number } = { partition, began: Date.now() };
        fences.push(fence);
        if (fences.filter((f) => f.partition === partition).length === 1) await held.get(partition);
        fence.ended = Date.now();
      },
    });
    onTestFinished(() => execA.stop());
    await waitFor(() => fences.length === 2, { timeoutMs: 30_000, message: 'A began fencing both partitions' });
    const execB = await startExecutor({ tools, config, executorId: `${tag}-B`, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    await waitFor(() => execB.ownedPartitions().length === 1, { timeoutMs: 30_000, message: 'B owns a partition' });
    const moved = execB.ownedPartitions()[0]!;
    const kept = 1 - moved;
    await execB.stop();
    const addedTo = (p: number) => a.lines.filter((l) => l.msg === 'assignment' && Array.isArray(l.added) && (l.added as number[]).includes(p)).length;
    await waitFor(() => addedTo(moved) === 2, { timeoutMs: 30_000, message: 'the partition is back at A' });
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    /** A new plan on partition `p`, completed. */
    const serves = async (p: number) => {
      let planId = '';
      for (let i = 0; !planId; i++) if (partitionFor(`${tag}-${i}`, 2) === p) planId = `${tag}-${i}`;
      await ledger.createPlan({ planId, goal: 'served', mode: 'execute', items: [{ id: 'one', title: 'one', why: 'served', tool: 'effect', input: {} }] });
      return (await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 })).status;
    };
    const fencesOf = (p: number) => fences.filter((f) => f.partition === p);
    return { execA, a, moved, kept, letGo, fencesOf, serves };
  }

  it('a partition that comes back while its last owner here is still fencing waits for that fence to end, so the new owner is never fenced by its own past', async () => {
    const { execA, a, moved, kept, letGo, fencesOf, serves } = await backMidFence('self');
    // Before the change, A's new owner fenced at once and restored: let the held fence go only after that,
    // when it lands on top of the new owner's. Now the new owner waits for the held one, which is let go.
    if (await waitFor(() => fencesOf(moved).length >= 2, { timeoutMs: 5000 }).then(() => true, () => false)) {
      await waitFor(() => a.lines.some((l) => ownerRestored(l) && l.partition === moved), { timeoutMs: 30_000, message: "A's new owner restored" });
    }
    letGo(moved);
    letGo(kept);
    await waitFor(() => execA.ownedPartitions().length === 2 && a.lines.filter(ownerRestored).length === 2, { timeoutMs: 60_000, message: 'A serves both partitions' });

    const [first, second] = fencesOf(moved);
    expect(second!.began).toBeGreaterThanOrEqual(first!.ended!);
    // A serves both partitions, and no owner of A was fenced.
    for (const p of [0, 1]) expect(await serves(p)).toBe('completed');
    expect(a.lines.filter((l) => l.component === 'partition-owner' && l.msg === 'partition released').map((l) => l.reason)).toEqual(['revoked']);
    expect(a.lines.filter((l) => l.msg === 'fenced, yet the group still assigns the partition here: taking it again')).toEqual([]);
  }, 150_000);

  it('a predecessor whose fence never ends holds the partition back 8 s at most: the new owner fences anyway, serves it, and the other partition serves throughout', async () => {
    const { execA, a, moved, kept, letGo, fencesOf, serves } = await backMidFence('never');
    letGo(kept); // the kept partition's fence ends; the moved one's first fence never does (until the test ends)
    const back = Date.now();
    expect(await serves(kept)).toBe('completed');
    await waitFor(() => fencesOf(moved).length === 2, { timeoutMs: 30_000, message: "A's new owner fences the moved partition" });
    // It waited the 8 s bound for the fence that never ended, said so, and then serves the partition.
    expect(fencesOf(moved)[1]!.began - back).toBeGreaterThanOrEqual(7_000);
    expect(fencesOf(moved)[0]!.ended).toBeUndefined();
    expect(a.lines.filter((l) => l.msg === "the partition's previous owner here is still fencing; fencing anyway" && l.partition === moved)).toHaveLength(1);
    expect(await serves(moved)).toBe('completed');
    expect(execA.ownedPartitions()).toEqual([0, 1]);
    // The first owner of the moved partition is still letting go (its fence never ended): no owner was released, none fenced.
    expect(a.lines.filter((l) => l.component === 'partition-owner' && l.msg === 'partition released').map((l) => l.reason)).toEqual([]);
  }, 150_000);
});
