// Turns bench/results/<name>.json into bench/results/summary.md and bench/results/summary.svg (a bar
// per compared figure: plan-ledger relative to its baseline, log scale, 1× = parity). The block between
// the bench markers in summary.md is what bench/readme.ts copies into docs/operations/benchmarks.md (the
// README gets a short section of the peer ratios).
//
//   npx tsx bench/summary.ts
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { fmt, RESULTS_DIR, type BenchResult, type Metric } from './lib/harness.js';

export const BEGIN = '<!-- bench:begin -->';
export const END = '<!-- bench:end -->';

/** The order of the suite (bench/run.ts), which is also the order of the summary. */
export const ORDER = ['peer', 'peer-durable', 'peer-200', 'peer-durable-200', 'executor', 'latency', 'codec', 'rebuild', 'restore', 'failover', 'handover', 'memory', 'big-plan'];

export function loadResults(dir = RESULTS_DIR): BenchResult[] {
  const out: BenchResult[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
    const r = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Partial<BenchResult>;
    if (Array.isArray(r.metrics) && typeof r.name === 'string') out.push(r as BenchResult);
  }
  const rank = (n: string) => (ORDER.includes(n) ? ORDER.indexOf(n) : ORDER.length);
  return out.sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
}

/** > 1 means plan-ledger does better than its baseline, whichever way the figure points. */
export function relative(m: Metric): number {
  return m.better === 'higher' ? m.ratio : 1 / m.ratio;
}

function value(v: number, unit: string): string {
  return unit === '×' ? `${fmt(v)}×` : `${fmt(v)} ${unit}`;
}

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function renderSvg(results: readonly BenchResult[]): string {
  const rows = results.flatMap((r) => r.metrics.map((m) => ({ r, m })));
  const W = 900;
  const labelW = 430;
  const barW = W - labelW - 90;
  const rowH = 24;
  const top = 46;
  const H = top + rows.length * rowH + 40;
  const lo = Math.log10(0.01);
  const hi = Math.log10(100);
  const x = (v: number) => labelW + ((Math.log10(Math.min(100, Math.max(0.01, v))) - lo) / (hi - lo)) * barW;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  parts.push(`<text x="10" y="18" font-size="14" font-weight="bold">plan-ledger relative to its baseline (median ratio; right of 1× = better, log scale)</text>`);
  for (const t of [0.01, 0.1, 1, 10, 100]) {
    parts.push(`<line x1="${x(t)}" y1="${top - 8}" x2="${x(t)}" y2="${H - 30}" stroke="${t === 1 ? '#333' : '#ddd'}" stroke-width="${t === 1 ? 1.5 : 1}"/>`);
    parts.push(`<text x="${x(t)}" y="${top - 12}" text-anchor="middle" fill="#555">${t}×</text>`);
  }
  rows.forEach(({ r, m }, i) => {
    const y = top + i * rowH;
    const rel = relative(m);
    const x1 = x(1);
    const x2 = x(rel);
    const good = rel >= 1;
    parts.push(`<text x="10" y="${y + 16}">${esc(`${r.name}: ${m.label}`)}</text>`);
    parts.push(`<rect x="${Math.min(x1, x2)}" y="${y + 5}" width="${Math.max(1, Math.abs(x2 - x1))}" height="${rowH - 10}" fill="${good ? '#2e8b57' : '#c0504d'}"/>`);
    const word = m.better === 'higher' ? `${fmt(m.ratio)}×` : `${fmt(m.ratio)}× the time`;
    parts.push(`<text x="${good ? x2 + 4 : x2 - 4}" y="${y + 16}" text-anchor="${good ? 'start' : 'end'}" fill="#222">${esc(word)}</text>`);
  });
  const first = results[0];
  parts.push(`<text x="10" y="${H - 10}" fill="#555">${esc(first ? `${first.date.slice(0, 10)}, commit ${first.commit.slice(0, 10)}, ${first.machine.cores} cores, node ${first.machine.node}${results.some((r) => r.quick) ? ', quick settings' : ''}` : 'no results')}</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** `npm run bench -- --quick` when every result came from the suite with the same flags, else each command. */
export function commandLine(results: readonly BenchResult[]): string {
  const suite = results.map((r) => /^npm run bench -- (\S+)(.*)$/.exec(r.command));
  const tails = new Set(suite.map((m) => (m ? m[2] : null)));
  if (suite.every((m, i) => m && m[1] === results[i]!.name) && tails.size === 1) {
    const tail = [...tails][0]!.trim();
    return `\`npm run bench${tail ? ` -- ${tail}` : ''}\` (one bench: \`npm run bench -- <name>${tail ? ` ${tail}` : ''}\`)`;
  }
  return [...new Set(results.map((r) => `\`${r.command}\``))].join(', ');
}

/** Restate, plan-ledger and ratio cells of a figure; dashes for a result from before the figure was measured. */
function sideCells(m: Metric | undefined): string {
  return m ? `${fmt(m.baseline.median)} | ${fmt(m.subject.median)} | **${fmt(m.ratio)}×**` : '– | – | –';
}

