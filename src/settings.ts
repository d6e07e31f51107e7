/**
 * Every `PLAN_LEDGER_*` variable, declared once: its component, its type (a parser of the variable's
 * text), what it allows in words, its default and one line of doc. Nothing else in the code reads a
 * `PLAN_LEDGER_*` variable from the environment: it asks {@link setting}, {@link settingIfSet} or
 * {@link loadSettings}, and a bad value fails there, the same way everywhere, with one line naming the
 * variable, the value (`[secret]` for a secret) and what is allowed (see {@link invalidSetting}).
 *
 * `plan-ledger config` prints the effective settings ({@link describeSettings}), and
 * docs/reference/configuration.md is generated from this file (`npm run docs`).
 *
 * This module imports nothing of the ledger but its errors: every layer may read its settings.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { LedgerError } from './errors.js';

type Env = NodeJS.ProcessEnv;

/** The components the variables belong to, in the order the reference lists them. */
export const COMPONENTS = {
  connection: { title: 'Connection', doc: 'the Kafka cluster and the schema registry; every component reads these' },
  client: { title: 'Client', doc: 'every process that reads or writes plans: the library client, the CLI, executors and projectors' },
  executor: { title: 'Executor', doc: 'the executor (`plan-ledger executor`, `startExecutor`)' },
  projector: { title: 'Projector', doc: 'the projector, its HTTP API and dashboard (`plan-ledger projector`, `startProjector`)' },
  stack: { title: 'Local stack', doc: 'the local stack (`plan-ledger stack`) and the tools it runs' },
  development: { title: 'Development and tests', doc: 'development, diagnosis, tests, the demo and the benchmarks; never needed in production' },
} as const;
export type Component = keyof typeof COMPONENTS;

/** What {@link SettingKind.parse} returns for a text the kind does not allow. */
export const NOT_ALLOWED: unique symbol = Symbol('not allowed');

/** How a variable's text becomes its value. */
export interface SettingKind<T> {
  /** A short name of the type, for the reference. */
  readonly type: string;
  /** What the variable allows, in words; the error of a bad value ends "expected <allowed>". */
  readonly allowed: string;
  /** The value of a (non-empty) text, or {@link NOT_ALLOWED}. */
  readonly parse: (raw: string) => T | typeof NOT_ALLOWED;
}

export interface SettingSpec<T = unknown, Required extends boolean = boolean, C extends Component = Component> {
  readonly component: C;
  readonly kind: SettingKind<T>;
  /** One line: what the variable does. */
  readonly doc: string;
  /** True when the variable has a default (its value is never undefined). */
  readonly required: Required;
  readonly default?: T | ((env: Env) => T);
  /** The default in words, where it is not a plain value (a path under the home folder, "the local stack"). */
  readonly defaultText?: string;
  /** Passwords, tokens, keys: never shown, in an error or by `plan-ledger config`. */
  readonly secret?: boolean;
  /** Read only by tests (or by the code only when a test asks for it). */
  readonly testOnly?: boolean;
  /** A page that tells more, as a repository path (`docs/guides/security.md#rotating-the-master-key`). */
  readonly see?: string;
}

// ---------------------------------------------------------------------------------------------------
// Kinds

const MAX_TIMER_MS = 2_147_483_647; // the longest setTimeout Node keeps
/**
 * The furthest PLAN_LEDGER_CLOCK_OFFSET_MS may shift an executor's clock (30 min): a Kafka 4 broker refuses
 * records stamped more than log.message.timestamp.after.max.ms (1 h by default) ahead of its own clock.
 */
export const CLOCK_OFFSET_MAX_MS = 1_800_000;
/** The most PLAN_LEDGER_INLINE_PAYLOAD_BYTES may be set to (256 KiB): the ledger keeps inline payloads at most that. */
export const MAX_INLINE_PAYLOAD_BYTES = 262_144;

