import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { LedgerError } from './errors.js';
import { readStackInfo, type StackSecurity } from './stack/stack.js';

const saslSchema = z.object({
  mechanism: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']),
  username: z.string().min(1),
  password: z.string().min(1),
  /** Where the password was read from (PLAN_LEDGER_SASL_PASSWORD_FILE); children get the file, not the password. */
  passwordFile: z.string().min(1).optional(),
});

const configSchema = z.object({
  /** Kafka bootstrap servers. */
  brokers: z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'host:port')).min(1),
  /** Confluent-compatible schema registry base URL (Apicurio: .../apis/ccompat/v7). */
  registryUrl: z.url(),
  registryAuth: z.object({ username: z.string(), password: z.string() }).optional(),
  /** Prefix of every topic and group: <prefix>.plan-commands, <prefix>.executors, ... */
  topicPrefix: z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'letters, digits, ".", "_", "-"'),
  clientId: z.string().min(1),
  /** Partitions of each plan topic (all three co-partitioned). Fixed for the life of the topics. */
  partitions: z.number().int().min(1).max(10_000),
  /** Replication factor for topics plan-ledger creates; -1 takes the broker's default. */
  replicationFactor: z.number().int().min(-1).max(32),
  ssl: z.boolean(),
  /** A PEM file of the certificate(s) to trust for Kafka TLS (PLAN_LEDGER_SSL_CA_FILE); implies `ssl`. */
  sslCaFile: z.string().min(1).optional(),
  sasl: saslSchema.optional(),
});

/** Validated, frozen configuration shared by the library, the executor, the projector and the CLI. */
export type LedgerConfig = Readonly<z.infer<typeof configSchema>>;
export type LedgerConfigInput = Partial<LedgerConfig>;

function list(v: string | undefined): string[] | undefined {
  return v === undefined || v === '' ? undefined : v.split(',').map((s) => s.trim()).filter(Boolean);
}

function int(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const v = env[name];
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n)) throw new LedgerError('VALIDATION', `${name}: expected an integer, got "${v}"`, { field: name });
  return n;
}

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
  const user = env.PLAN_LEDGER_SASL_USERNAME;
  if (!user || !Object.hasOwn(security.passwordFiles, user)) {
    throw new LedgerError('VALIDATION', `the local stack runs with SASL: set PLAN_LEDGER_SASL_USERNAME to ${users.join(', ')} (the password is read from the stack)`, { field: 'sasl.username' });
  }
  const passwordFile = security.passwordFiles[user as keyof typeof security.passwordFiles];
  return { mechanism: security.mechanism.toLowerCase(), username: user, password: readSecretFile(passwordFile, 'the stack password file'), passwordFile };
}

/** The environment's contribution (PLAN_LEDGER_*), before defaults. */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env): LedgerConfigInput {
  const c: Record<string, unknown> = {};
  const set = (k: string, v: unknown) => {
    if (v !== undefined) c[k] = v;
  };
  set('brokers', list(env.PLAN_LEDGER_BROKERS));
  set('registryUrl', env.PLAN_LEDGER_REGISTRY_URL || undefined);
  set('topicPrefix', env.PLAN_LEDGER_TOPIC_PREFIX || undefined);
  set('clientId', env.PLAN_LEDGER_CLIENT_ID || undefined);
  set('partitions', int(env, 'PLAN_LEDGER_PARTITIONS'));
  set('replicationFactor', int(env, 'PLAN_LEDGER_REPLICATION_FACTOR'));
  if (env.PLAN_LEDGER_SSL) set('ssl', env.PLAN_LEDGER_SSL === 'true' || env.PLAN_LEDGER_SSL === '1');
  if (env.PLAN_LEDGER_SSL_CA_FILE) {
    set('ssl', true);
    set('sslCaFile', env.PLAN_LEDGER_SSL_CA_FILE);
  }
  if (env.PLAN_LEDGER_SASL_MECHANISM) {
    const passwordFile = env.PLAN_LEDGER_SASL_PASSWORD_FILE || undefined;
    if (passwordFile && env.PLAN_LEDGER_SASL_PASSWORD) {
      throw new LedgerError('VALIDATION', 'PLAN_LEDGER_SASL_PASSWORD and PLAN_LEDGER_SASL_PASSWORD_FILE are both set: set one', { field: 'sasl.password' });
    }
    set('sasl', {
      mechanism: env.PLAN_LEDGER_SASL_MECHANISM.toLowerCase(),
      username: env.PLAN_LEDGER_SASL_USERNAME ?? '',
      password: passwordFile ? readSecretFile(passwordFile, 'PLAN_LEDGER_SASL_PASSWORD_FILE') : (env.PLAN_LEDGER_SASL_PASSWORD ?? ''),
      ...(passwordFile ? { passwordFile } : {}),
    });
  }
  if (env.PLAN_LEDGER_REGISTRY_USERNAME) {
    set('registryAuth', { username: env.PLAN_LEDGER_REGISTRY_USERNAME, password: env.PLAN_LEDGER_REGISTRY_PASSWORD ?? '' });
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

/**
 * Compiles the configuration once: explicit values, then PLAN_LEDGER_* variables, then the running
 * local stack (`plan-ledger stack up`) for the broker and registry addresses, then defaults.
 * A bad value fails with its field path and the reason.
 *
 * @example
 * const config = loadConfig({ topicPrefix: 'billing-agent' });
 */
export function loadConfig(input: LedgerConfigInput = {}, env: NodeJS.ProcessEnv = process.env): LedgerConfig {
  const merged: Record<string, unknown> = {
    topicPrefix: 'plan-ledger',
    clientId: 'plan-ledger',
    partitions: 6,
    replicationFactor: -1,
    ssl: false,
    ...configFromEnv(env),
    ...stripUndefined(input),
  };
  if (merged.brokers === undefined || merged.registryUrl === undefined) {
    const stack = readStackInfo();
    if (stack) {
      const fromStack = merged.brokers === undefined;
      merged.brokers ??= stack.brokers;
      merged.registryUrl ??= stack.registryUrl;
      if (fromStack && stack.security && merged.sasl === undefined) merged.sasl = saslFromStack(stack.security, env);
      if (fromStack && stack.security?.caFile && merged.sslCaFile === undefined) Object.assign(merged, { ssl: true, sslCaFile: stack.security.caFile });
    }
  }
  if (merged.brokers === undefined) {
    throw new LedgerError('VALIDATION', 'no Kafka broker configured: set PLAN_LEDGER_BROKERS or run `plan-ledger stack up`', { field: 'brokers' });
  }
  if (merged.registryUrl === undefined) {
    throw new LedgerError('VALIDATION', 'no schema registry configured: set PLAN_LEDGER_REGISTRY_URL or run `plan-ledger stack up`', { field: 'registryUrl' });
  }
  const parsed = configSchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.') || '(root)';
    throw new LedgerError('VALIDATION', `invalid config ${field}: ${issue.message}`, { field });
  }
  return Object.freeze({ ...parsed.data, brokers: Object.freeze([...parsed.data.brokers]) as string[] });
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
    executorsGroup: `${prefix}.executors`,
    projectorGroup: `${prefix}.projector`,
  } as const;
}
