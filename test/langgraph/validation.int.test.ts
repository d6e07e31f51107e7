// LangGraph's own checkpointer validation suite (`validate()` of @langchain/langgraph-checkpoint-validation
// 1.1.1: put, putWrites, getTuple, list with every filter combination, deleteThread, in the root and a child
// namespace) against the ledger's saver on the real broker and registry, with an in-process executor (the
// writer of the events) and projector (snapshots and watermarks, which the saver's reads start from).
// Then its opt-in getDeltaChannelHistory cases (which validate() does not run). Every checkpointer the suite
// creates gets a scope of its own, so it starts empty; all share one connection. The last hook checks that
// every case registered ran (none skipped); vitest reports each one's pass or failure.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, type RunnerTestSuite, type RunnerTask } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { LedgerSaver } from '../../src/langgraph/index.js';
import { testConfig, testLogger } from '../support/helpers.js';

// The suite's specs call describe / it / expect (expect.soft) as globals: give them this file's.
Object.assign(globalThis, { describe, it, expect, beforeAll, afterAll, beforeEach, afterEach });
const { validate, deltaChannelHistoryTests } = await import('@langchain/langgraph-checkpoint-validation');

/** The cases validate() registers in 1.1.1 (put 22, putWrites 6, getTuple 40, list 649, deleteThread 1). */
const VALIDATE_CASES = 718;
/** The opt-in getDeltaChannelHistory cases (4 in the root and a child namespace), not part of validate(). */
const DELTA_CASES = 8;
const EXPECTED_CASES = VALIDATE_CASES + DELTA_CASES;

let executor: ExecutorHandle;
let projector: ProjectorHandle;
let ledger: Ledger;
let created = 0;
let ran = 0;
let file: RunnerTask | undefined;
const startedAt = Date.now();

afterEach((ctx) => {
  file = ctx.task.file;
  if (ctx.task.mode === 'run') ran++;
});

afterAll(() => {
  const cases: RunnerTask[] = [];
  const walk = (t: RunnerTask) => ('tasks' in t ? (t as RunnerTestSuite).tasks.forEach(walk) : cases.push(t));
  if (file) walk(file);
  const skipped = cases.filter((t) => t.mode !== 'run').map((t) => t.name);
  const delta = cases.filter((t) => fullName(t).includes('#getDeltaChannelHistory'));
  console.log(
    `[langgraph] validate(): ${cases.length - delta.length} cases, getDeltaChannelHistory: ${delta.length}; ${ran} ran, ${skipped.length} skipped, ${created} checkpointers, ${((Date.now() - startedAt) / 1000).toFixed(1)} s`,
  );
  expect(skipped).toEqual([]);
  expect(delta.length).toBe(DELTA_CASES);
  expect(cases.length).toBe(EXPECTED_CASES);
  expect(ran).toBe(EXPECTED_CASES);
});

function fullName(t: RunnerTask): string {
  return t.suite ? `${fullName(t.suite)} > ${t.name}` : t.name;
}

const initializer = {
  checkpointerName: 'plan-ledger LedgerSaver',
  beforeAllTimeout: 120_000,
  async beforeAll() {
    const config = testConfig({ partitions: 2 });
    executor = await startExecutor({ tools: [], config, logger: testLogger, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, executorId: 'lg-exec' });
    [ledger, projector] = await Promise.all([
      connectLedger(config, { logger: testLogger }),
      startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 200, defaultMetrics: false }),
    ]);
    await executor.started;
  },
  async afterAll() {
    await ledger?.close();
    await projector?.stop();
    await executor?.stop();
  },
  createCheckpointer() {
    created++;
    return new LedgerSaver({ ledger, scope: `v${created}-${randomBytes(3).toString('hex')}` });
  },
};
validate<LedgerSaver>(initializer);
deltaChannelHistoryTests(initializer);
