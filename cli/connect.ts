import { LedgerLog, assertBrokersReachable } from '../src/audit/log.js';
import type { Ledger } from '../src/client/index.js';
import { loadConfig } from '../src/config.js';
import { pino } from 'pino';
import { createLogger, silentLogger, type Logger } from '../src/logging.js';
import { settingIfSet } from '../src/settings.js';
import { ensureKafkaClient } from './native-addon.js';

/** CLI logs go to stderr and only when PLAN_LEDGER_LOG_LEVEL asks for them (stdout is for results). */
export function cliLogger(): Logger {
  const level = settingIfSet('PLAN_LEDGER_LOG_LEVEL');
  if (!level) return silentLogger();
  return createLogger({ level, name: 'plan-ledger-cli' }, pino.destination(2));
}

/** A ledger client for commands; fails fast with one line when Kafka cannot be reached. */
export async function withLedger<T>(fn: (ledger: Ledger) => Promise<T>): Promise<T> {
  const config = loadConfig();
  ensureKafkaClient();
  await assertBrokersReachable(config);
  // The client (and what it alone needs) loads for the verbs that send commands, not for show or audit.
  const { connectLedger } = await import('../src/client/index.js');
  const ledger = await connectLedger(config, { logger: cliLogger() });
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
}

/** Read access to the log (no executor needed). */
export async function withLog<T>(fn: (log: LedgerLog) => Promise<T>): Promise<T> {
  const config = loadConfig();
  ensureKafkaClient();
  const log = await LedgerLog.open(config, cliLogger());
  try {
    return await fn(log);
  } finally {
    await log.close();
  }
}
