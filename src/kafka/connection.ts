// What every librdkafka handle of a client shares, and what the rest of src/kafka/ reads its errors with:
// the connection settings, the handle's logs and error channel, and the meaning of Kafka's error codes.
// A leaf under client.ts (which makes the handles): admin, reader, member and writers import it, not client.ts.
import type { LedgerConfig } from '../config.js';
import { LedgerError } from '../errors.js';
import type { Logger } from '../logging.js';
import { setting } from '../settings.js';
import { confluent } from './native.js';

/** librdkafka configuration properties (`bootstrap.servers`, `sasl.username`, …). */
export type RdConfig = Record<string, string | number | boolean | ((...args: never[]) => unknown)>;

/** The librdkafka log levels (syslog) for a pino level. */
function rdLogLevel(logger: Logger): number {
  switch (logger.level) {
    case 'trace':
    case 'debug':
      return 7;
    case 'info':
      return 6;
    case 'warn':
      return 4;
    case 'error':
    case 'fatal':
      return 3;
    default:
      return 0;
  }
}

/**
 * The connection settings every librdkafka handle of a client shares: brokers, client id, TLS, SASL,
 * reconnect backoff, and logs routed into the ledger's logger.
 */
export function connectionConfig(config: LedgerConfig, clientId: string, logger: Logger): RdConfig {
  const tls = config.ssl || config.sslCaFile !== undefined;
  const rd: RdConfig = {
    'bootstrap.servers': config.brokers.join(','),
    'client.id': clientId,
    'security.protocol': config.sasl ? (tls ? 'sasl_ssl' : 'sasl_plaintext') : tls ? 'ssl' : 'plaintext',
    'reconnect.backoff.ms': 50,
    'reconnect.backoff.max.ms': 2000,
    'retry.backoff.ms': 50,
    'retry.backoff.max.ms': 1000,
    'topic.metadata.refresh.interval.ms': 30_000,
    'socket.keepalive.enable': true,
    // Small requests (one transaction's markers, one command) go out at once, not after a delayed ACK.
    'socket.nagle.disable': true,
    // One line per broker that is down, not one per attempt: librdkafka says when it comes back.
    'log.connection.close': false,
    // Errors at least, whatever the logger's level: a refused login's reason comes only as a log line.
    log_level: Math.max(3, rdLogLevel(logger)),
    event_cb: true,
  };
  // librdkafka's own debug contexts (e.g. `metadata,topic,fetch,eos`), at its debug level, for a diagnosis.
  const debug = setting('PLAN_LEDGER_KAFKA_DEBUG');
  if (debug) {
    rd.debug = debug;
    rd.log_level = 7;
  }
  if (config.sslCaFile) rd['ssl.ca.location'] = config.sslCaFile;
  if (config.sasl) {
    rd['sasl.mechanisms'] = config.sasl.mechanism.toUpperCase();
    rd['sasl.username'] = config.sasl.username;
    rd['sasl.password'] = config.sasl.password;
  }
  return rd;
}

/** What a librdkafka handle reported on its error channel: the last error, and a refused login. */
export interface HandleErrors {
  last?: unknown;
  auth?: unknown;
  /** When the first sign of a refused login came. */
  authAt?: number;
}

const AUTH_CODES = new Set([-169, 58]); // _AUTHENTICATION, SASL_AUTHENTICATION_FAILED
/** The broker's reason for the last refused login this process saw (see {@link connectWatched}). */
let lastRefusal: string | undefined;

/** librdkafka's log line of a refused login, with the broker's reason. */
const SASL_REFUSED = /SASL authentication error: (.*?)(?: \(after \d+ms in state [A-Z_]+.*\))?$/;

