import { defineConfig } from 'vitest/config';

// Test tiers live in the file name:
//   *.unit.test.ts  pure, nothing running
//   *.int.test.ts   the real Kafka broker and schema registry
//   *.e2e.test.ts   processes, the CLI, a browser
// int and e2e share a global setup that uses PLAN_LEDGER_BROKERS / PLAN_LEDGER_REGISTRY_URL when set and
// otherwise brings the local stack up (and takes it down again only if it started it).
// All three tiers run in one pool of two workers (one group: the same maxWorkers and groupOrder): two
// files at a time took npm test from 2,062 s (one file at a time) to 1,545 s, every test passing. The
// chaos runs (test/e2e/chaos.e2e.test.ts) then run alone, one at a time: beside other files that start
// stacks of their own, a random seed's createPlan calls waited past their 60 s for executors slowed by the
// shared cores (CI on 1cdd9d5, seed 1222914011), which is the machine's load and not what the chaos run
// is there to find.
// Test workers inherit this: each runs executors, projectors and clients side by side, whose librdkafka
// readers wait on libuv's thread pool (4 threads by default).
process.env.UV_THREADPOOL_SIZE ??= '64';
// Every stack a test starts (the shared one, the chaos runs', the three-broker files') runs its JVMs lean:
// the serial collector and the first JIT tier. Brokers and the registry were 53% of the suite's CPU
// (1,124 of 2,128 CPU s in the clean-clone run on 476abe5); lean halves what they spend to start and to
// serve the same tests (docs/guides/local-stack.md). Benchmarks run `server`.
process.env.PLAN_LEDGER_STACK_JVM ??= 'lean';

export default defineConfig({
  test: {
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/**/*.unit.test.ts'],
          // A few unit files start the CLI or a script as a process (its argument errors, its exit code):
          // a second on a quiet machine, more than vitest's default 5 s beside a loaded one.
          testTimeout: 30_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'int',
          include: ['test/**/*.int.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e.test.ts'],
          exclude: ['test/e2e/chaos.e2e.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        test: {
          name: 'chaos',
          include: ['test/e2e/chaos.e2e.test.ts'],
          testTimeout: 900_000,
          hookTimeout: 180_000,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
