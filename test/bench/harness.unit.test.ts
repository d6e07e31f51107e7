import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { median, metric, paired, quantile, type BenchResult } from '../../bench/lib/harness.js';
import { staleSections, updateDocsPage, updateReadme } from '../../bench/readme.js';
import { BEGIN, commandLine, END, loadResults, noteLines, peerTables, relative, renderBlock, renderSvg, writeSummary } from '../../bench/summary.js';

describe('bench harness', () => {
  it('takes medians and nearest-rank quantiles', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(Number.isNaN(median([]))).toBe(true);
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(quantile(xs, 0.5)).toBe(50);
    expect(quantile(xs, 0.99)).toBe(99);
    expect(quantile([7], 0.99)).toBe(7);
  });

  it('warms both sides, then alternates which goes first, and never runs fewer rounds than asked', async () => {
    const calls: string[] = [];
    let s = 0;
    let b = 0;
    const rounds = await paired({
      rounds: 5,
      warmup: 1,
      subject: async () => (calls.push('s'), { x: ++s }),
      baseline: async () => (calls.push('b'), { x: 10 * ++b }),
      log: () => {},
    });
    expect(calls).toEqual(['s', 'b', 's', 'b', 'b', 's', 's', 'b', 'b', 's', 's', 'b']);
    expect(rounds.map((r) => r.first)).toEqual(['subject', 'baseline', 'subject', 'baseline', 'subject']);
    // The warm-up's values (1 and 10) are not in the rounds.
    expect(rounds.map((r) => r.subject.x)).toEqual([2, 3, 4, 5, 6]);
    expect(rounds.map((r) => r.baseline.x)).toEqual([20, 30, 40, 50, 60]);
  });

  it('reports ratio = subject median / baseline median and the median of per-round ratios', () => {
    const rounds = [
      { round: 1, first: 'subject' as const, subject: { ms: 10 }, baseline: { ms: 5 } },
      { round: 2, first: 'baseline' as const, subject: { ms: 30 }, baseline: { ms: 10 } },
      { round: 3, first: 'subject' as const, subject: { ms: 20 }, baseline: { ms: 20 } },
    ];
    const m = metric(rounds, { key: 'ms', label: 'x', unit: 'ms', better: 'lower', baselineLabel: 'raw' });
    expect(m.subject).toEqual({ median: 20, rounds: [10, 30, 20] });
    expect(m.baseline).toEqual({ median: 10, rounds: [5, 10, 20] });
    expect(m.ratio).toBe(2);
    expect(m.ratioOfRounds).toBe(2);
    expect(relative(m)).toBe(0.5);
    expect(() => metric(rounds, { key: 'missing', label: 'x', unit: 'ms', better: 'lower', baselineLabel: 'raw' })).toThrow(/lacks/);
  });
});

function result(name: string, over: Partial<BenchResult> = {}): BenchResult {
  const rounds = [1, 2, 3, 4, 5].map((i) => ({ round: i, first: i % 2 ? ('subject' as const) : ('baseline' as const), subject: { v: 100 }, baseline: { v: 400 } }));
  return {
    name,
    title: `${name} bench`,
    date: '2026-12-01T03:00:00.000Z',
    commit: 'abcdef0123456789',
    dirty: false,
    machine: { cores: 2, cpuModel: 'cpu', memGiB: 8, node: 'v20.20.2', platform: 'linux-x64', loadAverageAtEnd: [3, 2, 1] },
    command: `npm run bench -- ${name} --quick`,
    quick: true,
    settings: {},
    metrics: [metric(rounds, { key: 'v', label: 'throughput <fast>', unit: 'ops/s', better: 'higher', baselineLabel: 'raw', aim: '≥ 1.0×' })],
    rounds,
    notes: ['a note'],
    extra: { latency: { p50Ms: 3, p99Ms: 9, samples: 20 } },
    ...over,
  };
}