/** Routes a librdkafka handle's logs and client-level errors into the logger; returns what it saw. */
export function routeLogs(handle: { on(ev: string, fn: (...a: never[]) => void): unknown }, logger: Logger, password?: string): HandleErrors {
  const seen: HandleErrors = {};
  const redact = (s: string) => (password ? s.split(password).join('***') : s);
  handle.on('event.log', ((ev: { severity: number; fac: string; message: string }) => {
    const msg = redact(ev.message);
    const refused = SASL_REFUSED.exec(ev.message);
    if (refused) {
      lastRefusal = `SASL authentication error: ${refused[1]}`;
      seen.auth = { message: lastRefusal };
      seen.authAt ??= Date.now();
    }
    if (ev.severity <= 4) logger.warn({ fac: ev.fac }, msg);
    else if (ev.severity <= 6) logger.debug({ fac: ev.fac }, msg);
    else logger.trace({ fac: ev.fac }, msg);
  }) as never);
  handle.on('event.error', ((err: { message?: string; code?: number }) => {
    seen.last = withBrokerCode(err);
    if ((typeof err.code === 'number' && AUTH_CODES.has(err.code)) || /^authentication failure/i.test(err.message ?? '')) {
      seen.auth ??= err;
      seen.authAt ??= Date.now();
    }
    logger.debug({ code: err.code }, redact(err.message ?? String(err)));
  }) as never);
  return seen;
}

/**
 * Waits for a handle to connect, but not through a refused login: librdkafka reports that on the handle's
 * error channel and goes on retrying, so `connect` alone would wait out its whole timeout. A refused
 * login ends the wait at once with {@link authenticationFailure}.
 */
export async function connectWatched(errors: HandleErrors, connect: Promise<unknown>, config: LedgerConfig): Promise<void> {
  connect.catch(() => {}); // when the login check wins the race, the connect's own failure has no one to hear it
  let timer: NodeJS.Timeout | undefined;
  const refused = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      if (errors.auth === undefined) return;
      // The error event says only "authentication failure"; the log line that follows says why: wait for it briefly.
      const reasoned = SASL_REFUSED.test(String((errors.auth as { message?: unknown }).message ?? ''));
      if (!reasoned && Date.now() - (errors.authAt ?? 0) < 500) return;
      // librdkafka suppresses a log line it has just printed: the reason an earlier handle was given is the same.
      if (!reasoned && lastRefusal !== undefined) errors.auth = { message: lastRefusal };
      reject(authenticationFailure(errors.auth, config) ?? new LedgerError('UNAUTHENTICATED', `Kafka refused the login at ${config.brokers.join(',')}`, {}));
    }, 20);
  });
  try {
    await Promise.race([connect, refused]);
  } catch (e) {
    throw authenticationFailure(errors.auth ?? e, config) ?? e;
  } finally {
    clearInterval(timer);
  }
}

/**
 * An error event librdkafka raised without a code of its own (-1), or as _FATAL, names the broker's error in
 * its text ("Broker: Cluster authorization failed"): the code that text stands for, for the refusals callers test.
 */
const BROKER_TEXT: Array<[RegExp, number]> = [
  [/Cluster authorization failed/i, 31],
  [/Topic authorization failed/i, 29],
  [/Transactional Id authorization failed/i, 53],
  [/Group authorization failed/i, 30],
];
export function withBrokerCode<T>(e: T): T {
  const err = e as { code?: unknown; message?: unknown } | undefined;
  if (!err || (typeof err.code === 'number' && err.code !== -1 && err.code !== -150)) return e; // none, or _FATAL
  const hit = BROKER_TEXT.find(([re]) => re.test(String(err.message ?? '')));
  return hit ? (Object.assign(new Error(String(err.message)), { code: hit[1], origin: 'kafka' }) as T) : e;
}

/** A librdkafka error's symbolic name (`PRODUCER_FENCED`, `_TRANSPORT`, …), from the binding's code table. */
let codeNames: Map<number, string> | undefined;
export function kafkaErrorName(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'number') return undefined;
  codeNames ??= new Map(Object.entries(confluent().CODES.ERRORS).map(([name, n]) => [n as number, name.replace(/^ERR_/, '')]));
  return codeNames.get(code);
}

/** The code librdkafka gives the error named `name` (e.g. `_MSG_TIMED_OUT`, `NOT_LEADER_FOR_PARTITION`): the inverse of {@link kafkaErrorName}. */
export function kafkaErrorCode(name: string): number | undefined {
  const code = (confluent().CODES.ERRORS as Record<string, number>)[`ERR_${name}`];
  return typeof code === 'number' ? code : undefined;
}

/**
 * The one-line error of a refused SASL login: the mechanism, the user and the brokers, never the
 * password. Undefined when `e` is not an authentication failure.
 *
 * @example
 * // LedgerError UNAUTHENTICATED: Kafka refused SASL SCRAM-SHA-512 login of user "client" at 127.0.0.1:9092: ...
 */
