// Where a process's CPU time went, from a V8 CPU profile (.cpuprofile, as `node --cpu-prof` writes it; the
// benches' children write one each with BENCH_CPU_PROF_DIR, see bench/lib/ledger.ts):
//
//   node --import tsx bench/profile-summary.ts <file.cpuprofile>... [--top 25] [--json]
//
// Self time (the time a function was on top of the stack, not its callees') summed by group: the librdkafka
// binding, avsc, the registry client, pino, our executor, our plan fold/decide, our Kafka port, the rest of
// our code, node internals, module loading (start-up), the tsx loader, other dependencies, and V8's own entries: native code outside
// JS ("(program)": librdkafka's threads do not count, only the main thread's time in C++), the garbage
// collector, idle. Then the functions with the most self time. Percentages are of all sampled time and of
// busy time (all but idle).
import { readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';

/** The part of a .cpuprofile this reads. */
export interface CpuProfile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number } }>;
  readonly startTime: number;
  readonly endTime: number;
  /** The node on top of the stack at each sample. */
  readonly samples: readonly number[];
  /** Microseconds from the previous sample (the first: from startTime). */
  readonly timeDeltas: readonly number[];
}

export const GROUPS = [
  'librdkafka binding',
  'avsc',
  'registry client',
  'pino',
  'executor',
  'plan fold/decide',
  'Kafka port',
  'codec',
  'ledger (other)',
  'bench harness',
  'node internals',
  'module loading',
  'tsx loader',
  'other dependencies',
  'native, outside JS',
  'GC',
  'idle',
  'other',
] as const;
export type Group = (typeof GROUPS)[number];