function integer(min: number, max: number, allowed = `an integer from ${min} to ${max}`): SettingKind<number> {
  return {
    type: 'integer',
    allowed,
    parse: (raw) => {
      const t = raw.trim();
      if (!/^[+-]?\d+$/.test(t)) return NOT_ALLOWED;
      const n = Number(t);
      return Number.isSafeInteger(n) && n >= min && n <= max ? n : NOT_ALLOWED;
    },
  };
}

const positiveInteger = (what = ''): SettingKind<number> => integer(1, Number.MAX_SAFE_INTEGER, `a positive integer${what}`);

const positiveNumber = (allowed: string): SettingKind<number> => ({
  type: 'number',
  allowed,
  parse: (raw) => {
    const t = raw.trim();
    if (!/^(\d+\.?\d*|\.\d+)$/.test(t)) return NOT_ALLOWED;
    const n = Number(t);
    return Number.isFinite(n) && n > 0 ? n : NOT_ALLOWED;
  },
});

const flag = (): SettingKind<boolean> => ({
  type: 'flag',
  allowed: 'true, false, 1 or 0',
  parse: (raw) => {
    const t = raw.trim().toLowerCase();
    return t === 'true' || t === '1' ? true : t === 'false' || t === '0' ? false : NOT_ALLOWED;
  },
});

function oneOf<const V extends readonly [string, ...string[]]>(values: V, opts: { ignoreCase?: boolean } = {}): SettingKind<V[number]> {
  return {
    type: 'enum',
    allowed: `one of ${values.join(', ')}${opts.ignoreCase ? ' (any case)' : ''}`,
    parse: (raw) => {
      const t = opts.ignoreCase ? raw.trim().toLowerCase() : raw.trim();
      return (values as readonly string[]).includes(t) ? (t as V[number]) : NOT_ALLOWED;
    },
  };
}

const text = (pattern: RegExp, allowed: string, type = 'string'): SettingKind<string> => ({ type, allowed, parse: (raw) => (pattern.test(raw) ? raw : NOT_ALLOWED) });
const anyText = (allowed = 'any text'): SettingKind<string> => ({ type: 'string', allowed, parse: (raw) => raw });
const path = (allowed = 'a file path'): SettingKind<string> => ({ type: 'path', allowed, parse: (raw) => (raw.length > 0 ? raw : NOT_ALLOWED) });

/** A comma-separated list whose every entry matches `item`; blanks around the commas and empty entries are dropped. */
function list(item: RegExp, allowed: string, type: string): SettingKind<string[]> {
  return {
    type,
    allowed,
    parse: (raw) => {
      const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
      return entries.length > 0 && entries.every((e) => item.test(e)) ? entries : NOT_ALLOWED;
    },
  };
}

/** An absolute http(s) URL (as the WHATWG URL parser reads it), trimmed. */
const httpUrl = (): SettingKind<string> => ({
  type: 'url',
  allowed: 'an http(s) URL',
  parse: (raw) => {
    const t = raw.trim();
    if (!URL.canParse(t)) return NOT_ALLOWED;
    const { protocol } = new URL(t);
    return protocol === 'http:' || protocol === 'https:' ? t : NOT_ALLOWED;
  },
});

/** 32 bytes in base64, trimmed. */
const masterKey = (): SettingKind<Buffer> => ({
  type: 'key',
  allowed: '32 bytes in base64 (44 characters; e.g. `openssl rand -base64 32`)',
  parse: (raw) => {
    const t = raw.trim();
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(t)) return NOT_ALLOWED;
    const b = Buffer.from(t, 'base64');
    return b.length === 32 ? b : NOT_ALLOWED;
  },
});

// ---------------------------------------------------------------------------------------------------
// Declarations

type Extra = Pick<SettingSpec, 'defaultText' | 'secret' | 'testOnly' | 'see'>;

function declare<C extends Component, T>(
  component: C,
  kind: SettingKind<T>,
  doc: string,
  opts: { default: T | ((env: Env) => T) } & Extra,
): SettingSpec<T, true, C>;
function declare<C extends Component, T>(
  component: C,
  kind: SettingKind<T>,
  doc: string,
  opts?: Extra,
): SettingSpec<T, false, C>;
function declare<C extends Component, T>(
  component: C,
  kind: SettingKind<T>,
  doc: string,
  opts: { default?: T | ((env: Env) => T) } & Extra = {},
): SettingSpec<T, boolean, C> {
  return Object.freeze({ component, kind, doc, required: 'default' in opts, ...opts });
}

