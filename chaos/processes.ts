// Child processes of a chaos run: executors and the projector, started through the CLI like an
// operator would, their pino lines kept in memory (for the checks) and appended to a log file.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { configToEnv, type LedgerConfig } from '../src/config.js';
import { ServiceProcess as Harnessed, type JsonLine } from '../stack/service-process.js';

export type LogLine = JsonLine;

/** A service of the run, through the CLI, its output in `<logDir>/<label>.log`. */
export class ServiceProcess extends Harnessed {
  frozen = false;
  /** Set before the run ends the process on purpose (a fault): its exit is no surprise. */
  expectedExit = false;

  constructor(label: string, args: string[], env: Record<string, string>, logDir: string, cwd: string) {
    super({ label, args: ['bin/plan-ledger.js', ...args], env, cwd, logFile: join(logDir, `${label}.log`) });
  }
}

/** An executor through the CLI; `clockOffsetMs` runs its clock that far ahead (negative: behind), as on a host whose clock is off. */
export function executorProcess(config: LedgerConfig, label: string, o: { logDir: string; cwd: string; effectsUrl: string; sessionTimeoutMs: number; clockOffsetMs?: number }): ServiceProcess {
  return new ServiceProcess(
    label,
    ['executor', '--tools', 'test/fixtures/tools.ts', '--id', label],
    {
      ...configToEnv(config),
      EFFECTS_URL: o.effectsUrl,
      PLAN_LEDGER_SESSION_TIMEOUT_MS: String(o.sessionTimeoutMs),
      PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: '500',
      PLAN_LEDGER_LOG_LEVEL: 'info',
      PLAN_LEDGER_EXECUTOR_LABEL: label,
      ...(o.clockOffsetMs ? { PLAN_LEDGER_CLOCK_OFFSET_MS: String(o.clockOffsetMs) } : {}),
    },
    o.logDir,
    o.cwd,
  );
}

/** The chaos run's own API token (read + write) for the projector it starts. */
export const CHAOS_API_TOKEN = `chaos-${randomBytes(16).toString('hex')}`;

export function projectorProcess(config: LedgerConfig, port: number, o: { logDir: string; cwd: string }): ServiceProcess {
  return new ServiceProcess('projector', ['projector', '--port', String(port)], { ...configToEnv(config), PLAN_LEDGER_LOG_LEVEL: process.env.CHAOS_PROJECTOR_LOG_LEVEL ?? 'info', PLAN_LEDGER_API_TOKEN: CHAOS_API_TOKEN }, o.logDir, o.cwd);
}
