import { readFileSync } from 'node:fs';
import { LedgerError } from './errors.js';
import { settingDefault, settingIfSet } from './settings.js';
import { readStackInfo, type StackInfo, type StackSecurity } from './stack/discovery.js';

const SASL_MECHANISMS = ['plain', 'scram-sha-256', 'scram-sha-512'] as const;

/** Validated, frozen configuration shared by the library, the executor, the projector and the CLI. */
export interface LedgerConfig {
  /** Kafka bootstrap servers. */
  readonly brokers: string[];
  /** Confluent-compatible schema registry base URL (Apicurio: .../apis/ccompat/v7). */
  readonly registryUrl: string;
  readonly registryAuth?: { username: string; password: string };
  /** Prefix of every topic and group: <prefix>.plan-commands, <prefix>.executors, ... */
  readonly topicPrefix: string;
  readonly clientId: string;
  /** Partitions of each plan topic (all three co-partitioned). Fixed for the life of the topics. */
  readonly partitions: number;
  /** Replication factor for topics plan-ledger creates; -1 takes the broker's default. */
  readonly replicationFactor: number;
  readonly ssl: boolean;
  /** A PEM file of the certificate(s) to trust for Kafka TLS (PLAN_LEDGER_SSL_CA_FILE); implies `ssl`. */
  readonly sslCaFile?: string;
  readonly sasl?: {
    mechanism: (typeof SASL_MECHANISMS)[number];
    username: string;
    password: string;
    /** Where the password was read from (PLAN_LEDGER_SASL_PASSWORD_FILE); children get the file, not the password. */
    passwordFile?: string;
  };
}
export type LedgerConfigInput = Partial<LedgerConfig>;

/** A secret kept in a file (the whole file, trailing newline dropped); a missing or unreadable file names the variable. */
function readSecretFile(path: string, variable: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (e) {
    throw new LedgerError('VALIDATION', `${variable}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? 'error'})`, { field: 'sasl.password' });
  }
}

/**
 * On the local SASL stack (`stack up --sasl`) a component names only its user, PLAN_LEDGER_SASL_USERNAME;
 * the password comes from that user's file in the stack.
 */
function saslFromStack(security: StackSecurity, env: NodeJS.ProcessEnv): Record<string, string> {
  const users = Object.keys(security.passwordFiles).filter((u) => u !== 'admin');
  const user = settingIfSet('PLAN_LEDGER_SASL_USERNAME', env);
  if (!user || !Object.hasOwn(security.passwordFiles, user)) {
    throw new LedgerError('VALIDATION', `the local stack runs with SASL: set PLAN_LEDGER_SASL_USERNAME to ${users.join(', ')} (the password is read from the stack)`, { field: 'sasl.username' });
  }
  const passwordFile = security.passwordFiles[user as keyof typeof security.passwordFiles];
  return { mechanism: security.mechanism.toLowerCase(), username: user, password: readSecretFile(passwordFile, 'the stack password file'), passwordFile };
}

/** The environment's contribution (PLAN_LEDGER_*), before defaults; a bad value fails naming the variable (see src/settings.ts). */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): LedgerConfigInput {
  const c: Record<string, unknown> = {};
  const set = (k: string, v: unknown) => {
    if (v !== undefined) c[k] = v;
  };
  set('brokers', settingIfSet('PLAN_LEDGER_BROKERS', env));
  set('registryUrl', settingIfSet('PLAN_LEDGER_REGISTRY_URL', env));
  set('topicPrefix', settingIfSet('PLAN_LEDGER_TOPIC_PREFIX', env));
  set('clientId', settingIfSet('PLAN_LEDGER_CLIENT_ID', env));
  set('partitions', settingIfSet('PLAN_LEDGER_PARTITIONS', env));
  set('replicationFactor', settingIfSet('PLAN_LEDGER_REPLICATION_FACTOR', env));
  set('ssl', settingIfSet('PLAN_LEDGER_SSL', env));
  const caFile = settingIfSet('PLAN_LEDGER_SSL_CA_FILE', env);
  if (caFile) {
    set('ssl', true);
    set('sslCaFile', caFile);
  }
  const mechanism = settingIfSet('PLAN_LEDGER_SASL_MECHANISM', env);
  const saslUsername = settingIfSet('PLAN_LEDGER_SASL_USERNAME', env);
  const saslPassword = settingIfSet('PLAN_LEDGER_SASL_PASSWORD', env);
  const passwordFile = settingIfSet('PLAN_LEDGER_SASL_PASSWORD_FILE', env);
  if (mechanism) {
    if (passwordFile && saslPassword) {
      throw new LedgerError('VALIDATION', 'PLAN_LEDGER_SASL_PASSWORD and PLAN_LEDGER_SASL_PASSWORD_FILE are both set: set one', { field: 'sasl.password' });
    }
    set('sasl', {
      mechanism,
      username: saslUsername ?? '',
      password: passwordFile ? readSecretFile(passwordFile, 'PLAN_LEDGER_SASL_PASSWORD_FILE') : (saslPassword ?? ''),
      ...(passwordFile ? { passwordFile } : {}),
    });
  }
  const registryUsername = settingIfSet('PLAN_LEDGER_REGISTRY_USERNAME', env);
  if (registryUsername) {
    set('registryAuth', { username: registryUsername, password: settingIfSet('PLAN_LEDGER_REGISTRY_PASSWORD', env) ?? '' });
  }
  return c as LedgerConfigInput;
}

