// A plan-ledger executor in its own process for the benchmarks (the client runs in the bench's process,
// as an application would). Config from PLAN_LEDGER_*; BENCH_CONCURRENCY tool slots. Prints one JSON line
// `{"msg":"ready"}` once it owns and has restored its partitions (not with BENCH_STANDBY=1), `owned` lines as
// its partitions change, and stops gracefully on SIGTERM.
import { startExecutor } from '../../src/index.js';
import { silentLogger } from '../../src/logging.js';
import { defineTool } from '../../src/tools.js';

const noop = defineTool({ name: 'noop', run: () => ({ ok: true }) });
const executor = await startExecutor({ tools: [noop], concurrency: Number(process.env.BENCH_CONCURRENCY ?? 20), logger: silentLogger(), ...(process.env.BENCH_EXECUTOR_ID ? { executorId: process.env.BENCH_EXECUTOR_ID } : {}) });
console.log(JSON.stringify({ msg: 'started', at: Date.now() }));
// Ownership as it changes (a standby owns nothing, so `started` never resolves for it).
let owned = '';
setInterval(() => {
  const now = JSON.stringify(executor.ownedPartitions());
  if (now !== owned) {
    owned = now;
    console.log(JSON.stringify({ msg: 'owned', partitions: executor.ownedPartitions(), at: Date.now() }));
  }
}, 20).unref();
if (process.env.BENCH_STANDBY !== '1') {
  await executor.started;
  console.log(JSON.stringify({ msg: 'ready', partitions: executor.ownedPartitions(), at: Date.now() }));
}
const stop = () => {
  const t = Date.now();
  void executor.stop().then(() => {
    console.log(JSON.stringify({ msg: 'stopped', stopMs: Date.now() - t, at: Date.now() }));
    process.exit(0);
  });
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
