import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { LedgerError } from './errors.js';
import { settingDefault, settingIfSet } from './settings.js';
import { readStackInfo, type StackInfo, type StackSecurity } from './stack/discovery.js';

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
    /** Each executor's announcement and heartbeat (src/executors/announcement.ts), compacted, one partition. */
    planExecutors: `${prefix}.plan-executors`,
    streams: `${prefix}.plan-streams`,
    executorsGroup: `${prefix}.executors`,
    projectorGroup: `${prefix}.projector`,
  } as const;
}
