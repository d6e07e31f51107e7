// Child processes of a chaos run: executors and the projector, started through the CLI like an
// operator would, their pino lines kept in memory (for the checks) and appended to a log file.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { configToEnv, type LedgerConfig } from '../src/config.js';

export interface LogLine {
  readonly at: number;
  readonly line: Record<string, unknown>;
}

export class ServiceProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  frozen = false;
  /** Set before the run ends the process on purpose (a fault): its exit is no surprise. */
  expectedExit = false;
  private readonly proc: ChildProcess;
  private readonly file: WriteStream;

  constructor(
    readonly label: string,
    args: string[],
    env: Record<string, string>,
    logDir: string,
    cwd: string,
  ) {
    this.file = createWriteStream(join(logDir, `${label}.log`), { flags: 'a' });
    this.proc = spawn(process.execPath, ['bin/plan-ledger.js', ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let buf = '';
    this.proc.stdout!.on('data', (c: Buffer) => {
      this.file.write(c);
      buf += c.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          this.lines.push({ at: Date.now(), line: JSON.parse(text) as Record<string, unknown> });
        } catch {
          // not a pino line
        }
      }
    });
    this.proc.stderr!.on('data', (c: Buffer) => this.file.write(c));
    this.exited = new Promise((r) => this.proc.once('exit', (code, signal) => r({ code, signal })));
    void this.exited.then(() => this.file.end());
  }

  get pid(): number {
    return this.proc.pid!;
  }

  /** How the process ended (its exit code or signal), or "running". */
  get exitStatus(): string {
    return String(this.proc.exitCode ?? this.proc.signalCode ?? 'running');
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  signal(sig: NodeJS.Signals): void {
    if (this.alive) this.proc.kill(sig);
  }

  /** Ends the process for good (continues a frozen one first) and waits until it is gone. */
  async stop(sig: NodeJS.Signals = 'SIGTERM', graceMs = 20_000): Promise<void> {
    if (!this.alive) return;
    this.proc.kill('SIGCONT');
    this.proc.kill(sig);
    const t = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(t);
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
