// Every CLI verb as a child process against the real broker and registry: JSON output and exit codes,
// every error path, offline bundle verification, and an erasure that compaction really removes.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExportBundle } from '../../src/audit/bundle.js';
import type { AuditRow, PlanAsOf } from '../../src/audit/timeline.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { planTopicSpecs, type KafkaClient, type LedgerAdmin } from '../../src/kafka/index.js';
import { connectLedger } from '../../src/client/index.js';
import { isLedgerError } from '../../src/errors.js';
import type { PlanState } from '../../src/plan/index.js';
import { readAll, testConfig, testKafka, waitFor, withPromptCompaction } from '../support/helpers.js';
import { runCli, type CliResult } from '../support/processes.js';

let config: LedgerConfig;
let kafka: KafkaClient;
let admin: LedgerAdmin;
let executor: ChildProcess;
const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-cli-'));

const cli = (args: string[], env: Record<string, string> = {}): Promise<CliResult> => runCli(config, args, env);

const parse = <T>(r: CliResult): T => {
  expect(r.stderr, r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
};
const lines = <T>(r: CliResult): T[] =>
  r.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as T);

/** Exactly one line on stderr, and the exit code. */
function failed(r: CliResult, code: number, pattern: RegExp): void {
  expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(code);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(pattern);
}

function planFile(name: string, body: object): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(body));
  return file;
}

const twoSteps = (mode: 'execute' | 'propose') =>
  planFile(`two-${mode}.json`, {
    goal: 'two steps',
    mode,
    labels: { suite: 'cli' },
    items: [
      { id: 'a', title: 'first', why: 'it comes first', tool: 'noop', input: { n: 1 } },
      { id: 'b', title: 'second', why: 'after a', tool: 'noop', dependsOn: ['a'] },
    ],
  });

interface CommandJson {
  ok: boolean;
  planId: string;
  commandId: string;
  status: string;
  digest: string;
  seq: number;
  events: { seq: number; type: string }[];
}

async function completedPlan(): Promise<string> {
  const r = parse<CommandJson>(await cli(['run', twoSteps('execute'), '--wait', '--json']));
  expect(r.status).toBe('completed');
  return r.planId;
}

