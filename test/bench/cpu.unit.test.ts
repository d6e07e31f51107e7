// bench/lib/cpu.ts: /proc/<pid>/stat lines as Linux writes them, process trees, CPU per step.
import { describe, expect, it } from 'vitest';
import { cpuMsPerStep, parseProcStat, processTree, sampleCpu, treeTicks, type ProcStat } from '../../bench/lib/cpu.js';

// Real lines (Linux 6.x): a copy of bash named `sh) (x y` that had spun for about a second (utime 98
// ticks), and the stack's broker JVM.
const ODD = '8870 (sh) (x y) R 8867 8867 5771 0 -1 4194304 164 0 0 0 98 0 0 0 20 0 1 0 28106 4464640 794 18446744073709551615 94361941295104 94361942084509 140723585543904 0 0 0 0 4 65536 0 0 0 17 1 0 0 0 0 0 94361942317808 94361942366052 94362792939520 140723585546860 140723585546965 140723585546965 140723585548266 0';
const JAVA = '5560 (java) S 1 5560 5560 0 -1 4194304 96274 0 10 0 1310 155 0 0 20 0 107 0 15876 7823990784 84915 18446744073709551615 94029529464832 94029529465717 140723849933760 0 0 0 0 0 16800975 0 0 0 17 0 0 0 0 0 0 94029529476416 94029529477144 94029663641600 140723849939267 140723849939638 140723849939638 140723849940970 0';

const proc = (pid: number, ppid: number, utime: number, stime = 0, cutime = 0, cstime = 0): ProcStat => ({ pid, comm: `p${pid}`, ppid, utime, stime, cutime, cstime });

describe('bench CPU from /proc', () => {
  it('parses a stat line whose process name holds spaces and parentheses', () => {
    expect(parseProcStat(ODD)).toEqual({ pid: 8870, comm: 'sh) (x y', ppid: 8867, utime: 98, stime: 0, cutime: 0, cstime: 0 });
    expect(parseProcStat(`${JAVA}\n`)).toEqual({ pid: 5560, comm: 'java', ppid: 1, utime: 1310, stime: 155, cutime: 0, cstime: 0 });
    expect(() => parseProcStat('5560 java S 1')).toThrow(/not a \/proc\/<pid>\/stat line/);
    expect(() => parseProcStat('5560 (java) S 1 2 3')).toThrow(/field 14 is not a number/);
  });

  it('counts a process with its live descendants and the children it already waited for', () => {
    // 10 → 11 → 12, and 20 beside them (not a descendant of 10).
    const procs = [proc(10, 1, 100, 20, 7, 3), proc(11, 10, 50, 5), proc(12, 11, 1, 1), proc(20, 1, 999)];
    expect(processTree(procs, 10).map((p) => p.pid)).toEqual([10, 11, 12]);
    expect(processTree(procs, 11).map((p) => p.pid)).toEqual([11, 12]);
    expect(treeTicks(procs, 10)).toBe(100 + 20 + 7 + 3 + 50 + 5 + 1 + 1);
    expect(treeTicks(procs, 20)).toBe(999);
    expect(treeTicks(procs, 30)).toBeUndefined();
  });

  it('divides each process CPU between two samples by the steps, leaving out one that was not in both', () => {
    expect(cpuMsPerStep({ broker: 1000, executor: 200, gone: 5 }, { broker: 1400, executor: 260, late: 9 }, 40)).toEqual({ broker: 10, executor: 1.5 });
  });

  // 50 ms of CPU: on two loaded cores (the e2e tier beside it) that can take seconds of wall time.
  it('samples this process from /proc as process.cpuUsage() sees it', { timeout: 60_000 }, () => {
    const before = sampleCpu({ proc: process.pid, self: 'self', nobody: 2 ** 22 + 1 });
    expect(Object.keys(before).sort()).toEqual(['proc', 'self']);
    const start = process.cpuUsage();
    let x = 0;
    while (process.cpuUsage(start).user < 50_000) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    const after = sampleCpu({ proc: process.pid, self: 'self' });
    // 50 ms of user time at least, seen by both; /proc counts in clock ticks (10 ms).
    expect(after.self! - before.self!).toBeGreaterThanOrEqual(50);
    expect(after.proc! - before.proc!).toBeGreaterThanOrEqual(40);
    expect(after.proc! - before.proc!).toBeLessThan(after.self! - before.self! + 500);
  });
});
