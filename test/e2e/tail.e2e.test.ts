// `plan-ledger tail` as a child process against the real broker and registry: a plan's history once, in
// seq order; a live follow that sees a new plan's events and stops on SIGINT with exit 0; the seam
// between history and live (no event twice, none lost); its errors and a closed output pipe.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import type { AuditRow } from '../../src/audit/timeline.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { configToEnv, topicNames, type LedgerConfig } from '../../src/config.js';
import { ensurePlanTopics, eventKey, partitionFor, type LedgerAdmin, type RecordWriter } from '../../src/kafka/index.js';
import { defineTool } from '../../src/tools.js';
import { randomPrefix, testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';

type TailRow = AuditRow & { planId: string };

let config: LedgerConfig;
let admin: LedgerAdmin;
let writer: RecordWriter;
let executor: ExecutorHandle;
let ledger: Ledger;

const step = defineTool({
  name: 'step',
  async run(input: { failFirst?: boolean }, ctx) {
    if (input.failFirst && ctx.attempt === 1) throw new Error('transient failure on the first attempt');
    return { done: ctx.itemId };
  },
});

const items = [
  { id: 'fetch', title: 'Fetch', why: 'the input comes first', tool: 'step', input: {} },
  { id: 'build', title: 'Build', why: 'needs the input', tool: 'step', dependsOn: ['fetch'], input: { failFirst: true }, retry: { maxAttempts: 3, initialBackoffMs: 50, backoffMultiplier: 2, maxBackoffMs: 200 } },
];

/** The types an execute-mode run of `items` appends, in seq order (build fails once, then succeeds). */
const RUN_TYPES = [
  'PlanCreated', 'ItemAdded', 'ItemAdded',
  'IntentRecorded', 'ResultCommitted', 'ItemCompleted',
  'IntentRecorded', 'ResultCommitted', 'ItemRetryScheduled',
  'IntentRecorded', 'ResultCommitted', 'ItemCompleted',
  'PlanCompleted',
];

function tail(args: string[]): { proc: ChildProcessWithoutNullStreams; stdout: () => string; stderr: () => string; exit: Promise<number | null> } {
  const proc = spawn(process.execPath, ['bin/plan-ledger.js', 'tail', ...args], {
    env: { ...process.env, ...configToEnv(config), NO_COLOR: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exit = new Promise<number | null>((r) => proc.on('close', (code) => r(code)));
  return { proc, stdout: () => stdout, stderr: () => stderr, exit };
}

async function tailOnce(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const t = tail(args);
  const code = await t.exit;
  return { code, stdout: t.stdout(), stderr: t.stderr() };
}

const rows = (stdout: string): TailRow[] =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as TailRow);

const PROBE = 'tail-probe-';
/** Rows of the test's plans, without the probes' erasure rows. */
const planRows = (stdout: string): TailRow[] => rows(stdout).filter((r) => !r.planId.startsWith(PROBE));

/**
 * A tail of every plan (`--follow`, no plan) reads live: its start offsets, taken before anything else,
 * are behind what is written from now on. Proved with probes: a tombstone of an unknown plan, which the
 * live reader prints as an erasure, written until one is printed (one written before the start offsets
 * were taken is never printed).
 */
async function following(t: { stdout: () => string }): Promise<void> {
  await waitFor(
    async () => {
      const probe = randomPrefix(PROBE.slice(0, -1));
      await writer.send(topicNames(config.topicPrefix).events, [{ key: eventKey(probe, 1), value: null, partition: partitionFor(probe, config.partitions) }]);
      return waitFor(() => t.stdout().includes(probe), { timeoutMs: 2000, intervalMs: 50 }).catch(() => false);
    },
    { timeoutMs: 60_000, intervalMs: 0, message: 'tail --follow prints what is written now' },
  );
}

async function runPlan(mode: 'execute' | 'propose' = 'execute'): Promise<{ planId: string; digest: string }> {
  const created = await ledger.createPlan({ goal: 'tail me', mode, labels: { suite: 'tail' }, items });
  return { planId: created.planId, digest: created.digest };
}

beforeAll(async () => {
  config = testConfig({ partitions: 2 });
  const kafka = testKafka(config);
  admin = kafka.admin();
  await admin.connect();
  await ensurePlanTopics(admin, config);
  writer = kafka.writer();
  await writer.connect();
  executor = await startExecutor({ tools: [step], config, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
  await executor.started;
  ledger = await connectLedger(config, { logger: testLogger });
});

afterAll(async () => {
  await ledger?.close();
  await executor?.stop();
  await writer?.disconnect();
  const mine = (await admin.listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`));
  await admin.deleteTopics(mine).catch(() => {});
  await admin.disconnect();
});

describe('plan-ledger tail', () => {
  it('prints a plan\'s history once, in seq order, as lines and as JSON lines', async () => {
    const { planId } = await runPlan();
    await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });

    const j = await tailOnce([planId, '--json']);
    expect(j.stderr).toBe('');
    expect(j.code).toBe(0);
    const got = rows(j.stdout);
    expect(got.map((r) => r.seq)).toEqual(RUN_TYPES.map((_, i) => i + 1));
    expect(got.map((r) => r.type)).toEqual(RUN_TYPES);
    expect(new Set(got.map((r) => r.planId))).toEqual(new Set([planId]));
    // The same rows `audit` reads from the log.
    const audit = await ledger.audit(planId);
    expect(got.map((r) => ({ ...r, planId: undefined }))).toEqual(audit.rows.map((r) => ({ ...r, planId: undefined })));
    expect(got[8]).toMatchObject({ type: 'ItemRetryScheduled', itemId: 'build', attempt: 1, outcome: 'retry' });
    expect(got[10]).toMatchObject({ type: 'ResultCommitted', itemId: 'build', attempt: 2, outcome: 'succeeded', idempotencyKey: `${planId}/build/2`, actor: executor.executorId });

    const h = await tailOnce([planId]);
    expect(h.code).toBe(0);
    const lines = h.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(RUN_TYPES.length);
    lines.forEach((l, i) => expect(l).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z  ${planId}  #${i + 1} +${RUN_TYPES[i]} `)));
    expect(lines[6]).toMatch(/IntentRecorded\s+build#1\s+\S+\s+intent: \S+ invokes build attempt 1 \(key …\/build\/1\)$/);
    expect(h.stdout).not.toContain('\u001b[');

    // --as-of: only what `audit --as-of 9` does not show.
    const after = rows((await tailOnce([planId, '--as-of', '9', '--json'])).stdout);
    expect(after.map((r) => r.seq)).toEqual([10, 11, 12, 13]);
    expect(after[1]).toMatchObject({ type: 'ResultCommitted', idempotencyKey: `${planId}/build/2`, sinceIntentMs: expect.any(Number) });
  });

  it('--follow --json without a plan starts at the end and receives a new plan\'s events live; SIGINT ends it with exit 0', async () => {
    const before = await runPlan();
    await ledger.waitFor(before.planId, 'completed', { timeoutMs: 60_000 });

    const t = tail(['--follow', '--json']);
    await following(t);
    const { planId } = await runPlan();
    await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    await waitFor(() => rows(t.stdout()).some((r) => r.planId === planId && r.type === 'PlanCompleted'), { timeoutMs: 30_000, message: 'tail printed PlanCompleted' });
    t.proc.kill('SIGINT');
    expect(await t.exit).toBe(0);
    expect(t.stderr()).toBe('');

    const got = planRows(t.stdout());
    expect(new Set(got.map((r) => r.planId))).toEqual(new Set([planId])); // nothing of the plan before it started
    expect(got.map((r) => r.seq)).toEqual(RUN_TYPES.map((_, i) => i + 1));
    expect(got.map((r) => r.type)).toEqual(RUN_TYPES);
  });

  it('a plan\'s history, then live with --follow: every event once across the seam; SIGTERM ends it', async () => {
    const { planId, digest } = await runPlan('propose');
    await ledger.propose(planId);
    const t = tail([planId, '--follow', '--json']);
    // Created, 2 added, proposed. The live read starts where the history read did: behind what follows.
    await waitFor(() => rows(t.stdout()).length === 4, { timeoutMs: 60_000, message: 'history printed' });
    await ledger.approve(planId, digest, { by: 'tail-test' });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    await waitFor(() => rows(t.stdout()).some((r) => r.type === 'PlanCompleted'), { timeoutMs: 30_000, message: 'tail printed PlanCompleted' });
    // Erased while followed: one line for the plan's tombstones, not one per event.
    await ledger.erase(planId, { by: 'tail-test', reason: 'erasure while tailed' });
    await waitFor(() => rows(t.stdout()).some((r) => (r.kind as string) === 'erased'), { timeoutMs: 30_000, message: 'tail printed the erasure' });
    t.proc.kill('SIGTERM');
    expect(await t.exit).toBe(0);

    const all = rows(t.stdout());
    expect(all.filter((r) => (r.kind as string) === 'erased')).toEqual([{ kind: 'erased', planId, at: expect.stringMatching(/^\d{4}-/), partition: expect.any(Number), offset: expect.any(String) }]);
    const got = all.filter((r) => r.kind === 'event');
    const expected = ['PlanCreated', 'ItemAdded', 'ItemAdded', 'PlanProposed', 'PlanApproved', ...RUN_TYPES.slice(3)];
    expect(got.map((r) => r.type)).toEqual(expected);
    expect(got.map((r) => r.seq)).toEqual(expected.map((_, i) => i + 1));
    expect(got[4]).toMatchObject({ type: 'PlanApproved', actor: 'tail-test', outcome: 'approved' });
  });

  it('every plan from the beginning, a closed pipe, and its errors', async () => {
    const all = planRows((await tailOnce(['--from-beginning', '--json'])).stdout);
    const plans = [...new Set(all.map((r) => r.planId))];
    // One plan in the first test, two in the second; the third test's plan was erased: none of it shows.
    expect(plans).toHaveLength(3);
    for (const p of plans) {
      const seqs = all.filter((r) => r.planId === p).map((r) => r.seq);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
    }

    // The reader goes away (`| head -1` after its line): the next event written ends the tail, exit 0.
    const t = tail(['--follow']);
    await following(t);
    t.proc.stdout.destroy();
    await runPlan();
    expect(await t.exit).toBe(0);
    expect(t.stderr()).toBe('');

    const help = await tailOnce(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: plan-ledger tail \[options\] \[planId\][\s\S]*--follow[\s\S]*--from-beginning[\s\S]*--as-of[\s\S]*Example:\n {2}\$ plan-ledger tail plan-\S+ --follow/);

    const usage = await tailOnce([]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^plan-ledger: tail: nothing to show: name a plan, or pass --follow/);
    const seqWithoutPlan = await tailOnce(['--as-of', '3']);
    expect(seqWithoutPlan.code).toBe(2);
    expect(seqWithoutPlan.stderr).toMatch(/--as-of <seq> needs a plan/);
    const both = await tailOnce(['--from-beginning', '--as-of', '2026-01-01T00:00:00Z']);
    expect(both.code).toBe(2);
    const unknown = await tailOnce(['no-such-plan']);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr.trim().split('\n')).toEqual([`plan-ledger: plan no-such-plan not found on prefix "${config.topicPrefix}"`]);
  });
});
