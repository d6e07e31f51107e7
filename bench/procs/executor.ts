// A plan-ledger executor in its own process for the benchmarks (the client runs in the bench's process,
// as an application would). Config from PLAN_LEDGER_*; BENCH_CONCURRENCY tool slots. Prints one JSON line
// `{"msg":"ready"}` once it owns and has restored its partitions (not with BENCH_STANDBY=1), `owned` lines as
// its partitions change, and stops gracefully on SIGTERM.
//
// BENCH_KAFKA_REQUESTS=1 (with PLAN_LEDGER_KAFKA_DEBUG=protocol, so librdkafka logs each request it sends):
// counts the Kafka requests this process sent, by type, and on SIGUSR2 prints them as one JSON line
// `{"msg":"kafka-requests","requests":{"Produce":n,...},"steps":n}` (steps: item attempts with a recorded
// outcome, from the executor's metrics). Nothing else is logged.
import { startExecutor } from '../../index.js';
import { createLogger, silentLogger } from '../../src/logging.js';
import { defineTool } from '../../src/tools.js';
import { profileSelf } from '../lib/profiles.js';
import { requestCounter } from '../lib/requests.js';

const { stream: requestLog, counts: requests } = requestCounter();
const countRequests = process.env.BENCH_KAFKA_REQUESTS === '1';
const logger = countRequests ? createLogger({ level: 'trace' }, requestLog) : silentLogger();
const noop = defineTool({ name: 'noop', run: () => ({ ok: true }) });
const executor = await startExecutor({ tools: [noop], concurrency: Number(process.env.BENCH_CONCURRENCY ?? 20), logger, ...(process.env.BENCH_EXECUTOR_ID ? { executorId: process.env.BENCH_EXECUTOR_ID } : {}) });
if (countRequests) {
  process.on('SIGUSR2', () => {
    void executor.metrics().then((text) => {
      let steps = 0;
      // Every attempt with a recorded outcome (succeeded, failed_retryable, failed_terminal) is a step.
      for (const m of text.matchAll(/^plan_ledger_executor_attempts_total\{[^}]*\} (\d+)$/gm)) steps += Number(m[1]);
      console.log(JSON.stringify({ msg: 'kafka-requests', requests: { ...requests }, steps, at: Date.now() }));
    });
  });
}
// BENCH_PROFILE=1: SIGUSR2 starts the V8 profiler of this process, the next SIGUSR2 stops it and prints
// its summary as one JSON line `{"msg":"profile","summary":{...}}` (bench/lib/profiles.ts).
if (process.env.BENCH_PROFILE === '1') {
  let stopProfile: (() => Promise<unknown>) | undefined;
  process.on('SIGUSR2', () => {
    if (stopProfile === undefined) {
      void profileSelf().then((stop) => {
        stopProfile = stop;
        console.log(JSON.stringify({ msg: 'profiling', at: Date.now() }));
      });
    } else {
      const stop = stopProfile;
      stopProfile = undefined;
      void stop().then((summary) => console.log(JSON.stringify({ msg: 'profile', summary, at: Date.now() })));
    }
  });
}
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