beforeAll(async () => {
  // One partition, so every plan shares the erased plan's segment files; the events topic is created
  // here with settings that let the log cleaner run within seconds.
  config = testConfig({ partitions: 1 });
  kafka = testKafka(config);
  admin = kafka.admin();
  await admin.connect();
  const names = topicNames(config.topicPrefix);
  // Events compacted promptly, so the erasure test can watch compaction remove a plan.
  const specs = planTopicSpecs(config).map((s) => (s.topic === names.events ? withPromptCompaction(s) : s));
  await admin.createTopics(specs);

  executor = spawn(process.execPath, ['bin/plan-ledger.js', 'executor', '--tools', 'test/fixtures/tools.ts', '--id', 'cli-exec'], {
    env: {
      ...process.env,
      PLAN_LEDGER_BROKERS: config.brokers.join(','),
      PLAN_LEDGER_REGISTRY_URL: config.registryUrl,
      PLAN_LEDGER_TOPIC_PREFIX: config.topicPrefix,
      PLAN_LEDGER_PARTITIONS: '1',
      PLAN_LEDGER_SESSION_TIMEOUT_MS: '6000',
      PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: '500',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let log = '';
  executor.stdout!.on('data', (c: Buffer) => (log += c.toString()));
  await waitFor(() => log.includes('"msg":"partition restored"'), { timeoutMs: 60_000, message: 'executor owns the partition' });
});

afterAll(async () => {
  if (executor && executor.exitCode === null) {
    executor.kill('SIGTERM');
    await new Promise((r) => executor.once('exit', r));
  }
  await admin?.disconnect();
});

describe('help and usage', () => {
  const verbs = ['run', 'propose', 'wait', 'show', 'approve', 'reject', 'cancel', 'retry', 'audit', 'replay', 'verify', 'export', 'erase', 'demo', 'projector', 'executor', 'executors', 'stack'];

  it('documents the exit codes at the top level', async () => {
    const r = await cli(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Exit codes: 0 ok');
    for (const v of verbs) expect(r.stdout).toMatch(new RegExp(`\\n  ${v}\\b`));
  });

  it.each(verbs.filter((v) => v !== 'stack'))('%s --help has an example', async (verb) => {
    const r = await cli([verb, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Example:');
    expect(r.stdout).toContain(`$ plan-ledger ${verb === 'demo' ? '' : verb}`.trim());
  });

  it('a missing argument, an unknown flag and an unknown verb are usage errors (exit 2, one line)', async () => {
    failed(await cli(['show']), 2, /missing required argument 'planId'/);
    failed(await cli(['show', 'x', '--bogus']), 2, /unknown option '--bogus'/);
    failed(await cli(['frobnicate']), 2, /unknown command 'frobnicate'/);
    failed(await cli(['approve', 'x']), 2, /required option '--digest <digest>' not specified/);
    failed(await cli(['replay']), 2, /replay: name one plan or pass --all/);
    failed(await cli(['verify', 'x', '--all']), 2, /verify: name one plan, or pass --all, or --bundle/);
    failed(await cli(['audit', 'x', '--as-of', 'last tuesday']), 2, /--as-of: expected a seq/);
  });

  it('an invalid plan file names the bad field (exit 2) before touching Kafka', async () => {
    const bad = planFile('bad.json', { goal: 'g', items: [{ id: 'a', tool: 't' }, { id: 'b', tool: 't' }, { id: 'c', tool: 't', dependsOn: ['nope'] }] });
    failed(await cli(['run', bad], { PLAN_LEDGER_BROKERS: '127.0.0.1:1' }), 2, /bad\.json: items\[2\]\.dependsOn\[0\]: unknown item "nope"/);
    const yaml = join(dir, 'bad.yaml');
    writeFileSync(yaml, 'goal: g\nitems:\n  - id: a\n    tool: t\n    depends_on: [b]\n');
    failed(await cli(['propose', yaml]), 2, /bad\.yaml: items\[0\]\.depends_on: unknown field/);
    failed(await cli(['run', join(dir, 'missing.yaml')]), 2, /cannot read plan file .*missing\.yaml: ENOENT/);
  });

  it('an unreachable broker fails fast with one line (exit 1)', async () => {
    const t0 = Date.now();
    for (const args of [['show', 'p'], ['approve', 'p', '--digest', 'd'], ['audit', 'p'], ['verify', '--all']]) {
      failed(await cli(args, { PLAN_LEDGER_BROKERS: '127.0.0.1:1' }), 1, /^plan-ledger: cannot reach Kafka at 127\.0\.0\.1:1 \(ECONNREFUSED\)\n$/);
    }
    expect(Date.now() - t0).toBeLessThan(20_000);
  });
});

describe('plan verbs', () => {
  it('run --wait --json creates an execute-mode plan and waits for it', async () => {
    const r = parse<CommandJson>(await cli(['run', twoSteps('execute'), '--wait', '--json']));
    expect(r).toMatchObject({ ok: true, status: 'completed', seq: 10 });
    expect(r.events.map((e) => e.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded']);
    const show = parse<PlanState>(await cli(['show', r.planId, '--json']));
    expect(show).toMatchObject({ planId: r.planId, status: 'completed', labels: { suite: 'cli' } });
    expect(show.itemOrder).toEqual(['a', 'b']);
  });

  it('run --wait exits 1 when the plan fails, and run --wait, show and audit say why', async () => {
    const file = planFile('fatal.json', { goal: 'doomed', items: [{ id: 'x', tool: 'fatal' }] });
    const r = await cli(['run', file, '--wait']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^plan-ledger: plan \S+ ended failed: see plan-ledger audit/);
    expect(r.stdout).toContain('\nfailed  item x (attempt 1, terminal): NOPE: this can never work\n');

    // A tool no executor has: run warns before it runs (the executors' announcements), and the item
    // fails at once with the executor's words.
    const typo = planFile('typo.json', { goal: 'look up an order', items: [{ id: 'lookup', tool: 'lookup_ordr' }, { id: 'refund', tool: 'noop', dependsOn: ['lookup'] }] });
    const t = await cli(['run', typo, '--wait']);
    expect(t.code).toBe(1);
    const [warning, ended] = t.stderr.trimEnd().split('\n');
    expect(warning).toBe('plan-ledger: warning: tool "lookup_ordr" is served by no live executor (live: cli-exec serves delegator, effect, fatal, flaky, narrator, noop, pager, planner)');
    const planId = /^plan-ledger: plan (\S+) ended failed/.exec(ended!)![1]!;
    const cause = 'failed  item lookup (attempt 1, terminal): UNKNOWN_TOOL: no tool named "lookup_ordr" is registered with executor cli-exec';
    expect(t.stdout.trimEnd().split('\n').slice(-2)).toEqual([`plan ${planId} failed at seq 7`, cause]);
    const show = await cli(['show', planId]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout.split('\n').slice(2, 4)).toEqual(['status  failed   seq 7   items 2', cause]);
    const audit = await cli(['audit', planId]);
    expect(audit.code, audit.stderr).toBe(0);
    expect(audit.stdout.split('\n')[1]).toBe(cause);
  });

  it('propose, approve at the wrong digest (rejected with its code), approve at the right one', async () => {
    const p = parse<CommandJson>(await cli(['propose', twoSteps('execute'), '--json']));
    expect(p.status).toBe('proposed');
    expect(p.digest).toMatch(/^[0-9a-f]{64}$/);
    failed(await cli(['approve', p.planId, '--digest', 'f'.repeat(64)]), 1, /ApprovePlan rejected: STALE_DIGEST/);
    const a = parse<CommandJson>(await cli(['approve', p.planId, '--digest', p.digest, '--by', 'alice', '--json']));
    expect(a.events.map((e) => e.type)).toContain('PlanApproved');
    await waitFor(async () => JSON.parse((await cli(['show', p.planId, '--json'])).stdout).status === 'completed', { timeoutMs: 30_000 });
    const rows = lines<AuditRow | PlanAsOf>(await cli(['audit', p.planId, '--json']));
    expect(rows.find((r) => r.kind === 'event' && r.type === 'PlanApproved')).toMatchObject({ actor: 'alice', outcome: 'approved' });
  });

  it('reject sends a proposed plan back to draft; cancel cancels it', async () => {
    const p = parse<CommandJson>(await cli(['propose', twoSteps('propose'), '--json']));
    const r = parse<CommandJson>(await cli(['reject', p.planId, '--reason', 'too risky', '--by', 'bob', '--json']));
    expect(r).toMatchObject({ status: 'draft', events: [{ type: 'PlanRejected' }] });
    const c = parse<CommandJson>(await cli(['cancel', p.planId, '--reason', 'withdrawn', '--json']));
    expect(c).toMatchObject({ status: 'cancelled', events: [{ type: 'PlanCancelled' }] });
    failed(await cli(['approve', p.planId, '--digest', p.digest]), 1, /ApprovePlan rejected: PLAN_FINISHED/);
  });

  it('retry makes a failed item pending again; an unknown item is rejected with its code', async () => {
    const file = planFile('fatal2.json', { goal: 'doomed', items: [{ id: 'x', tool: 'fatal' }] });
    const r = await cli(['run', file, '--wait', '--json']);
    expect(r.code).toBe(1);
    const planId = (JSON.parse(r.stdout) as CommandJson).planId;
    const retry = parse<CommandJson>(await cli(['retry', planId, 'x', '--json']));
    expect(retry.events.map((e) => e.type)).toContain('ItemRetryScheduled');
    failed(await cli(['retry', planId, 'nope']), 1, /RetryItem rejected: ITEM_NOT_FOUND/);
  });

  it('an unknown plan is exit 3 for every verb', async () => {
    for (const args of [['show', 'no-such-plan'], ['approve', 'no-such-plan', '--digest', 'd'], ['reject', 'no-such-plan', '--reason', 'r'], ['cancel', 'no-such-plan'], ['retry', 'no-such-plan', 'x'], ['audit', 'no-such-plan'], ['replay', 'no-such-plan'], ['verify', 'no-such-plan'], ['export', 'no-such-plan'], ['erase', 'no-such-plan']]) {
      failed(await cli(args), 3, /plan no-such-plan not found on prefix/);
    }
  });
});

describe('wait', () => {
  it('run without --wait says how to follow the plan; wait prints where it ended (exit 0)', async () => {
    const r = await cli(['run', twoSteps('execute')]);
    expect(r.code, r.stderr).toBe(0);
    const planId = /^plan {4}(\S+)/.exec(r.stdout)![1]!;
    expect(r.stdout.trimEnd().split('\n').at(-1)).toBe(`follow it with: plan-ledger wait ${planId}   (or plan-ledger tail ${planId} --follow)`);
    const w = await cli(['wait', planId]);
    expect(w).toEqual({ code: 0, stdout: `plan ${planId} completed at seq 10\n`, stderr: '' });
    const j = parse<{ planId: string; status: string; seq: number; reached: boolean; failedItems: unknown[] }>(await cli(['wait', planId, '--json']));
    expect(j).toMatchObject({ planId, status: 'completed', seq: 10, reached: true, failedItems: [] });
  });

  it('a plan that ends failed: the cause on stdout, exit 1 with one line', async () => {
    const file = planFile('wait-fatal.json', { goal: 'doomed', items: [{ id: 'x', tool: 'fatal' }] });
    const planId = /^plan {4}(\S+)/.exec((await cli(['run', file])).stdout)![1]!;
    const w = await cli(['wait', planId, '--timeout', '60000']);
    failed(w, 1, new RegExp(`^plan-ledger: plan ${planId} ended failed, not completed: see plan-ledger audit ${planId}\n$`));
    expect(w.stdout).toBe(`plan ${planId} failed at seq 6\nfailed  item x (attempt 1, terminal): NOPE: this can never work\n`);
    const j = await cli(['wait', planId, '--json']);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toEqual({ planId, status: 'failed', seq: 6, digest: expect.stringMatching(/^[0-9a-f]{64}$/), reached: false, failedItems: [{ itemId: 'x', attempt: 1, reason: 'terminal', error: { code: 'NOPE', message: 'this can never work', detailsJson: null } }] });
    // A status it passed on the way is not reached again: it ended failed.
    failed(await cli(['wait', planId, '--status', 'running']), 1, /ended failed, not running/);
    expect((await cli(['wait', planId, '--status', 'failed'])).code).toBe(0);
  });

  it('--status, --timeout, an unknown plan and a bad status', async () => {
    const p = parse<CommandJson>(await cli(['propose', twoSteps('propose'), '--json']));
    expect(await cli(['wait', p.planId, '--status', 'proposed'])).toEqual({ code: 0, stdout: `plan ${p.planId} proposed at seq 4\n`, stderr: '' });
    const t = await cli(['wait', p.planId, '--timeout', '1000']);
    failed(t, 1, new RegExp(`^plan-ledger: plan ${p.planId} did not reach completed within 1000 ms \\(now proposed\\)\n$`));
    expect(t.stdout).toBe('');
    failed(await cli(['wait', 'no-such-plan']), 3, /^plan-ledger: plan no-such-plan not found on prefix/);
    failed(await cli(['wait', p.planId, '--status', 'done']), 2, /option '--status <status>' argument 'done' is invalid/);
  });
});

describe('audit, replay, verify, export', () => {
  let planId: string;
  beforeAll(async () => {
    planId = await completedPlan();
  });

  it('audit --json: one line per event with position, actor, causation, attempt, key, outcome, durations, then the state', async () => {
    const rows = lines<AuditRow | PlanAsOf>(await cli(['audit', planId, '--json']));
    const events = rows.filter((r): r is AuditRow => r.kind === 'event');
    expect(events.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(events.every((r) => r.partition === 0 && /^\d+$/.test(r.offset) && r.causationId && r.actor && r.hash)).toBe(true);
    const result = events.find((r) => r.type === 'ResultCommitted' && r.itemId === 'b')!;
    expect(result).toMatchObject({ attempt: 1, idempotencyKey: `${planId}/b/1`, outcome: 'succeeded', actor: 'cli-exec' });
    expect(result.sinceIntentMs).toBeGreaterThanOrEqual(0);
    expect(rows[rows.length - 1]).toMatchObject({ kind: 'state', seq: 10, state: { status: 'completed' } });
  });

  it('audit --as-of shows the plan as it was then, by seq or by time', async () => {
    const bySeq = lines<AuditRow | PlanAsOf>(await cli(['audit', planId, '--as-of', '5', '--json']));
    expect(bySeq).toHaveLength(6);
    const state = bySeq[5] as PlanAsOf;
    expect(state).toMatchObject({ kind: 'state', seq: 5 });
    expect(state.state!.items.a!.status).toBe('result_committed');
    const at = (bySeq[3] as AuditRow).at;
    const byTime = lines<AuditRow | PlanAsOf>(await cli(['audit', planId, '--as-of', at, '--json']));
    expect((byTime[byTime.length - 1] as PlanAsOf).seq).toBeGreaterThanOrEqual(4);
    const table = await cli(['audit', planId, '--as-of', '5']);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('as of seq 5');
  });

  it('replay rebuilds from the log alone, up to --until; --all lists every plan', async () => {
    const full = parse<{ planId: string; seq: number; status: string; stateDigest: string }>(await cli(['replay', planId, '--json']));
    expect(full).toMatchObject({ planId, seq: 10, status: 'completed' });
    const until = parse<{ seq: number; status: string }>(await cli(['replay', planId, '--until', '3', '--json']));
    expect(until).toMatchObject({ seq: 3, status: 'running' });
    const all = lines<{ planId: string; stateDigest: string }>(await cli(['replay', '--all', '--json']));
    expect(all.find((p) => p.planId === planId)?.stateDigest).toBe(full.stateDigest);
  });

  it('verify checks chain, seq, determinism and snapshots', async () => {
    const v = parse<{ ok: boolean; checks: { name: string; ok: boolean }[] }>(await cli(['verify', planId, '--json']));
    expect(v.ok).toBe(true);
    expect(v.checks.map((c) => c.name)).toEqual(['duplicates', 'seq', 'chain', 'determinism', 'snapshots']);
    const all = await cli(['verify', '--all']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/(\d+) of \1 plans verify/);
  });

  it('export writes a bundle that verify --bundle checks with no broker; an edited event is named', async () => {
    const file = join(dir, 'bundle.json');
    const summary = parse<{ file: string; events: number; head: string }>(await cli(['export', planId, '-o', file, '--json']));
    expect(summary).toMatchObject({ file, events: 10 });
    const bundle = JSON.parse(readFileSync(file, 'utf8')) as ExportBundle;
    expect(bundle.chain.head).toBe(summary.head);
    expect(Object.keys(bundle.schemas).length).toBeGreaterThan(0);

    const offline = { PLAN_LEDGER_BROKERS: '127.0.0.1:1', PLAN_LEDGER_REGISTRY_URL: 'http://127.0.0.1:1' };
    const ok = parse<{ ok: boolean }>(await cli(['verify', '--bundle', file, '--json'], offline));
    expect(ok.ok).toBe(true);

    const edited = structuredClone(bundle);
    const victim = edited.events[6]!;
    (victim.event.data as { outcome?: string }).outcome = 'failed_terminal';
    const tampered = join(dir, 'tampered.json');
    writeFileSync(tampered, JSON.stringify(edited));
    const r = await cli(['verify', '--bundle', tampered, '--json'], offline);
    expect(r.code).toBe(1);
    expect((JSON.parse(r.stdout) as { firstBroken: { eventId: string } }).firstBroken.eventId).toBe(victim.event.eventId);
    expect(r.stderr).toContain(`event ${victim.event.eventId} (seq ${victim.seq}`);

    failed(await cli(['verify', '--bundle', join(dir, 'nope.json')], offline), 2, /cannot read bundle/);
  });
});

describe('erase', () => {
  it('is refused while the plan runs unless --force', async () => {
    const file = planFile('slow.json', { goal: 'keeps retrying', items: [{ id: 'x', tool: 'flaky', input: { succeedOn: 99 }, retry: { maxAttempts: 10, initialBackoffMs: 600_000 } }] });
    const p = parse<CommandJson>(await cli(['run', file, '--json']));
    await waitFor(async () => JSON.parse((await cli(['show', p.planId, '--json'])).stdout).seq >= 5, { message: 'the first attempt failed' });
    failed(await cli(['erase', p.planId]), 1, /ErasePlan rejected: INVALID_STATE: plan \S+ is running; erase --force to erase it anyway/);
    const rec = parse<{ type: string; forced: boolean; statusAtErasure: string; executorId: string }>(await cli(['erase', p.planId, '--force', '--json']));
    expect(rec).toMatchObject({ type: 'PlanErased', forced: true, statusAtErasure: 'running', executorId: 'cli-exec' });
    failed(await cli(['show', p.planId]), 3, /not found/);
    failed(await cli(['erase', p.planId, '--force']), 3, /not found on prefix .* \(or already erased\)/);
  });

  it('the owning executor tombstones every event and the snapshot; later commands append nothing; compaction removes them while other plans still verify', async () => {
    const keep = await completedPlan();
    const gone = await completedPlan();
    const before = parse<{ head: string }>(await cli(['export', gone, '-o', join(dir, 'gone.json'), '--json']));

    const rec = parse<{ planId: string; events: number; lastSeq: number; chainHead: string; executorId: string; tombstones: { events: number; snapshots: number } }>(
      await cli(['erase', gone, '--reason', 'GDPR request 481', '--by', 'dpo', '--json']),
    );
    // Written by the executor that owns the partition (the single writer), not by the CLI process.
    expect(rec).toMatchObject({ planId: gone, events: 10, lastSeq: 10, chainHead: before.head, executorId: 'cli-exec', tombstones: { events: 10, snapshots: 1 } });
    failed(await cli(['show', gone]), 3, /not found/);

    // The executor forgot the plan: a command sent straight to it (past the CLI's own existence check)
    // is PLAN_NOT_FOUND, and nothing of the erased plan comes back to life on the partition: every key
    // of it ends in a tombstone and no record continues the erased chain (no gone:11).
    const ledger = await connectLedger(config);
    try {
      for (const send of [() => ledger.cancel(gone, 'too late'), () => ledger.addItems(gone, [{ id: 'z', title: 'z', why: 'z', tool: 'noop' }])]) {
        const e = await send().catch((x: unknown) => x);
        expect(isLedgerError(e, 'REJECTED')).toBe(true);
        expect((e as { details: { rejection: string } }).details.rejection).toBe('PLAN_NOT_FOUND');
      }
      expect(await ledger.getPlan(gone)).toBeUndefined();
    } finally {
      await ledger.close();
    }
    const lastByKey = new Map<string, Buffer | null>();
    for (const r of await readAll(kafka, topicNames(config.topicPrefix).events)) lastByKey.set(r.key!.toString(), r.value);
    const goneKeys = [...lastByKey.keys()].filter((k) => k.startsWith(`${gone}:`));
    // (The cleaner of this topic runs within seconds, so some tombstones may already be gone too.)
    expect(goneKeys.length).toBeGreaterThan(0);
    expect(goneKeys.filter((k) => !/:(10|[1-9])$/.test(k))).toEqual([]);
    expect(goneKeys.filter((k) => lastByKey.get(k) !== null)).toEqual([]);
    failed(await cli(['cancel', gone]), 3, /not found/);
    const verified = await cli(['verify', '--all']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);

    // The erasure itself is on the ledger-audit topic.
    const audit = (await readAll(kafka, `${config.topicPrefix}.ledger-audit`)).map((r) => r.value!.toString());
    expect(audit.map((v) => JSON.parse(v) as { planId: string; by: string; reason: string }).find((r) => r.planId === gone)).toMatchObject({ by: 'dpo', reason: 'GDPR request 481' });

    // The cleaner only compacts closed segments: keep appending real plans (segment.ms is 200) until
    // no record of the erased plan holds a value any more.
    const events = topicNames(config.topicPrefix).events;
    await waitFor(
      async () => {
        await completedPlan();
        const left = (await readAll(kafka, events)).filter((r) => r.key?.toString().startsWith(`${gone}:`) && r.value !== null);
        return left.length === 0;
      },
      { timeoutMs: 90_000, intervalMs: 1000, message: 'compaction removed the erased events' },
    );

    const all = lines<{ planId: string; ok: boolean }>(await cli(['verify', '--all', '--json']));
    expect(all.map((v) => v.planId)).not.toContain(gone);
    expect(all.find((v) => v.planId === keep)?.ok).toBe(true);
    expect(all.every((v) => v.ok)).toBe(true);
  });
});