const cacheDirDefault = () => join(homedir(), '.cache', 'plan-ledger');

/** Every variable, by component. Adding one here is the whole of declaring it (the reference is generated). */
export const SETTINGS = {
  // connection
  PLAN_LEDGER_BROKERS: declare('connection', list(/^[^\s:]+:\d{1,5}$/, 'a comma-separated list of host:port', 'host:port list'), 'Kafka bootstrap servers.', {
    defaultText: 'the running local stack',
  }),
  PLAN_LEDGER_REGISTRY_URL: declare('connection', httpUrl(), 'Confluent-compatible schema registry (Apicurio: `…/apis/ccompat/v7`).', { defaultText: 'the running local stack' }),
  PLAN_LEDGER_REGISTRY_USERNAME: declare('connection', anyText(), 'User of the registry\'s basic auth.'),
  PLAN_LEDGER_REGISTRY_PASSWORD: declare('connection', anyText(), 'Password of the registry\'s basic auth (with PLAN_LEDGER_REGISTRY_USERNAME).', { secret: true }),
  PLAN_LEDGER_TOPIC_PREFIX: declare('connection', text(/^[A-Za-z0-9._-]{1,100}$/, '1 to 100 letters, digits, ".", "_" or "-"'), 'Prefix of every topic and group: `<prefix>.plan-commands`, `<prefix>.executors`, …', {
    default: 'plan-ledger',
  }),
  PLAN_LEDGER_CLIENT_ID: declare('connection', anyText(), 'Kafka client id.', { default: 'plan-ledger' }),
  PLAN_LEDGER_PARTITIONS: declare('connection', integer(1, 10_000), 'Partitions of each plan topic; fixed once the topics exist.', { default: 6 }),
  PLAN_LEDGER_REPLICATION_FACTOR: declare('connection', integer(-1, 32), 'Replication factor of the topics plan-ledger creates; -1 takes the broker\'s default.', { default: -1 }),
  PLAN_LEDGER_SSL: declare('connection', flag(), 'TLS to the brokers.', { default: false }),
  PLAN_LEDGER_SSL_CA_FILE: declare('connection', path('a PEM file path'), 'PEM file of the certificates to trust for Kafka TLS; implies PLAN_LEDGER_SSL.'),
  PLAN_LEDGER_SASL_MECHANISM: declare('connection', oneOf(['plain', 'scram-sha-256', 'scram-sha-512'], { ignoreCase: true }), 'SASL mechanism; with it, PLAN_LEDGER_SASL_USERNAME and a password.'),
  PLAN_LEDGER_SASL_USERNAME: declare('connection', anyText(), 'SASL user (on the local `--sasl` stack the only variable needed: the password comes from the stack).'),
  PLAN_LEDGER_SASL_PASSWORD: declare('connection', anyText(), 'SASL password; not with PLAN_LEDGER_SASL_PASSWORD_FILE.', { secret: true }),
  PLAN_LEDGER_SASL_PASSWORD_FILE: declare('connection', path(), 'File holding the SASL password (a child process gets the path, not the password).', { see: 'docs/guides/security.md' }),

  // client
  PLAN_LEDGER_MASTER_KEY: declare('client', masterKey(), 'Master key that wraps each plan\'s data key (PLAN_LEDGER_MASTER_KEY_FILE wins).', { secret: true, see: 'docs/concepts/erasure-and-keys.md' }),
  PLAN_LEDGER_MASTER_KEY_FILE: declare('client', path(), 'File holding the master key (32 bytes in base64).', { see: 'docs/concepts/erasure-and-keys.md' }),
  PLAN_LEDGER_MASTER_KEY_PREVIOUS: declare('client', masterKey(), 'Previous master key during a rotation: still unwraps keys not re-wrapped yet.', { secret: true, see: 'docs/guides/security.md#rotating-the-master-key' }),
  PLAN_LEDGER_MASTER_KEY_PREVIOUS_FILE: declare('client', path(), 'File holding the previous master key during a rotation.', { see: 'docs/guides/security.md#rotating-the-master-key' }),
  PLAN_LEDGER_INLINE_PAYLOAD_BYTES: declare('client', integer(1, MAX_INLINE_PAYLOAD_BYTES), 'Payloads above this many UTF-8 bytes are stored by reference (blob records).', { default: 65_536, see: 'docs/reference/limits.md' }),
  PLAN_LEDGER_MAX_PAYLOAD_BYTES: declare('client', positiveInteger(), 'Payloads above this many bytes are refused (PAYLOAD_TOO_LARGE).', { default: 67_108_864, see: 'docs/reference/limits.md' }),
  PLAN_LEDGER_LOG_LEVEL: declare('client', oneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'pino level of executors and projectors; the CLI logs (to stderr) only when it is set.', {
    default: 'info',
  }),

  // executor
  PLAN_LEDGER_SESSION_TIMEOUT_MS: declare('executor', integer(1, 3_600_000), 'Executor group session timeout; failover time follows it.', { default: 10_000 }),
  PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: declare('executor', integer(1, 3_600_000), 'Executor group heartbeat interval.', { default: 1_000 }),
  PLAN_LEDGER_GROUP_PROTOCOL: declare(
    'executor',
    oneOf(['classic', 'consumer']),
    'Group protocol of executors and projectors: classic (the two settings above apply), or consumer (the broker assigns; session and heartbeat come from the broker\'s group.consumer.* settings or the group\'s config, and the two settings above are not used).',
    { default: 'classic', see: 'docs/guides/kafka-client.md#group-protocol' },
  ),
  PLAN_LEDGER_TOOL_TIMEOUT_MS: declare('executor', integer(1, MAX_TIMER_MS), 'Longest a tool call may run before its attempt fails with TIMEOUT; a tool\'s own timeoutMs wins.', { default: 600_000, see: 'docs/reference/limits.md' }),
  PLAN_LEDGER_MAX_ITEMS: declare('executor', positiveInteger(), 'Most items one plan may hold.', { default: 100_000, see: 'docs/reference/limits.md' }),
  PLAN_LEDGER_CHECKPOINT_INTERVAL_MS: declare('executor', integer(1, MAX_TIMER_MS), 'Closest two checkpoint writes of one attempt may follow each other; calls in between coalesce.', { default: 1_000 }),
  PLAN_LEDGER_EXECUTOR_CACHE_MIB: declare('executor', positiveNumber('a positive number of MiB (a fraction is fine)'), 'MiB of finished plans kept in memory; evicted ones are read back from their events.', { default: 64, see: 'docs/guides/running-executors.md#memory' }),
  PLAN_LEDGER_APPEND_LINGER_MS: declare('executor', integer(0, 60_000), 'How long a partition\'s first append request waits for company before its transaction starts.', { default: 0 }),
  PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS: declare(
    'executor',
    integer(100, 60_000),
    'How often an executor re-publishes its heartbeat on <prefix>.plan-executors; readers count it stale after three intervals without one.',
    { default: 5_000, see: 'docs/guides/running-executors.md#who-runs' },
  ),
  PLAN_LEDGER_POLICY: declare('executor', path('a policy file path (YAML or JSON)'), 'Approval policy file applied to new plans and new items.', { see: 'docs/guides/approval-policy.md' }),

  // projector
  PLAN_LEDGER_HTTP_PORT: declare('projector', integer(0, 65_535, 'a port number from 0 to 65535 (0: any free port)'), 'Port of the projector\'s HTTP API and dashboard.', { default: 8787 }),
  PLAN_LEDGER_HTTP_HOST: declare('projector', text(/^[^\s/]+$/, 'a host name or IP address', 'host'), 'Address the projector\'s HTTP server listens on.', { default: '127.0.0.1' }),
  PLAN_LEDGER_API_TOKEN: declare('projector', anyText(), 'One read+write bearer token of the API (principal `api-token`); also `plan-ledger mcp --http`.', { secret: true }),
  PLAN_LEDGER_API_TOKENS_FILE: declare('projector', path(), 'File of API tokens with principals and scopes (JSON array or JSON lines); also `plan-ledger mcp --http`.', { see: 'docs/guides/running-the-projector.md#api-tokens' }),
  PLAN_LEDGER_API_OPEN_READS: declare('projector', flag(), 'Read routes answer without a token (local development).', { default: false }),
  PLAN_LEDGER_API_CORS_ORIGINS: declare(
    'projector',
    list(/^[a-z][a-z0-9+.-]*:\/\/[^\s/]+$/i, 'a comma-separated list of origins (scheme://host[:port], no path)', 'origin list'),
    'Origins allowed by CORS.',
    { defaultText: 'none' },
  ),
  PLAN_LEDGER_API_BODY_LIMIT: declare('projector', integer(1024, 1024 ** 3, 'a byte count from 1024 to 1073741824 (1 KiB to 1 GiB)'), 'Largest request body in bytes; 413 past it.', { default: 1_048_576 }),
  PLAN_LEDGER_API_MAX_STREAMS: declare('projector', integer(0, 100_000), 'Concurrent /api/stream clients; 503 past it.', { default: 100 }),
  PLAN_LEDGER_API_BIND: declare('projector', text(/^[^\s/]+$/, 'an IP address', 'host'), 'Interface the projector\'s published port binds to; read by `docker-compose.yml` only.', { default: '127.0.0.1' }),
  PLAN_LEDGER_PROJECTOR_CACHE_MIB: declare('projector', positiveNumber('a positive number of MiB (a fraction is fine)'), 'MiB of finished plans held in memory; past it they go cold (read from the archive on demand).', {
    default: 256,
    see: 'docs/concepts/snapshots-and-watermarks.md#memory',
  }),

  // stack
  PLAN_LEDGER_CACHE_DIR: declare('stack', path('a folder path'), 'Where the stack\'s artifacts (Kafka, Apicurio, tools) are downloaded.', { default: cacheDirDefault, defaultText: '~/.cache/plan-ledger' }),
  PLAN_LEDGER_STACK_DIR: declare('stack', path('a folder path'), 'The local stack\'s data, logs, pid files and stack.json.', {
    default: (env: Env): string => join(setting('PLAN_LEDGER_CACHE_DIR', env) as string, 'stack'),
    defaultText: '<PLAN_LEDGER_CACHE_DIR>/stack',
    see: 'docs/guides/local-stack.md',
  }),
  PLAN_LEDGER_STACK_KAFKA_PORT: declare('stack', integer(1, 65_535, 'a port number from 1 to 65535'), 'Port of the stack\'s first Kafka node: node i on port+2i, its controller on port+2i+1.', { default: 9092 }),
  PLAN_LEDGER_STACK_REGISTRY_PORT: declare('stack', integer(1, 65_535, 'a port number from 1 to 65535'), 'Port of the stack\'s schema registry (its management interface on port+10).', { default: 8081 }),
  PLAN_LEDGER_STACK_JVM: declare(
    'stack',
    oneOf(['server', 'lean']),
    'How the stack\'s JVMs run: `server` (G1, the optimizing JIT: the throughput benchmarks measure) or `lean` (the serial collector and the first JIT tier only: about half the CPU to start and to serve a test suite; the tests use it).',
    { default: 'server' },
  ),
  PLAN_LEDGER_JAVA_HOME: declare('stack', path('a folder path (a JDK or JRE)'), 'The Java runtime the stack runs (else JAVA_HOME, `java` on PATH, /usr/lib/jvm).'),

  // development
  PLAN_LEDGER_DEBUG: declare('development', flag(), 'The CLI prints the stack trace of an unexpected error.', { default: false }),
  PLAN_LEDGER_KAFKA_DEBUG: declare(
    'development',
    text(/^[a-z]+(,[a-z]+)*$/, 'a comma-separated list of librdkafka debug contexts (e.g. metadata,topic,fetch,eos, or all)', 'context list'),
    'librdkafka debug contexts for every Kafka handle of the process, logged at pino\'s trace level.',
  ),
  PLAN_LEDGER_USE_DIST: declare('development', flag(), '`bin/plan-ledger.js` runs the compiled `dist/` even in a source checkout.', { default: false }),
  PLAN_LEDGER_EXECUTOR_LABEL: declare('development', anyText(), 'A name for an executor process in the demo\'s and the chaos run\'s output (its tools send it along).'),
  PLAN_LEDGER_PEER_CACHE: declare('development', path('a folder path'), 'Where the `peer` benchmark installs Restate.', {
    default: () => join(homedir(), '.cache', 'plan-ledger', 'peer'),
    defaultText: '~/.cache/plan-ledger/peer',
  }),
  PLAN_LEDGER_FAULT: declare(
    'development',
    text(/^(after_intent|after_tool|after_result)(:.+)?$/, '<point>[:<itemId>] with point after_intent, after_tool or after_result', 'fault'),
    'The executor kills itself (SIGKILL) at that item-protocol boundary (crash tests).',
    { testOnly: true },
  ),
  PLAN_LEDGER_CLOCK_OFFSET_MS: declare(
    'development',
    integer(-CLOCK_OFFSET_MAX_MS, CLOCK_OFFSET_MAX_MS),
    'Shifts every wall-clock read of an executor process by this many ms (event times, retry and wait timers, record timestamps), as on a host whose clock is off; the startExecutor option clockOffsetMs wins.',
    { default: 0, testOnly: true, see: 'docs/concepts/item-protocol.md#clocks' },
  ),
  PLAN_LEDGER_TEST_CRASH_IN_TOOL: declare('development', anyText('an item id'), 'The test tools kill their process inside the tool of this item.', { testOnly: true }),
  PLAN_LEDGER_TEST_CRASH_AFTER_CHECKPOINT: declare('development', integer(0, Number.MAX_SAFE_INTEGER, 'a page number (an integer of at least 0)'), 'The test paging tool kills its process right after checkpointing this page.', {
    testOnly: true,
  }),
  PLAN_LEDGER_TEST_WAITING: declare('development', integer(1, 1_000_000), 'Plans waiting at once in the executor\'s load test.', { default: 10_000, testOnly: true }),
  PLAN_LEDGER_KEEP_STACK: declare('development', flag(), 'Leave the local stack running after the tests started it.', { default: false, testOnly: true }),
  PLAN_LEDGER_KEEP_TOPICS: declare('development', flag(), 'Keep the topics a test file made (by default each file deletes them when it ends).', { default: false, testOnly: true }),
  PLAN_LEDGER_CHROMIUM: declare('development', path('an executable path'), 'A Chromium for the dashboard\'s browser tests (else the bundled one).', { testOnly: true }),
  PLAN_LEDGER_DOCS_SCREENSHOTS: declare('development', flag(), "The dashboard's browser test also writes the screenshots the docs show (the plan view, an opened agent turn, the executors page) into docs/; else only into test-results/.", { default: false, testOnly: true }),
  PLAN_LEDGER_PYTHON: declare('development', anyText('a command'), 'The Python that runs the MCP Python-client test.', { default: 'python3', testOnly: true }),
} as const satisfies Record<`PLAN_LEDGER_${string}`, SettingSpec<unknown, boolean>>;

