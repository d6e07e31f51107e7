// The package as a user installs it: built with `npm run build`, packed with `npm pack`, installed into an
// empty project with npm, then its CLI (from dist/, no TypeScript) serves the projector's API and
// dashboard against the real broker and registry, its library entry exports the documented API, and
// `npx plan-ledger demo` (and `demo --agent`) runs the guided demo from the installed package to a verified ledger.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { configToEnv } from '../../src/config.js';
import { freePortBlock, testConfig, waitFor } from '../support/helpers.js';
import { expectKillAndReplay } from '../support/demo-output.js';

const root = resolve(import.meta.dirname, '../..');
function npm(args: string[], cwd: string, env: Record<string, string> = {}): string {
  try {
    return execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', ...env } });
  } catch (e) {
    // tsc reports on stdout: the failure's message carries both streams' last lines.
    const { stdout, stderr } = e as { stdout?: string; stderr?: string };
    throw new Error(`npm ${args.join(' ')} failed in ${cwd}:\n${`${stdout ?? ''}\n${stderr ?? ''}`.trim().split('\n').slice(-30).join('\n')}`);
  }
}
const kafkaClient = ['node_modules', '@confluentinc', 'kafka-javascript'];
const version = (dir: string) => (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;

/**
 * `npx plan-ledger demo [...args]` in `app`, against the test run's broker and registry (so the demo starts
 * no stack of its own), the dashboard on any free port. `--no`: the installed package's bin, never one
 * fetched from the registry.
 */
async function npxDemo(app: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env = { ...process.env, ...configToEnv(testConfig()), PLAN_LEDGER_HTTP_PORT: '0', NO_COLOR: '1', npm_config_update_notifier: 'false' };
  return new Promise((done) => {
    const p = spawn('npx', ['--no', 'plan-ledger', 'demo', ...args], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('the installed package', () => {
  let work: string;
  let app: string;
  let bin: string;

  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), 'plan-ledger-pkg-'));
    npm(['run', 'build'], root);
    npm(['pack', '--pack-destination', work], root);
    const tarball = readdirSync(work).find((f) => f.startsWith('plan-ledger-') && f.endsWith('.tgz'));
    if (!tarball) throw new Error(`npm pack left no plan-ledger-*.tgz in ${work}`);
    app = join(work, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
    // Installed without install scripts, as this checkout installs (.npmrc: ignore-scripts), then given the
    // checkout's own build of the Kafka client's addon (scripts/native.mjs, same version, same Node): a
    // from-source build of librdkafka here would take minutes of the test (docs/guides/kafka-client.md
    // describes what a user's install does). The only other install script among the dependencies is
    // protobufjs's postinstall, which checks its CLI's versions and builds nothing.
    npm(['install', '--no-package-lock', '--prefer-offline', join(work, tarball)], app, { npm_config_ignore_scripts: 'true' });
    const built = join(root, ...kafkaClient, 'build');
    if (!existsSync(built)) throw new Error(`${built} is missing: run \`npm run native\` first`);
    if (version(join(app, ...kafkaClient)) !== version(join(root, ...kafkaClient))) throw new Error('the package installed another @confluentinc/kafka-javascript than the checkout built');
    cpSync(built, join(app, ...kafkaClient, 'build'), { recursive: true, verbatimSymlinks: true });
    execFileSync('node', ['-e', "require('@confluentinc/kafka-javascript')"], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] }); // the addon loads there
    bin = join(app, 'node_modules', '.bin', 'plan-ledger');
  }, 600_000);
  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('installs from its tarball; its CLI serves the projector API and dashboard from dist; its entry exports the library', { timeout: 120_000 }, async () => {
    // The CLI runs from dist (the package ships no src/ and no tsx).
    expect(execFileSync(bin, ['--help'], { cwd: app, encoding: 'utf8' })).toContain('Usage: plan-ledger');
    const pkg = join(app, 'node_modules', 'plan-ledger');
    expect(readdirSync(pkg).sort()).toEqual(['README.md', 'bin', 'demo', 'dist', 'package.json', 'projector', 'schemas', 'stack'].sort());
    // The demo ships compiled (dist/demo) with its plan file; no TypeScript source ships at all.
    expect(readdirSync(join(pkg, 'demo'))).toEqual(['refund-plan.yaml']);
    expect(readdirSync(join(pkg, 'dist', 'demo'))).toEqual(expect.arrayContaining(['demo.js', 'tools.js', 'shop-service.js', 'agent-demo.js', 'agent-tools.js', 'shop-mcp.js']));
    const files = readdirSync(pkg, { recursive: true, encoding: 'utf8' });
    expect(files.filter((f) => /\.[cm]?ts$/.test(f) && !/\.d\.[cm]?ts$/.test(f))).toEqual([]);
    expect(existsSync(join(app, 'node_modules', 'tsx'))).toBe(false);

    // The library entry.
    writeFileSync(
      join(app, 'check.mjs'),
      "const m = await import('plan-ledger');\nconsole.log(JSON.stringify(['connectLedger', 'startExecutor', 'startProjector', 'defineTool', 'TerminalError', 'RetryableError', 'isLedgerError'].map((k) => [k, typeof m[k]])));\n",
    );
    const exported = JSON.parse(execFileSync('node', ['check.mjs'], { cwd: app, encoding: 'utf8' })) as Array<[string, string]>;
    expect(exported).toEqual([
      ['connectLedger', 'function'],
      ['startExecutor', 'function'],
      ['startProjector', 'function'],
      ['defineTool', 'function'],
      ['TerminalError', 'function'],
      ['RetryableError', 'function'],
      ['isLedgerError', 'function'],
    ]);

    // The projector from the installed CLI: health, the dashboard and its script.
    const config = testConfig();
    const port = await freePortBlock(1);
    const child = spawn(bin, ['projector', '--port', String(port)], { cwd: app, env: { ...process.env, ...configToEnv(config), PLAN_LEDGER_LOG_LEVEL: 'warn', PLAN_LEDGER_API_TOKEN: 'package-test-token-0123' }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    onTestFinished(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    });
    const base = `http://127.0.0.1:${port}`;
    const health = await waitFor(
      async () => {
        const r = await fetch(`${base}/healthz`).catch(() => null);
        const h = r?.ok ? ((await r.json()) as { status: string; partitions: unknown[] }) : null;
        return h && h.partitions.length === config.partitions ? h : null; // healthy, and every partition restored
      },
      { timeoutMs: 60_000, message: `installed projector healthy with every partition (stderr: ${stderr.slice(-500)})` },
    );
    expect(health.status).toBe('ok');
    expect(health.partitions).toHaveLength(config.partitions);
    const page = await fetch(`${base}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<script');
    const script = await fetch(`${base}/app.js`);
    expect(script.status).toBe(200);
    expect((await script.text()).length).toBeGreaterThan(1000);
    expect((await fetch(`${base}/api/plans`)).status).toBe(401); // reads need a token too
    const plans = (await (await fetch(`${base}/api/plans`, { headers: { authorization: 'Bearer package-test-token-0123' } })).json()) as { plans: unknown[] };
    expect(plans.plans).toEqual([]);

    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('runs `npx plan-ledger demo` in the clean folder against the test stack: one executor killed mid-payment, exactly one refund, verify OK with every key once', { timeout: 240_000 }, async () => {
    const { code, stdout, stderr } = await npxDemo(app, []);
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).not.toContain('local stack'); // neither started nor said to keep running

    // Two executors from the installed package (dist/demo/tools.js); the paying one SIGKILLed mid-call, the
    // other repeats the call with the same key and gets the original refund back.
    expect(stdout).toMatch(/executor-A\s+pid \d+, owns partitions [\d,]+/);
    expect(stdout).toMatch(/executor-B\s+pid \d+, owns partitions [\d,]+/);
    const { victim, survivor } = expectKillAndReplay(stdout);

    // What the payment service saw: one refund, two calls under one key, one e-mail.
    expect(stdout).toMatch(/refunds performed\s+1\s+rf_0001\s+119\.40 EUR\s+key …\/refund-payment\/1/);
    expect(stdout).toMatch(new RegExp(`calls\\s+2\\s+${victim} \\(performed\\), ${survivor} \\(replay, same key\\)`));
    expect(stdout).toMatch(/customer e-mails\s+1\n/);

    // verify, from the log: every check ok, every key in one record, seq 1..n for the n events it read.
    const verify = stdout.slice(stdout.indexOf('6. verify'), stdout.indexOf('── result'));
    const events = Number(/^OK {2}plan plan-\S+: (\d+) events, chain head [0-9a-f]{16}/m.exec(verify)?.[1]);
    expect(events, verify).toBeGreaterThan(10);
    expect(verify).toMatch(/ok\s+duplicates\s+every key in one record/);
    expect(verify).toMatch(new RegExp(`ok\\s+seq\\s+seq 1\\.\\.${events} contiguous`));
    expect(verify).toMatch(/ok\s+chain\s+hash chain intact/);
    expect(verify).toMatch(/ok\s+determinism\s+3 independent rebuilds agree/);
    expect(verify).not.toContain('FAIL');
    expect(stdout).toMatch(new RegExp(`IntentRecorded\\s+${victim}\\s+refund-payment#1`));
    expect(stdout).toMatch(new RegExp(`ResultCommitted\\s+${survivor}\\s+refund-payment#1\\s+…/refund-payment/1\\s+succeeded`));
    expect(stdout).toMatch(/completed; executor-[AB] was killed mid-payment; exactly 1 refund; verify OK/);
    expect(stdout).toContain('demo OK');
  });

  it('runs `npx plan-ledger demo --agent` there too: the shop\'s MCP server from dist without tsx, exactly one refund, verify OK', { timeout: 240_000 }, async () => {
    const { code, stdout, stderr } = await npxDemo(app, ['--agent']);
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toMatch(/turn-1\.call-0 +lookup_order \{"orderId":"A-1042"\}, intent by executor-[AB]/); // the MCP tool answered
    expect(stdout).toMatch(/SIGKILL\s+executor-[AB] \(pid \d+\) while the agent's refund call is in flight/);
    expect(stdout).toMatch(/refunds performed {3}1 {3}rf_0001 {2}113\.50 EUR/);
    expect(stdout).toMatch(/ok\s+duplicates\s+every key in one record/);
    expect(stdout).toMatch(/the model was asked 3 times for 3 turns; exactly 1 refund; verify OK/);
    expect(stdout).toContain('demo OK');
  });
});
