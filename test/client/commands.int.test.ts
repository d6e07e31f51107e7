// The ledger client's command path over the real broker and registry with in-process executors: a
// command's outcome is exactly the events its owner's decision appended (however many, however many
// decisions share the transaction), an oversized command fails before anything is sent, and waitFor
// follows the live tail across a rebalance of executors.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { isLedgerError, type LedgerError } from '../../src/errors.js';
import type { ItemInput } from '../../src/plan-input.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { tools } from '../fixtures/tools.js';
import { createCodec } from '../../src/codec/index.js';
import { newReadStats, partitionFor, type LedgerAdmin } from '../../src/kafka/index.js';
import { watermarkMessage } from '../../src/projection/index.js';
import { testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';

let config: LedgerConfig;
let admin: LedgerAdmin;
let executor: ExecutorHandle;
let ledger: Ledger;

const noopItems = (n: number, prefix = 'i'): ItemInput[] => Array.from({ length: n }, (_, i) => ({ id: `${prefix}${i}`, title: `item ${i}`, why: 'one of many', tool: 'noop', input: { i } }));

async function failure(p: Promise<unknown>): Promise<LedgerError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(isLedgerError(e), String(e)).toBe(true);
  return e as LedgerError;
}

async function commandsEnd(): Promise<number> {
  const o = await admin.fetchTopicOffsets(topicNames(config.topicPrefix).commands);
  return o.reduce((n, p) => n + Number(p.high), 0);
}

beforeAll(async () => {
  config = testConfig();
  admin = testKafka(config).admin();
  await admin.connect();
  executor = await startExecutor({ tools, config, logger: testLogger, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, executorId: 'cmd-exec' });
  ledger = await connectLedger(config, { logger: testLogger });
  await executor.started;
}, 60_000);

afterAll(async () => {
  await ledger?.close();
  await executor?.stop();
  await admin?.disconnect();
});

describe('a command outcome is exact', () => {
  it('createPlan with 800 items returns its 801 events: PlanCreated then every ItemAdded, seq 1..801', async () => {
    const out = await ledger.createPlan({ planId: 'big-propose', goal: 'many items', mode: 'propose', items: noopItems(800) });
    expect(out.events).toHaveLength(801);
    expect(out.events[0]!.type).toBe('PlanCreated');
    expect(out.events.slice(1).every((e) => e.type === 'ItemAdded')).toBe(true);
    expect(out.events.map((e) => e.seq)).toEqual(Array.from({ length: 801 }, (_, i) => i + 1));
    expect(new Set(out.events.map((e) => e.causationId))).toEqual(new Set([out.commandId]));
    const plan = await ledger.getPlan('big-propose');
    expect(plan?.seq).toBe(801);
    expect(out.digest).toBe(plan!.digest);
  });

  it('an execute-mode createPlan returns its own events only, not the intents its owner appends right after', async () => {
    const out = await ledger.createPlan({ planId: 'big-execute', goal: 'run them', mode: 'execute', items: noopItems(300) });
    expect(out.events).toHaveLength(301);
    expect(out.events.filter((e) => e.type === 'ItemAdded')).toHaveLength(300);
    expect(out.events.some((e) => e.type === 'IntentRecorded')).toBe(false);
    const done = await ledger.waitFor('big-execute', 'completed', { timeoutMs: 120_000 });
    expect(Object.values(done.items).filter((i) => i.status === 'completed')).toHaveLength(300);
  });

  it('twelve concurrent addItems on one plan: each outcome is exactly its own 25 ItemAdded', async () => {
    await ledger.createPlan({ planId: 'grown', goal: 'grows', mode: 'propose' });
    const outs = await Promise.all(Array.from({ length: 12 }, (_, b) => ledger.addItems('grown', noopItems(25, `b${b}-`))));
    for (const [b, out] of outs.entries()) {
      expect(out.events).toHaveLength(25);
      expect(out.events.every((e) => e.type === 'ItemAdded' && e.causationId === out.commandId)).toBe(true);
      expect(out.events.map((e) => (e.type === 'ItemAdded' ? e.data.item.id : ''))).toEqual(Array.from({ length: 25 }, (_, i) => `b${b}-${i}`));
    }
    const seqs = outs.flatMap((o) => o.events.map((e) => e.seq)).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 300 }, (_, i) => i + 2)); // after PlanCreated, no gap, no overlap
    expect((await ledger.getPlan('grown'))?.itemOrder).toHaveLength(300);
  });

  it('a rejected command throws REJECTED with the rejection code; its one CommandRejected is the outcome', async () => {
    await ledger.createPlan({ planId: 'to-approve', goal: 'approve me', mode: 'propose', items: noopItems(2) });
    await ledger.propose('to-approve');
    const e = await failure(ledger.approve('to-approve', 'not-the-digest'));
    expect(e.code).toBe('REJECTED');
    expect(e.details.rejection).toBe('STALE_DIGEST');
    const events = (await ledger.planEvents('to-approve')).map((r) => r.event.type);
    expect(events.filter((t) => t === 'CommandRejected')).toHaveLength(1);
  });
});

