// The benchmark harness: every bench measures plan-ledger (the subject) and its baseline in the same
// run, alternating which goes first, after a warm-up of both, for at least five rounds, and reports
// medians. Each bench writes bench/results/<name>.json in one shape (see BenchResult), which
// bench/summary.ts turns into summary.md and summary.svg, and bench/readme.ts into docs/operations/benchmarks.md
// and the README's Performance section.
import { execFileSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** Where results go: bench/results/, or BENCH_RESULTS_DIR (a trial run that should not replace them). */
export const RESULTS_DIR = process.env.BENCH_RESULTS_DIR ?? fileURLToPath(new URL('../results/', import.meta.url));
export const MIN_ROUNDS = 5;

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** The q-quantile (0..1) by nearest rank. */
export function quantile(xs: readonly number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export async function until<T>(f: () => T | undefined | Promise<T | undefined>, timeoutMs: number, what: string, everyMs = 5): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

export interface BenchArgs {
  readonly quick: boolean;
  readonly rounds: number;
  /** Other --name value options, as given. */
  readonly options: Readonly<Record<string, string | undefined>>;
}

/** `--quick`, `--rounds N` (never below five) and any `--name value` the bench declares. */
export function benchArgs(names: readonly string[] = []): BenchArgs {
  const options: Record<string, { type: 'string' } | { type: 'boolean' }> = { quick: { type: 'boolean' }, rounds: { type: 'string' } };
  for (const n of names) options[n] = { type: 'string' };
  const { values } = parseArgs({ options, strict: false, allowPositionals: true });
  const quick = values.quick === true || process.env.BENCH_QUICK === '1';
  const rounds = Math.max(MIN_ROUNDS, Number(values.rounds ?? process.env.BENCH_ROUNDS ?? MIN_ROUNDS) || MIN_ROUNDS);
  const rest: Record<string, string | undefined> = {};
  for (const n of names) rest[n] = typeof values[n] === 'string' ? (values[n] as string) : undefined;
  return { quick, rounds, options: rest };
}

export type Metrics = Record<string, number>;
export type Side = () => Promise<Metrics>;

export interface PairedRound {
  readonly round: number;
  readonly first: 'subject' | 'baseline';
  readonly subject: Metrics;
  readonly baseline: Metrics;
}

/**
 * Runs subject and baseline `rounds` times, alternating which goes first (round 1: subject first, round
 * 2: baseline first, ...), after `warmup` runs of each that are discarded.
 */
export async function paired(opts: { rounds: number; warmup?: number; subject: Side; baseline: Side; label?: string; log?: (r: PairedRound) => void }): Promise<PairedRound[]> {
  const warmup = opts.warmup ?? 1;
  for (let w = 0; w < warmup; w++) {
    await opts.subject();
    await opts.baseline();
  }
  const out: PairedRound[] = [];
  for (let r = 0; r < opts.rounds; r++) {
    const first = r % 2 === 0 ? 'subject' : 'baseline';
    let subject: Metrics;
    let baseline: Metrics;
    if (first === 'subject') {
      subject = await opts.subject();
      baseline = await opts.baseline();
    } else {
      baseline = await opts.baseline();
      subject = await opts.subject();
    }
    const row: PairedRound = { round: r + 1, first, subject, baseline };
    out.push(row);
    (opts.log ?? defaultLog(opts.label))(row);
  }
  return out;
}

function defaultLog(label = '') {
  return (r: PairedRound) => {
    const f = (m: Metrics) => Object.entries(m).map(([k, v]) => `${k}=${fmt(v)}`).join(' ');
    console.log(`${label}round ${r.round} (${r.first} first): plan-ledger ${f(r.subject)} | baseline ${f(r.baseline)}`);
  };
}

export function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1000) return Math.round(v).toLocaleString('en-US');
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  return v.toPrecision(2);
}

