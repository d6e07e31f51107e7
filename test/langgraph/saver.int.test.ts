// The ledger's LangGraph saver beyond LangGraph's own suite, on the real broker and registry with an
// in-process executor and projector: what a put becomes in the ledger (events in the plan's chain that
// audit and verify cover, large values by reference), what deleteThread leaves (the erasure record), and
// bad input (issue 32, part 4) — a checkpoint or write past the payload ceiling, an empty, huge or
// control-character thread_id, a metadata filter of the wrong type, two savers putting one thread at once —
// each a coded error or a recorded outcome, with the ledger serving another thread afterwards — and
// LangGraph's time travel onto a new thread as the ledger's fork, with a real StateGraph.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { emptyCheckpoint, uuid6, type Checkpoint, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { Annotation, START, StateGraph } from '@langchain/langgraph';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger, newReadStats, type Ledger, type ReadStats } from '../../src/client/index.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { auditTopic } from '../../src/kafka/index.js';
import { isLedgerError, type LedgerError } from '../../src/errors.js';
import { CHECKPOINT_TOOL, LedgerSaver, MAX_KEY_BYTES, WRITES_TOOL } from '../../src/langgraph/index.js';
import { parseErasureRecord } from '../../src/audit/erasure-record.js';
import { readAll, testConfig, testKafka, testLogger } from '../support/helpers.js';

let config: LedgerConfig;
let executor: ExecutorHandle;
let projector: ProjectorHandle;
let ledger: Ledger;
let stats: ReadStats;

beforeAll(async () => {
  config = testConfig({ partitions: 2 });
  stats = newReadStats();
  executor = await startExecutor({ tools: [], config, logger: testLogger, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, executorId: 'lg-saver-exec', maxItems: MAX_ITEMS });
  [ledger, projector] = await Promise.all([
    connectLedger(config, { logger: testLogger, readStats: stats }),
    startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 100, defaultMetrics: false }),
  ]);
  await executor.started;
}, 120_000);

afterAll(async () => {
  await ledger?.close();
  await projector?.stop();
  await executor?.stop();
});

/** The executor's bound on items per plan: puts and putWrites per thread. */
const MAX_ITEMS = 60;
const scope = () => `s-${randomBytes(4).toString('hex')}`;
const meta = (step: number, source: 'input' | 'loop' = 'loop') => ({ source, step, parents: {} });

function checkpoint(values: Record<string, unknown>, version: number): Checkpoint {
  const c = emptyCheckpoint();
  return { ...c, id: uuid6(-1), channel_values: values, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, version])) };
}

async function failure(p: Promise<unknown>): Promise<LedgerError> {
  const e = await p.then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(isLedgerError(e), String(e)).toBe(true);
  return e as LedgerError;
}

async function all<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}

/** A put and a getTuple on a fresh thread: the ledger still serves. */
async function stillServes(saver: LedgerSaver): Promise<void> {
  const thread = `after-${randomBytes(3).toString('hex')}`;
  const cp = checkpoint({ ok: true }, 1);
  const cfg = await saver.put({ configurable: { thread_id: thread } }, cp, meta(0), { ok: 1 });
  expect((await saver.getTuple(cfg))?.checkpoint.channel_values).toEqual({ ok: true });
}

