// The settings schema (src/settings.ts): every PLAN_LEDGER_* variable the code reads is declared there and
// read through it, and a bad value of every kind fails the same way: one line naming the variable, the value
// (redacted when secret) and what is allowed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startExecutor } from '../executor/index.js';
import { DEFAULT_EXECUTOR_CACHE_MIB } from '../executor/dormant-cache.js';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../executor/item-runner.js';
import { startProjector } from '../projector/index.js';
import { HTTP_DEFAULTS } from '../projector/http/index.js';
import { DEFAULT_PROJECTOR_CACHE_MIB, projectorCacheMib } from '../projector/projector.js';
import { DEFAULT_INLINE_BYTES, DEFAULT_MAX_PAYLOAD_BYTES, payloadLimitsFromEnv } from '../src/blobs/index.js';
import { loadConfig } from '../src/config.js';
import { masterKeyFromEnv } from '../src/crypto/index.js';
import { isLedgerError } from '../src/errors.js';
import { DEFAULT_LIMITS } from '../src/plan/index.js';
import { resolvePolicy } from '../src/policy-file.js';
import { COMPONENTS, describeSettings, loadSettings, setting, settingDefault, settingIfSet, settingNames, SETTINGS, type SettingName, type SettingSpec } from '../src/settings.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** Where the product's code lives (test/ holds the tests' own variables); docker-compose.yml reads one of its own. */
const SOURCE_DIRS = ['index.ts', 'src', 'executor', 'projector', 'stack', 'cli', 'bin', 'demo', 'chaos', 'bench', 'scripts', 'docker-compose.yml'];
const SCANNED = /\.(ts|js|mjs|cjs|md|sh)$/;
const SKIP = new Set(['node_modules', 'dist', 'public']);
const NAME = /PLAN_LEDGER_[A-Z0-9_]*[A-Z0-9]/g;

function files(dir: string): string[] {
  if (dir.includes('.')) return [dir];
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    if (SKIP.has(e.name)) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...files(p));
    else if (SCANNED.test(e.name)) out.push(p);
  }
  return out;
}

/** Variable name -> the files that name it. */
function namesIn(dirs: string[], except: string[] = []): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const file of dirs.flatMap(files)) {
    if (except.includes(file)) continue;
    for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(NAME)) {
      const where = found.get(m[0]) ?? [];
      if (!where.includes(file)) where.push(file);
      found.set(m[0], where);
    }
  }
  return found;
}

const declared = Object.keys(SETTINGS) as SettingName[];
const spec = (name: SettingName) => SETTINGS[name] as SettingSpec;
const difference = (a: Iterable<string>, b: Set<string>) => [...a].filter((x) => !b.has(x)).sort();

/** The error a call throws (fails the test when it throws none). */
function failure(f: () => unknown): Error & { code?: string; details?: Record<string, unknown> } {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a failure');
}

