import { pino, type Logger } from 'pino';
import { logLevel, type logCreator } from 'kafkajs';

export type { Logger };

/**
 * A pino logger for processes that own their logging (CLI, executor, projector). Library code never
 * creates one on its own: it takes the logger it is given.
 */
export function createLogger(opts: { level?: string; name?: string } = {}, destination?: pino.DestinationStream): Logger {
  const options = {
    name: opts.name ?? 'plan-ledger',
    level: opts.level ?? process.env.PLAN_LEDGER_LOG_LEVEL ?? 'info',
    redact: LOG_REDACT,
  };
  return destination ? pino(options, destination) : pino(options);
}

/** Names of fields that hold credentials, at any of the depths a log line carries them (a config, an error's details). */
const SECRET_KEYS = ['password', 'token', 'tokens', 'masterKey', 'dataKey', 'authorization', 'apiToken', 'secretAccessKey'];

/**
 * Config secrets never reach a log line: SASL and registry passwords, API tokens, the master key, an
 * Authorization header, wherever in the first three levels of a line they sit. Item payloads are not
 * logged by the executor or the projector; their secret fields are redacted wherever a plan is shown.
 */
export const LOG_REDACT = Object.freeze({
  paths: SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`, `*.*.*.${k}`]).concat(['req.headers.authorization', 'req.headers.cookie']),
  censor: '[secret]',
});

/** A logger that drops everything: the default when a caller passes none. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const levels: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

/** Routes kafkajs's own log lines into the given pino logger (component=kafkajs). */
export function kafkajsLogCreator(logger: Logger): logCreator {
  const child = logger.child({ component: 'kafkajs' });
  return () =>
    ({ level, log }) => {
      const { message, ...extra } = log;
      child[message === BOUNDED_RETRIES_NOTICE ? 'debug' : (levels[level] ?? 'info')](extra, message);
    };
}

/**
 * kafkajs warns at every idempotent producer whose retries are bounded. Ours are bounded on purpose, so
 * that an outage surfaces instead of hanging a send forever, and nothing relies on unbounded retries for
 * exactly-once: the transactional producers abort a transaction whose send failed (nothing of it becomes
 * visible), and what the idempotent ones write is deduplicated by its reader (commands by commandId, dead
 * letters by source offset). Logged at debug, not once per producer at warn.
 */
const BOUNDED_RETRIES_NOTICE = 'Limiting retries for the idempotent producer may invalidate EoS guarantees';

/** kafkajs level matching a pino level, so kafkajs does not build lines pino would drop. */
export function kafkajsLevel(logger: Logger): logLevel {
  switch (logger.level) {
    case 'debug':
    case 'trace':
      return logLevel.DEBUG;
    case 'info':
      return logLevel.INFO;
    case 'warn':
      return logLevel.WARN;
    case 'silent':
      return logLevel.NOTHING;
    default:
      return logLevel.ERROR;
  }
}
