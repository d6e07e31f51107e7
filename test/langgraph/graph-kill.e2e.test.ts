// Issue 32, part 3: a real LangGraph StateGraph (scripted LangChain fake chat model + ToolNode,
// test/langgraph/graph-app.ts) checkpointing on the ledger in a child process, killed -9 between two
// super-steps (the model's step committed, the tool's started and done nothing) and again inside the tool
// (its effect made, its result not returned), then resumed from the ledger by a new process. Counted: no
// finished node runs again (each model turn is called once), the tool is called once per process that
// reached it and its effect happens once; the thread's plan verifies (TypeScript, the CLI, the Python
// verifier on the live topic) and its audit names the two processes that
// finished a step (the second one never did).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it, onTestFinished } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { configToEnv, type LedgerConfig } from '../../src/config.js';
import { Annotation, Command, END, interrupt, START, StateGraph } from '@langchain/langgraph';
import { INTERRUPT } from '@langchain/langgraph-checkpoint';
import { ANSWER_ITEM, LedgerSaver, RESUME_SIGNAL } from '../../src/langgraph/index.js';
import { testConfig, testLogger } from '../support/helpers.js';
import { runCli } from '../support/processes.js';

let config: LedgerConfig;
let executor: ExecutorHandle;
let projector: ProjectorHandle;
let ledger: Ledger;
const python = 'verifiers/python/.venv/bin/python';

beforeAll(async () => {
  // CI runs setup.sh before npm test; a fresh checkout running only this file gets the venv here.
  if (!existsSync(python)) await promisify(execFile)('bash', ['verifiers/python/setup.sh'], { timeout: 170_000 });
  config = testConfig({ partitions: 2 });
  executor = await startExecutor({ tools: [], config, logger: testLogger, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, executorId: 'lg-kill-exec' });
  [ledger, projector] = await Promise.all([
    connectLedger(config, { logger: testLogger }),
    startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 200, defaultMetrics: false }),
  ]);
  await executor.started;
}, 120_000);

afterAll(async () => {
  await ledger?.close();
  await projector?.stop();
  await executor?.stop();
});

interface Run {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  pid: number;
}

/** Runs graph-app.ts; with `hang`, kills it -9 once it prints that it hangs there. */
function runApp(dir: string, thread: string, mode: 'start' | 'resume', hang?: 'before-effect' | 'after-effect'): Promise<Run> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'test/langgraph/graph-app.ts', dir, thread, mode], {
    env: { ...process.env, ...configToEnv(config), GRAPH_HANG: hang ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => {
    stdout += c.toString();
    if (hang && stdout.includes(`HANG ${hang}\n`)) proc.kill('SIGKILL');
  });
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ stdout, stderr, code, signal, pid: proc.pid! })));
}

