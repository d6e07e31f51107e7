/**
 * The one harness for the services this project starts as child processes — executors, projectors,
 * bench workers — in tests, the chaos run, the demo and the benchmarks: it starts the process, parses
 * its stdout's JSON lines (pino's, or a bench worker's) as they come, keeps them with the time each was
 * seen, appends the raw output to a log file when asked, and stops it with a grace period.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';

/** One JSON line of the process's stdout and when it was seen (ms). */
export interface JsonLine {
  readonly at: number;
  readonly line: Record<string, unknown>;
}

export interface ServiceProcessOptions {
  /** Named in errors and used as the log file's name. */
  readonly label: string;
  /** The program (default: this Node.js) and its arguments. */
  readonly command?: string;
  readonly args: readonly string[];
  /** Added to this process's environment; an undefined value removes the variable. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly cwd?: string;
  /** Appends stdout and stderr as they come. */
  readonly logFile?: string;
  /** `inherit`: stderr goes to this process's stderr instead of `other` and the log file. */
  readonly stderr?: 'pipe' | 'inherit';
  /** JSON lines kept (a hostile run can print many); `onLine` still sees every one. */
  readonly maxLines?: number;
  /** Called with each JSON line as it is parsed. */
  readonly onLine?: (line: Record<string, unknown>) => void;
}

// Children still running when this process exits (a failure half-way) are killed with it.
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

export class ServiceProcess {
  readonly label: string;
  /** Its stdout's JSON lines, in order. */
  readonly lines: JsonLine[] = [];
  /** Its stdout lines that are not JSON objects, and its stderr (piped), as text. */
  readonly other: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly proc: ChildProcess;
  private readonly file: WriteStream | undefined;

  constructor(o: ServiceProcessOptions) {
    this.label = o.label;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const [k, v] of Object.entries(o.env ?? {})) {
      if (v === undefined) delete env[k];
      else env[k] = v;
    }
    this.file = o.logFile === undefined ? undefined : createWriteStream(o.logFile, { flags: 'a' });
    this.proc = spawn(o.command ?? process.execPath, o.args, { cwd: o.cwd, env, stdio: ['ignore', 'pipe', o.stderr ?? 'pipe'] });
    children.add(this.proc);
    let buf = '';
    this.proc.stdout!.on('data', (c: Buffer) => {
      this.file?.write(c);
      buf += c.toString();
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const text = buf.slice(0, i);
        buf = buf.slice(i + 1);
        const line = parseObject(text);
        if (line === undefined) {
          this.other.push(text);
          continue;
        }
        if (this.lines.length < (o.maxLines ?? Infinity)) this.lines.push({ at: Date.now(), line });
        o.onLine?.(line);
      }
    });
    this.proc.stderr?.on('data', (c: Buffer) => {
      this.file?.write(c);
      this.other.push(c.toString());
    });
    this.exited = new Promise((r) =>
      this.proc.once('exit', (code, signal) => {
        children.delete(this.proc);
        r({ code, signal });
      }),
    );
    void this.exited.then(() => this.file?.end());
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

  /** The first JSON line from index `after` on that matches, or undefined. */
  find(pred: (line: Record<string, unknown>) => boolean, after = 0): JsonLine | undefined {
    for (let i = after; i < this.lines.length; i++) if (pred(this.lines[i]!.line)) return this.lines[i];
    return undefined;
  }

  /** Ends the process for good (continues a stopped one first) and waits until it is gone: `sig`, then SIGKILL past `graceMs`. */
  async stop(sig: NodeJS.Signals = 'SIGTERM', graceMs = 20_000): Promise<void> {
    if (!this.alive) return;
    this.proc.kill('SIGCONT');
    this.proc.kill(sig);
    const t = setTimeout(() => this.signal('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(t);
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (!text.startsWith('{')) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