/** One compared figure: plan-ledger's median against the baseline's median. ratio = subject / baseline. */
export interface Metric {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  /** Which direction is better for plan-ledger. */
  readonly better: 'higher' | 'lower';
  readonly subjectLabel: string;
  readonly baselineLabel: string;
  readonly subject: { readonly median: number; readonly rounds: number[] };
  readonly baseline: { readonly median: number; readonly rounds: number[] };
  /** subject median / baseline median. */
  readonly ratio: number;
  /** Median of the per-round ratios (subject and baseline measured back to back). */
  readonly ratioOfRounds: number;
  /** Where the issue sets an aim, e.g. "≥ 1.0×" or "≤ 1.1×". */
  readonly aim?: string;
}

export function metric(rounds: readonly PairedRound[], m: { key: string; subjectKey?: string; baselineKey?: string; label: string; unit: string; better: 'higher' | 'lower'; subjectLabel?: string; baselineLabel: string; aim?: string }): Metric {
  const sk = m.subjectKey ?? m.key;
  const bk = m.baselineKey ?? m.key;
  const s = rounds.map((r) => r.subject[sk]!);
  const b = rounds.map((r) => r.baseline[bk]!);
  if (s.some((v) => v === undefined || Number.isNaN(v)) || b.some((v) => v === undefined || Number.isNaN(v))) throw new Error(`metric ${m.key}: a round lacks ${sk} / ${bk}`);
  const sm = median(s);
  const bm = median(b);
  return {
    key: m.key,
    label: m.label,
    unit: m.unit,
    better: m.better,
    subjectLabel: m.subjectLabel ?? 'plan-ledger',
    baselineLabel: m.baselineLabel,
    subject: { median: sm, rounds: s },
    baseline: { median: bm, rounds: b },
    ratio: sm / bm,
    ratioOfRounds: median(rounds.map((r) => r.subject[sk]! / r.baseline[bk]!)),
    ...(m.aim ? { aim: m.aim } : {}),
  };
}

export interface BenchResult {
  readonly name: string;
  readonly title: string;
  readonly date: string;
  readonly commit: string;
  readonly dirty: boolean;
  readonly machine: ReturnType<typeof machine>;
  readonly command: string;
  readonly quick: boolean;
  readonly settings: Record<string, unknown>;
  readonly metrics: Metric[];
  readonly rounds: unknown[];
  readonly notes: string[];
  readonly extra?: Record<string, unknown>;
}

export function machine() {
  return {
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memGiB: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    loadAverageAtEnd: loadavg().map((l) => Number(l.toFixed(2))),
  };
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

/** The command that produced the result: what bench/run.ts was given, else this script's own. */
export function command(): string {
  if (process.env.BENCH_COMMAND) return process.env.BENCH_COMMAND;
  const script = process.argv[1] ? process.argv[1].replace(`${process.cwd()}/`, '') : 'bench';
  return ['npx tsx', script, ...process.argv.slice(2)].join(' ');
}

export function writeResult(r: Omit<BenchResult, 'date' | 'commit' | 'dirty' | 'machine' | 'command'>): BenchResult {
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  const full: BenchResult = {
    name: r.name,
    title: r.title,
    date: new Date().toISOString(),
    commit: git(['rev-parse', 'HEAD']) || 'unknown',
    // The suite itself rewrites bench/results/ and the generated sections of the README and the docs page.
    dirty: status.split('\n').some((l) => l.trim() !== '' && !l.includes('bench/results/') && !l.endsWith(' README.md') && !l.endsWith(' docs/operations/benchmarks.md')),
    machine: machine(),
    command: command(),
    quick: r.quick,
    settings: r.settings,
    metrics: r.metrics,
    rounds: r.rounds,
    notes: r.notes,
    ...(r.extra ? { extra: r.extra } : {}),
  };
  const file = join(RESULTS_DIR, `${r.name}.json`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(full, null, 2)}\n`);
  console.log(`\n${r.title}`);
  for (const m of r.metrics) {
    console.log(`  ${m.label}: ${m.subjectLabel} ${fmt(m.subject.median)} ${m.unit} vs ${m.baselineLabel} ${fmt(m.baseline.median)} ${m.unit} → ${fmt(m.ratio)}× (${m.better} is better${m.aim ? `; aim ${m.aim}` : ''})`);
  }
  console.log(`results written to ${file}`);
  return full;
}