describe('a thread in the ledger', () => {
  it('each put and putWrites is one ItemAdded in the thread plan, in order, covered by audit and verify', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope(), by: 'graph-1' });
    let cfg = { configurable: { thread_id: 'orders-42', checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
    const ids: string[] = [];
    for (let step = 0; step < 3; step++) {
      const cp = checkpoint({ messages: [`m${step}`], count: step }, step + 1);
      ids.push(cp.id);
      cfg = (await saver.put(cfg, cp, meta(step), step === 0 ? { messages: 1, count: 1 } : { count: step + 1, messages: step + 1 })) as typeof cfg;
      await saver.putWrites(cfg, [['messages', `w${step}`]], `task-${step}`);
    }
    const planId = saver.planIdOf('orders-42');
    const { rows } = await ledger.audit(planId);
    // PlanCreated (the first put's CreatePlan) + one ItemAdded per put and putWrites.
    expect(rows.map((r) => r.type)).toEqual(['PlanCreated', ...Array<string>(6).fill('ItemAdded')]);
    expect(rows.every((r) => r.actor === 'graph-1')).toBe(true);
    const plan = (await ledger.getPlan(planId))!;
    expect(plan.status).toBe('draft');
    expect(plan.labels).toMatchObject({ langgraph: 'thread', 'langgraph-scope': saver.scope });
    expect(plan.itemOrder.map((i) => plan.items[i]!.tool)).toEqual([CHECKPOINT_TOOL, WRITES_TOOL, CHECKPOINT_TOOL, WRITES_TOOL, CHECKPOINT_TOOL, WRITES_TOOL]);
    const v = await ledger.verify(planId);
    expect(v.ok, JSON.stringify(v.firstBroken)).toBe(true);
    // The latest checkpoint, its writes, its parent; the list newest first.
    const latest = (await saver.getTuple({ configurable: { thread_id: 'orders-42' } }))!;
    expect(latest.checkpoint.id).toBe(ids[2]);
    expect(latest.checkpoint.channel_values).toEqual({ messages: ['m2'], count: 2 });
    expect(latest.pendingWrites).toEqual([['task-2', 'messages', 'w2']]);
    expect(latest.parentConfig?.configurable?.checkpoint_id).toBe(ids[1]);
    expect((await all(saver.list({ configurable: { thread_id: 'orders-42' } }))).map((t) => t.checkpoint.id)).toEqual([...ids].reverse());
    // A second saver (another process's view) reads the same from the ledger alone.
    const other = new LedgerSaver({ ledger, scope: saver.scope });
    expect(await other.getTuple({ configurable: { thread_id: 'orders-42' } })).toEqual(latest);
  });

  it('a value above the inline threshold goes by reference to the blobs topic and reads back whole, once', async () => {
    // The real client, with its readPayload calls of blob references counted.
    const blobReads: string[] = [];
    const counted = new Proxy(ledger, {
      get(target, prop, receiver) {
        const value: unknown = Reflect.get(target, prop, receiver);
        if (prop !== 'readPayload' || typeof value !== 'function') return value;
        return (planId: string, json: string) => {
          if (json.startsWith('{"$blob"')) blobReads.push(json);
          return (value as Ledger['readPayload']).call(target, planId, json);
        };
      },
    });
    const saver = new LedgerSaver({ ledger: counted, scope: scope() });
    const big = 'x'.repeat(200_000);
    const cfg = await saver.put({ configurable: { thread_id: 'big' } }, checkpoint({ doc: big }, 1), meta(0), { doc: 1 });
    const plan = (await ledger.getPlan(saver.planIdOf('big'), { payloads: 'reference' }))!;
    const stored = plan.items[plan.itemOrder[0]!]!.inputJson;
    expect(stored).toMatch(/^\{"\$blob":\{"at":\d+,"bytes":\d+,"chunks":\d+,"sha256":"[0-9a-f]{64}"\}\}$/);
    expect(stored.length).toBeLessThan(200);
    expect((await saver.getTuple(cfg))?.checkpoint.channel_values).toEqual({ doc: big });
    expect(blobReads).toEqual([stored]);
    // A later read folds only the new item: the blob is not read again.
    await saver.putWrites(cfg, [['doc', 'edit']], 'task-1');
    const again = (await saver.getTuple(cfg))!;
    expect(again.pendingWrites).toEqual([['task-1', 'doc', 'edit']]);
    expect(again.checkpoint.channel_values).toEqual({ doc: big });
    expect(blobReads).toEqual([stored]);
    // A fork of the thread reads the value back whole and stores it by reference in its own plan.
    await saver.fork(cfg, { threadId: 'big-copy' });
    const copyPlan = (await ledger.getPlan(saver.planIdOf('big-copy'), { payloads: 'reference' }))!;
    expect(copyPlan.items[copyPlan.itemOrder[0]!]!.inputJson).toMatch(/^\{"\$blob":/);
    expect((await new LedgerSaver({ ledger, scope: saver.scope }).getTuple({ configurable: { thread_id: 'big-copy' } }))?.checkpoint.channel_values).toEqual({ doc: big });
  });

  it('with a master key a checkpoint is sealed: ciphertext in the log, read back whole with the key, refused without it', async () => {
    const sealed = await connectLedger(config, { logger: testLogger, masterKey: randomBytes(32) });
    try {
      const s = scope();
      const secret = `sk-live-${randomBytes(6).toString('hex')}`;
      const visible = `plain-${randomBytes(6).toString('hex')}`;
      const saver = new LedgerSaver({ ledger: sealed, scope: s });
      const cfg = await saver.put({ configurable: { thread_id: 'sealed' } }, checkpoint({ token: secret }, 1), meta(0), { token: 1 });
      await saver.putWrites(cfg, [['token', `${secret}-write`]], 'task-1');
      await new LedgerSaver({ ledger, scope: s }).put({ configurable: { thread_id: 'open' } }, checkpoint({ token: visible }, 1), meta(0), { token: 1 });
      const t = (await saver.getTuple({ configurable: { thread_id: 'sealed' } }))!;
      expect(t.checkpoint.channel_values).toEqual({ token: secret });
      expect(t.pendingWrites).toEqual([['task-1', 'token', `${secret}-write`]]);
      // The events and commands topics hold the open thread's value and none of the sealed one's.
      const names = topicNames(config.topicPrefix);
      const text = async (topic: string) => (await readAll(testKafka(config), topic)).map((r) => r.value?.toString('latin1') ?? '').join('\n');
      const [events, commands] = await Promise.all([text(names.events), text(names.commands)]);
      expect(events.includes(visible) && commands.includes(visible)).toBe(true);
      expect(events.includes(secret) || commands.includes(secret)).toBe(false);
      // A client without the key cannot read the sealed thread: a coded error, not a wrong checkpoint.
      const e = await failure(new LedgerSaver({ ledger, scope: s }).getTuple({ configurable: { thread_id: 'sealed' } }));
      expect([e.code, e.details.sealed]).toEqual(['INTEGRITY', true]);
      expect((await ledger.verify(saver.planIdOf('sealed'))).ok).toBe(true);
    } finally {
      await sealed.close();
    }
  });

  it('deleteThread erases the plan: nothing reads back, the erasure record keeps the chain head and event count', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    await saver.put({ configurable: { thread_id: 'gone' } }, checkpoint({ a: 1 }, 1), meta(0), { a: 1 });
    await saver.put({ configurable: { thread_id: 'kept' } }, checkpoint({ b: 1 }, 1), meta(0), { b: 1 });
    const planId = saver.planIdOf('gone');
    const before = (await ledger.getPlan(planId))!;
    await saver.deleteThread('gone');
    expect(await saver.getTuple({ configurable: { thread_id: 'gone' } })).toBeUndefined();
    expect(await all(saver.list({ configurable: { thread_id: 'gone' } }))).toEqual([]);
    expect((await all(saver.list({ configurable: {} }))).map((t) => t.config.configurable?.thread_id)).toEqual(['kept']);
    expect((await saver.getTuple({ configurable: { thread_id: 'kept' } }))?.checkpoint.channel_values).toEqual({ b: 1 });
    expect((await failure(ledger.audit(planId))).code).toBe('NOT_FOUND');
    // What stays: the erasure record on <prefix>.ledger-audit, with the erased history's head hash and size.
    const records = (await readAll(testKafka(config), auditTopic(config.topicPrefix))).map((r) => parseErasureRecord(r.value)).filter((r) => r?.planId === planId);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ type: 'PlanErased', planId, reason: 'LangGraph deleteThread', events: 2, lastSeq: 2, chainHead: before.lastHash, statusAtErasure: 'draft', forced: false });
    // Deleting it again, or a thread never written, changes nothing and does not throw.
    await saver.deleteThread('gone');
    await saver.deleteThread('never-written');
    // The thread can start again: a new plan under the same id, from seq 1.
    await saver.put({ configurable: { thread_id: 'gone' } }, checkpoint({ a: 2 }, 1), meta(0), { a: 1 });
    expect((await saver.getTuple({ configurable: { thread_id: 'gone' } }))?.checkpoint.channel_values).toEqual({ a: 2 });
    expect((await ledger.getPlan(planId))?.seq).toBe(2);
    expect(before.seq).toBe(2);
  });

  it('a getTuple reads the plan from its snapshot and the tail after the watermark, not the whole log', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    let cfg = { configurable: { thread_id: 'long' } } as { configurable: Record<string, unknown> };
    for (let step = 0; step < 40; step++) cfg = (await saver.put(cfg, checkpoint({ step }, step + 1), meta(step), { step: step + 1 })) as typeof cfg;
    const events = topicNames(config.topicPrefix).events;
    // Let the projector snapshot the plan and move the watermark past its events.
    const end = async () => (await executor.started, await ledger.getPlan(saver.planIdOf('long')))!.seq;
    expect(await end()).toBe(41);
    await new Promise((r) => setTimeout(r, 1500));
    const fresh = new LedgerSaver({ ledger, scope: saver.scope });
    const at = stats.records[events] ?? 0;
    expect((await fresh.getTuple({ configurable: { thread_id: 'long' } }))?.checkpoint.channel_values).toEqual({ step: 39 });
    // 41 events of this plan, and those of every other test on the partitions: a read of the snapshot
    // plus the tail reads a handful at most.
    expect((stats.records[events] ?? 0) - at).toBeLessThan(10);
  });
});

