import { pino, type Logger } from 'pino';
import { setting } from './settings.js';

export type { Logger };

/**
 * A pino logger for processes that own their logging (CLI, executor, projector). Library code never
 * creates one on its own: it takes the logger it is given.
 */
export function createLogger(opts: { level?: string; name?: string } = {}, destination?: pino.DestinationStream): Logger {
  const options = {
    name: opts.name ?? 'plan-ledger',
    level: opts.level ?? setting('PLAN_LEDGER_LOG_LEVEL'),
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
