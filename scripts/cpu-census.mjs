#!/usr/bin/env node
// CPU seconds spent by a process and all its descendants, by kind of process (Kafka broker, registry,
// vitest worker, executor, CLI, Python, compiler, …), from /proc. On a 2-core machine the test suite's
// wall time follows the CPU its processes need, so this is where a slow run's time is found.
//
//   node scripts/cpu-census.mjs <root-pid> <out.json> [interval-ms]
//
// Samples every interval (default 1000 ms) until the root process exits, then writes the census as JSON
// and prints one line per kind. A process is counted from the first sample that sees it below the root
// (detached JVMs included: they stay children of the process that spawned them), from its start if it
// started after the census did, until its last sample: what it spends in its last interval, and a process
// that lives less than one interval, are missed. Linux only.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { setTimeout } from 'node:timers';

const [rootArg, out, intervalArg] = process.argv.slice(2);
const root = Number(rootArg);
if (!Number.isInteger(root) || !out) {
  console.error('usage: node scripts/cpu-census.mjs <root-pid> <out.json> [interval-ms]');
  process.exit(2);
}
const interval = Number(intervalArg ?? 1000);
const tick = 100; // USER_HZ: clock ticks per second in /proc/<pid>/stat on Linux

/** pid → { ppid, ticks, start } for every live process. */
function sample() {
  const procs = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const line = readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = line.slice(line.lastIndexOf(')') + 2).split(' ');
      // After the name: state (3), ppid (4), … utime (14), stime (15), …, starttime (22).
      procs.set(Number(name), { ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]), start: rest[19] });
    } catch {
      // gone between readdir and read
    }
  }
  return procs;
}

function kindOf(pid) {
  let cmd;
  try {
    cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
  } catch {
    return 'other';
  }
  if (/\bjava\b/.test(cmd) || cmd.includes('/bin/java')) {
    if (cmd.includes('kafka.Kafka')) return 'Kafka broker';
    if (/apicurio|quarkus/i.test(cmd)) return 'schema registry';
    return 'JVM tools (admin, storage format, Maven)';
  }
  if (/python/.test(cmd)) return 'Python';
  if (/\b(cc1plus|cc1|g\+\+|gcc|make|ld|as|node-gyp)\b/.test(cmd)) return 'native build';
  if (/node|tsx|npm|npx/.test(cmd)) {
    if (cmd.includes('vitest')) return 'vitest (workers and main)';
    if (/executor/.test(cmd)) return 'executor processes';
    if (/projector/.test(cmd)) return 'projector processes';
    if (cmd.includes('plan-ledger')) return 'CLI processes';
    if (/\bnpm\b/.test(cmd)) return 'npm';
    if (/tsc|eslint|depcruise|dependency-cruiser/.test(cmd)) return 'typecheck and lint';
    return 'other Node processes';
  }
  return 'other';
}

/** `${pid}:${start}` → { kind, first, last } ticks of every process ever seen below the root. */
const seen = new Map();
const started = Date.now();
/** Clock ticks since boot when the census began: a process started later is counted from its first tick. */
const bootTicksAtStart = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * tick;
let done = false;
function step() {
  const procs = sample();
  if (!procs.has(root)) done = true;
  const below = new Set([root]);
  // Descendants: walk parents upward; a process whose chain reaches the root (or a known process) is in.
  for (const pid of procs.keys()) {
    const chain = [];
    let p = pid;
    while (p > 1 && procs.has(p) && !below.has(p) && !seen.has(`${p}:${procs.get(p).start}`)) {
      chain.push(p);
      p = procs.get(p).ppid;
    }
    if (below.has(p) || (procs.has(p) && seen.has(`${p}:${procs.get(p).start}`))) for (const c of chain) below.add(c);
  }
  for (const [pid, p] of procs) {
    const key = `${pid}:${p.start}`;
    const known = seen.get(key);
    if (known) known.last = p.ticks;
    else if (below.has(pid)) seen.set(key, { kind: kindOf(pid), first: Number(p.start) > bootTicksAtStart ? 0 : p.ticks, last: p.ticks });
  }
  if (done) finish();
  else setTimeout(step, interval);
}

function finish() {
  const byKind = {};
  for (const s of seen.values()) byKind[s.kind] = (byKind[s.kind] ?? 0) + (s.last - s.first) / tick;
  const wallSeconds = (Date.now() - started) / 1000;
  const total = Object.values(byKind).reduce((a, b) => a + b, 0);
  const census = { wallSeconds, cpuSeconds: total, processes: seen.size, byKind: Object.fromEntries(Object.entries(byKind).sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Math.round(v)])) };
  writeFileSync(out, `${JSON.stringify(census, null, 2)}\n`);
  console.log(`[cpu] ${Math.round(total)} CPU s in ${Math.round(wallSeconds)} s of wall (${(total / wallSeconds).toFixed(2)} cores busy on average), ${seen.size} processes:`);
  for (const [k, v] of Object.entries(census.byKind)) console.log(`  ${String(v).padStart(6)} s  ${k}`);
}

step();