export type SettingName = keyof typeof SETTINGS;
type ValueOf<S> = S extends SettingSpec<infer T, infer R> ? (R extends true ? T : T | undefined) : never;
/** The value a variable has once read: its type, or undefined when it has no default and is not set. */
export type SettingValue<N extends SettingName> = ValueOf<(typeof SETTINGS)[N]>;
type NamesOf<C extends Component> = { [N in SettingName]: (typeof SETTINGS)[N]['component'] extends C ? N : never }[SettingName];
/** The variables of some components, by name. */
export type Settings<C extends Component> = { readonly [N in NamesOf<C>]: SettingValue<N> };

const spec = (name: SettingName): SettingSpec => SETTINGS[name] as SettingSpec;

// ---------------------------------------------------------------------------------------------------
// Reading

/** A value as an error shows it: quoted as JSON (one line whatever it holds), cut past 200 characters; `[secret]` for a secret. */
export function shownValue(name: SettingName, raw: string): string {
  if (spec(name).secret) return '[secret]';
  return JSON.stringify(raw.length > 200 ? `${raw.slice(0, 200)}…` : raw);
}

/**
 * The one error of a bad value, the same for every variable: one line naming the variable, the value
 * (`[secret]` for a secret) and what is allowed. VALIDATION: the CLI exits 2.
 */
