// LangGraph checkpointers side by side (issue 32): what a `put` and a `getTuple` cost, and how many
// super-steps per second a graph makes, with the ledger's saver (`plan-ledger/langgraph`) and with
// LangGraph's in-memory `MemorySaver`, in one run. Not part of `npm run bench` (its figures are in
// docs/guides/langgraph.md, not the summary).
//
//   node --import tsx bench/langgraph.ts [--quick] [--puts 200] [--steps 100]
//
// Needs the local stack (or PLAN_LEDGER_BROKERS / PLAN_LEDGER_REGISTRY_URL). Everything real: an in-process
// executor (the writer; no tools) and projector (snapshots and watermarks) on a fresh topic prefix, one
// client connection. `put`: sequential puts of one thread, each the child of the last (one checkpoint of
// three channels, one changed per put). `getTuple`: the thread's latest checkpoint, on the warm saver and on
// a new saver (its first read). Super-steps: a graph whose one node counts to --steps, looping on itself,
// run with `durability: 'sync'` (each step's checkpoint saved before the next starts).
import { randomBytes } from 'node:crypto';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { emptyCheckpoint, MemorySaver, uuid6, type BaseCheckpointSaver, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { startExecutor } from '../executor/index.js';
import { startProjector } from '../projector/index.js';
import { connectLedger } from '../src/client/index.js';
import { LedgerSaver } from '../src/langgraph/index.js';
import { silentLogger } from '../src/logging.js';
import { benchArgs, quantile } from './lib/harness.js';
import { benchConfig, dropTopics } from './lib/ledger.js';

const args = benchArgs(['puts', 'steps']);
const puts = Number(args.options.puts ?? (args.quick ? 60 : 200));
const steps = Number(args.options.steps ?? (args.quick ? 30 : 100));

interface Row {
  saver: string;
  putP50: number;
  putP95: number;
  getP50: number;
  getP95: number;
  coldGet: number;
  stepsPerSec: number;
}

async function measure(name: string, saver: BaseCheckpointSaver, fresh: () => BaseCheckpointSaver): Promise<Row> {
  const thread = `bench-${randomBytes(3).toString('hex')}`;
  let config = { configurable: { thread_id: thread, checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
  const putMs: number[] = [];
  for (let i = 0; i < puts; i++) {
    const cp: Checkpoint = { ...emptyCheckpoint(), id: uuid6(-1), channel_values: { a: `value ${i}`, b: { n: i }, c: [i, i + 1] }, channel_versions: { a: i + 1, b: 1, c: 1 } };
    const t = performance.now();
    config = (await saver.put(config, cp, { source: 'loop', step: i, parents: {} }, i === 0 ? { a: 1, b: 1, c: 1 } : { a: i + 1 })) as typeof config;
    putMs.push(performance.now() - t);
  }
  const latest = { configurable: { thread_id: thread } };
  const getMs: number[] = [];
  for (let i = 0; i < puts; i++) {
    const t = performance.now();
    const got = await saver.getTuple(latest);
    getMs.push(performance.now() - t);
    if (got?.checkpoint.channel_values.a !== `value ${puts - 1}`) throw new Error(`${name}: getTuple read ${JSON.stringify(got?.checkpoint.channel_values)}`);
  }
  const t0 = performance.now();
  await fresh().getTuple(latest);
  const coldGet = performance.now() - t0;

  const State = Annotation.Root({ n: Annotation<number>({ reducer: (_, b) => b, default: () => 0 }) });
  const graph = new StateGraph(State)
    .addNode('tick', (s) => ({ n: s.n + 1 }))
    .addEdge(START, 'tick')
    .addConditionalEdges('tick', (s) => (s.n >= steps ? END : 'tick'))
    .compile({ checkpointer: saver });
  const t1 = performance.now();
  const out = await graph.invoke({ n: 0 }, { configurable: { thread_id: `${thread}-graph` }, durability: 'sync', recursionLimit: steps + 10 });
  const graphMs = performance.now() - t1;
  if (out.n !== steps) throw new Error(`${name}: the graph counted to ${out.n}`);
  return { saver: name, putP50: quantile(putMs, 0.5), putP95: quantile(putMs, 0.95), getP50: quantile(getMs, 0.5), getP95: quantile(getMs, 0.95), coldGet, stepsPerSec: steps / (graphMs / 1000) };
}

const config = benchConfig('langgraph', { partitions: 2 });
const logger = silentLogger();
const executor = await startExecutor({ tools: [], config, logger, concurrency: 4 });
const [ledger, projector] = await Promise.all([connectLedger(config, { logger }), startProjector({ config, logger, port: 0, apiToken: null, watermarkIntervalMs: 200, defaultMetrics: false })]);
await executor.started;
try {
  const rows: Row[] = [];
  const scope = `bench-${randomBytes(3).toString('hex')}`;
  rows.push(await measure('LedgerSaver (plan-ledger/langgraph)', new LedgerSaver({ ledger, scope }), () => new LedgerSaver({ ledger, scope })));
  const memory = new MemorySaver();
  rows.push(await measure('MemorySaver', memory, () => memory));
  const ms = (v: number) => v.toFixed(v < 1 ? 3 : 2);
  console.log(`${new Date().toISOString()}, ${puts} puts and getTuples, a graph of ${steps} super-steps, node ${process.version}`);
  console.log('| saver | put p50 / p95 (ms) | getTuple p50 / p95 (ms) | first getTuple of a new saver (ms) | super-steps/s |');
  console.log('|---|---|---|---|---|');
  for (const r of rows) console.log(`| ${r.saver} | ${ms(r.putP50)} / ${ms(r.putP95)} | ${ms(r.getP50)} / ${ms(r.getP95)} | ${ms(r.coldGet)} | ${r.stepsPerSec.toFixed(0)} |`);
} finally {
  await ledger.close();
  await projector.stop();
  await executor.stop();
  await dropTopics(config);
}