describe('every PLAN_LEDGER_* variable is declared once and read through the settings schema', () => {
  it('the variables the source names are exactly the declared ones (tests-only ones may live in test/ alone)', () => {
    const inSource = namesIn(SOURCE_DIRS, ['src/settings.ts']);
    const inTests = namesIn(['test']);
    const declaredSet = new Set<string>(declared);
    const undeclared = difference(inSource.keys(), declaredSet).map((n) => `${n} (${inSource.get(n)!.join(', ')})`);
    expect(undeclared, `named in the source but not declared in src/settings.ts: ${undeclared.join('; ')}`).toEqual([]);
    const testsOnly = new Set(declared.filter((n) => spec(n).testOnly && !inSource.has(n)));
    const unread = declared.filter((n) => !inSource.has(n) && !(testsOnly.has(n) && inTests.has(n)));
    expect(unread, `declared in src/settings.ts but read nowhere: ${unread.join(', ')}`).toEqual([]);
    const testUndeclared = difference(inTests.keys(), declaredSet).map((n) => `${n} (${inTests.get(n)!.join(', ')})`);
    expect(testUndeclared, `named by the tests but not declared: ${testUndeclared.join('; ')}`).toEqual([]);
  });

  it('nothing reads a PLAN_LEDGER_* variable from the environment but src/settings.ts (and the bin, before anything loads)', () => {
    // A read: process.env.X, env.X or env['X'] not followed by a plain assignment (a child's env may be written).
    const read = /(?:process\.env|\benv)(?:\.(PLAN_LEDGER_\w+)(?!\w)|\[\s*['"`](PLAN_LEDGER_\w+)['"`]\s*\])(?!\s*=(?!=))/g;
    const allowed = new Set(['bin/plan-ledger.js:PLAN_LEDGER_USE_DIST']);
    const direct: string[] = [];
    for (const file of SOURCE_DIRS.flatMap(files)) {
      if (file === 'src/settings.ts' || !/\.(ts|js|mjs|cjs)$/.test(file)) continue;
      const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
      lines.forEach((line, i) => {
        for (const m of line.matchAll(read)) {
          const name = m[1] ?? m[2]!;
          if (!allowed.has(`${file}:${name}`)) direct.push(`${file}:${i + 1} ${name}`);
        }
      });
    }
    expect(direct, `read around the settings schema (use setting()/loadSettings() from src/settings.ts): ${direct.join('; ')}`).toEqual([]);
  });

  it('each variable has a component, a one-line doc and a statement of what it allows; a default fits its own schema', () => {
    for (const name of declared) {
      const s = spec(name);
      expect(Object.keys(COMPONENTS), name).toContain(s.component);
      expect(s.doc, name).toMatch(/^\S.*\S$/);
      expect(s.doc, name).not.toContain('\n');
      expect(s.kind.allowed.length, name).toBeGreaterThan(0);
      expect(s.required, name).toBe(s.default !== undefined);
    }
    expect(settingNames().length).toBe(declared.length);
    // Each component's variables, counted (docs/reference/configuration.md lists them by component).
    const perComponent = Object.fromEntries(Object.keys(COMPONENTS).map((c) => [c, settingNames(c as keyof typeof COMPONENTS).length]));
    expect(perComponent).toEqual({ connection: 14, client: 7, executor: 10, projector: 10, stack: 6, development: 15 });
  });

  it('the defaults are the ones the code had (one source each: the declaration)', () => {
    expect(settingDefault('PLAN_LEDGER_TOOL_TIMEOUT_MS')).toBe(DEFAULT_TOOL_TIMEOUT_MS);
    expect(settingDefault('PLAN_LEDGER_MAX_ITEMS')).toBe(DEFAULT_LIMITS.maxItems);
    expect(settingDefault('PLAN_LEDGER_EXECUTOR_CACHE_MIB')).toBe(DEFAULT_EXECUTOR_CACHE_MIB);
    expect(settingDefault('PLAN_LEDGER_PROJECTOR_CACHE_MIB')).toBe(DEFAULT_PROJECTOR_CACHE_MIB);
    expect(settingDefault('PLAN_LEDGER_INLINE_PAYLOAD_BYTES')).toBe(DEFAULT_INLINE_BYTES);
    expect(settingDefault('PLAN_LEDGER_MAX_PAYLOAD_BYTES')).toBe(DEFAULT_MAX_PAYLOAD_BYTES);
    expect(settingDefault('PLAN_LEDGER_API_BODY_LIMIT')).toBe(HTTP_DEFAULTS.bodyLimitBytes);
    expect(settingDefault('PLAN_LEDGER_API_MAX_STREAMS')).toBe(HTTP_DEFAULTS.maxStreamClients);
    expect(loadSettings('executor', {})).toEqual({
      PLAN_LEDGER_SESSION_TIMEOUT_MS: 10_000,
      PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: 1_000,
      PLAN_LEDGER_TOOL_TIMEOUT_MS: 600_000,
      PLAN_LEDGER_MAX_ITEMS: 100_000,
      PLAN_LEDGER_CHECKPOINT_INTERVAL_MS: 1_000,
      PLAN_LEDGER_EXECUTOR_CACHE_MIB: 64,
      PLAN_LEDGER_GROUP_PROTOCOL: 'classic',
      PLAN_LEDGER_APPEND_LINGER_MS: 0,
      PLAN_LEDGER_POLICY: undefined,
      PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS: 5_000,
    });
    expect(setting('PLAN_LEDGER_STACK_DIR', { PLAN_LEDGER_CACHE_DIR: '/c' })).toBe('/c/stack');
  });
});

describe('reading a value', () => {
  it('parses each kind: integers, numbers, flags, enums, URLs and lists; an empty value counts as unset', () => {
    const env = {
      PLAN_LEDGER_PARTITIONS: ' 12 ',
      PLAN_LEDGER_EXECUTOR_CACHE_MIB: '0.5',
      PLAN_LEDGER_SSL: 'TRUE',
      PLAN_LEDGER_API_OPEN_READS: '0',
      PLAN_LEDGER_SASL_MECHANISM: 'SCRAM-SHA-512',
      PLAN_LEDGER_REGISTRY_URL: 'https://registry.example/apis/ccompat/v7',
      PLAN_LEDGER_BROKERS: ' b1:9092, b2:9093 ,',
      PLAN_LEDGER_API_CORS_ORIGINS: 'https://a.example,http://localhost:5173',
      PLAN_LEDGER_REPLICATION_FACTOR: '',
    };
    expect(setting('PLAN_LEDGER_PARTITIONS', env)).toBe(12);
    expect(setting('PLAN_LEDGER_EXECUTOR_CACHE_MIB', env)).toBe(0.5);
    expect(setting('PLAN_LEDGER_SSL', env)).toBe(true);
    expect(setting('PLAN_LEDGER_API_OPEN_READS', env)).toBe(false);
    expect(setting('PLAN_LEDGER_SASL_MECHANISM', env)).toBe('scram-sha-512');
    expect(setting('PLAN_LEDGER_REGISTRY_URL', env)).toBe('https://registry.example/apis/ccompat/v7');
    expect(setting('PLAN_LEDGER_BROKERS', env)).toEqual(['b1:9092', 'b2:9093']);
    expect(setting('PLAN_LEDGER_API_CORS_ORIGINS', env)).toEqual(['https://a.example', 'http://localhost:5173']);
    expect(setting('PLAN_LEDGER_REPLICATION_FACTOR', env)).toBe(-1);
    expect(settingIfSet('PLAN_LEDGER_REPLICATION_FACTOR', env)).toBeUndefined();
    expect(settingIfSet('PLAN_LEDGER_TOPIC_PREFIX', env)).toBeUndefined();
    expect(setting('PLAN_LEDGER_TOPIC_PREFIX', env)).toBe('plan-ledger');
  });

  it('each kind at its edges: signs, blanks, case, bounds, schemes, key length', () => {
    expect(setting('PLAN_LEDGER_PARTITIONS', { PLAN_LEDGER_PARTITIONS: ' +7 ' })).toBe(7);
    expect(setting('PLAN_LEDGER_PARTITIONS', { PLAN_LEDGER_PARTITIONS: '10000' })).toBe(10_000);
    expect(() => setting('PLAN_LEDGER_PARTITIONS', { PLAN_LEDGER_PARTITIONS: '10001' })).toThrow('expected an integer from 1 to 10000');
    expect(() => setting('PLAN_LEDGER_MAX_PAYLOAD_BYTES', { PLAN_LEDGER_MAX_PAYLOAD_BYTES: '9007199254740993' })).toThrow('expected a positive integer');
    expect(() => setting('PLAN_LEDGER_PARTITIONS', { PLAN_LEDGER_PARTITIONS: '1e3' })).toThrow('expected an integer');
    expect(setting('PLAN_LEDGER_EXECUTOR_CACHE_MIB', { PLAN_LEDGER_EXECUTOR_CACHE_MIB: '.25' })).toBe(0.25);
    expect(() => setting('PLAN_LEDGER_EXECUTOR_CACHE_MIB', { PLAN_LEDGER_EXECUTOR_CACHE_MIB: '0' })).toThrow('expected a positive number');
    expect(() => setting('PLAN_LEDGER_EXECUTOR_CACHE_MIB', { PLAN_LEDGER_EXECUTOR_CACHE_MIB: 'Infinity' })).toThrow('expected a positive number');
    expect(setting('PLAN_LEDGER_SSL', { PLAN_LEDGER_SSL: ' TRUE ' })).toBe(true);
    expect(setting('PLAN_LEDGER_SSL', { PLAN_LEDGER_SSL: '0' })).toBe(false);
    expect(setting('PLAN_LEDGER_SASL_MECHANISM', { PLAN_LEDGER_SASL_MECHANISM: 'PLAIN' })).toBe('plain');
    expect(() => setting('PLAN_LEDGER_LOG_LEVEL', { PLAN_LEDGER_LOG_LEVEL: 'INFO' })).toThrow('expected one of fatal');
    expect(setting('PLAN_LEDGER_REGISTRY_URL', { PLAN_LEDGER_REGISTRY_URL: ' http://127.0.0.1:8081/apis/ccompat/v7 ' })).toBe('http://127.0.0.1:8081/apis/ccompat/v7');
    expect(() => setting('PLAN_LEDGER_REGISTRY_URL', { PLAN_LEDGER_REGISTRY_URL: 'ftp://registry.example' })).toThrow('expected an http(s) URL');
    expect(() => setting('PLAN_LEDGER_REGISTRY_URL', { PLAN_LEDGER_REGISTRY_URL: 'http://' })).toThrow('expected an http(s) URL');
    expect(() => setting('PLAN_LEDGER_BROKERS', { PLAN_LEDGER_BROKERS: ' , ,' })).toThrow('expected a comma-separated list of host:port');
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(setting('PLAN_LEDGER_MASTER_KEY', { PLAN_LEDGER_MASTER_KEY: ` ${key}\n` })).toEqual(Buffer.alloc(32, 7));
    expect(() => setting('PLAN_LEDGER_MASTER_KEY', { PLAN_LEDGER_MASTER_KEY: Buffer.alloc(31).toString('base64') })).toThrow('expected 32 bytes in base64');
  });

  // One case per kind: the variable, a bad value, and the one line it fails with.
  const bad: [SettingName, string, string][] = [
    ['PLAN_LEDGER_PARTITIONS', 'six', 'PLAN_LEDGER_PARTITIONS="six" is not allowed: expected an integer from 1 to 10000'],
    ['PLAN_LEDGER_PARTITIONS', '0', 'PLAN_LEDGER_PARTITIONS="0" is not allowed: expected an integer from 1 to 10000'],
    ['PLAN_LEDGER_APPEND_LINGER_MS', '2.5', 'PLAN_LEDGER_APPEND_LINGER_MS="2.5" is not allowed: expected an integer from 0 to 60000'],
    ['PLAN_LEDGER_APPEND_LINGER_MS', 'soon', 'PLAN_LEDGER_APPEND_LINGER_MS="soon" is not allowed: expected an integer from 0 to 60000'],
    ['PLAN_LEDGER_SESSION_TIMEOUT_MS', '10s', 'PLAN_LEDGER_SESSION_TIMEOUT_MS="10s" is not allowed: expected an integer from 1 to 3600000'],
    ['PLAN_LEDGER_MAX_PAYLOAD_BYTES', 'lots', 'PLAN_LEDGER_MAX_PAYLOAD_BYTES="lots" is not allowed: expected a positive integer'],
    ['PLAN_LEDGER_HTTP_PORT', '70000', 'PLAN_LEDGER_HTTP_PORT="70000" is not allowed: expected a port number from 0 to 65535 (0: any free port)'],
    ['PLAN_LEDGER_EXECUTOR_CACHE_MIB', '-1', 'PLAN_LEDGER_EXECUTOR_CACHE_MIB="-1" is not allowed: expected a positive number of MiB (a fraction is fine)'],
    ['PLAN_LEDGER_SSL', 'yes', 'PLAN_LEDGER_SSL="yes" is not allowed: expected true, false, 1 or 0'],
    ['PLAN_LEDGER_LOG_LEVEL', 'loud', 'PLAN_LEDGER_LOG_LEVEL="loud" is not allowed: expected one of fatal, error, warn, info, debug, trace, silent'],
    ['PLAN_LEDGER_SASL_MECHANISM', 'gssapi', 'PLAN_LEDGER_SASL_MECHANISM="gssapi" is not allowed: expected one of plain, scram-sha-256, scram-sha-512 (any case)'],
    ['PLAN_LEDGER_REGISTRY_URL', 'registry:8081', 'PLAN_LEDGER_REGISTRY_URL="registry:8081" is not allowed: expected an http(s) URL'],
    ['PLAN_LEDGER_BROKERS', 'b1:9092,b2', 'PLAN_LEDGER_BROKERS="b1:9092,b2" is not allowed: expected a comma-separated list of host:port'],
    ['PLAN_LEDGER_API_CORS_ORIGINS', 'https://a.example/', 'PLAN_LEDGER_API_CORS_ORIGINS="https://a.example/" is not allowed: expected a comma-separated list of origins (scheme://host[:port], no path)'],
    ['PLAN_LEDGER_TOPIC_PREFIX', 'my prefix', 'PLAN_LEDGER_TOPIC_PREFIX="my prefix" is not allowed: expected 1 to 100 letters, digits, ".", "_" or "-"'],
    ['PLAN_LEDGER_FAULT', 'before_tool', 'PLAN_LEDGER_FAULT="before_tool" is not allowed: expected <point>[:<itemId>] with point after_intent, after_tool or after_result'],
    ['PLAN_LEDGER_MASTER_KEY', 'c2hvcnQ=', 'PLAN_LEDGER_MASTER_KEY=[secret] is not allowed: expected 32 bytes in base64 (44 characters; e.g. `openssl rand -base64 32`)'],
    ['PLAN_LEDGER_INLINE_PAYLOAD_BYTES', '300000', 'PLAN_LEDGER_INLINE_PAYLOAD_BYTES="300000" is not allowed: expected an integer from 1 to 262144'],
  ];

  it.each(bad)('%s=%j fails with one line naming the variable, the value and what is allowed', (name, value, message) => {
    const e = failure(() => setting(name, { [name]: value }));
    expect(isLedgerError(e, 'VALIDATION')).toBe(true);
    expect(e.message).toBe(message);
    expect(e.details).toEqual({ field: name });
    // The same at a component's start.
    expect(failure(() => loadSettings(spec(name).component, { [name]: value })).message).toBe(message);
  });

  it('a value is always one line in the error, and a long one is cut', () => {
    expect(failure(() => setting('PLAN_LEDGER_PARTITIONS', { PLAN_LEDGER_PARTITIONS: '6\n7' })).message).toBe('PLAN_LEDGER_PARTITIONS="6\\n7" is not allowed: expected an integer from 1 to 10000');
    expect(failure(() => setting('PLAN_LEDGER_PARTITIONS', { PLAN_LEDGER_PARTITIONS: 'x'.repeat(500) })).message).toContain(`"${'x'.repeat(200)}…"`);
  });

  it('a secret never shows, in an error or in the effective settings', () => {
    const key = 'bm90IGEga2V5IGF0IGFsbA==';
    expect(failure(() => setting('PLAN_LEDGER_MASTER_KEY_PREVIOUS', { PLAN_LEDGER_MASTER_KEY_PREVIOUS: key })).message).not.toContain(key);
    const rows = describeSettings({ PLAN_LEDGER_SASL_PASSWORD: 'hunter2', PLAN_LEDGER_API_TOKEN: 'tok-123', PLAN_LEDGER_PARTITIONS: '12' });
    const row = (n: SettingName) => rows.find((r) => r.name === n);
    expect(row('PLAN_LEDGER_SASL_PASSWORD')).toMatchObject({ value: '[secret]', source: 'env', secret: true });
    expect(row('PLAN_LEDGER_API_TOKEN')).toMatchObject({ value: '[secret]', source: 'env' });
    expect(row('PLAN_LEDGER_PARTITIONS')).toMatchObject({ value: '12', source: 'env' });
    expect(row('PLAN_LEDGER_TOPIC_PREFIX')).toMatchObject({ value: 'plan-ledger', source: 'default' });
    expect(row('PLAN_LEDGER_MASTER_KEY')).toMatchObject({ value: null, source: 'unset' });
    expect(row('PLAN_LEDGER_FAULT')).toMatchObject({ testOnly: true });
    expect(JSON.stringify(rows)).not.toMatch(/hunter2|tok-123/);
  });
});

describe('every component compiles its settings at start through the schema', () => {
  afterEach(() => vi.unstubAllEnvs());

  it('the connection (loadConfig), the payload limits, the master key, the policy and the projector cache', () => {
    const connection = { PLAN_LEDGER_BROKERS: 'a:1', PLAN_LEDGER_REGISTRY_URL: 'http://r/x' };
    expect(failure(() => loadConfig({}, { ...connection, PLAN_LEDGER_REPLICATION_FACTOR: 'three' })).message).toBe(
      'PLAN_LEDGER_REPLICATION_FACTOR="three" is not allowed: expected an integer from -1 to 32',
    );
    expect(failure(() => loadConfig({}, { ...connection, PLAN_LEDGER_SSL: 'on' })).message).toBe('PLAN_LEDGER_SSL="on" is not allowed: expected true, false, 1 or 0');
    expect(failure(() => payloadLimitsFromEnv({ PLAN_LEDGER_MAX_PAYLOAD_BYTES: '0' })).message).toBe('PLAN_LEDGER_MAX_PAYLOAD_BYTES="0" is not allowed: expected a positive integer');
    expect(failure(() => masterKeyFromEnv({ PLAN_LEDGER_MASTER_KEY: 'c2hvcnQ=' })).message).toMatch(/^PLAN_LEDGER_MASTER_KEY=\[secret\] is not allowed/);
    expect(failure(() => masterKeyFromEnv({ PLAN_LEDGER_MASTER_KEY_PREVIOUS: 'c2hvcnQ=' }, 'PLAN_LEDGER_MASTER_KEY_PREVIOUS')).message).toMatch(/^PLAN_LEDGER_MASTER_KEY_PREVIOUS=\[secret\]/);
    expect(failure(() => projectorCacheMib(undefined, { PLAN_LEDGER_PROJECTOR_CACHE_MIB: 'big' })).message).toBe(
      'PLAN_LEDGER_PROJECTOR_CACHE_MIB="big" is not allowed: expected a positive number of MiB (a fraction is fine)',
    );
    expect(projectorCacheMib(undefined, { PLAN_LEDGER_PROJECTOR_CACHE_MIB: '0.25' })).toBe(0.25);
    expect(resolvePolicy(undefined, { PLAN_LEDGER_POLICY: '' })).toBeUndefined();
  });

  it('the executor: a bad value fails startExecutor before anything connects (an unparsable linger used to become NaN)', async () => {
    vi.stubEnv('PLAN_LEDGER_BROKERS', '127.0.0.1:1');
    vi.stubEnv('PLAN_LEDGER_REGISTRY_URL', 'http://127.0.0.1:1/apis/ccompat/v7');
    vi.stubEnv('PLAN_LEDGER_APPEND_LINGER_MS', 'soon');
    await expect(startExecutor({ tools: [] })).rejects.toThrow('PLAN_LEDGER_APPEND_LINGER_MS="soon" is not allowed: expected an integer from 0 to 60000');
    vi.stubEnv('PLAN_LEDGER_APPEND_LINGER_MS', '5');
    // An integer that is not a number of milliseconds used to fall back to the default silently.
    vi.stubEnv('PLAN_LEDGER_TOOL_TIMEOUT_MS', '10m');
    await expect(startExecutor({ tools: [] })).rejects.toThrow('PLAN_LEDGER_TOOL_TIMEOUT_MS="10m" is not allowed: expected an integer from 1 to 2147483647');
  });

  it('the projector: a bad value fails startProjector before anything connects', async () => {
    vi.stubEnv('PLAN_LEDGER_API_MAX_STREAMS', 'many');
    await expect(startProjector({ config: { brokers: ['127.0.0.1:1'], registryUrl: 'http://127.0.0.1:1/x' } })).rejects.toThrow(
      'PLAN_LEDGER_API_MAX_STREAMS="many" is not allowed: expected an integer from 0 to 100000',
    );
  });
});

describe('the config takes the local stack as a source, not as an import', () => {
  it('uses the stack it is given for what the environment leaves out, and none when told so', () => {
    const stack = () => ({ brokers: ['127.0.0.1:19092'], registryUrl: 'http://127.0.0.1:18081/apis/ccompat/v7' });
    expect(loadConfig({}, {}, { stack })).toMatchObject({ brokers: ['127.0.0.1:19092'], registryUrl: 'http://127.0.0.1:18081/apis/ccompat/v7', partitions: 6 });
    expect(loadConfig({}, { PLAN_LEDGER_BROKERS: 'b:1' }, { stack })).toMatchObject({ brokers: ['b:1'], registryUrl: 'http://127.0.0.1:18081/apis/ccompat/v7' });
    const none = failure(() => loadConfig({}, {}, { stack: () => undefined }));
    expect(none.message).toBe('no Kafka broker configured: set PLAN_LEDGER_BROKERS or run `plan-ledger stack up`');
    expect(none.details).toMatchObject({ field: 'brokers', missing: true });
  });

  it('src/config.ts imports no module of the stack but its discovery (no JVMs, no Kafka admin)', () => {
    const imports = [...readFileSync(join(ROOT, 'src/config.ts'), 'utf8').matchAll(/from '(\.[^']+)'/g)].map((m) => m[1]);
    expect(imports.filter((i) => i!.includes('stack/'))).toEqual(['./stack/discovery.js']);
    const discovery = readFileSync(join(ROOT, 'src/stack/discovery.ts'), 'utf8');
    expect([...discovery.matchAll(/^import (?!type).*from '(\.[^']+)'/gm)].map((m) => m[1])).toEqual(['../settings.js', './pids.js']);
  });
});
