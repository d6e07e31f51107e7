// LangGraph checkpointers side by side (issue 32): what a `put` and a `getTuple` cost, and how many
// super-steps per second a graph makes, with the ledger's saver (`plan-ledger/langgraph`), LangGraph's
// SQLite saver (`@langchain/langgraph-checkpoint-sqlite`, a file in a temp dir: the durable baseline) and
// its in-memory `MemorySaver` (durable nothing: the floor), in one run.
//
//   npm run bench -- langgraph [--quick] [--rounds 5] [--puts 200] [--steps 100]
//   node --import tsx bench/langgraph.ts [the same flags]
//
// Needs the local stack (or PLAN_LEDGER_BROKERS / PLAN_LEDGER_REGISTRY_URL), and builds better-sqlite3
// (the SQLite saver's native module) on first use from its bundled sources (bench/lib/sqlite.ts).
// Everything real: an in-process executor (the writer; no tools) and projector (snapshots and watermarks)
// on a fresh topic prefix, one client connection. Per round, each saver in turn (the order rotates each
// round, after a warm-up round of all three that is discarded): `put` — sequential puts of a new thread,
// each the child of the last (one checkpoint of three channels, `a` changed per put, `b` and `c` as the first put wrote them); `getTuple` — the
// thread's latest checkpoint, as many times, on the warm saver; the first `getTuple` of a new saver (a
// new LedgerSaver on the same connection, a new SqliteSaver opening the same file; MemorySaver keeps
// nothing to reopen: the same one); super-steps — a graph whose one node counts to --steps, looping on
// itself, with `durability: 'sync'` (each step's checkpoint saved before the next starts). Figures are
// medians over rounds of each round's p50 / p95; compared: LedgerSaver (subject) with SqliteSaver.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { emptyCheckpoint, MemorySaver, uuid6, type BaseCheckpointSaver, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { startExecutor } from '../executor/index.js';
import { startProjector } from '../projector/index.js';
import { connectLedger } from '../src/client/index.js';
import { LedgerSaver } from '../src/langgraph/index.js';
import { silentLogger } from '../src/logging.js';
import { benchArgs, fmt, median, metric, quantile, writeResult, type Metrics, type PairedRound } from './lib/harness.js';
import { benchConfig, dropTopics } from './lib/ledger.js';
import { ensureSqliteBuilt, sqliteSaver } from './lib/sqlite.js';

const args = benchArgs(['puts', 'steps']);
const puts = Number(args.options.puts ?? (args.quick ? 60 : 200));
const steps = Number(args.options.steps ?? (args.quick ? 30 : 100));

try {
  ensureSqliteBuilt();
} catch (e) {
  console.error(`bench langgraph: the SQLite saver cannot run: ${(e as Error).message}`);
  process.exit(1);
}

interface Side {
  name: string;
  saver: BaseCheckpointSaver;
  /** A new saver over the same store, for its first read; closed after. */
  fresh: () => Promise<{ saver: BaseCheckpointSaver; close: () => void }>;
}

/** One saver's figures for one round, on new threads. */
async function measure(side: Side, n: number, graphSteps: number): Promise<Metrics> {
  const { saver } = side;
  const thread = `bench-${randomBytes(4).toString('hex')}`;
  let config = { configurable: { thread_id: thread, checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
  const putMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const cp: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { a: `value ${i}`, b: { n: 0 }, c: [0, 1] }, channel_versions: { a: i + 1, b: 1, c: 1 } };
    const t = performance.now();
    config = (await saver.put(config, cp, { source: 'loop', step: i, parents: {} }, i === 0 ? { a: 1, b: 1, c: 1 } : { a: i + 1 })) as typeof config;
    putMs.push(performance.now() - t);
  }
  const latest = { configurable: { thread_id: thread } };
  const check = (got: Awaited<ReturnType<BaseCheckpointSaver['getTuple']>>, what: string) => {
    if (got?.checkpoint.channel_values.a !== `value ${n - 1}` || JSON.stringify(got.checkpoint.channel_values.b) !== JSON.stringify({ n: 0 })) {
      throw new Error(`${side.name}: ${what} read ${JSON.stringify(got?.checkpoint.channel_values)}`);
    }
  };
  const getMs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const got = await saver.getTuple(latest);
    getMs.push(performance.now() - t);
    check(got, 'getTuple');
  }
  const t0 = performance.now();
  const fresh = await side.fresh();
  const cold = await fresh.saver.getTuple(latest);
  const coldGet = performance.now() - t0;
  fresh.close();
  check(cold, 'a new saver\'s getTuple');

  const State = Annotation.Root({ n: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }) });
  const graph = new StateGraph(State)
    .addNode('tick', (s) => ({ n: s.n + 1 }))
    .addEdge(START, 'tick')
    .addConditionalEdges('tick', (s) => (s.n >= graphSteps ? END : 'tick'))
    .compile({ checkpointer: saver });
  const t1 = performance.now();
  const out = await graph.invoke({ n: 0 }, { configurable: { thread_id: `${thread}-graph` }, durability: 'sync', recursionLimit: graphSteps + 10 });
  const graphMs = performance.now() - t1;
  if (out.n !== graphSteps) throw new Error(`${side.name}: the graph counted to ${out.n}`);
  return { putP50: quantile(putMs, 0.5), putP95: quantile(putMs, 0.95), getP50: quantile(getMs, 0.5), getP95: quantile(getMs, 0.95), coldGet, stepsPerSec: graphSteps / (graphMs / 1000) };
}