describe('waitFor after createPlan', () => {
  it('reads nothing from the log: the client followed its plan on the tail from the first event; the state equals a read', async () => {
    const stats = newReadStats();
    const fresh = await connectLedger(config, { logger: testLogger, readStats: stats });
    onTestFinished(() => fresh.close());
    const { planId } = await fresh.createPlan({ goal: 'followed', mode: 'execute', items: noopItems(12) });
    const readsBefore = stats.reads;
    const done = await fresh.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(stats.reads - readsBefore).toBe(0);
    expect(Object.values(done.items).map((i) => i.status)).toEqual(Array(12).fill('completed'));
    const read = await fresh.getPlan(planId);
    expect(stats.reads - readsBefore).toBeGreaterThan(0); // getPlan does read: the count above could have moved
    expect(done.digest).toBe(read!.digest);
    expect(done.seq).toBe(read!.seq);
    // Taken over by the first waitFor: a second one reads the plan from the log, with the same answer.
    const again = await fresh.waitFor(planId, 'completed');
    expect(again.digest).toBe(read!.digest);
  });
});

describe('waitFor after createPlan of a plan too large to follow', () => {
  it('a plan of 1,200 items (past the 1,000 a client follows) is read from the log, with the same answer', async () => {
    const stats = newReadStats();
    const fresh = await connectLedger(config, { logger: testLogger, readStats: stats });
    onTestFinished(() => fresh.close());
    const { planId } = await fresh.createPlan({ goal: 'too large to follow', mode: 'execute', items: noopItems(1200) });
    const readsBefore = stats.reads;
    const done = await fresh.waitFor(planId, 'completed', { timeoutMs: 120_000 });
    expect(stats.reads - readsBefore).toBeGreaterThan(0);
    expect(Object.values(done.items).filter((i) => i.status === 'completed')).toHaveLength(1200);
    expect(done.digest).toBe((await fresh.getPlan(planId))!.digest);
  });
});

describe('the client index', () => {
  it('reads only the partitions a read asks for: a getPlan reads its plan\'s partition of the index topics, listPlans all', async () => {
    // A watermark before the first event in every partition (it vouches for nothing: reads start at offset 0).
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
    const writer = testKafka(config).writer();
    await writer.connect();
    onTestFinished(() => writer.disconnect());
    const topics = topicNames(config.topicPrefix);
    await writer.send(topics.snapshots, [0, 1, 2].map((p) => watermarkMessage(codec, p, '-1', 0, Date.now())));

    const stats = newReadStats();
    const fresh = await connectLedger(config, { logger: testLogger, readStats: stats });
    onTestFinished(() => fresh.close());
    const plan = await fresh.getPlan('big-propose');
    expect(plan?.seq).toBe(801);
    const p = partitionFor('big-propose', config.partitions);
    const indexedPartitions = () => new Set(Object.keys(stats.indexed ?? {}).map((k) => Number(k.split('/').at(-1))));
    expect(stats.indexed?.[`${topics.snapshots}/${p}`]).toBe(1);
    expect(indexedPartitions()).toEqual(new Set([p]));
    const page = await fresh.listPlans({ limit: 500 });
    expect(page.plans.map((x) => x.planId)).toContain('big-propose');
    expect(indexedPartitions()).toEqual(new Set([0, 1, 2]));
  });
});