export function authenticationFailure(e: unknown, config: LedgerConfig): LedgerError | undefined {
  if (!config.sasl) return undefined;
  const name = kafkaErrorName(e);
  const message = String((e as { message?: unknown } | undefined)?.message ?? '');
  if (name !== '_AUTHENTICATION' && name !== 'SASL_AUTHENTICATION_FAILED' && !/authentication failed|authentication failure|SASL authentication error/i.test(message)) return undefined;
  const { mechanism, username, password } = config.sasl;
  const reason = message
    .split(password)
    .join('***')
    .replace(/^authentication failure$/i, '')
    .replace(/^.*?(SASL|Authentication) (authentication )?(error|failed):?\s*/i, '')
    .replace(/\s*\(after \d+ms in state [A-Z_]+\)\s*$/, '');
  return new LedgerError(
    'UNAUTHENTICATED',
    `Kafka refused SASL ${mechanism.toUpperCase()} login of user "${username}" at ${config.brokers.join(',')}: ${reason || 'invalid credentials'}`,
    { mechanism: mechanism.toUpperCase(), username },
  );
}

/** True for the errors a fenced (superseded) transactional producer gets: a newer writer took its id. */
export function isFencingError(e: unknown): boolean {
  const err = e as { type?: string; message?: string; cause?: unknown } | undefined;
  if (!err) return false;
  const name = kafkaErrorName(e) ?? err.type;
  if (name === '_FENCED' || name === 'PRODUCER_FENCED' || name === 'INVALID_PRODUCER_EPOCH' || name === 'INVALID_PRODUCER_ID_MAPPING') return true;
  if (/fenced|producer.?epoch|epoch.*(old|stale)/i.test(err.message ?? '')) return true;
  return err.cause !== undefined && err.cause !== e ? isFencingError(err.cause) : false;
}

/** True for errors that a later attempt may not meet: a broker down or moving, a timeout, a leader election. */
export function isRetriableKafkaError(e: unknown): boolean {
  const err = e as { isRetriable?: boolean; retriable?: boolean; message?: string } | undefined;
  if (!err) return false;
  if (err.isRetriable === true || err.retriable === true) return true;
  const name = kafkaErrorName(e) ?? '';
  if (['_TRANSPORT', '_ALL_BROKERS_DOWN', '_TIMED_OUT', '_MSG_TIMED_OUT', '_WAIT_COORD', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION', 'NOT_LEADER_OR_FOLLOWER', 'REQUEST_TIMED_OUT', 'UNKNOWN_TOPIC_OR_PART', 'NOT_ENOUGH_REPLICAS', 'NOT_ENOUGH_REPLICAS_AFTER_APPEND', 'COORDINATOR_NOT_AVAILABLE', 'NOT_COORDINATOR', 'COORDINATOR_LOAD_IN_PROGRESS', 'CONCURRENT_TRANSACTIONS', 'BROKER_NOT_AVAILABLE', '_RESOLVE', 'NETWORK_EXCEPTION', 'OFFSET_NOT_AVAILABLE', 'FENCED_LEADER_EPOCH', 'UNKNOWN_LEADER_EPOCH', 'UNSTABLE_OFFSET_COMMIT'].includes(name)) return true;
  return /leader|not available|timed out|connection|ECONNREFUSED|broker transport|all broker/i.test(err.message ?? '');
}

/** A Kafka error as a LedgerError for a caller: UNAVAILABLE when the cluster did not serve in time, FORBIDDEN for ACLs. */
export function kafkaFailure(e: unknown, what: string): unknown {
  if (e instanceof LedgerError) return e;
  const name = kafkaErrorName(e) ?? '';
  const message = String((e as { message?: unknown } | undefined)?.message ?? e);
  if (/AUTHORIZATION_FAILED$/.test(name)) return new LedgerError('FORBIDDEN', `${what}: Kafka refused it to this principal (${name}): ${message}`, { kafka: name }, { cause: e });
  if (isRetriableKafkaError(e)) return new LedgerError('UNAVAILABLE', `${what}: Kafka did not answer in time (${name || 'unavailable'}): ${message}`, { kafka: name }, { cause: e });
  return e;
}