export function invalidSetting(name: SettingName, raw: string): LedgerError {
  return new LedgerError('VALIDATION', `${name}=${shownValue(name, raw)} is not allowed: expected ${spec(name).kind.allowed}`, { field: name });
}

/** The text of a variable, or undefined when it is not set (an empty value counts as not set). */
function rawOf(name: SettingName, env: Env): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

function parse(name: SettingName, raw: string): unknown {
  const value = spec(name).kind.parse(raw);
  if (value === NOT_ALLOWED) throw invalidSetting(name, raw);
  return value;
}

/** The default of a variable (undefined when it has none). */
export function settingDefault<N extends SettingName>(name: N, env: Env = process.env): SettingValue<N> {
  const d = spec(name).default;
  return (typeof d === 'function' ? (d as (env: Env) => unknown)(env) : d) as SettingValue<N>;
}

/** A variable's value when it is set, else its default; a bad value throws {@link invalidSetting}. */
export function setting<N extends SettingName>(name: N, env: Env = process.env): SettingValue<N> {
  const raw = rawOf(name, env);
  return raw === undefined ? settingDefault(name, env) : (parse(name, raw) as SettingValue<N>);
}

/** A variable's value only when it is set (no default): for code whose default depends on more than the variable. */
export function settingIfSet<N extends SettingName>(name: N, env: Env = process.env): Exclude<SettingValue<N>, undefined> | undefined {
  const raw = rawOf(name, env);
  return raw === undefined ? undefined : (parse(name, raw) as Exclude<SettingValue<N>, undefined>);
}

