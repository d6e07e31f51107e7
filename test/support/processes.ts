import { spawn, type ChildProcess } from 'node:child_process';
import { ServiceProcess } from '../../stack/service-process.js';
import { onTestFinished } from 'vitest';
import { configToEnv, type LedgerConfig } from '../../src/config.js';
import { waitFor } from './helpers.js';

export interface ExecutorProcess {
  readonly proc: ChildProcess;
  readonly pid: number;
  readonly label: string;
  /** Parsed pino lines printed so far. */
  readonly logs: Array<Record<string, unknown>>;
  readonly stderr: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until a log line matches. */
  waitForLog(pred: (l: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  kill(signal: NodeJS.Signals): void;
}

export interface CliResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `plan-ledger <args>` as a process against `config` (its PLAN_LEDGER_* variables, no colours) and
 * collects its exit code and output; an `env` value of undefined removes that variable.
 */
export function runCli(config: LedgerConfig, args: readonly string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  const merged: NodeJS.ProcessEnv = { ...process.env, ...configToEnv(config), NO_COLOR: '1' };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete merged[k];
    else merged[k] = v;
  }
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['bin/plan-ledger.js', ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Starts `plan-ledger executor` as a child process (killed when the test ends if still alive). */
export function spawnExecutor(
  config: LedgerConfig,
  opts: { label: string; env?: Record<string, string>; tools?: string; concurrency?: number; /** Log lines kept (a hostile run can print many). */ maxLogs?: number },
): ExecutorProcess {
  const args = ['bin/plan-ledger.js', 'executor', '--tools', opts.tools ?? 'test/fixtures/tools.ts', '--id', opts.label];
  if (opts.concurrency !== undefined) args.push('--concurrency', String(opts.concurrency));
  const logs: Array<Record<string, unknown>> = [];
  const max = opts.maxLogs ?? Infinity;
  const h = new ServiceProcess({
    label: opts.label,
    args,
    env: {
      ...configToEnv(config),
      PLAN_LEDGER_SESSION_TIMEOUT_MS: '6000',
      PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: '500',
      PLAN_LEDGER_LOG_LEVEL: 'info',
      PLAN_LEDGER_EXECUTOR_LABEL: opts.label,
      ...opts.env,
    },
    maxLines: 0, // kept here, as plain objects
    onLine: (l) => void (logs.length < max && logs.push(l)),
  });
  const { proc, exited, other: stderr } = h;
  onTestFinished(() => h.stop('SIGKILL'));
  return {
    proc,
    pid: proc.pid!,
    label: opts.label,
    logs,
    stderr,
    exited,
    waitForLog: (pred, timeoutMs = 30_000) =>
      waitFor(() => logs.find(pred), { timeoutMs, message: `log line from ${opts.label} (stderr: ${stderr.join('').slice(-500)})` }),
    kill: (signal) => void proc.kill(signal),
  };
}

/** True once the executor has restored every partition it was assigned. */
export const ownsPartitions = (l: Record<string, unknown>) => l.msg === 'partition restored';