/** The group of a call frame, by its function name (V8's own entries) or the file it is in. */
export function groupOf(frame: { functionName: string; url: string }): Group {
  const { functionName: fn, url } = frame;
  if (fn === '(garbage collector)') return 'GC';
  if (fn === '(idle)') return 'idle';
  if (fn === '(program)') return 'native, outside JS';
  const u = url.replace(/\\/g, '/');
  if (u.includes('/node_modules/')) {
    if (u.includes('/@confluentinc/kafka-javascript/')) return 'librdkafka binding';
    if (u.includes('/node_modules/avsc/')) return 'avsc';
    if (u.includes('/@kafkajs/confluent-schema-registry/')) return 'registry client';
    if (/\/node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream|fast-redact|quick-format-unescaped)\//.test(u)) return 'pino';
    if (/\/node_modules\/(tsx|esbuild|get-tsconfig)\//.test(u)) return 'tsx loader';
    return 'other dependencies';
  }
  // Loading and compiling modules (node's loaders, through tsx's hooks): start-up, not the steady state.
  if (u.startsWith('node:internal/modules/')) return 'module loading';
  if (u.startsWith('node:') || (u === '' && fn !== '(root)')) return 'node internals';
  if (/\/executor\/[^/]+\.[cm]?[jt]s$/.test(u)) return 'executor';
  if (u.includes('/src/plan/')) return 'plan fold/decide';
  if (u.includes('/src/kafka/')) return 'Kafka port';
  if (u.includes('/src/codec/')) return 'codec';
  if (u.includes('/src/')) return 'ledger (other)';
  if (u.includes('/bench/')) return 'bench harness';
  return 'other';
}

export interface ProfileSummary {
  readonly totalMs: number;
  readonly busyMs: number;
  readonly samples: number;
  readonly groups: ReadonlyArray<{ group: Group; ms: number; pctOfTotal: number; pctOfBusy: number }>;
  readonly top: ReadonlyArray<{ functionName: string; where: string; group: Group; ms: number; pctOfBusy: number }>;
}

/** Where a file URL points, from the repository root when it is inside one (`executor/appender.ts:120`). */
function where(url: string, line: number): string {
  if (!url) return '(native)';
  const u = url.replace(/^file:\/\//, '');
  const nm = u.lastIndexOf('/node_modules/');
  const short = nm >= 0 ? u.slice(nm + '/node_modules/'.length) : (/\/((?:src|executor|projector|bench|test)\/.*)$/.exec(u)?.[1] ?? u);
  return `${short}:${line + 1}`;
}

/**
 * Self time by group and by function. A sample lasts until the next one (the last: the profile's end), so
 * the sums add up to the profile's span.
 */
export function summarizeProfile(p: CpuProfile, topN = 25): ProfileSummary {
  const frames = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
  const selfUs = new Map<number, number>();
  let t = p.startTime;
  const at: number[] = [];
  for (const d of p.timeDeltas) at.push((t += d));
  for (let i = 0; i < p.samples.length; i++) {
    const dur = (i + 1 < at.length ? at[i + 1]! : p.endTime) - at[i]!;
    if (dur > 0) selfUs.set(p.samples[i]!, (selfUs.get(p.samples[i]!) ?? 0) + dur);
  }
  const byGroup = new Map<Group, number>();
  const byFn = new Map<string, { functionName: string; where: string; group: Group; us: number }>();
  let total = 0;
  for (const [id, us] of selfUs) {
    const f = frames.get(id);
    if (!f || f.functionName === '(root)') continue;
    const g = groupOf(f);
    total += us;
    byGroup.set(g, (byGroup.get(g) ?? 0) + us);
    const key = `${f.functionName}\u0000${f.url}\u0000${f.lineNumber}`;
    const e = byFn.get(key) ?? { functionName: f.functionName || '(anonymous)', where: where(f.url, f.lineNumber), group: g, us: 0 };
    e.us += us;
    byFn.set(key, e);
  }
  const busy = total - (byGroup.get('idle') ?? 0);
  const pct = (us: number, of: number) => (of > 0 ? (100 * us) / of : 0);
  return {
    totalMs: total / 1000,
    busyMs: busy / 1000,
    samples: p.samples.length,
    groups: [...byGroup]
      .map(([group, us]) => ({ group, ms: us / 1000, pctOfTotal: pct(us, total), pctOfBusy: group === 'idle' ? 0 : pct(us, busy) }))
      .sort((a, b) => b.ms - a.ms),
    top: [...byFn.values()]
      .filter((f) => f.group !== 'idle')
      .sort((a, b) => b.us - a.us)
      .slice(0, topN)
      .map((f) => ({ functionName: f.functionName, where: f.where, group: f.group, ms: f.us / 1000, pctOfBusy: pct(f.us, busy) })),
  };
}

export function formatSummary(name: string, s: ProfileSummary): string {
  const out = [`${name}: ${(s.totalMs / 1000).toFixed(1)} s sampled (${s.samples} samples), ${(s.busyMs / 1000).toFixed(1)} s busy`, '', '| group | self ms | % of all | % of busy |', '|---|---:|---:|---:|'];
  for (const g of s.groups) out.push(`| ${g.group} | ${g.ms.toFixed(0)} | ${g.pctOfTotal.toFixed(1)} | ${g.group === 'idle' ? '' : g.pctOfBusy.toFixed(1)} |`);
  out.push('', '| function | where | group | self ms | % of busy |', '|---|---|---|---:|---:|');
  for (const f of s.top) out.push(`| ${f.functionName} | ${f.where} | ${f.group} | ${f.ms.toFixed(0)} | ${f.pctOfBusy.toFixed(1)} |`);
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string' }, json: { type: 'boolean' } }, allowPositionals: true });
  const top = Number(values.top ?? 25);
  if (!positionals.length || !Number.isInteger(top) || top < 1) {
    console.error('usage: node --import tsx bench/profile-summary.ts <file.cpuprofile>... [--top N] [--json]');
    process.exit(2);
  }
  for (const file of positionals) {
    let s: ProfileSummary;
    try {
      s = summarizeProfile(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, top);
    } catch (e) {
      console.error(`profile-summary: ${file}: ${(e as Error).message}`);
      process.exit(1);
    }
    console.log(values.json ? JSON.stringify({ file, ...s }) : `${formatSummary(basename(file), s)}\n`);
  }
}