/** The names of the variables of some components, in declaration order. */
export function settingNames(components?: Component | readonly Component[]): SettingName[] {
  const wanted = components === undefined ? undefined : new Set<Component>(typeof components === 'string' ? [components] : components);
  return (Object.keys(SETTINGS) as SettingName[]).filter((n) => wanted === undefined || wanted.has(spec(n).component));
}

/**
 * Compiles the variables of a component (or several) at its start: every one read and checked, the first
 * bad one failing with {@link invalidSetting}.
 *
 * @example
 * const s = loadSettings('projector');
 * s.PLAN_LEDGER_HTTP_PORT; // 8787 unless set
 */
export function loadSettings<C extends Component>(components: C | readonly C[], env: Env = process.env): Settings<C> {
  const out: Record<string, unknown> = {};
  for (const name of settingNames(components)) out[name] = setting(name, env);
  return Object.freeze(out) as Settings<C>;
}

export type SettingSource = 'env' | 'default' | 'unset';

export interface SettingRow {
  readonly name: SettingName;
  readonly component: Component;
  /** The value as text (lists joined with ","); `[secret]` for a secret that is set; null when unset. */
  readonly value: string | null;
  readonly source: SettingSource;
  readonly secret: boolean;
  readonly testOnly: boolean;
}

/** A value as text: lists joined with ",", the rest as String() does. */
export function settingText(value: unknown): string {
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** Every variable's effective value and where it came from, secrets redacted (`plan-ledger config`). A bad value throws. */
export function describeSettings(env: Env = process.env): SettingRow[] {
  return settingNames().map((name) => {
    const s = spec(name);
    const raw = rawOf(name, env);
    const value = setting(name, env);
    const source: SettingSource = raw !== undefined ? 'env' : value !== undefined ? 'default' : 'unset';
    const shown = value === undefined ? null : s.secret ? '[secret]' : settingText(value);
    return { name, component: s.component, value: shown, source, secret: s.secret === true, testOnly: s.testOnly === true };
  });
}