/** The per-process CPU of a peer run (its extra.cost), one line per side: `kafka-1 1.83 + executor 1.05 + ...`. */
export function peerCpuLines(r: BenchResult): string[] {
  const cost = r.extra?.cost as Record<string, Record<string, { cpuMsPerStep?: Record<string, number> }>> | undefined;
  if (!cost) return [];
  const out: string[] = [];
  for (const side of ['restate', 'plan-ledger']) {
    const phases = cost[side];
    if (!phases) continue;
    const part = (phase: string) => Object.entries(phases[phase]?.cpuMsPerStep ?? {}).map(([p, v]) => `${p} ${fmt(v)}`).join(' + ');
    out.push(`- ${r.name}, ${side === 'restate' ? 'Restate' : side}, CPU ms per step by process: in flight ${part('inFlight')}; one at a time ${part('oneAtATime')}`);
  }
  return out;
}

/** The Kafka requests per step of a peer run's counted pass (its extra.kafkaRequests), one line per process and phase. */
export function peerRequestLines(r: BenchResult): string[] {
  const counted = r.extra?.kafkaRequests as { perStep?: Record<string, Record<string, Record<string, number>>> } | undefined;
  if (!counted?.perStep) return [];
  const out: string[] = [];
  for (const phase of ['inFlight', 'oneAtATime']) {
    const byProc = counted.perStep[phase];
    if (!byProc) continue;
    const part = (proc: string) => {
      const reqs = Object.entries(byProc[proc] ?? {});
      const total = reqs.reduce((sum, [, v]) => sum + v, 0);
      return `${proc} ${fmt(total)} (${reqs.map(([k, v]) => `${k} ${fmt(v)}`).join(', ')})`;
    };
    out.push(`- ${r.name}, plan-ledger, Kafka requests per step ${phase === 'inFlight' ? 'in flight' : 'one at a time'} (a counted pass): ${Object.keys(byProc).map(part).join('; ')}`);
  }
  return out;
}

/**
 * The peer table twice when both runs are there: as each side comes out of the box (`peer`) and with
 * matching durability (`peer-durable`: the broker flushing every message, `--durability matched`). CPU
 * per step is of every process of the side (on two shared cores, what the comparison is about), with
 * each run's split by process below the table.
 */
