// The second verifier (verifiers/python, written from docs/audit-spec.md, sharing no code with the
// ledger) against plans written by the current code on the real stack: a plain plan, one whose 3 MiB input
// goes by reference, one encrypted (the Python side has no key: it verifies the chain over the
// ciphertext), and one with follow-ups and a delegated child (the child verified too). For each, the
// bundle exported by the CLI and the live events topic read at read_committed give the same verdict and
// chain head as the TypeScript `verify`; an edited bundle is broken at the same seq for both, and a
// re-sent record in the topic is a duplicate finding with its offsets.
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { verifyBundle, type ExportBundle } from '../../src/audit/bundle.js';
import type { PlanVerification } from '../../src/audit/verify.js';
import type { PlanReplay } from '../../src/audit/live.js';
import { connectLedger } from '../../src/client/index.js';
import { configToEnv, topicNames } from '../../src/config.js';
import { createKafka } from '../../src/kafka/client.js';
import type { LogRecord } from '../../src/kafka/port.js';
import { eventKey, partitionFor } from '../../src/kafka/partitioner.js';
import { defineTool } from '../../src/tools.js';
import { startExecutor } from '../../executor/index.js';
import { tools } from '../fixtures/tools.js';
import { testConfig, testLogger } from '../support/helpers.js';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const python = join(root, 'verifiers/python/.venv/bin/python');
const script = join(root, 'verifiers/python/plan_ledger_verify.py');
const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-pyverify-'));

interface PyResult {
  planId: string;
  ok: boolean;
  head: string | null;
  seq: number;
  events: number;
  records?: number;
  brokenAt: number | null;
  reason: string | null;
  planDigest: string | null;
  payloads: { inline: number; blob: number; encrypted: number };
  findings: { kind: string; seq: number; detail: string }[];
}