/**
 * The PLAN_LEDGER_* variables that reproduce `config` in a child process (executors, the CLI): the
 * inverse of {@link configFromEnv}, so a parent hands its whole connection down, SASL and TLS included.
 */
export function configToEnv(config: LedgerConfig): Record<string, string> {
  const env: Record<string, string> = {
    PLAN_LEDGER_BROKERS: config.brokers.join(','),
    PLAN_LEDGER_REGISTRY_URL: config.registryUrl,
    PLAN_LEDGER_TOPIC_PREFIX: config.topicPrefix,
    PLAN_LEDGER_CLIENT_ID: config.clientId,
    PLAN_LEDGER_PARTITIONS: String(config.partitions),
    PLAN_LEDGER_REPLICATION_FACTOR: String(config.replicationFactor),
  };
  if (config.ssl) env.PLAN_LEDGER_SSL = 'true';
  if (config.sslCaFile) env.PLAN_LEDGER_SSL_CA_FILE = config.sslCaFile;
  if (config.sasl) {
    env.PLAN_LEDGER_SASL_MECHANISM = config.sasl.mechanism;
    env.PLAN_LEDGER_SASL_USERNAME = config.sasl.username;
    if (config.sasl.passwordFile) env.PLAN_LEDGER_SASL_PASSWORD_FILE = config.sasl.passwordFile;
    else env.PLAN_LEDGER_SASL_PASSWORD = config.sasl.password;
  }
  if (config.registryAuth) {
    env.PLAN_LEDGER_REGISTRY_USERNAME = config.registryAuth.username;
    env.PLAN_LEDGER_REGISTRY_PASSWORD = config.registryAuth.password;
  }
  return env;
}

/** Where a running local stack is found: its addresses, and how to log in to a SASL stack. */
export type StackEndpoints = Pick<StackInfo, 'brokers' | 'registryUrl' | 'security'>;

/** Sources of configuration besides the explicit input and the environment. */
export interface ConfigSources {
  /**
   * The running local stack, asked only when the brokers or the registry are still missing (default: the
   * stack in PLAN_LEDGER_STACK_DIR, see src/stack/discovery.ts; `() => undefined` for none).
   */
  readonly stack?: () => StackEndpoints | undefined;
}

/**
 * Compiles the configuration once: explicit values, then PLAN_LEDGER_* variables, then the running
 * local stack (`plan-ledger stack up`) for the broker and registry addresses, then defaults.
 * A bad value fails with its field path (or its variable) and the reason.
 *
 * @example
 * const config = loadConfig({ topicPrefix: 'billing-agent' });
 */
export function loadConfig(input: LedgerConfigInput = {}, env: NodeJS.ProcessEnv = process.env, sources: ConfigSources = {}): LedgerConfig {
  const merged: Record<string, unknown> = {
    topicPrefix: settingDefault('PLAN_LEDGER_TOPIC_PREFIX'),
    clientId: settingDefault('PLAN_LEDGER_CLIENT_ID'),
    partitions: settingDefault('PLAN_LEDGER_PARTITIONS'),
    replicationFactor: settingDefault('PLAN_LEDGER_REPLICATION_FACTOR'),
    ssl: settingDefault('PLAN_LEDGER_SSL'),
    ...configFromEnv(env),
    ...stripUndefined(input),
  };
  if (merged.brokers === undefined || merged.registryUrl === undefined) {
    const stack = (sources.stack ?? readStackInfo)();
    if (stack) {
      const fromStack = merged.brokers === undefined;
      merged.brokers ??= stack.brokers;
      merged.registryUrl ??= stack.registryUrl;
      if (fromStack && stack.security && merged.sasl === undefined) merged.sasl = saslFromStack(stack.security, env);
      if (fromStack && stack.security?.caFile && merged.sslCaFile === undefined) Object.assign(merged, { ssl: true, sslCaFile: stack.security.caFile });
    }
  }
  if (merged.brokers === undefined) {
    throw new LedgerError('VALIDATION', 'no Kafka broker configured: set PLAN_LEDGER_BROKERS or run `plan-ledger stack up`', { field: 'brokers', missing: true });
  }
  if (merged.registryUrl === undefined) {
    throw new LedgerError('VALIDATION', 'no schema registry configured: set PLAN_LEDGER_REGISTRY_URL or run `plan-ledger stack up`', { field: 'registryUrl', missing: true });
  }
  const config = validConfig(merged);
  return Object.freeze({ ...config, brokers: Object.freeze([...config.brokers]) as string[] });
}

