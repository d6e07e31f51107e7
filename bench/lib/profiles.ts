// CPU profiles of a benchmark's phase, summarised for its result file: a node process's own (the V8
// profiler through node:inspector, started and stopped around the phase) and a JVM's (Java Flight
// Recorder through jcmd: the local stack's broker). Each summary is where the process's CPU went during
// the phase: groups and the functions or frames with the most self time.
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { summarizeProfile, type CpuProfile, type ProfileSummary } from '../profile-summary.js';

/** Starts the V8 profiler of this process; the returned function stops it and summarises the profile. */
export async function profileSelf(topN = 15): Promise<() => Promise<ProfileSummary>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    session.disconnect();
    // BENCH_PROFILE_DIR: the raw profile too, to open in a profiler's viewer.
    const dir = process.env.BENCH_PROFILE_DIR;
    if (dir) {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `${process.pid}-${Date.now()}.cpuprofile`), JSON.stringify(profile));
    }
    return summarizeProfile(profile, topN);
  };
}

/** Where a JVM's sampled CPU went: by thread (digits folded) and by the first frame outside the JDK. */
export interface JfrSummary {
  readonly samples: number;
  readonly threads: ReadonlyArray<{ thread: string; samples: number; pct: number }>;
  readonly top: ReadonlyArray<{ frame: string; samples: number; pct: number }>;
  readonly how: string;
}

const JDK = /^(java|javax|jdk|sun|scala)\./;

/** Summarises the text of `jfr print --events jdk.ExecutionSample` (exported for its test). */
export function summarizeJfrText(text: string, topN = 15): JfrSummary {
  const threads = new Map<string, number>();
  const frames = new Map<string, number>();
  let samples = 0;
  for (const event of text.split('jdk.ExecutionSample').slice(1)) {
    const stack = [...event.matchAll(/^\s+([\w$.<>/]+)\(/gm)].map((m) => m[1]!);
    if (!stack.length) continue;
    samples++;
    const thread = (/sampledThread = "([^"]*)"/.exec(event)?.[1] ?? '?').replace(/\d+/g, 'N');
    threads.set(thread, (threads.get(thread) ?? 0) + 1);
    const frame = stack.find((f) => !JDK.test(f)) ?? stack[0]!;
    frames.set(frame, (frames.get(frame) ?? 0) + 1);
  }
  const pct = (n: number) => Math.round((1000 * n) / Math.max(1, samples)) / 10;
  const rank = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, topN);
  return {
    samples,
    threads: rank(threads).map(([thread, n]) => ({ thread, samples: n, pct: pct(n) })),
    top: rank(frames).map(([frame, n]) => ({ frame, samples: n, pct: pct(n) })),
    how: 'Java Flight Recorder execution samples (jcmd JFR.start settings=profile) of the JVM during the phase; a sample counts for its thread (digits folded to N) and for the first frame of its stack outside the JDK and Scala libraries; time in native code (sockets, epoll, fsync) is not sampled',
  };
}

/** Starts a flight recording of JVM `pid`; the returned function stops it and summarises it, or undefined when jcmd is not there. */
export function recordJvm(pid: number, file: string, topN = 15): (() => JfrSummary) | undefined {
  const name = `bench-${process.pid}`;
  try {
    execFileSync('jcmd', [String(pid), 'JFR.start', `name=${name}`, 'settings=profile', `filename=${file}`], { stdio: 'pipe' });
  } catch {
    return undefined;
  }
  return () => {
    execFileSync('jcmd', [String(pid), 'JFR.stop', `name=${name}`], { stdio: 'pipe' });
    const text = execFileSync('jfr', ['print', '--stack-depth', '64', '--events', 'jdk.ExecutionSample', file], { encoding: 'utf8', maxBuffer: 1 << 30 });
    return summarizeJfrText(text, topN);
  };
}
