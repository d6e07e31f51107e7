// Stack helpers shared by the benchmarks: fresh topic prefixes, reading a topic to its end, dropping a
// bench's topics, child processes that print JSON lines.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { loadConfig, type LedgerConfig, type LedgerConfigInput } from '../../src/config.js';
import { createKafka, type KafkaClient, type LogRecord } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/logging.js';
import { ServiceProcess } from '../../stack/service-process.js';
import { until } from './harness.js';

export function benchConfig(name: string, input: LedgerConfigInput = {}): LedgerConfig {
  return loadConfig({ ...input, topicPrefix: `bench-${name}-${randomBytes(4).toString('hex')}` });
}

export function benchKafka(config: LedgerConfig, suffix = 'bench'): KafkaClient {
  return createKafka(config, silentLogger(), suffix);
}

/** Every committed record of a topic (read_committed), in offset order per partition. */
export async function readAll(config: LedgerConfig, topic: string): Promise<LogRecord[]> {
  const kafka = benchKafka(config, 'bench-reader');
  const out: LogRecord[] = [];
  try {
    await kafka.readToEnd({ topic, onRecords: (rs) => void out.push(...rs), timeoutMs: 120_000 });
  } finally {
    await kafka.close();
  }
  return out;
}

/** Deletes every topic of a bench prefix, and `extra` (best effort). */
export async function dropTopics(config: LedgerConfig, extra: string[] = []): Promise<void> {
  const kafka = benchKafka(config, 'bench-admin');
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Every topic of the bench's own prefix (plan topics, blobs, keys, streams, executors, audit), and `extra`.
    const names = await admin.listTopics();
    const wanted = new Set(extra);
    const mine = names.filter((n) => n.startsWith(`${config.topicPrefix}.`) || wanted.has(n));
    if (mine.length) await admin.deleteTopics(mine).catch(() => {});
  } finally {
    await admin.disconnect();
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      const port = typeof a === 'object' && a ? a.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export interface Proc {
  readonly p: ChildProcess;
  readonly label: string;
  readonly lines: Array<Record<string, unknown> & { seenAt: number }>;
  readonly exited: Promise<number | null>;
}

/** A child process whose stdout JSON lines are collected (with the time each was seen); killed if the bench exits first. */
export function spawnJson(cmd: string, args: string[], label: string, env: Record<string, string | undefined> = {}): Proc {
  const lines: Proc['lines'] = [];
  const h = new ServiceProcess({ label, command: cmd, args, env, stderr: 'inherit', maxLines: 0, onLine: (l) => void lines.push({ ...l, seenAt: Date.now() }) });
  return { p: h.proc, label, lines, exited: h.exited.then((r) => r.code) };
}

/**
 * node --import tsx <script>. With BENCH_CPU_PROF_DIR set, the child writes a V8 CPU profile there when it
 * exits (`--cpu-prof`; open it in Chrome DevTools), e.g. the executor's during `npm run bench -- peer`.
 */
export function spawnTs(script: string, label: string, env: Record<string, string | undefined> = {}): Proc {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  const prof = dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : []; // one file per thread: CPU.<date>.<pid>.<tid>.<seq>.cpuprofile
  return spawnJson(process.execPath, [...prof, '--import', 'tsx', script], label, env);
}

export async function waitLine(proc: Proc, msg: string, timeoutMs = 120_000, after = 0): Promise<Record<string, unknown> & { seenAt: number }> {
  return until(() => {
    if (proc.p.exitCode !== null) throw new Error(`${proc.label} exited (${proc.p.exitCode}) before "${msg}"`);
    return proc.lines.find((l, i) => i >= after && l.msg === msg);
  }, timeoutMs, `${proc.label}: ${msg}`, 10);
}

/** SIGTERM, then SIGKILL after graceMs; resolves once the process has exited. */
export async function stopProc(proc: Proc, graceMs = 15_000): Promise<void> {
  if (proc.p.exitCode !== null || proc.p.signalCode !== null) return;
  proc.p.kill('SIGTERM');
  const t = setTimeout(() => proc.p.kill('SIGKILL'), graceMs);
  await proc.exited;
  clearTimeout(t);
}