/** A bad field of the merged configuration: `invalid config <field path>: <what it must be>`. */
function invalidConfig(field: string, message: string): LedgerError {
  return new LedgerError('VALIDATION', `invalid config ${field}: ${message}`, { field });
}

const isText = (v: unknown, min = 0): v is string => typeof v === 'string' && v.length >= min;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function integerIn(m: Record<string, unknown>, field: string, min: number, max: number): number {
  const v = m[field];
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw invalidConfig(field, `expected an integer from ${min} to ${max}`);
  return v;
}

/**
 * The merged configuration checked field by field, in the order of {@link LedgerConfig}; the first bad
 * field fails with its path (`brokers.0`, `sasl.mechanism`). Only the known fields are kept.
 */
function validConfig(m: Record<string, unknown>): LedgerConfig {
  const brokers = m.brokers;
  if (!Array.isArray(brokers) || brokers.length === 0) throw invalidConfig('brokers', 'expected a non-empty list of host:port');
  brokers.forEach((b, i) => {
    if (!isText(b) || !/^[^\s:]+:\d{1,5}$/.test(b)) throw invalidConfig(`brokers.${i}`, 'host:port');
  });
  const registryUrl = m.registryUrl;
  if (!isText(registryUrl) || !URL.canParse(registryUrl)) throw invalidConfig('registryUrl', 'expected a URL');
  let registryAuth: LedgerConfig['registryAuth'];
  if (m.registryAuth !== undefined) {
    const a = m.registryAuth;
    if (!isObject(a)) throw invalidConfig('registryAuth', 'expected { username, password }');
    if (!isText(a.username)) throw invalidConfig('registryAuth.username', 'expected a string');
    if (!isText(a.password)) throw invalidConfig('registryAuth.password', 'expected a string');
    registryAuth = { username: a.username, password: a.password };
  }
  const topicPrefix = m.topicPrefix;
  if (!isText(topicPrefix) || !/^[A-Za-z0-9._-]{1,100}$/.test(topicPrefix)) throw invalidConfig('topicPrefix', 'letters, digits, ".", "_", "-"');
  const clientId = m.clientId;
  if (!isText(clientId, 1)) throw invalidConfig('clientId', 'expected a non-empty string');
  const partitions = integerIn(m, 'partitions', 1, 10_000);
  const replicationFactor = integerIn(m, 'replicationFactor', -1, 32);
  if (typeof m.ssl !== 'boolean') throw invalidConfig('ssl', 'expected true or false');
  const ssl = m.ssl;
  const sslCaFile = m.sslCaFile;
  if (sslCaFile !== undefined && !isText(sslCaFile, 1)) throw invalidConfig('sslCaFile', 'expected a file path');
  let sasl: LedgerConfig['sasl'];
  if (m.sasl !== undefined) {
    const a = m.sasl;
    if (!isObject(a)) throw invalidConfig('sasl', 'expected { mechanism, username, password }');
    const mechanism = a.mechanism;
    if (!(SASL_MECHANISMS as readonly unknown[]).includes(mechanism)) throw invalidConfig('sasl.mechanism', `expected one of ${SASL_MECHANISMS.join(', ')}`);
    if (!isText(a.username, 1)) throw invalidConfig('sasl.username', 'expected a non-empty string');
    if (!isText(a.password, 1)) throw invalidConfig('sasl.password', 'expected a non-empty string');
    if (a.passwordFile !== undefined && !isText(a.passwordFile, 1)) throw invalidConfig('sasl.passwordFile', 'expected a file path');
    sasl = { mechanism: mechanism as (typeof SASL_MECHANISMS)[number], username: a.username, password: a.password, ...(a.passwordFile !== undefined ? { passwordFile: a.passwordFile } : {}) };
  }
  return {
    brokers: [...(brokers as string[])],
    registryUrl,
    ...(registryAuth ? { registryAuth } : {}),
    topicPrefix,
    clientId,
    partitions,
    replicationFactor,
    ssl,
    ...(sslCaFile !== undefined ? { sslCaFile } : {}),
    ...(sasl ? { sasl } : {}),
  };
}

function stripUndefined(o: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** Topic and group names derived from the prefix (docs/design.md#topics-and-ownership). */
export function topicNames(prefix: string) {
  return {
    commands: `${prefix}.plan-commands`,
    events: `${prefix}.plan-events`,
    snapshots: `${prefix}.plan-snapshots`,
    archive: `${prefix}.plan-archive`,
    dlq: `${prefix}.plan-dlq`,
    blobs: `${prefix}.plan-blobs`,
    planKeys: `${prefix}.plan-keys`,
    /** Each executor's announcement and heartbeat (src/executors/announcement.ts), compacted, one partition. */
    planExecutors: `${prefix}.plan-executors`,
    streams: `${prefix}.plan-streams`,
    executorsGroup: `${prefix}.executors`,
    projectorGroup: `${prefix}.projector`,
  } as const;
}
