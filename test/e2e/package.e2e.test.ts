// The package as a user installs it: built with `npm run build`, packed with `npm pack`, installed into an
// empty project with npm, then its CLI (from dist/, no TypeScript) serves the projector's API and
// dashboard against the real broker and registry, and its library entry exports the documented API.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { configToEnv } from '../../src/config.js';
import { freePortBlock, testConfig, waitFor } from '../support/helpers.js';

const root = resolve(import.meta.dirname, '../..');
const npm = (args: string[], cwd: string, env: Record<string, string> = {}) =>
  execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false', ...env } });

describe('the installed package', () => {
  it('installs from its tarball; its CLI serves the projector API and dashboard from dist; its entry exports the library', { timeout: 600_000 }, async () => {
    const work = mkdtempSync(join(tmpdir(), 'plan-ledger-pkg-'));
    onTestFinished(() => rmSync(work, { recursive: true, force: true }));
    npm(['run', 'build'], root);
    npm(['pack', '--pack-destination', work], root);
    const tarball = readdirSync(work).find((f) => f.startsWith('plan-ledger-') && f.endsWith('.tgz'));
    expect(tarball).toBeDefined();
    const app = join(work, 'app');
    execFileSync('mkdir', ['-p', app]);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
    // As a user without the internet installs it: the Kafka client's prebuilt binary cannot be downloaded,
    // so its install builds the bundled librdkafka against the system's OpenSSL and zlib (docs/guides/kafka-client.md).
    // Scripts on: under `npm test` this repo's .npmrc (ignore-scripts) reaches child processes as npm_config_*.
    npm(['install', '--no-package-lock', join(work, tarball!)], app, { CKJS_LINKING: 'dynamic', npm_config_ignore_scripts: 'false' });
    const bin = join(app, 'node_modules', '.bin', 'plan-ledger');

    // The CLI runs from dist (the package ships no src/ and no tsx).
    expect(execFileSync(bin, ['--help'], { cwd: app, encoding: 'utf8' })).toContain('Usage: plan-ledger');
    expect(readdirSync(join(app, 'node_modules', 'plan-ledger')).sort()).toEqual(['README.md', 'bin', 'dist', 'package.json', 'projector', 'schemas', 'stack'].sort());

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
});