const config = benchConfig('langgraph', { partitions: 2 });
const logger = silentLogger();
const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-bench-sqlite-'));
const sqliteFile = join(dir, 'checkpoints.sqlite');
const executor = await startExecutor({ tools: [], config, logger, concurrency: 4 });
const [ledger, projector] = await Promise.all([connectLedger(config, { logger }), startProjector({ config, logger, port: 0, apiToken: null, watermarkIntervalMs: 200, defaultMetrics: false })]);
await executor.started;
const sqlite = await sqliteSaver(sqliteFile);
try {
  const scope = `bench-${randomBytes(3).toString('hex')}`;
  const memory = new MemorySaver();
  const sides: Side[] = [
    { name: 'LedgerSaver', saver: new LedgerSaver({ ledger, scope }), fresh: async () => ({ saver: new LedgerSaver({ ledger, scope }), close: () => {} }) },
    {
      name: 'SqliteSaver',
      saver: sqlite,
      fresh: async () => {
        const s = await sqliteSaver(sqliteFile);
        return { saver: s, close: () => s.db.close() };
      },
    },
    { name: 'MemorySaver', saver: memory, fresh: async () => ({ saver: memory, close: () => {} }) },
  ];
  // Warm-up: every side once at small sizes, discarded.
  for (const s of sides) await measure(s, Math.min(puts, 30), Math.min(steps, 10));
  const perRound: Array<{ order: string[]; savers: Record<string, Metrics> }> = [];
  for (let r = 0; r < args.rounds; r++) {
    const order = sides.map((_, i) => sides[(i + r) % sides.length]!);
    const row: Record<string, Metrics> = {};
    for (const s of order) row[s.name] = await measure(s, puts, steps);
    perRound.push({ order: order.map((s) => s.name), savers: row });
    const f = (m: Metrics) => `put ${fmt(m.putP50!)} ms, get ${fmt(m.getP50!)} ms, new ${fmt(m.coldGet!)} ms, ${fmt(m.stepsPerSec!)} steps/s`;
    console.log(`round ${r + 1} (${order.map((s) => s.name).join(', ')}): ${sides.map((s) => `${s.name}: ${f(row[s.name]!)}`).join(' | ')}`);
  }
  const med = (name: string, key: string) => median(perRound.map((r) => r.savers[name]![key]!));
  const KEYS = ['putP50', 'putP95', 'getP50', 'getP95', 'coldGet', 'stepsPerSec'];
  const medians = Object.fromEntries(sides.map((s) => [s.name, Object.fromEntries(KEYS.map((k) => [k, med(s.name, k)]))]));
  const paired: PairedRound[] = perRound.map((r, i) => ({ round: i + 1, first: r.order.indexOf('LedgerSaver') < r.order.indexOf('SqliteSaver') ? 'subject' : 'baseline', subject: r.savers.LedgerSaver!, baseline: r.savers.SqliteSaver! }));
  const baselineLabel = 'SqliteSaver (file)';
  const subjectLabel = 'LedgerSaver';
  writeResult({
    name: 'langgraph',
    title: `LangGraph checkpointers: put and getTuple latency, super-steps/s (${puts} puts, a graph of ${steps} steps)`,
    quick: args.quick,
    settings: { rounds: args.rounds, puts, steps, durability: 'sync', partitions: 2, sqlite: 'better-sqlite3, WAL (the saver\'s setup), a file in a temp dir' },
    metrics: [
      metric(paired, { key: 'putP50', label: 'LangGraph put p50', unit: 'ms', better: 'lower', subjectLabel, baselineLabel }),
      metric(paired, { key: 'getP50', label: 'LangGraph getTuple p50 (warm saver)', unit: 'ms', better: 'lower', subjectLabel, baselineLabel }),
      metric(paired, { key: 'coldGet', label: 'LangGraph first getTuple of a new saver', unit: 'ms', better: 'lower', subjectLabel, baselineLabel }),
      metric(paired, { key: 'stepsPerSec', label: 'LangGraph super-steps/s (durability sync)', unit: 'steps/s', better: 'higher', subjectLabel, baselineLabel }),
    ],
    rounds: perRound,
    notes: [
      'One broker on the local stack; an in-process executor and projector on a fresh topic prefix; one client connection.',
      'SqliteSaver: @langchain/langgraph-checkpoint-sqlite on better-sqlite3 built from its bundled SQLite, one file in a temp dir (WAL, as its setup sets). MemorySaver keeps everything in the process and survives nothing.',
      'Each figure is the median over rounds of that round\'s p50 / p95; the order of the three savers rotates each round.',
    ],
    extra: { medians },
  });
  const ms = (v: number) => v.toFixed(v < 1 ? 3 : 2);
  console.log(`\n${new Date().toISOString()}, ${args.rounds} rounds of ${puts} puts and getTuples and a graph of ${steps} super-steps, node ${process.version}; medians over rounds`);
  console.log('| saver | put p50 / p95 (ms) | getTuple p50 / p95 (ms) | first getTuple of a new saver (ms) | super-steps/s |');
  console.log('|---|---|---|---|---|');
  for (const s of sides) {
    const m = medians[s.name]!;
    console.log(`| ${s.name} | ${ms(m.putP50!)} / ${ms(m.putP95!)} | ${ms(m.getP50!)} / ${ms(m.getP95!)} | ${ms(m.coldGet!)} | ${m.stepsPerSec!.toFixed(0)} |`);
  }
} finally {
  sqlite.db.close();
  rmSync(dir, { recursive: true, force: true });
  await ledger.close();
  await projector.stop();
  await executor.stop();
  await dropTopics(config);
}