/** A real StateGraph a -> b -> c, each node appending its name; `calls` counts each node's runs. */
function threeSteps(saver: LedgerSaver) {
  const calls: Record<string, number> = { a: 0, b: 0, c: 0 };
  const State = Annotation.Root({ path: Annotation<string[]>({ reducer: (x, y) => [...x, ...y], default: () => [] }) });
  const node = (name: string) => () => {
    calls[name] = (calls[name] ?? 0) + 1;
    return { path: [name] };
  };
  const graph = new StateGraph(State).addNode('a', node('a')).addNode('b', node('b')).addNode('c', node('c')).addEdge(START, 'a').addEdge('a', 'b').addEdge('b', 'c').compile({ checkpointer: saver });
  return { graph, calls };
}

describe('time travel: a fork of a thread at a checkpoint is the ledger\'s fork', () => {
  it('a new thread from an earlier checkpoint runs the nodes after it; the source is unchanged; lineage in the ledger; both verify', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope(), by: 'graph-tt' });
    const { graph, calls } = threeSteps(saver);
    const main = { configurable: { thread_id: 'main' } };
    expect((await graph.invoke({ path: ['start'] }, { ...main, durability: 'sync' })).path).toEqual(['start', 'a', 'b', 'c']);
    expect(calls).toEqual({ a: 1, b: 1, c: 1 });
    const history = [];
    for await (const s of graph.getStateHistory(main)) history.push(s);
    // input, before a, before b, before c, the end: newest first.
    expect(history.map((s) => s.next)).toEqual([[], ['c'], ['b'], ['a'], ['__start__']]);
    const beforeB = history[2]!;
    const mainPlan = saver.planIdOf('main');
    const mainBefore = (await ledger.getPlan(mainPlan))!;
    const mainIds = (await all(saver.list(main))).map((t) => t.checkpoint.id);

    const forked = await saver.fork(beforeB.config, { threadId: 'branch' });
    expect(forked.configurable).toEqual({ thread_id: 'branch', checkpoint_ns: '', checkpoint_id: beforeB.config.configurable?.checkpoint_id });
    // The new thread's latest checkpoint is the fork point, with its state, its copied history before it.
    const branch = { configurable: { thread_id: 'branch' } };
    expect((await graph.getState(branch)).values).toEqual({ path: ['start', 'a'] });
    expect((await graph.getState(branch)).next).toEqual(['b']);
    expect((await all(saver.list(branch))).map((t) => t.checkpoint.id)).toEqual(mainIds.slice(2));
    // Continued: b and c run again on the new thread, a does not.
    expect((await graph.invoke(null, { ...branch, durability: 'sync' })).path).toEqual(['start', 'a', 'b', 'c']);
    expect(calls).toEqual({ a: 1, b: 2, c: 2 });
    const branchIds = (await all(saver.list(branch))).map((t) => t.checkpoint.id);
    expect(branchIds).toHaveLength(5);
    expect(branchIds.slice(2)).toEqual(mainIds.slice(2));
    expect(branchIds.slice(0, 2).every((id) => !mainIds.includes(id))).toBe(true);
    expect((await saver.getTuple(branch))?.config.configurable?.thread_id).toBe('branch');
    // The source thread: its plan, its checkpoints and its state as before.
    const mainAfter = (await ledger.getPlan(mainPlan))!;
    expect([mainAfter.seq, mainAfter.lastHash]).toEqual([mainBefore.seq, mainBefore.lastHash]);
    expect((await all(saver.list(main))).map((t) => t.checkpoint.id)).toEqual(mainIds);
    expect((await graph.getState(main)).values).toEqual({ path: ['start', 'a', 'b', 'c'] });
    // Lineage, through the ledger's reads: the fork point is the event that added the checkpoint's item.
    const branchPlan = (await ledger.getPlan(saver.planIdOf('branch')))!;
    const events = (await ledger.planEvents(mainPlan)).map((r) => r.event);
    const added = events.filter((e) => e.type === 'ItemAdded' && e.data.item.tool === CHECKPOINT_TOOL);
    const atB = added.find((e) => e.type === 'ItemAdded' && JSON.parse(e.data.item.inputJson).id === beforeB.config.configurable?.checkpoint_id)!;
    expect(branchPlan.forkedFrom).toEqual({ planId: mainPlan, seq: atB.seq, chainHead: atB.hash });
    expect(branchPlan.labels).toMatchObject({ langgraph: 'thread', 'langgraph-scope': saver.scope, forkedFrom: mainPlan });
    expect((await ledger.listPlans({ label: `forkedFrom:${mainPlan}` })).plans.map((p) => p.planId)).toEqual([branchPlan.planId]); // the source's forks
    const { rows } = await ledger.audit(branchPlan.planId);
    expect([rows[0]?.type, rows[0]?.outcome]).toEqual(['PlanCreated', `forked:${mainPlan}@${atB.seq}`]);
    // The copied items: the source's up to the fork point, each with the new thread's id.
    expect(branchPlan.itemOrder).toEqual(mainBefore.itemOrder.filter((id) => mainBefore.items[id]!.addedSeq <= atB.seq).concat(branchPlan.itemOrder.slice(-4)));
    expect(branchPlan.itemOrder.map((id) => (JSON.parse(branchPlan.items[id]!.inputJson) as { thread: string }).thread)).toEqual(branchPlan.itemOrder.map(() => 'branch'));
    const [vMain, vBranch] = await Promise.all([ledger.verify(mainPlan), ledger.verify(branchPlan.planId)]);
    expect(vMain.ok, JSON.stringify(vMain.firstBroken)).toBe(true);
    expect(vBranch.ok, JSON.stringify(vBranch.firstBroken)).toBe(true);
    expect(vBranch.checks.find((c) => c.name === 'lineage')).toMatchObject({ ok: true });
    // LangGraph's fork with changed state, on a new thread: fork, then updateState there, then go on.
    const edited = await saver.fork(beforeB.config, { threadId: 'edited' });
    await graph.updateState(edited, { path: ['edited'] }, 'a');
    expect((await graph.invoke(null, { configurable: { thread_id: 'edited' }, durability: 'sync' })).path).toEqual(['start', 'a', 'edited', 'b', 'c']);
    expect(calls).toEqual({ a: 1, b: 3, c: 3 });
    expect((await graph.getState(main)).values).toEqual({ path: ['start', 'a', 'b', 'c'] });
    // The threads in the scope's list.
    expect(new Set((await all(saver.list({ configurable: {} }))).map((t) => t.config.configurable?.thread_id))).toEqual(new Set(['main', 'branch', 'edited']));
  });

  it('the fork point\'s pending writes stay with the source, whether recorded before its item (durability async) or after', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    const first = await saver.put({ configurable: { thread_id: 'w' } }, checkpoint({ v: 0 }, 1), meta(0), { v: 1 });
    await saver.putWrites(first, [['v', 'of the first']], 'task-0');
    const x = checkpoint({ v: 1 }, 2);
    const atX = { configurable: { thread_id: 'w', checkpoint_ns: '', checkpoint_id: x.id } };
    await saver.putWrites(atX, [['v', 'early']], 'task-early'); // before X's own put, as async durability may
    await saver.put(first, x, meta(1), { v: 2 });
    await saver.putWrites(atX, [['v', 'late']], 'task-late');
    expect((await saver.getTuple(atX))?.pendingWrites).toEqual([['task-early', 'v', 'early'], ['task-late', 'v', 'late']]);
    await saver.fork(atX, { threadId: 'w2' });
    const copy = (await saver.getTuple({ configurable: { thread_id: 'w2' } }))!;
    expect([copy.checkpoint.id, copy.checkpoint.channel_values, copy.pendingWrites]).toEqual([x.id, { v: 1 }, []]);
    expect((await saver.getTuple({ configurable: { thread_id: 'w2', checkpoint_id: first.configurable?.checkpoint_id } }))?.pendingWrites).toEqual([['task-0', 'v', 'of the first']]);
    expect((await saver.getTuple(atX))?.pendingWrites).toHaveLength(2);
    expect((await ledger.verify(saver.planIdOf('w2'))).ok).toBe(true);
  });

  it('a fork too large for one command is PAYLOAD_TOO_LARGE with nothing created; a client that stores more by reference forks it', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    let cfg = { configurable: { thread_id: 'long' } } as { configurable: Record<string, unknown> };
    // 20 checkpoints of 60,000 characters each: every one inline (under 64 KiB), 1.2 MB together.
    for (let i = 0; i < 20; i++) cfg = (await saver.put(cfg, checkpoint({ doc: String(i).padEnd(60_000, '.') }, i + 1), meta(i), { doc: i + 1 })) as typeof cfg;
    const e = await failure(saver.fork(cfg, { threadId: 'long-copy' }));
    expect([e.code, e.details.command]).toEqual(['PAYLOAD_TOO_LARGE', 'CreatePlan']);
    expect(e.message).toMatch(/copies 20 items in one command, too large.*PLAN_LEDGER_INLINE_PAYLOAD_BYTES/);
    expect(await ledger.getPlan(saver.planIdOf('long-copy'))).toBeUndefined();
    process.env.PLAN_LEDGER_INLINE_PAYLOAD_BYTES = '4096';
    let byRef: Ledger;
    try {
      byRef = await connectLedger(config, { logger: testLogger });
    } finally {
      delete process.env.PLAN_LEDGER_INLINE_PAYLOAD_BYTES;
    }
    try {
      const other = new LedgerSaver({ ledger: byRef, scope: saver.scope });
      await other.fork(cfg, { threadId: 'long-copy' });
      expect((await saver.getTuple({ configurable: { thread_id: 'long-copy' } }))?.checkpoint.channel_values).toEqual({ doc: '19'.padEnd(60_000, '.') });
      expect((await ledger.verify(saver.planIdOf('long-copy'))).ok).toBe(true);
    } finally {
      await byRef.close();
    }
  });

  it('bad forks: a missing or deleted thread, an unknown checkpoint, a taken or bad thread id, a subgraph namespace: each a coded error, nothing created', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    const { graph } = threeSteps(saver);
    await graph.invoke({ path: [] }, { configurable: { thread_id: 'src' }, durability: 'sync' });
    await graph.invoke({ path: [] }, { configurable: { thread_id: 'other' }, durability: 'sync' });
    const src = { configurable: { thread_id: 'src' } };
    const missing = await failure(saver.fork({ configurable: { thread_id: 'never-written' } }, { threadId: 'n1' }));
    expect([missing.code, missing.details.field]).toEqual(['NOT_FOUND', 'thread_id']);
    const unknown = await failure(saver.fork({ configurable: { thread_id: 'src', checkpoint_id: uuid6(-1) } }, { threadId: 'n2' }));
    expect([unknown.code, unknown.details.field]).toEqual(['NOT_FOUND', 'checkpoint_id']);
    for (const taken of ['src', 'other']) {
      const e = await failure(saver.fork(src, { threadId: taken }));
      expect([e.code, e.details.field]).toEqual(['CONFLICT', 'threadId']);
    }
    for (const bad of ['', 'x'.repeat(MAX_KEY_BYTES + 1), 7, '__proto__'] as unknown[]) {
      const e = await failure(saver.fork(src, { threadId: bad as string }));
      expect([e.code, e.details.field]).toEqual(['VALIDATION', 'threadId']);
    }
    const sub = await failure(saver.fork({ configurable: { thread_id: 'src', checkpoint_ns: 'child:1' } }, { threadId: 'n3' }));
    expect([sub.code, sub.details.field]).toEqual(['VALIDATION', 'checkpoint_ns']);
    for (const t of ['n1', 'n2', 'n3']) expect(await ledger.getPlan(saver.planIdOf(t))).toBeUndefined();
    const otherPlan = (await ledger.getPlan(saver.planIdOf('other')))!;
    expect(otherPlan.forkedFrom).toBeUndefined();
    // A fork, then its source deleted: the source cannot be forked again, and the fork's lineage check says
    // the source is gone while the fork itself reads and verifies otherwise.
    await saver.fork(src, { threadId: 'kept-fork' });
    await saver.deleteThread('src');
    const gone = await failure(saver.fork(src, { threadId: 'n4' }));
    expect([gone.code, gone.details.field]).toEqual(['NOT_FOUND', 'thread_id']);
    expect(await ledger.getPlan(saver.planIdOf('n4'))).toBeUndefined();
    expect((await graph.getState({ configurable: { thread_id: 'kept-fork' } })).values).toEqual({ path: ['a', 'b', 'c'] });
    const v = await ledger.verify(saver.planIdOf('kept-fork'));
    expect(v.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(['lineage']);
    expect(v.firstBroken?.reason).toMatch(/erased/);
    await stillServes(saver);
  });
});

