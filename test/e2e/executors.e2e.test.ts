// Executors announce themselves (<prefix>.plan-executors): two executor processes with different tools, read
// by the CLI, the client and the projector's API against the real broker and registry; a plan naming a tool
// nobody serves (warned, and refused with --strict-tools); corrupt, foreign and huge records skipped with
// their reason; a kill -9 turning stale within the bound; a clean stop leaving nothing behind; a SIGTERM
// that comes while an executor is still starting.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger, type ExecutorInfo, type ExecutorList, type Ledger } from '../../src/client/index.js';
import { configToEnv, topicNames, type LedgerConfig } from '../../src/config.js';
import { announcementRecord } from '../../src/executors/index.js';
import type { RecordWriter } from '../../src/kafka/index.js';
import { testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';
import { runCli, spawnExecutor, type CliResult } from '../support/processes.js';

const ANNOUNCE_MS = 1000;
/** Three heartbeat intervals. */
const BOUND_MS = 3 * ANNOUNCE_MS;
const TOKEN = 'executors-e2e-token';

let config: LedgerConfig;
let topic: string;
let ledger: Ledger;
let projector: ProjectorHandle;
let writer: RecordWriter;
const procs = new Map<string, ChildProcess>();
const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-executors-'));

function startExecutor(id: string, tools: string): ChildProcess {
  const p = spawn(process.execPath, ['bin/plan-ledger.js', 'executor', '--tools', tools, '--id', id], {
    env: { ...process.env, ...configToEnv(config), PLAN_LEDGER_SESSION_TIMEOUT_MS: '6000', PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: '500', PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS: String(ANNOUNCE_MS), PLAN_LEDGER_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  procs.set(id, p);
  return p;
}

const exited = (p: ChildProcess) => (p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => p.once('exit', () => r())));

const cli = (args: string[]): Promise<CliResult> => runCli(config, args);

function planFile(name: string, tool: string, planId?: string): string {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ goal: `look up an order (${name})`, mode: 'propose', ...(planId ? { planId } : {}), items: [{ id: 'lookup', title: 'look up the order', why: 'the customer asked', tool, input: { orderId: '42' } }] }));
  return file;
}

/** What every reader must agree on (the ages differ by when each read). */
const essence = (list: ExecutorList) => ({
  live: list.live.map((e) => ({ id: e.executorId, tools: e.tools, agents: e.agents, partitions: e.partitions, host: e.host, pid: e.pid, version: e.version, startedAt: e.startedAt, heartbeatMs: e.heartbeatMs })),
  stale: list.stale.map((e) => e.executorId),
  invalid: list.invalid,
});

const byId = (list: ExecutorList, id: string): ExecutorInfo | undefined => [...list.live, ...list.stale].find((e) => e.executorId === id);

/** The tools of test/fixtures/tools.ts, as ex-general announces them. */
let generalTools: string[];

beforeAll(async () => {
  config = testConfig({ partitions: 3 });
  topic = topicNames(config.topicPrefix).planExecutors;
  ledger = await connectLedger(config, { logger: testLogger });
  writer = testKafka(config).writer();
  await writer.connect();
  startExecutor('ex-orders', 'test/fixtures/order-tools.ts');
  startExecutor('ex-general', 'test/fixtures/tools.ts');
  // Both announced, and between them owning every partition.
  await waitFor(
    async () => {
      const l = await ledger.executors();
      return l.live.length === 2 && l.live.flatMap((e) => e.partitions).sort().join(',') === '0,1,2' ? l : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 300, message: 'two live executors owning partitions 0, 1, 2' },
  );
  generalTools = byId(await ledger.executors(), 'ex-general')!.tools as string[];
  projector = await startProjector({ config, logger: testLogger, port: 0, apiTokens: [{ token: TOKEN, principal: 'reader', scopes: ['read'] }], defaultMetrics: false });
}, 150_000);

afterAll(async () => {
  for (const p of procs.values()) {
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    await exited(p);
  }
  await projector?.stop();
  await ledger?.close();
  await writer?.disconnect();
});