function runPython(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(python, ['verifiers/python/plan_ledger_verify.py', ...args], { env: { ...process.env, ...configToEnv(config) }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : []);

it('a graph killed -9 between super-steps and inside a tool resumes from the ledger: no finished node runs again, one effect', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'lg-kill-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const thread = `refund-42-${randomBytes(3).toString('hex')}`;
  const saver = new LedgerSaver({ ledger, scope: 'graph-kill' });
  const calls = () => lines(join(dir, 'calls.log'));
  const effects = () => lines(join(dir, 'effects.log'));
  const latest = async () => (await saver.getTuple({ configurable: { thread_id: thread } }))!;

  // 1. Killed between super-steps: the model's step is checkpointed, the tool has started and done nothing.
  const first = await runApp(dir, thread, 'start', 'before-effect');
  expect(first.signal, first.stderr).toBe('SIGKILL');
  expect(calls()).toEqual(['model 0', 'tool call-refund-42']);
  expect(effects()).toEqual([]);
  const afterModel = await latest();
  expect((afterModel.checkpoint.channel_values.messages as unknown[]).length).toBe(2); // the question and the tool call
  expect(afterModel.metadata?.step).toBe(1);

  // 2. Resumed, killed inside the tool after its effect: the model is not asked again.
  const second = await runApp(dir, thread, 'resume', 'after-effect');
  expect(second.signal, second.stderr).toBe('SIGKILL');
  expect(calls()).toEqual(['model 0', 'tool call-refund-42', 'tool call-refund-42']);
  expect(effects()).toEqual(['call-refund-42']);
  expect((await latest()).checkpoint.id).toBe(afterModel.checkpoint.id); // the tool's step never finished

  // 3. Resumed to the end: the tool runs once more (its effect is not made again), then the model's second turn.
  const third = await runApp(dir, thread, 'resume');
  expect([third.code, third.signal], third.stderr).toEqual([0, null]);
  expect(JSON.parse(third.stdout.trim().split('\n').at(-1)!)).toEqual({ done: true, messages: 4, last: 'Refunded 12.99 for order 42.' });
  const all = calls();
  expect(all).toEqual(['model 0', 'tool call-refund-42', 'tool call-refund-42', 'tool call-refund-42', 'model 1']);
  expect(all.filter((c) => c === 'model 0')).toHaveLength(1);
  expect(all.filter((c) => c === 'model 1')).toHaveLength(1);
  expect(effects()).toEqual(['call-refund-42']);

  // The thread in the ledger: its plan verifies, every event an ItemAdded after the PlanCreated.
  const planId = saver.planIdOf(thread);
  const v = await ledger.verify(planId);
  expect(v.ok, JSON.stringify(v.firstBroken)).toBe(true);
  const { rows } = await ledger.audit(planId);
  expect(rows[0]!.type).toBe('PlanCreated');
  expect(rows.slice(1).filter((r) => r.type !== 'ItemAdded').map((r) => [r.type, r.outcome, r.actor])).toEqual([]);
  // The second process wrote nothing: it resumed at the tool's step and was killed before the step ended.
  expect(new Set(rows.map((r) => r.actor))).toEqual(new Set([first.pid, third.pid].map((p) => `graph-app-${p}`)));
  // The CLI's audit and verify of the thread, and the Python verifier reading the live topic, agree.
  const cliVerify = await runCli(config, ['verify', planId, '--json']);
  expect(cliVerify.code, cliVerify.stderr).toBe(0);
  expect(JSON.parse(cliVerify.stdout.trim())).toMatchObject({ planId, ok: true, events: rows.length, head: v.head });
  const cliAudit = await runCli(config, ['audit', planId, '--json']);
  expect(cliAudit.code, cliAudit.stderr).toBe(0);
  const auditLines = cliAudit.stdout.trim().split('\n').map((l) => JSON.parse(l) as { kind: string; seq?: number });
  expect(auditLines.filter((l) => l.kind === 'event').map((l) => l.seq)).toEqual(rows.map((r) => r.seq));
  const py = await runPython(['--json', 'live', '--prefix', config.topicPrefix, '--plan', planId]);
  expect([py.code, py.stderr]).toEqual([0, '']);
  expect(JSON.parse(py.stdout)).toMatchObject({ planId, ok: true, events: rows.length, head: v.head, findings: [] });
  const final = await latest();
  expect(final.checkpoint.channel_values.messages as unknown[]).toHaveLength(4);
  console.log(
    `[langgraph] kill test: calls ${JSON.stringify(all)}, effects ${effects().length}; plan ${planId}: ${rows.length} events (` +
      [first, second, third].map((r) => `${rows.filter((x) => x.actor === `graph-app-${r.pid}`).length} by pid ${r.pid}`).join(', ') +
      `), verify ok (TypeScript, CLI, Python), head ${v.head}`,
  );
}, 180_000);

it('interrupt() is a waiting item of the ledger; a person answers it with plan-ledger signal and the graph resumes with it', async () => {
  const saver = new LedgerSaver({ ledger, scope: 'graph-interrupt' });
  const State = Annotation.Root({ order: Annotation<string>, decision: Annotation<unknown> });
  let asked = 0;
  const graph = new StateGraph(State)
    .addNode('review', (s) => {
      asked++;
      return { decision: interrupt({ question: `Refund 12.99 for order ${s.order}?` }) };
    })
    .addEdge(START, 'review')
    .addEdge('review', END)
    .compile({ checkpointer: saver });
  const cfg = { configurable: { thread_id: `review-${randomBytes(3).toString('hex')}` }, durability: 'sync' as const };
  const first = await graph.invoke({ order: '42' }, cfg);
  expect((first as { __interrupt__?: Array<{ value: unknown }> }).__interrupt__?.map((i) => i.value)).toEqual([{ question: 'Refund 12.99 for order 42?' }]);

  // The interrupt plan: one item waiting for the signal `resume`, its prompt the interrupt's value.
  const tuple = (await saver.getTuple(cfg))!;
  const task = tuple.pendingWrites!.find(([, channel]) => channel === INTERRUPT)![0];
  const planId = saver.interruptPlanId(cfg.configurable.thread_id, '', tuple.config.configurable!.checkpoint_id as string, task);
  const waiting = await ledger.waitFor(planId, (p) => p.items[ANSWER_ITEM]?.attempts.length === 1, { timeoutMs: 30_000 });
  expect(waiting.items[ANSWER_ITEM]).toMatchObject({ status: 'in_progress', wait: { signal: RESUME_SIGNAL, prompt: '{"question":"Refund 12.99 for order 42?"}' } });
  const show = await runCli(config, ['show', planId]);
  expect(show.code, show.stderr).toBe(0);
  expect(show.stdout).toContain('Refund 12.99 for order 42?');

  // A person answers from the CLI; the app takes the answer from the ledger and resumes the graph with it.
  const answered = saver.answerOf(cfg, { timeoutMs: 30_000 });
  const signal = await runCli(config, ['signal', planId, RESUME_SIGNAL, '--data', '{"approved":true,"by":"alice"}', '--by', 'alice']);
  expect(signal.code, signal.stderr).toBe(0);
  const answer = await answered;
  expect(answer).toEqual({ approved: true, by: 'alice' });
  const done = await graph.invoke(new Command({ resume: answer }), cfg);
  expect(done).toEqual({ order: '42', decision: { approved: true, by: 'alice' } });
  expect(asked).toBe(2); // LangGraph runs an interrupted node again on resume; interrupt() then returns the answer
  const { rows } = await ledger.audit(planId);
  // One answer, alice's: the graph's resume found the wait answered and sent nothing (no CommandRejected).
  expect(rows.filter((r) => r.type === 'ItemSignalled' || r.type === 'CommandRejected').map((r) => [r.type, r.actor])).toEqual([['ItemSignalled', 'alice']]);
  expect((await ledger.verify(planId)).ok).toBe(true);

  // deleteThread erases the interrupt plan with the thread's.
  await saver.deleteThread(cfg.configurable.thread_id);
  expect(await ledger.getPlan(planId)).toBeUndefined();
  expect(await saver.getTuple(cfg)).toBeUndefined();

  // An app that answers itself (Command({ resume }) with no signal): the interrupt's wait is closed with
  // that answer, sent by the saver's actor, so no wait stays open.
  const own = new LedgerSaver({ ledger, scope: 'graph-interrupt', by: 'app-ui' });
  const graph2 = new StateGraph(State)
    .addNode('review', () => ({ decision: interrupt('approve?') }))
    .addEdge(START, 'review')
    .addEdge('review', END)
    .compile({ checkpointer: own });
  const cfg2 = { configurable: { thread_id: `review-${randomBytes(3).toString('hex')}` }, durability: 'sync' as const };
  await graph2.invoke({ order: '43' }, cfg2);
  const t2 = (await own.getTuple(cfg2))!;
  const plan2 = own.interruptPlanId(cfg2.configurable.thread_id, '', t2.config.configurable!.checkpoint_id as string, t2.pendingWrites!.find(([, c]) => c === INTERRUPT)![0]);
  await ledger.waitFor(plan2, (p) => p.items[ANSWER_ITEM]?.status === 'in_progress', { timeoutMs: 30_000 });
  expect(await graph2.invoke(new Command({ resume: 'yes, from the app' }), cfg2)).toEqual({ order: '43', decision: 'yes, from the app' });
  const closed = await ledger.waitFor(plan2, 'completed', { timeoutMs: 30_000 });
  expect(closed.items[ANSWER_ITEM]!.outputJson).toBe('"yes, from the app"');
  expect((await ledger.audit(plan2)).rows.filter((r) => r.type === 'ItemSignalled').map((r) => r.actor)).toEqual(['app-ui']);
}, 120_000);