describe('bad input', () => {
  it('a checkpoint or a write past the payload ceiling is PAYLOAD_TOO_LARGE, nothing recorded, and the ledger serves on', async () => {
    process.env.PLAN_LEDGER_MAX_PAYLOAD_BYTES = '300000';
    let small: Ledger;
    try {
      small = await connectLedger(config, { logger: testLogger });
    } finally {
      delete process.env.PLAN_LEDGER_MAX_PAYLOAD_BYTES;
    }
    try {
      const saver = new LedgerSaver({ ledger: small, scope: scope() });
      const cfg = await saver.put({ configurable: { thread_id: 't' } }, checkpoint({ a: 'ok' }, 1), meta(0), { a: 1 });
      const e = await failure(saver.put(cfg, checkpoint({ a: 'y'.repeat(400_000) }, 2), meta(1), { a: 2 }));
      expect(e.code).toBe('PAYLOAD_TOO_LARGE');
      const w = await failure(saver.putWrites(cfg, [['a', 'z'.repeat(400_000)]], 'task-1'));
      expect(w.code).toBe('PAYLOAD_TOO_LARGE');
      // Nothing of either reached the plan: its one checkpoint and no writes.
      expect((await small.getPlan(saver.planIdOf('t')))?.seq).toBe(2);
      const t = (await saver.getTuple({ configurable: { thread_id: 't' } }))!;
      expect(t.checkpoint.channel_values).toEqual({ a: 'ok' });
      expect(t.pendingWrites).toEqual([]);
      await stillServes(saver);
    } finally {
      await small.close();
    }
  });

  it('an empty, huge or non-string thread_id is VALIDATION naming thread_id; one of control characters is a thread of its own', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    const cp = checkpoint({ a: 1 }, 1);
    for (const bad of ['', 'x'.repeat(MAX_KEY_BYTES + 1), 42, null, '__proto__']) {
      const e = await failure(saver.put({ configurable: { thread_id: bad } }, cp, meta(0), { a: 1 }));
      expect([e.code, e.details.field]).toEqual(['VALIDATION', 'thread_id']);
      const w = await failure(saver.putWrites({ configurable: { thread_id: bad, checkpoint_id: cp.id } }, [['a', 1]], 'task'));
      expect([w.code, w.details.field]).toEqual(['VALIDATION', 'thread_id']);
    }
    expect((await failure(saver.deleteThread(''))).code).toBe('VALIDATION');
    // A thread id at the bound is fine.
    const long = 'L'.repeat(MAX_KEY_BYTES);
    await saver.put({ configurable: { thread_id: long } }, cp, meta(0), { a: 1 });
    expect((await saver.getTuple({ configurable: { thread_id: long } }))?.config.configurable?.thread_id).toBe(long);
    // Control characters: stored and read back byte for byte, a different thread from the same text without them.
    const ctl = 'a\u0000b\n\u001b[31mred\u007f\r\t';
    await saver.put({ configurable: { thread_id: ctl } }, checkpoint({ c: 'ctl' }, 1), meta(0), { c: 1 });
    await saver.put({ configurable: { thread_id: 'ab[31mred' } }, checkpoint({ c: 'plain' }, 1), meta(0), { c: 1 });
    const got = (await saver.getTuple({ configurable: { thread_id: ctl } }))!;
    expect(got.config.configurable?.thread_id).toBe(ctl);
    expect(got.checkpoint.channel_values).toEqual({ c: 'ctl' });
    expect(saver.planIdOf(ctl)).not.toBe(saver.planIdOf('ab[31mred'));
    const threads = (await all(saver.list({ configurable: {} }))).map((t) => t.config.configurable?.thread_id as string);
    expect(threads.sort()).toEqual([long, ctl, 'ab[31mred'].sort());
    expect((await ledger.verify(saver.planIdOf(ctl))).ok).toBe(true);
    await stillServes(saver);
  });

  it('a metadata filter of the wrong type is VALIDATION; a filter value of another type matches nothing', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    const cfg = await saver.put({ configurable: { thread_id: 'f' } }, checkpoint({ a: 1 }, 1), meta(3, 'input'), { a: 1 });
    for (const bad of ['source', 7, ['source']] as unknown[]) {
      const e = await failure(all(saver.list({ configurable: { thread_id: 'f' } }, { filter: bad as Record<string, unknown> })));
      expect([e.code, e.details.field]).toEqual(['VALIDATION', 'filter']);
    }
    const limit = await failure(all(saver.list({ configurable: { thread_id: 'f' } }, { limit: -1 })));
    expect([limit.code, limit.details.field]).toEqual(['VALIDATION', 'limit']);
    const ids = async (filter: Record<string, unknown>) => (await all(saver.list({ configurable: { thread_id: 'f' } }, { filter }))).map((t: CheckpointTuple) => t.checkpoint.id);
    expect(await ids({ step: 3 })).toEqual([cfg.configurable?.checkpoint_id]);
    expect(await ids({ step: '3' })).toEqual([]);
    expect(await ids({ source: 'input', step: 3 })).toEqual([cfg.configurable?.checkpoint_id]);
    expect(await ids({ source: { nested: 'input' } })).toEqual([]);
    await stillServes(saver);
  });

  it('a thread past the executor item bound: the put is REJECTED, recorded in the chain as CommandRejected, and the thread reads as before', async () => {
    const saver = new LedgerSaver({ ledger, scope: scope() });
    let cfg = { configurable: { thread_id: 'full' } } as { configurable: Record<string, unknown> };
    for (let i = 0; i < MAX_ITEMS; i++) cfg = (await saver.put(cfg, checkpoint({ i }, i + 1), meta(i), { i: i + 1 })) as typeof cfg;
    const e = await failure(saver.put(cfg, checkpoint({ i: 'one too many' }, MAX_ITEMS + 1), meta(MAX_ITEMS), { i: MAX_ITEMS + 1 }));
    expect([e.code, e.details.rejection]).toEqual(['REJECTED', 'PAYLOAD_TOO_LARGE']);
    const planId = saver.planIdOf('full');
    const { rows } = await ledger.audit(planId);
    expect(rows.at(-1)?.type).toBe('CommandRejected');
    expect(rows).toHaveLength(1 + MAX_ITEMS + 1);
    expect((await ledger.verify(planId)).ok).toBe(true);
    expect((await saver.getTuple({ configurable: { thread_id: 'full' } }))?.checkpoint.channel_values).toEqual({ i: MAX_ITEMS - 1 });
    await stillServes(saver);
  });

  it('two savers on two connections putting one new thread at once: every put recorded once, one plan, its chain intact', async () => {
    const second = await connectLedger(config, { logger: testLogger });
    try {
      const s = scope();
      const a = new LedgerSaver({ ledger, scope: s, by: 'saver-a' });
      const b = new LedgerSaver({ ledger: second, scope: s, by: 'saver-b' });
      const puts = (saver: LedgerSaver, tag: string) =>
        Promise.all(Array.from({ length: 8 }, (_, i) => saver.put({ configurable: { thread_id: 'shared' } }, checkpoint({ who: `${tag}${i}` }, 1), meta(i), { who: 1 })));
      const [ra, rb] = await Promise.all([puts(a, 'a'), puts(b, 'b')]);
      const put = new Set([...ra, ...rb].map((c) => c.configurable?.checkpoint_id as string));
      expect(put.size).toBe(16);
      const planId = a.planIdOf('shared');
      const { rows } = await ledger.audit(planId);
      // One PlanCreated (the other saver's CreatePlan was refused PLAN_EXISTS and it added its item instead).
      expect(rows.filter((r) => r.type === 'PlanCreated')).toHaveLength(1);
      expect(rows.filter((r) => r.type === 'ItemAdded')).toHaveLength(16);
      // At most one refusal, recorded in the chain: the other saver's CreatePlan (each saver sends one).
      const refused = rows.filter((r) => r.type === 'CommandRejected');
      expect(refused.length).toBeLessThanOrEqual(1);
      expect(refused.map((r) => r.outcome)).toEqual(refused.map(() => 'PLAN_EXISTS'));
      expect(rows).toHaveLength(1 + 16 + refused.length);
      expect(new Set(rows.filter((r) => r.type === 'ItemAdded').map((r) => r.actor))).toEqual(new Set(['saver-a', 'saver-b']));
      expect((await ledger.verify(planId)).ok).toBe(true);
      // Both savers list the same 16 checkpoints.
      const listed = async (saver: LedgerSaver) => (await all(saver.list({ configurable: { thread_id: 'shared' } }))).map((t) => t.checkpoint.id);
      const [la, lb] = await Promise.all([listed(a), listed(b)]);
      expect(new Set(la)).toEqual(put);
      expect(lb).toEqual(la);
      await stillServes(b);
    } finally {
      await second.close();
    }
  });
});
