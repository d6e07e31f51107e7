// The benchmark suite: runs each benchmark in its own process (so one's heap and connections do not
// weigh on the next), then writes bench/results/summary.md + summary.svg and regenerates from them the
// figures in docs/operations/benchmarks.md and the README's Performance section (bench/readme.ts).
//
//   npm run bench                       every benchmark, full sizes
//   npm run bench -- --quick            every benchmark, small sizes (a few minutes on 2 cores)
//   npm run bench -- peer               only these (names below); flags pass through (--rounds N, --quick)
//   npm run bench -- --summary-only     only summary, docs page + README from the results already there
//
// Needs the local stack (`npm run stack:up`, or PLAN_LEDGER_BROKERS / PLAN_LEDGER_REGISTRY_URL). `peer`
// installs Restate's server and SDK from npm into ~/.cache/plan-ledger/peer on first use. bench/README.md
// says what each measures.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { writeSummary } from './summary.js';

// Each bench runs clients, tails and executors in one process, whose librdkafka reads wait on libuv's
// thread pool (4 threads by default): the same 16 that `plan-ledger` and the tests give theirs.
process.env.UV_THREADPOOL_SIZE ??= '64';

const SCRIPTS: Record<string, { script: string; args?: string[] }> = {
  peer: { script: 'peer.ts' },
  'peer-durable': { script: 'peer.ts', args: ['--durability', 'matched'] },
  'peer-200': { script: 'peer.ts', args: ['--in-flight', '200'] },
  'peer-durable-200': { script: 'peer.ts', args: ['--durability', 'matched', '--in-flight', '200'] },
  executor: { script: 'executor.ts' },
  'write-paths': { script: 'write-paths.ts' },
  latency: { script: 'latency.ts' },
  codec: { script: 'codec.ts' },
  rebuild: { script: 'rebuild.ts' },
  restore: { script: 'restore.ts' },
  failover: { script: 'failover.ts' },
  handover: { script: 'failover.ts', args: ['--handover'] },
  memory: { script: 'memory.ts' },
  'big-plan': { script: 'big-plan.ts' },
  'finished-memory': { script: 'finished-memory.ts' },
  'cold-reads': { script: 'cold-reads.ts' },
  'point-reads': { script: 'point-reads.ts' },
  streams: { script: 'streams.ts' },
  langgraph: { script: 'langgraph.ts' },
};

const argv = process.argv.slice(2);
const BOOLEAN = new Set(['--quick', '--summary-only']);
const names: string[] = [];
const flags: string[] = [];
for (let i = 0; i < argv.length; i++) {
  const a = argv[i]!;
  if (!a.startsWith('--')) names.push(a);
  else if (a === '--summary-only') continue;
  else if (BOOLEAN.has(a) || a.includes('=') || i + 1 >= argv.length || argv[i + 1]!.startsWith('--')) flags.push(a);
  else flags.push(a, argv[++i]!); // --rounds 7, --plans 100, ...
}
const chosen = names.length ? names : Object.keys(SCRIPTS);
for (const n of chosen) {
  if (!SCRIPTS[n]) {
    console.error(`bench: no benchmark "${n}" (choose from ${Object.keys(SCRIPTS).join(', ')})`);
    process.exit(2);
  }
}

const failed: string[] = [];
if (!argv.includes('--summary-only')) {
  const started = Date.now();
  for (const name of chosen) {
    const { script, args = [] } = SCRIPTS[name]!;
    console.log(`\n== ${name} (bench/${script} ${[...args, ...flags].join(' ')})`);
    const t0 = Date.now();
    const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(`./${script}`, import.meta.url)), ...args, ...flags], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_COMMAND: `npm run bench -- ${[name, ...flags].join(' ')}` },
    });
    if (r.status !== 0) {
      console.error(`bench: ${name} failed (${r.signal ?? `exit ${r.status}`})`);
      failed.push(name);
      continue;
    }
    console.log(`== ${name} done in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  }
  console.log(`\nsuite: ${chosen.length - failed.length} of ${chosen.length} benchmarks in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
console.log(`summary written to ${writeSummary()}`);
// A trial run (BENCH_RESULTS_DIR) leaves the README and the docs page alone: their figures are bench/results/'s.
const readme = process.env.BENCH_RESULTS_DIR
  ? (console.log('README.md, docs/operations/benchmarks.md: left alone (BENCH_RESULTS_DIR is set: a trial run)'), { status: 0 })
  : spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./readme.ts', import.meta.url))], { stdio: 'inherit' });
if (failed.length || readme.status !== 0) {
  console.error(`bench: failed: ${[...failed, ...(readme.status !== 0 ? ['readme'] : [])].join(', ')}`);
  process.exit(1);
}