export function peerTables(results: readonly BenchResult[]): string[] {
  const runs = ['peer', 'peer-durable', 'peer-200', 'peer-durable-200'].map((n) => results.find((r) => r.name === n)).filter((r): r is BenchResult => r !== undefined);
  if (!runs.length) return [];
  const lines = [
    'The peer table, as each side comes out of the box and with matching durability, at 20 and at 200 plans in flight:',
    '',
    '| durability | in flight | Restate steps/s | plan-ledger steps/s | ratio | Restate ms/step, one at a time | plan-ledger ms/step | ratio | Restate CPU ms/step, in flight | plan-ledger CPU ms/step | ratio | Restate CPU ms/step, one at a time | plan-ledger CPU ms/step | ratio | measured |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  const split: string[] = [];
  for (const r of runs) {
    const tp = r.metrics.find((m) => m.key === 'stepsPerSecond');
    const lat = r.metrics.find((m) => m.key === 'msPerStep');
    if (!tp || !lat) continue;
    const st = r.settings as { brokerDurability?: string; restateDurability?: string; inFlight?: number };
    const what = `${r.name.startsWith('peer-durable') ? '**matched**' : 'defaults'} — Kafka: ${st.brokerDurability ?? 'broker defaults'}; Restate: ${st.restateDurability ?? 'defaults'}`;
    const cpu = (key: string) => sideCells(r.metrics.find((m) => m.key === key));
    lines.push(`| ${what} | ${st.inFlight ?? 20} | ${sideCells(tp)} | ${sideCells(lat)} | ${cpu('cpuMsPerStepInFlight')} | ${cpu('cpuMsPerStepOneAtATime')} | ${r.date.slice(0, 16).replace('T', ' ')} UTC, \`${r.command}\` |`);
    split.push(...peerCpuLines(r), ...peerRequestLines(r));
  }
  return split.length ? [...lines, '', ...split] : lines;
}

/**
 * One line per bench (or per set of benches saying the same): a note several results share is said once,
 * and with the peer tables shown a result's `Durability:` note is left out (the table's first column says it).
 */
export function noteLines(results: readonly BenchResult[], peerTablesShown: boolean): string[] {
  const owners = new Map<string, string[]>();
  for (const r of results) {
    for (const n of r.notes) {
      if (peerTablesShown && n.startsWith('Durability:')) continue;
      const names = owners.get(n) ?? [];
      if (!names.includes(r.name)) names.push(r.name);
      owners.set(n, names);
    }
  }
  const byOwners = new Map<string, string[]>();
  for (const [n, names] of owners) byOwners.set(names.join(', '), [...(byOwners.get(names.join(', ')) ?? []), n]);
  return [...byOwners].map(([names, ns]) => `- ${names}: ${ns.join(' ')}`);
}

/** The block shared by summary.md and docs/operations/benchmarks.md (imagePath relative to where the block is shown). */
export function renderBlock(results: readonly BenchResult[], imagePath: string): string {
  const lines: string[] = [];
  const commits = [...new Set(results.map((r) => r.commit.slice(0, 10)))].map((c) => `${c}${results.some((r) => r.commit.startsWith(c) && r.dirty) ? ' (with uncommitted changes)' : ''}`);
  const dates = results.map((r) => r.date).sort();
  const m = results[0]?.machine;
  const loads = results.map((r) => r.machine.loadAverageAtEnd[0] ?? 0);
  lines.push(BEGIN);
  lines.push('<!-- generated by bench/summary.ts and bench/readme.ts from bench/results/*.json; do not edit by hand -->');
  lines.push('');
  if (!results.length) {
    lines.push('No results yet: run `npm run bench`.');
  } else {
    const first = dates[0]!;
    const last = dates.at(-1)!;
    // The end's date too when the runs span days: 2026-12-01 07:22 – 2026-12-03 08:44, not 07:22–08:44.
    const span = last.slice(0, 10) === first.slice(0, 10) ? `${first.slice(0, 16).replace('T', ' ')}–${last.slice(11, 16)}` : `${first.slice(0, 16).replace('T', ' ')} – ${last.slice(0, 16).replace('T', ' ')}`;
    lines.push(`Measured ${span} UTC at commit ${commits.join(', ')}, on ${m!.cores} cores (${m!.cpuModel}), node ${m!.node}; load average at the end of each bench ${fmt(Math.min(...loads))}–${fmt(Math.max(...loads))}.`);
    lines.push(`Command: ${commandLine(results)}.${results.some((r) => r.quick) ? ' **Quick settings** (smaller sizes), measured on a busy machine; the full suite is `npm run bench`.' : ''}`);
    lines.push('Every figure is the median of at least five rounds; in each round plan-ledger and its baseline run back to back, alternating which goes first, after a warm-up of both. Ratio = plan-ledger ÷ baseline.');
    lines.push('');
    lines.push('| bench | figure | plan-ledger | baseline | ratio | aim | rounds |');
    lines.push('|---|---|---:|---|---:|---|---:|');
    for (const r of results) {
      for (const x of r.metrics) {
        lines.push(`| ${r.name} | ${x.label} (${x.better} is better) | ${value(x.subject.median, x.unit)} | ${x.baselineLabel}: ${value(x.baseline.median, x.unit)} | **${fmt(x.ratio)}×** | ${x.aim ?? ''} | ${x.subject.rounds.length} |`);
      }
    }
    const peer = peerTables(results);
    if (peer.length) lines.push('', ...peer);
    const extras: string[] = [];
    for (const r of results) {
      const visit = (k: string, v: unknown, depth: number) => {
        if (!v || typeof v !== 'object' || Array.isArray(v)) return;
        if ('p50Ms' in v) {
          const e = v as { p50Ms: number; p99Ms?: number; samples?: number; how?: string; aimP50Ms?: number };
          extras.push(`- ${r.name}, ${k}: p50 ${fmt(e.p50Ms)} ms${e.p99Ms !== undefined ? `, p99 ${fmt(e.p99Ms)} ms` : ''}${e.samples !== undefined ? ` (${e.samples} samples)` : ''}${e.aimP50Ms !== undefined ? `; aim p50 ≤ ${e.aimP50Ms} ms` : ''}${e.how ? ` — ${e.how}` : ''}`);
        } else if (depth < 1) {
          for (const [k2, v2] of Object.entries(v)) visit(`${k} ${k2}`, v2, depth + 1);
        }
      };
      for (const [k, v] of Object.entries(r.extra ?? {})) visit(k, v, 0);
    }
    if (extras.length) {
      lines.push('');
      lines.push(...extras);
    }
    lines.push('');
    lines.push(`![plan-ledger relative to its baselines](${imagePath})`);
    const notes = noteLines(results, peer.length > 0);
    if (notes.length) {
      lines.push('');
      lines.push('Notes:');
      lines.push(...notes);
    }
  }
  lines.push('');
  lines.push(END);
  return lines.join('\n');
}

export function writeSummary(dir = RESULTS_DIR): string {
  const results = loadResults(dir);
  writeFileSync(join(dir, 'summary.svg'), renderSvg(results));
  const md = [
    '# Benchmark summary',
    '',
    'Generated by `bench/summary.ts` from the result files next to this one (each holds every round, the',
    'settings, the machine, the commit and the command). `bench/readme.ts` copies the block below into',
    '`docs/operations/benchmarks.md`, and the peer ratios into the README\'s Performance section.',
    '',
    renderBlock(results, 'summary.svg'),
    '',
  ].join('\n');
  const file = join(dir, 'summary.md');
  writeFileSync(file, md);
  return file;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(`summary written to ${writeSummary()}`);
}
