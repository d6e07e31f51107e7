// CPU time of processes from /proc/<pid>/stat, for benches that compare the CPU a whole system spends
// (every process of a side: servers, workers, client) rather than one process's wall time. Linux only.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The fields of /proc/<pid>/stat a CPU count needs; times in clock ticks (`getconf CLK_TCK`). */
export interface ProcStat {
  readonly pid: number;
  readonly comm: string;
  readonly ppid: number;
  /** User and system time of the process (all its threads). */
  readonly utime: number;
  readonly stime: number;
  /** User and system time of its children that exited and were waited for. */
  readonly cutime: number;
  readonly cstime: number;
}

/**
 * One line of /proc/<pid>/stat. The name (field 2) is in parentheses and may itself hold spaces and
 * parentheses, so the fields after it are found from the last `)` (proc(5)).
 */
export function parseProcStat(line: string): ProcStat {
  const open = line.indexOf('(');
  const close = line.lastIndexOf(')');
  if (open < 0 || close < open) throw new Error(`not a /proc/<pid>/stat line: ${line.slice(0, 80)}`);
  // After the name: state (field 3), ppid (4), ... utime (14), stime (15), cutime (16), cstime (17).
  const rest = line.slice(close + 2).trim().split(/\s+/);
  const field = (n: number) => {
    const v = Number(rest[n - 3]);
    if (!Number.isInteger(v)) throw new Error(`/proc/<pid>/stat field ${n} is not a number: ${line.slice(0, 80)}`);
    return v;
  };
  return { pid: Number(line.slice(0, open).trim()), comm: line.slice(open + 1, close), ppid: field(4), utime: field(14), stime: field(15), cutime: field(16), cstime: field(17) };
}

/** The process `root` and every live descendant of it among `procs` (wrappers such as npx start the real process as a child). */
export function processTree(procs: readonly ProcStat[], root: number): ProcStat[] {
  const byParent = new Map<number, ProcStat[]>();
  for (const p of procs) byParent.set(p.ppid, [...(byParent.get(p.ppid) ?? []), p]);
  const out = procs.filter((p) => p.pid === root);
  for (let i = 0; i < out.length; i++) out.push(...(byParent.get(out[i]!.pid) ?? []));
  return out;
}

/**
 * CPU ticks of a process tree: each process's own time plus that of its children already waited for, so
 * a child that exits between two samples still counts (its time moves into its parent's cutime/cstime).
 */
export function treeTicks(procs: readonly ProcStat[], root: number): number | undefined {
  const tree = processTree(procs, root);
  if (!tree.length) return undefined;
  return tree.reduce((s, p) => s + p.utime + p.stime + p.cutime + p.cstime, 0);
}

/** CPU ms per step of each process between two samples (ms of CPU each); a process missing from either is left out. */
export function cpuMsPerStep(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>, steps: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, b] of Object.entries(before)) {
    const a = after[name];
    if (a !== undefined) out[name] = (a - b) / steps;
  }
  return out;
}

let ticksPerSecond: number | undefined;
/** `getconf CLK_TCK` (100 on every Linux we run on). */
export function clockTicks(): number {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  return ticksPerSecond;
}

/** Every process's stat line that can still be read (a process may exit while /proc is listed). */
function allStats(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      out.push(parseProcStat(readFileSync(`/proc/${d}/stat`, 'utf8')));
    } catch {
      /* gone */
    }
  }
  return out;
}

/**
 * CPU ms used so far by each named process tree; `self` is this process (process.cpuUsage(): every
 * thread, in µs, so librdkafka's threads count too). A process that is gone is left out.
 */
export function sampleCpu(pids: Readonly<Record<string, number | 'self'>>): Record<string, number> {
  const stats = allStats();
  const msPerTick = 1000 / clockTicks();
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    if (pid === 'self') {
      const u = process.cpuUsage();
      out[name] = (u.user + u.system) / 1000;
      continue;
    }
    const ticks = treeTicks(stats, pid);
    if (ticks !== undefined) out[name] = ticks * msPerTick;
  }
  return out;
}