describe('a command too large for the broker', () => {
  // A large input is no failure: it goes by reference (test/executor/never-wedge.int.test.ts). A field that
  // is not a payload (a goal, a why) has no such way out.
  it('createPlan with a 3 MiB goal is PAYLOAD_TOO_LARGE naming the field and its size, and nothing is sent', async () => {
    const before = await commandsEnd();
    const big = 'x'.repeat(3 * 1024 * 1024);
    const e = await failure(ledger.createPlan({ planId: 'too-big', goal: big, mode: 'execute', items: [{ id: 'small', title: 's', why: 's', tool: 'noop' }] }));
    expect(e.code).toBe('PAYLOAD_TOO_LARGE');
    expect(e.details.field).toBe('goal');
    expect(e.details.bytes).toBe(big.length);
    expect(e.details.limit).toBeGreaterThan(0);
    expect(e.details.size as number).toBeGreaterThan(e.details.limit as number);
    expect(e.message).toContain('goal');
    expect(e.message).toContain(String(e.details.bytes));
    expect(await commandsEnd()).toBe(before);
    expect(await ledger.getPlan('too-big')).toBeUndefined();
  });

  it('addItems with a 3 MiB why names items[0].why; a command under the limit still goes through', async () => {
    await ledger.createPlan({ planId: 'grows-big', goal: 'g', mode: 'propose' });
    const before = await commandsEnd();
    const e = await failure(ledger.addItems('grows-big', [{ id: 'w', title: 'w', why: 'y'.repeat(3 * 1024 * 1024), tool: 'noop' }]));
    expect(e.code).toBe('PAYLOAD_TOO_LARGE');
    expect(e.details.field).toBe('items[0].why');
    expect(e.details.bytes).toBe(3 * 1024 * 1024);
    expect(await commandsEnd()).toBe(before);
    const ok = await ledger.addItems('grows-big', [{ id: 'w', title: 'w', why: 'y'.repeat(100 * 1024), tool: 'noop' }]);
    expect(ok.events.map((ev) => ev.type)).toEqual(['ItemAdded']);
  });
});

describe('waitFor follows the live tail', () => {
  it('across a rebalance of executors: the plan started under one executor completes under the next', async () => {
    const effects = await new EffectsService().start();
    onTestFinished(() => effects.stop());
    process.env.EFFECTS_URL = effects.url;
    const cfg = testConfig({ partitions: 2 });
    const execA = await startExecutor({ tools, config: cfg, logger: testLogger, executorId: 'wait-A', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execA.stop());
    await execA.started;
    const client = await connectLedger(cfg, { logger: testLogger });
    onTestFinished(() => client.close());
    const chain: ItemInput[] = Array.from({ length: 4 }, (_, i) => ({ id: `s${i}`, title: `step ${i}`, why: 'a chain', tool: 'effect', input: { holdMs: 800 }, ...(i ? { dependsOn: [`s${i - 1}`] } : {}) }));
    await client.createPlan({ planId: 'moving', goal: 'survive a rebalance', mode: 'execute', items: chain });
    const completed = client.waitFor('moving', 'completed', { timeoutMs: 120_000 });
    const firstRunning = client.waitFor('moving', (s) => s.items.s0?.status === 'in_progress' || s.items.s0?.status === 'completed', { timeoutMs: 60_000 });
    await firstRunning;

    const execB = await startExecutor({ tools, config: cfg, logger: testLogger, executorId: 'wait-B', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execB.stop());
    await waitFor(() => execB.ownedPartitions().length > 0, { message: 'B owns a partition' });
    await execA.stop(); // every partition moves to B
    await waitFor(() => execB.ownedPartitions().length === 2, { message: 'B owns both partitions' });

    const done = await completed;
    expect(done.status).toBe('completed');
    expect(done.itemOrder.every((id) => done.items[id]!.status === 'completed')).toBe(true);
    const events = await client.planEvents('moving');
    expect(done.seq).toBe(events.length); // the state waitFor resolved with is the log's, event for event
    expect(events.at(-1)!.event.type).toBe('PlanCompleted');
    // Both executors wrote to the plan: the wait spanned the hand-over.
    expect(events.some((r) => r.event.type === 'IntentRecorded' && r.event.actor === 'wait-A')).toBe(true);
    expect(events.some((r) => r.event.type === 'ItemCompleted' && r.event.actor === 'wait-B')).toBe(true);
    // Each step's effect once per key (a step interrupted by the rebalance is invoked again with its key).
    for (const id of done.itemOrder) expect(new Set(effects.calls.filter((c) => c.itemId === id).map((c) => c.key)).size).toBe(1);
  });
});
