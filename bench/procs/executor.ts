// A plan-ledger executor in its own process for the benchmarks (the client runs in the bench's process,
// as an application would). Config from PLAN_LEDGER_*; BENCH_CONCURRENCY tool slots. Prints one JSON line
// `{"msg":"ready"}` once it owns and has restored its partitions, and stops gracefully on SIGTERM.
import { startExecutor } from '../../src/index.js';
import { silentLogger } from '../../src/logging.js';
import { defineTool } from '../../src/tools.js';

const noop = defineTool({ name: 'noop', run: () => ({ ok: true }) });
const executor = await startExecutor({ tools: [noop], concurrency: Number(process.env.BENCH_CONCURRENCY ?? 20), logger: silentLogger(), ...(process.env.BENCH_EXECUTOR_ID ? { executorId: process.env.BENCH_EXECUTOR_ID } : {}) });
await executor.started;
console.log(JSON.stringify({ msg: 'ready', partitions: executor.ownedPartitions(), at: Date.now() }));
const stop = () => {
  const t = Date.now();
  void executor.stop().then(() => {
    console.log(JSON.stringify({ msg: 'stopped', stopMs: Date.now() - t, at: Date.now() }));
    process.exit(0);
  });
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
