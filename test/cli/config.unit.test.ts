// `plan-ledger config` and a bad setting at a command's start, as child processes of the bin (no Kafka needed:
// a bad value fails before anything connects, and `config` connects to nothing).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { effectiveSettings, type EffectiveSetting } from '../../cli/config-action.js';
import { settingNames } from '../../src/settings.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const noStack = join(dir, 'no-stack');

/** The bin with only the given PLAN_LEDGER_* variables (none inherited), and no local stack unless one is named. */
function cli(args: string[], vars: Record<string, string>) {
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('PLAN_LEDGER_')));
  const r = spawnSync(process.execPath, ['bin/plan-ledger.js', ...args], { env: { ...env, PLAN_LEDGER_STACK_DIR: noStack, ...vars }, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const SASL_PASSWORD = 'hunter2-sasl-password';
const API_TOKEN = 'tok-0123456789abcdef-api';
const MASTER_KEY = Buffer.alloc(32, 7).toString('base64');

describe('a bad value fails a command at its start: exit 2, one line on stderr, no stack trace', () => {
  it('the executor (an unparsable linger used to become NaN in the appender)', () => {
    const r = cli(['executor', '--tools', 'test/fixtures/tools.ts'], { PLAN_LEDGER_BROKERS: '127.0.0.1:1', PLAN_LEDGER_APPEND_LINGER_MS: 'soon' });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('plan-ledger: PLAN_LEDGER_APPEND_LINGER_MS="soon" is not allowed: expected an integer from 0 to 60000\n');
  });

  it('the executor, with a value the old parser ignored (the default applied silently)', () => {
    const r = cli(['executor', '--tools', 'test/fixtures/tools.ts'], { PLAN_LEDGER_MAX_ITEMS: '1e5' });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('plan-ledger: PLAN_LEDGER_MAX_ITEMS="1e5" is not allowed: expected a positive integer\n');
  });

  it('the projector, a secret: the value is never printed', () => {
    const r = cli(['projector'], { PLAN_LEDGER_MASTER_KEY: 'not-the-right-length-secret' });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('plan-ledger: PLAN_LEDGER_MASTER_KEY=[secret] is not allowed: expected 32 bytes in base64 (44 characters; e.g. `openssl rand -base64 32`)\n');
  });

  it('any command, for the CLI\'s own variables', () => {
    const r = cli(['config'], { PLAN_LEDGER_DEBUG: 'verbose' });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('plan-ledger: PLAN_LEDGER_DEBUG="verbose" is not allowed: expected true, false, 1 or 0\n');
  });
});

describe('plan-ledger config', () => {
  const vars = {
    PLAN_LEDGER_BROKERS: 'b1:9092,b2:9092',
    PLAN_LEDGER_REGISTRY_URL: 'http://registry.local:8081/apis/ccompat/v7',
    PLAN_LEDGER_PARTITIONS: '12',
    PLAN_LEDGER_SASL_MECHANISM: 'SCRAM-SHA-512',
    PLAN_LEDGER_SASL_USERNAME: 'executor',
    PLAN_LEDGER_SASL_PASSWORD: SASL_PASSWORD,
    PLAN_LEDGER_API_TOKEN: API_TOKEN,
    PLAN_LEDGER_MASTER_KEY: MASTER_KEY,
  };

  it('prints every variable with its effective value and source, secrets redacted', () => {
    const r = cli(['config'], vars);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const line = (name: string) => r.stdout.split('\n').find((l) => l.trim().startsWith(`${name} `))?.trim().split(/\s{2,}/);
    expect(line('PLAN_LEDGER_BROKERS')).toEqual(['PLAN_LEDGER_BROKERS', 'b1:9092,b2:9092', 'env']);
    expect(line('PLAN_LEDGER_PARTITIONS')).toEqual(['PLAN_LEDGER_PARTITIONS', '12', 'env']);
    expect(line('PLAN_LEDGER_SASL_MECHANISM')).toEqual(['PLAN_LEDGER_SASL_MECHANISM', 'scram-sha-512', 'env']);
    expect(line('PLAN_LEDGER_SASL_PASSWORD')).toEqual(['PLAN_LEDGER_SASL_PASSWORD', '[secret]', 'env']);
    expect(line('PLAN_LEDGER_API_TOKEN')).toEqual(['PLAN_LEDGER_API_TOKEN', '[secret]', 'env']);
    expect(line('PLAN_LEDGER_MASTER_KEY')).toEqual(['PLAN_LEDGER_MASTER_KEY', '[secret]', 'env']);
    expect(line('PLAN_LEDGER_TOPIC_PREFIX')).toEqual(['PLAN_LEDGER_TOPIC_PREFIX', 'plan-ledger', 'default']);
    expect(line('PLAN_LEDGER_TOOL_TIMEOUT_MS')).toEqual(['PLAN_LEDGER_TOOL_TIMEOUT_MS', '600000', 'default']);
    expect(line('PLAN_LEDGER_POLICY')).toEqual(['PLAN_LEDGER_POLICY', '-', 'unset']);
    expect(line('PLAN_LEDGER_FAULT')).toEqual(['PLAN_LEDGER_FAULT', '-', 'unset (tests only)']);
    expect(r.stdout).toMatch(/^connection: the Kafka cluster/m);
    expect(r.stdout).toMatch(/^executor: /m);
    for (const secret of [SASL_PASSWORD, API_TOKEN, MASTER_KEY]) expect(r.stdout).not.toContain(secret);
  });

  it('--json: one object per declared variable, secrets redacted', () => {
    const r = cli(['config', '--json'], vars);
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as EffectiveSetting[];
    expect(rows.map((x) => x.name)).toEqual(settingNames());
    const row = (name: string) => rows.find((x) => x.name === name);
    expect(row('PLAN_LEDGER_SASL_PASSWORD')).toEqual({ name: 'PLAN_LEDGER_SASL_PASSWORD', component: 'connection', value: '[secret]', source: 'env', secret: true, testOnly: false });
    expect(row('PLAN_LEDGER_HTTP_PORT')).toMatchObject({ value: '8787', source: 'default' });
    expect(row('PLAN_LEDGER_STACK_DIR')).toMatchObject({ value: noStack, source: 'env' });
    for (const secret of [SASL_PASSWORD, API_TOKEN, MASTER_KEY]) expect(r.stdout).not.toContain(secret);
  });

  it('shows what the running local stack supplies with source "stack"', () => {
    // A stack folder as `stack up` leaves it, whose pid files name a live process (this test's).
    const stackDir = join(dir, 'stack');
    rmSync(stackDir, { recursive: true, force: true });
    mkdirSync(stackDir, { recursive: true });
    writeFileSync(join(stackDir, 'stack.json'), JSON.stringify({ brokers: ['127.0.0.1:19092'], registryUrl: 'http://127.0.0.1:18081/apis/ccompat/v7', dir: stackDir, nodes: 1, replicationFactor: 1 }));
    for (const name of ['kafka-1', 'registry']) writeFileSync(join(stackDir, `${name}.pid`), JSON.stringify({ name, pid: process.pid, marker: '', logFile: '', startedAt: '' }));
    const r = cli(['config', '--json'], { PLAN_LEDGER_STACK_DIR: stackDir, PLAN_LEDGER_TOPIC_PREFIX: 'billing' });
    expect(r.code, r.stderr).toBe(0);
    const rows = JSON.parse(r.stdout) as EffectiveSetting[];
    const row = (name: string) => rows.find((x) => x.name === name);
    expect(row('PLAN_LEDGER_BROKERS')).toMatchObject({ value: '127.0.0.1:19092', source: 'stack' });
    expect(row('PLAN_LEDGER_REGISTRY_URL')).toMatchObject({ value: 'http://127.0.0.1:18081/apis/ccompat/v7', source: 'stack' });
    expect(row('PLAN_LEDGER_TOPIC_PREFIX')).toMatchObject({ value: 'billing', source: 'env' });
    expect(row('PLAN_LEDGER_PARTITIONS')).toMatchObject({ value: '6', source: 'default' });
  });

  it('a SASL stack: the login it supplies shows as "stack", its password file by path, the password never', () => {
    const pwFile = join(dir, 'client.password');
    writeFileSync(pwFile, 'stack-secret-pw', { mode: 0o600 });
    const security = { protocol: 'SASL_SSL' as const, mechanism: 'SCRAM-SHA-512' as const, caFile: join(dir, 'ca.pem'), passwordFiles: { admin: pwFile, executor: pwFile, projector: pwFile, client: pwFile, auditor: pwFile } };
    const rows = effectiveSettings({ PLAN_LEDGER_SASL_USERNAME: 'client' }, () => ({ brokers: ['127.0.0.1:19092'], registryUrl: 'http://127.0.0.1:18081/x', security }));
    const row = (name: string) => rows.find((x) => x.name === name);
    expect(row('PLAN_LEDGER_SASL_USERNAME')).toMatchObject({ value: 'client', source: 'env' });
    expect(row('PLAN_LEDGER_SASL_MECHANISM')).toMatchObject({ value: 'scram-sha-512', source: 'stack' });
    expect(row('PLAN_LEDGER_SASL_PASSWORD_FILE')).toMatchObject({ value: pwFile, source: 'stack' });
    expect(row('PLAN_LEDGER_SSL')).toMatchObject({ value: 'true', source: 'stack' });
    expect(row('PLAN_LEDGER_SSL_CA_FILE')).toMatchObject({ value: security.caFile, source: 'stack' });
    expect(JSON.stringify(rows)).not.toContain('stack-secret-pw');
  });
});
