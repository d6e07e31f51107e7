/**
 * A local stack's pid files: what one records and whether its process is still ours. Read by the
 * library (the config finds a running stack through discovery.ts) and written by the launcher
 * (stack/processes.ts), which is why it lives here, below both.
 */
import { existsSync, readFileSync } from 'node:fs';

/** What a pid file records: enough to recognise our own process again (pids get reused). */
export interface PidRecord {
  readonly name: string;
  readonly pid: number;
  /** A string that appears in the process's command line (a path inside the stack dir). */
  readonly marker: string;
  readonly logFile: string;
  readonly startedAt: string;
}

export function readPid(file: string): PidRecord | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as PidRecord;
  } catch {
    return undefined;
  }
}

/** Alive and still the process we started (its command line carries our marker). */
export function isOurs(rec: PidRecord): boolean {
  try {
    process.kill(rec.pid, 0);
  } catch {
    return false;
  }
  try {
    return readFileSync(`/proc/${rec.pid}/cmdline`, 'utf8').includes(rec.marker);
  } catch {
    return true; // no /proc: trust the signal check
  }
}