function runPy(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = spawn(python, [script, '--json', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The Python verifier's JSON verdict; its exit status is 0 exactly when it says ok with no findings. */
async function py(args: string[], env: Record<string, string> = {}): Promise<PyResult> {
  const r = await runPy(args, env);
  expect(r.stderr, r.stderr).toBe('');
  const out = JSON.parse(r.stdout) as PyResult;
  expect(r.code).toBe(out.ok && out.findings.length === 0 ? 0 : 1);
  return out;
}

/** The Python verifier's JSON output for another subcommand, with the exit status it must have. */
async function pyJson(args: string[], env: Record<string, string>, code: number): Promise<unknown> {
  const r = await runPy(args, env);
  expect(r.stderr, r.stderr).toBe('');
  expect(r.code).toBe(code);
  return JSON.parse(r.stdout);
}

function cli(args: string[], env: Record<string, string>): Promise<{ stdout: string }> {
  return run(process.execPath, ['bin/plan-ledger.js', ...args], { cwd: root, env: { ...process.env, ...env, NO_COLOR: '1' }, maxBuffer: 64 * 1024 * 1024 });
}

beforeAll(async () => {
  // CI runs setup.sh before npm test; a fresh checkout running only this file gets the venv here.
  if (!existsSync(python)) await run('bash', [join(root, 'verifiers/python/setup.sh')], { timeout: 170_000 });
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the Python verifier agrees with verify (real stack)', () => {
  it('plain, blob, encrypted and follow-up/child plans: bundle and live topic verdicts and heads equal the TypeScript verify', async () => {
    const config = testConfig();
    const env = configToEnv(config);
    const master = randomBytes(32);
    const measure = defineTool({ name: 'measure', run: (input: { text: string }) => ({ chars: input.text.length }) });
    const executor = await startExecutor({ tools: [...tools, measure], config, masterKey: master, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const sealed = await connectLedger(config, { masterKey: master });
    onTestFinished(() => sealed.close());
    await executor.started;

    const plain = await ledger.createPlan({
      goal: 'plain work',
      mode: 'propose',
      items: [
        { id: 'a', title: 'first', why: 'starts', tool: 'noop', input: { n: 1, x: 'é€😀', f: 1.5 }, retry: { maxAttempts: 3, initialBackoffMs: 10, backoffMultiplier: 2, maxBackoffMs: 100 } },
        { id: 'b', title: 'second', why: 'after a', tool: 'noop', input: { n: 2 }, dependsOn: ['a'] },
      ],
      labels: { suite: 'python-verifier' },
    });
    // Reviewed: PlanProposed and PlanApproved carry the plan digest the Python side recomputes from the items.
    const { digest } = await ledger.propose(plain.planId);
    await ledger.approve(plain.planId, digest, { by: 'alice' });
    const blob = await ledger.createPlan({ goal: 'large input', mode: 'execute', items: [{ id: 'm', title: 'm', why: 'takes 3 MiB', tool: 'measure', input: { text: 'é'.repeat(1_600_000) } }] });
    const secret = await sealed.createPlan({
      goal: 'encrypted work',
      mode: 'execute',
      items: [{ id: 's', title: 'secret', why: 'holds a card', tool: 'noop', input: { card: { number: '4111111111111111' } }, secret: ['card.number'] }],
    });
    const dynamic = await ledger.createPlan({
      goal: 'dynamic',
      mode: 'execute',
      items: [
        { id: 'plan-more', title: 'planner', why: 'decides the rest', tool: 'planner', input: { count: 2 } },
        { id: 'delegate', title: 'delegate', why: 'a sub-agent does it', tool: 'delegator', input: {} },
      ],
    });
    for (const p of [plain, blob, secret, dynamic]) await ledger.waitFor(p.planId, 'completed', { timeoutMs: 90_000 });
    const done = await ledger.getPlan(dynamic.planId);
    expect(done?.itemOrder).toEqual(['plan-more', 'delegate', 'follow-0', 'follow-1']);
    const child = done!.items['delegate']!.attempts[0]!.childPlanId!;
    expect((await ledger.getPlan(child))?.status).toBe('completed');

    const plans = { plain: plain.planId, blob: blob.planId, secret: secret.planId, dynamic: dynamic.planId, child };
    const bundles: Record<string, string> = {};
    for (const [label, planId] of Object.entries(plans)) {
      const ts = (await ledger.verify(planId)) as PlanVerification;
      expect(ts.ok, `${label}: ${JSON.stringify(ts.firstBroken)}`).toBe(true);
      expect(ts.head).toMatch(/^[0-9a-f]{64}$/);

      const file = join(dir, `${label}.json`);
      await cli(['export', planId, '-o', file, '--json'], env);
      bundles[label] = file;
      const bundle = JSON.parse(readFileSync(file, 'utf8')) as ExportBundle;
      const tsBundle = verifyBundle(bundle);
      expect(tsBundle.ok, label).toBe(true);
      expect(tsBundle.head).toBe(ts.head);

      const offline = await py(['bundle', file], { PLAN_LEDGER_BROKERS: '127.0.0.1:1', PLAN_LEDGER_REGISTRY_URL: 'http://127.0.0.1:1' });
      expect({ label, ok: offline.ok, head: offline.head, seq: offline.seq, findings: offline.findings }).toEqual({ label, ok: true, head: ts.head, seq: ts.events, findings: [] });
      expect(offline.planDigest).toBe(bundle.final.planDigest);

      const live = await py(['live', '--prefix', config.topicPrefix, '--plan', planId], env);
      expect({ label, ok: live.ok, head: live.head, events: live.events, records: live.records, findings: live.findings }).toEqual({ label, ok: true, head: ts.head, events: ts.events, records: ts.events, findings: [] });

      // What the plans hold, as the Python side sees it without any key.
      if (label === 'blob') expect(live.payloads.blob).toBeGreaterThanOrEqual(1);
      if (label === 'secret') expect(live.payloads).toMatchObject({ encrypted: 2, blob: 0, inline: 0 }); // the input and the output
      if (label === 'plain') {
        expect(live.payloads).toMatchObject({ encrypted: 0, blob: 0 });
        expect(live.planDigest).toBe(digest);
        expect(bundle.events.map((e) => e.event.type)).toContain('PlanApproved');
      }
    }

    // An edited bundle: both verifiers name the same broken seq.
    const edited = JSON.parse(readFileSync(bundles['dynamic']!, 'utf8')) as ExportBundle;
    const victim = edited.events[4]!;
    victim.event = { ...victim.event, actor: 'mallory' };
    const editedFile = join(dir, 'edited.json');
    writeFileSync(editedFile, JSON.stringify(edited));
    const tsEdited = verifyBundle(edited);
    const pyEdited = await py(['bundle', editedFile]);
    expect(tsEdited.ok).toBe(false);
    expect(tsEdited.checks.find((c) => c.name === 'chain')?.ok).toBe(false);
    expect({ ok: pyEdited.ok, brokenAt: pyEdited.brokenAt, reason: pyEdited.reason }).toEqual({ ok: false, brokenAt: victim.seq, reason: 'hash_mismatch' });
    expect(tsEdited.firstBroken?.seq).toBe(victim.seq);

    // A re-sent record (identical bytes) in the live topic: counted once in the chain, named as a duplicate.
    const kafka = createKafka(config, testLogger, 'test');
    onTestFinished(() => kafka.close());
    const events = topicNames(config.topicPrefix).events;
    const partition = partitionFor(plain.planId, config.partitions);
    const records: LogRecord[] = [];
    await kafka.readToEnd({ topic: events, partitions: [partition], onRecords: (rs) => void records.push(...rs) });
    const second = records.find((r) => r.key?.toString() === eventKey(plain.planId, 2))!;
    expect(second.value).not.toBeNull();
    const writer = kafka.writer();
    await writer.connect();
    onTestFinished(() => writer.disconnect());
    await writer.send(events, [{ key: second.key, value: second.value, partition }]);
    const resent = await py(['live', '--prefix', config.topicPrefix, '--plan', plain.planId], env);
    const ts = (await ledger.verify(plain.planId)) as PlanVerification;
    expect(resent.ok).toBe(true);
    expect(resent.head).toBe(ts.head);
    expect(resent.records).toBe(ts.events + 1);
    expect(resent.findings.map((f) => [f.kind, f.seq])).toEqual([['duplicate', 2]]);
    expect(resent.findings[0]!.detail).toContain(`identical) at offsets ${second.offset}, `);
    // verify names the same copy: a failed duplicates check with both offsets, the chain intact over the last copy.
    expect(ts.ok).toBe(false);
    expect(ts.firstBroken).toMatchObject({ check: 'duplicates', seq: 2 });
    expect(ts.checks.find((c) => c.name === 'duplicates')?.detail).toMatch(new RegExp(`^1 key written more than once: seq 2 at offsets ${partition}/${second.offset}, ${partition}/\\d+ \\(identical bytes\\)$`));
    expect(ts.checks.find((c) => c.name === 'chain')?.ok).toBe(true);

    // An aborted transaction in the events topic: a record under the plan's next key that no reader at
    // read_committed may see (the census lists it by offset as not committed; the ledger's verify and the
    // census's own count of events do not change).
    const aborter = kafka.fencedWriter(`${config.topicPrefix}.test-aborter`);
    await aborter.connect();
    onTestFinished(() => aborter.disconnect());
    const tx = await aborter.transaction();
    const [abortedAt] = await tx.send(events, [{ key: Buffer.from(eventKey(plain.planId, ts.events + 1)), value: Buffer.from('an aborted record'), partition }]);
    await tx.abort();
    expect((await ledger.verify(plain.planId)) as PlanVerification).toMatchObject({ events: ts.events, head: ts.head });

    // The census (what the chaos run asks of it): every topic of the prefix at read_committed, every plan
    // verified, each planId:seq counted once — the same plans and events as the ledger, the re-send named.
    const replays = (await ledger.replay({ all: true })).filter((r): r is PlanReplay => r.ok);
    const events_ = replays.reduce((n, r) => n + r.events, 0);
    const census = (await pyJson(['census', '--prefix', config.topicPrefix], env, 1)) as { plans: number; events: number; chainsOk: number; topics: Record<string, number>; findingsByKind: Record<string, number>; findings: Array<{ kind: string; planId: string; seq: number }>; uncommitted: { records: number; offsets: Record<string, number[]> }; ok: boolean };
    expect(census.uncommitted).toEqual({ records: 1, offsets: { [String(partition)]: [Number(abortedAt!.offset)] } });
    expect(replays.length).toBeGreaterThanOrEqual(5);
    expect({ plans: census.plans, events: census.events, chainsOk: census.chainsOk, ok: census.ok }).toEqual({ plans: replays.length, events: events_, chainsOk: replays.length, ok: false });
    expect(census.findingsByKind).toEqual({ duplicate: 1 });
    expect(census.findings[0]).toMatchObject({ kind: 'duplicate', planId: plain.planId, seq: 2 });
    expect(census.topics[events]).toBe(events_ + 1);
  });
});