describe('bench summary, docs page and README section', () => {
  it('writes summary.md and an SVG from the result files, in suite order, ignoring files of another shape', () => {
    const dir = mkdtempSync(join(tmpdir(), 'bench-summary-'));
    writeFileSync(join(dir, 'codec.json'), JSON.stringify(result('codec')));
    writeFileSync(join(dir, 'peer.json'), JSON.stringify(result('peer')));
    writeFileSync(join(dir, 'evolve.json'), JSON.stringify({ bench: 'evolve', rows: [] }));
    expect(loadResults(dir).map((r) => r.name)).toEqual(['peer', 'codec']);
    writeSummary(dir);
    const md = readFileSync(join(dir, 'summary.md'), 'utf8');
    expect(md).toContain(BEGIN);
    expect(md).toContain(END);
    expect(md).toContain('| peer | throughput <fast> (higher is better) | 100 ops/s | raw: 400 ops/s | **0.25×** | ≥ 1.0× | 5 |');
    expect(md).toContain('- peer, latency: p50 3.00 ms, p99 9.00 ms (20 samples)');
    expect(md).toContain('![plan-ledger relative to its baselines](summary.svg)');
    expect(md).toContain('Command: `npm run bench -- --quick` (one bench: `npm run bench -- <name> --quick`).');
    expect(md).toContain('Measured 2026-12-01 03:00–03:00 UTC at commit abcdef0123');
    expect(renderBlock([result('peer', { date: '2026-12-03T08:44:00.000Z' }), result('codec')], 'summary.svg')).toContain('Measured 2026-12-01 03:00 – 2026-12-03 08:44 UTC at commit');
    expect(commandLine([result('peer'), result('codec', { command: 'npx tsx bench/codec.ts' })])).toBe('`npm run bench -- peer --quick`, `npx tsx bench/codec.ts`');
    expect(commandLine([result('peer', { command: 'npm run bench -- peer' }), result('codec', { command: 'npm run bench -- codec' })])).toBe('`npm run bench` (one bench: `npm run bench -- <name>`)');
    const svg = readFileSync(join(dir, 'summary.svg'), 'utf8');
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('peer: throughput &lt;fast&gt;');
    expect(svg.match(/<rect /g)).toHaveLength(3); // background + one bar per metric
    expect(renderSvg([])).toContain('no results');
  });

  it('shows the peer table as each side comes out of the box and with matching durability, at 20 and 200 in flight, saying what each side did, the CPU per step of each side and the Kafka requests per step', () => {
    const peerResult = (name: string, tp: [number, number], ms: [number, number], broker: string, cpu?: { inFlight: [number, number]; oneAtATime: [number, number] }, inFlight = 20) => {
      const rounds = [1, 2, 3, 4, 5].map((i) => ({
        round: i,
        first: i % 2 ? ('subject' as const) : ('baseline' as const),
        subject: { stepsPerSecond: tp[0], msPerStep: ms[0], ...(cpu ? { cpuMsPerStepInFlight: cpu.inFlight[0], cpuMsPerStepOneAtATime: cpu.oneAtATime[0] } : {}) },
        baseline: { stepsPerSecond: tp[1], msPerStep: ms[1], ...(cpu ? { cpuMsPerStepInFlight: cpu.inFlight[1], cpuMsPerStepOneAtATime: cpu.oneAtATime[1] } : {}) },
      }));
      return result(name, {
        command: `npm run bench -- ${name} --quick`,
        settings: { brokerDurability: broker, restateDurability: 'Restate fsyncs', inFlight },
        rounds,
        metrics: [
          metric(rounds, { key: 'stepsPerSecond', label: 'steps/s', unit: 'steps/s', better: 'higher', baselineLabel: 'Restate' }),
          metric(rounds, { key: 'msPerStep', label: 'per step', unit: 'ms', better: 'lower', baselineLabel: 'Restate' }),
          ...(cpu
            ? [
                metric(rounds, { key: 'cpuMsPerStepInFlight', label: 'CPU per step', unit: 'ms', better: 'lower', baselineLabel: 'Restate' }),
                metric(rounds, { key: 'cpuMsPerStepOneAtATime', label: 'CPU per step, one at a time', unit: 'ms', better: 'lower', baselineLabel: 'Restate' }),
              ]
            : []),
        ],
        ...(cpu
          ? {
              extra: {
                cost: {
                  'plan-ledger': { inFlight: { cpuMsPerStep: { 'kafka-1': 1.8, executor: 1.05, client: 0.45 } }, oneAtATime: { cpuMsPerStep: { 'kafka-1': 7.3, executor: 2.3, client: 0.9 } } },
                  restate: { inFlight: { cpuMsPerStep: { 'restate-server': 0.6, 'sdk-service': 0.3, client: 0.1 } }, oneAtATime: { cpuMsPerStep: { 'restate-server': 1, 'sdk-service': 0.67, client: 0.42 } } },
                },
                kafkaRequests: {
                  perStep: {
                    inFlight: { executor: { AddPartitionsToTxn: 0.5, Produce: 0.4, EndTxn: 0.4 }, client: { Fetch: 0.3 } },
                    oneAtATime: { executor: { Produce: 1.2, EndTxn: 1.2 }, client: { Fetch: 1.25, ListOffsets: 0.3 } },
                  },
                },
              },
            }
          : {}),
      });
    };
    // peer.json from before CPU was measured: dashes in the CPU columns, no split by process.
    const both = [
      peerResult('peer-durable', [50, 100], [12, 6], 'flush per message', { inFlight: [3.6, 1], oneAtATime: [10.5, 2.1] }),
      result('codec'),
      peerResult('peer-200', [90, 120], [8, 6], 'no flush', undefined, 200),
      peerResult('peer', [80, 100], [8, 6], 'no flush'),
    ];
    const lines = peerTables(both);
    expect(lines.filter((l) => l.startsWith('| defaults') || l.startsWith('| **matched**'))).toEqual([
      '| defaults — Kafka: no flush; Restate: Restate fsyncs | 20 | 100 | 80.0 | **0.80×** | 6.00 | 8.00 | **1.33×** | – | – | – | – | – | – | 2026-12-01 03:00 UTC, `npm run bench -- peer --quick` |',
      '| **matched** — Kafka: flush per message; Restate: Restate fsyncs | 20 | 100 | 50.0 | **0.50×** | 6.00 | 12.0 | **2.00×** | 1.00 | 3.60 | **3.60×** | 2.10 | 10.5 | **5.00×** | 2026-12-01 03:00 UTC, `npm run bench -- peer-durable --quick` |',
      '| defaults — Kafka: no flush; Restate: Restate fsyncs | 200 | 120 | 90.0 | **0.75×** | 6.00 | 8.00 | **1.33×** | – | – | – | – | – | – | 2026-12-01 03:00 UTC, `npm run bench -- peer-200 --quick` |',
    ]);
    expect(lines.filter((l) => l.startsWith('- '))).toEqual([
      '- peer-durable, Restate, CPU ms per step by process: in flight restate-server 0.60 + sdk-service 0.30 + client 0.10; one at a time restate-server 1.00 + sdk-service 0.67 + client 0.42',
      '- peer-durable, plan-ledger, CPU ms per step by process: in flight kafka-1 1.80 + executor 1.05 + client 0.45; one at a time kafka-1 7.30 + executor 2.30 + client 0.90',
      '- peer-durable, plan-ledger, Kafka requests per step in flight (a counted pass): executor 1.30 (AddPartitionsToTxn 0.50, Produce 0.40, EndTxn 0.40); client 0.30 (Fetch 0.30)',
      '- peer-durable, plan-ledger, Kafka requests per step one at a time (a counted pass): executor 2.40 (Produce 1.20, EndTxn 1.20); client 1.55 (Fetch 1.25, ListOffsets 0.30)',
    ]);
    expect(peerTables([result('codec')])).toEqual([]);
    expect(renderBlock(both, 'summary.svg')).toContain('The peer table, as each side comes out of the box and with matching durability, at 20 and at 200 plans in flight:');
  });

  it('says a note several benches share once, one line per bench, and leaves durability notes to the peer tables', () => {
    const rs = [result('failover', { notes: ['Quick.', 'Session.'] }), result('handover', { notes: ['Quick.', 'Stop.'] }), result('peer', { notes: ['Durability: broker defaults.', 'Client-timed.'] })];
    expect(noteLines(rs, true)).toEqual(['- failover, handover: Quick.', '- failover: Session.', '- handover: Stop.', '- peer: Client-timed.']);
    expect(noteLines(rs, false)).toContain('- peer: Durability: broker defaults. Client-timed.');
  });

  it('puts the full block into the docs page and a short peer section into the README, replacing only the marked blocks', () => {
    const summary = `# s\n\n${renderBlock([result('peer'), result('codec')], 'summary.svg')}\n`;
    const page = `# t\n\nbefore\n\n${BEGIN}\nold\n${END}\n\nafter\n`;
    const docs = updateDocsPage(page, summary);
    expect(docs.startsWith('# t\n\nbefore\n\n<!-- bench:begin -->')).toBe(true);
    expect(docs.endsWith(`${END}\n\nafter\n`)).toBe(true);
    expect(docs).not.toContain('\nold\n');
    expect(docs).toContain('| codec | throughput <fast> (higher is better) |');
    expect(docs).toContain('](../../bench/results/summary.svg)');
    expect(updateDocsPage(docs, summary)).toBe(docs);
    expect(() => updateDocsPage('# no markers\n', summary)).toThrow(/docs\/operations\/benchmarks\.md: no/);

    const peerRun = (name: string, tp: [number, number], ms: [number, number]) => {
      const rounds = [1, 2, 3, 4, 5].map((i) => ({ round: i, first: i % 2 ? ('subject' as const) : ('baseline' as const), subject: { stepsPerSecond: tp[0], msPerStep: ms[0] }, baseline: { stepsPerSecond: tp[1], msPerStep: ms[1] } }));
      return result(name, {
        date: name === 'peer' ? '2026-12-03T08:41:02.000Z' : '2026-12-02T10:00:00.000Z',
        rounds,
        metrics: [
          metric(rounds, { key: 'stepsPerSecond', label: 'steps/s', unit: 'steps/s', better: 'higher', baselineLabel: 'Restate 1.7.12' }),
          metric(rounds, { key: 'msPerStep', label: 'per step', unit: 'ms', better: 'lower', baselineLabel: 'Restate 1.7.12' }),
        ],
      });
    };
    // peer-200 was run, peer-durable-200 not: a dash in its cell.
    const results = [peerRun('peer-durable', [300, 1000], [15, 5]), result('codec'), peerRun('peer', [600, 1200], [7, 2]), peerRun('peer-200', [1500, 2000], [7, 2])];
    const readme = updateReadme(page, results);
    const short = readme.slice(readme.indexOf(BEGIN), readme.indexOf(END));
    expect(short).toContain('plan-ledger against Restate 1.7.12, both on the same 2-core machine');
    expect(short.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| durability'))).toEqual([
      "| each side's defaults (Restate fsyncs its log, the broker does not) | 600 vs 1,200: **0.50×** | 1,500 vs 2,000: **0.75×** | 7.00 vs 2.00: **3.50×** | 2026-12-03, `--quick` |",
      '| matched: the broker fsyncs every write too | 300 vs 1,000: **0.30×** | – | 15.0 vs 5.00: **3.00×** | 2026-12-02, `--quick` |',
    ]);
    expect(short).toContain('](docs/operations/benchmarks.md#the-latest-figures)');
    expect(short).toContain('![plan-ledger relative to its baselines](bench/results/summary.svg)');
    expect(short).not.toContain('codec'); // the other benches stay on the docs page
    expect(readme.split('\n').length).toBeLessThan(page.split('\n').length + 12);
    expect(updateReadme(readme, results)).toBe(readme);
    expect(updateReadme(page, [result('codec')])).toContain('No peer results yet: run `npm run bench -- peer peer-durable`');
    expect(() => updateReadme('# no markers\n', results)).toThrow(/README\.md: no/);
  });

  it('the committed README, docs page and summary.md say what bench/results/ says (npm run bench -- --summary-only)', () => {
    expect(staleSections(fileURLToPath(new URL('../..', import.meta.url)))).toEqual([]);
  });
});