describe('executors announce themselves', () => {
  it('plan-ledger executors lists both with their tools, agents and partitions', async () => {
    const r = await cli(['executors', '--json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const list = JSON.parse(r.stdout) as ExecutorList;
    expect(list.topic).toBe(topic);
    expect(list.stale).toEqual([]);
    expect(list.invalid).toEqual([]);
    expect(list.live.map((e) => e.executorId)).toEqual(['ex-general', 'ex-orders']);
    const orders = byId(list, 'ex-orders')!;
    const general = byId(list, 'ex-general')!;
    expect(orders.tools).toEqual(['lookup_order']);
    expect(general.tools).toEqual(['delegator', 'effect', 'fatal', 'flaky', 'narrator', 'noop', 'pager', 'planner']);
    expect(orders.agents).toEqual([]);
    expect(general.agents).toEqual([]);
    for (const e of [orders, general]) {
      expect(e.pid).toBe(procs.get(e.executorId)!.pid);
      expect(e.host).toBe(hostname());
      expect(e.version).toBe('0.1.0');
      expect(e.heartbeatMs).toBe(ANNOUNCE_MS);
      expect(e.staleAfterMs).toBe(BOUND_MS);
      expect(e.heartbeatAgeMs).toBeLessThanOrEqual(BOUND_MS);
      expect(e.partitions.length).toBeGreaterThan(0);
    }
    expect([...orders.partitions, ...general.partitions].sort()).toEqual([0, 1, 2]);

    const table = await cli(['executors']);
    expect(table.code).toBe(0);
    const rows = table.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^EXECUTOR\s+STATUS\s+HEARTBEAT\s+PARTITIONS\s+TOOLS\s+AGENTS\s+HOST:PID\s+VERSION$/);
    expect(rows.find((l) => l.startsWith('ex-orders'))).toMatch(new RegExp(`^ex-orders\\s+live\\s+\\S+ ago\\s+${orders.partitions.join(',')}\\s+lookup_order\\s+—\\s+${hostname()}:${orders.pid}\\s+0\\.1\\.0$`));
    expect(rows).toHaveLength(3);
  });

  it('run warns about a tool no live executor serves, and --strict-tools refuses it with its code', async () => {
    const expected = `tool "lookup_ordr" is served by no live executor (live: ex-general serves ${generalTools.slice(0, 8).join(', ')}${generalTools.length > 8 ? ` and ${generalTools.length - 8} more` : ''}; ex-orders serves lookup_order)`;
    const warned = await cli(['run', planFile('typo', 'lookup_ordr'), '--json']);
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stderr).toBe(`plan-ledger: warning: ${expected}\n`);
    const created = JSON.parse(warned.stdout) as { planId: string; status: string; warnings: string[] };
    expect(created.status).toBe('proposed');
    expect(created.warnings).toEqual([expected]);

    const planId = `strict-${Date.now().toString(36)}`;
    const refused = await cli(['run', planFile('typo-strict', 'lookup_ordr', planId), '--strict-tools']);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(`plan-ledger: UNSERVED_TOOL: plan ${planId} not sent: ${expected}\n`);
    // Nothing was sent: the plan does not exist.
    expect((await cli(['show', planId])).code).toBe(3);

    const served = await cli(['run', planFile('served', 'lookup_order'), '--strict-tools', '--json']);
    expect(served.stderr).toBe('');
    expect(served.code).toBe(0);
    expect((JSON.parse(served.stdout) as { warnings: string[] }).warnings).toEqual([]);
  });

  it('the API route gives what the client and the CLI give', async () => {
    const res = await fetch(`${projector.url}/api/executors`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const api = (await res.json()) as ExecutorList;
    const client = await ledger.executors();
    const fromCli = JSON.parse((await cli(['executors', '--json'])).stdout) as ExecutorList;
    expect(essence(api)).toEqual(essence(client));
    expect(essence(fromCli)).toEqual(essence(client));
    expect(client.live).toHaveLength(2);
    expect((await fetch(`${projector.url}/api/executors`)).status).toBe(401);
  });

  it('skips corrupt, foreign and oversized records with their reason; takes one of thousands of tools; nothing blocks', async () => {
    const many = Array.from({ length: 5000 }, (_, i) => `bulk.tool-${String(i).padStart(4, '0')}`);
    // An announcement of a host that never heartbeats again: read, and stale at once (100 ms interval).
    const big = announcementRecord({ executorId: 'ex-bulk', version: '0.0.9', host: 'elsewhere', pid: 7, startedAt: new Date(Date.now() - 60_000).toISOString(), heartbeatMs: 100, tools: many });
    const oversized = JSON.stringify({ type: 'ExecutorAnnounced', format: 1, executorId: 'ex-huge', version: '1', host: 'h', pid: 1, startedAt: new Date().toISOString(), heartbeatMs: 1000, tools: Array.from({ length: 20_000 }, (_, i) => `huge-${i}`.padEnd(20, 'x')) });
    await writer.send(topic, [
      { key: 'announce:ex-corrupt', value: Buffer.from([0x7b, 0x00, 0xff, 0x01]) },
      { key: 'orders:42', value: JSON.stringify({ orderId: 42 }) },
      { key: 'heartbeat:ex-ghost', value: JSON.stringify({ type: 'ExecutorHeartbeat', format: 1, executorId: 'ex-ghost', at: new Date().toISOString(), partitions: [0] }) },
      { key: 'announce:ex-huge', value: oversized },
      { key: big.key, value: big.value },
    ]);
    const began = Date.now();
    const r = await cli(['executors', '--json']);
    expect(Date.now() - began).toBeLessThan(30_000);
    expect(r.code, r.stderr).toBe(0);
    const list = JSON.parse(r.stdout) as ExecutorList;
    expect(list.live.map((e) => e.executorId)).toEqual(['ex-general', 'ex-orders']);
    expect(list.stale.map((e) => [e.executorId, e.tools.length, e.staleReason])).toEqual([['ex-bulk', 5000, expect.stringMatching(/^no heartbeat for \d+(\.\d)? s \(bound 0\.3 s\)$/)]]);
    expect(list.invalid.map((x) => [x.key, x.reason])).toEqual([
      ['announce:ex-corrupt', 'not JSON'],
      ['orders:42', 'foreign key: neither announce:<id> nor heartbeat:<id>'],
      ['heartbeat:ex-ghost', 'a heartbeat without a readable announcement'],
      ['announce:ex-huge', `announcement of ${Buffer.byteLength(oversized)} bytes is over the 262144-byte bound`],
    ]);
    const table = await cli(['executors']);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ex-bulk\s+stale\s+.*bulk\.tool-0000, bulk\.tool-0001, .* \+4994 more/m);
    expect(table.stdout).toContain('skipped record at offset');
    expect(table.stdout).toMatch(/skipped record at offset \d+ \(key "announce:ex-corrupt"\): not JSON/);
    // The tool check goes on past them: a stale executor's tools serve nothing.
    const check = await ledger.createPlan({ goal: 'bulk', mode: 'propose', items: [{ id: 'a', title: 'a', why: 'a', tool: 'bulk.tool-0001' }] });
    expect(check.unservedTools).toEqual(['bulk.tool-0001']);
  });

  it('an executor killed with kill -9 turns stale within the bound; one stopped cleanly is gone', async () => {
    const orders = procs.get('ex-orders')!;
    expect(byId(await ledger.executors(), 'ex-orders')?.live).toBe(true);
    const killedAt = Date.now();
    orders.kill('SIGKILL');
    await exited(orders);
    const stale = await waitFor(
      async () => {
        const e = byId(await ledger.executors(), 'ex-orders');
        return e && !e.live ? e : undefined;
      },
      { timeoutMs: BOUND_MS + 5_000, intervalMs: 100, message: 'ex-orders stale' },
    );
    const seen = Date.now() - killedAt;
    expect(seen).toBeLessThanOrEqual(BOUND_MS + 2_000);
    expect(stale.staleReason).toMatch(/^no heartbeat for \d\.\d s \(bound 3\.0 s\)$/);
    expect(stale.heartbeatAgeMs).toBeGreaterThan(BOUND_MS);

    // With ex-orders stale, lookup_order is served by nobody live.
    const warned = await cli(['run', planFile('after-kill', 'lookup_order'), '--json']);
    expect(warned.code, warned.stderr).toBe(0);
    expect(warned.stderr).toMatch(/^plan-ledger: warning: tool "lookup_order" is served by no live executor \(live: ex-general serves [^;]+\)\n$/);

    const general = procs.get('ex-general')!;
    general.kill('SIGTERM');
    await exited(general);
    expect(general.exitCode).toBe(0);
    const after = await ledger.executors();
    expect(byId(after, 'ex-general')).toBeUndefined();
    expect(after.live).toEqual([]);
    expect(after.stale.map((e) => e.executorId)).toEqual(['ex-bulk', 'ex-orders']);
    const listed = await cli(['executors', '--json']);
    expect(essence(JSON.parse(listed.stdout) as ExecutorList).stale).toEqual(['ex-bulk', 'ex-orders']);

    // Nobody live: strict refuses at once, saying so instead of a list.
    const none = `no live executor has announced itself on ${topic} (2 stale: ex-bulk, ex-orders): nothing serves tool "lookup_order" now`;
    const planId = `nobody-${Date.now().toString(36)}`;
    const refused = await cli(['run', planFile('nobody', 'lookup_order', planId), '--strict-tools']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(`plan-ledger: UNSERVED_TOOL: plan ${planId} not sent: ${none}\n`);
    // Without --strict-tools the command waits for an executor in vain, and the timeout says why.
    const waited = await cli(['run', planFile('nobody-waits', 'lookup_order'), '--timeout', '2000']);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toMatch(new RegExp(`^plan-ledger: no executor decided CreatePlan for plan \\S+ within 2000 ms — is an executor running on prefix "${config.topicPrefix}"\\? \\(${none.replace(/[()]/g, '\\$&')}\\)\\n$`));
  });
});

describe('an executor process told to stop while it starts', () => {
  // The executor owns partitions before it has finished starting, so the process takes signals from the
  // start: one that comes then stops it once it is up, and one that is not up 15 s later (here: a registry
  // that never answers) exits with 143. Before, such a SIGTERM killed it at once, graceful stop or not.
  it('a SIGTERM while the registry does not answer: said, then exit 143 (not killed by the signal)', async () => {
    const quiet = { ...testConfig({ partitions: 1 }), registryUrl: 'http://127.0.0.1:9/apis/ccompat/v7' };
    const exec = spawnExecutor(quiet, { label: 'early-term' });
    await exec.waitForLog((l) => l.msg === 'schema registry unavailable at start-up; asking again', 60_000);
    exec.kill('SIGTERM');
    await exec.waitForLog((l) => l.msg === 'stopping once started' && l.signal === 'SIGTERM');
    expect(await exec.exited).toEqual({ code: 143, signal: null });
    expect(exec.logs.some((l) => l.msg === 'executor started')).toBe(false);
  }, 120_000);
});
