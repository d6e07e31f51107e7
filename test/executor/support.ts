import { onTestFinished } from 'vitest';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import type { LedgerConfig } from '../../src/config.js';
import { startExecutor, type ExecutorHandle, type ExecutorOptions } from '../../executor/index.js';
import { testConfig } from '../support/helpers.js';
import { tools } from '../fixtures/tools.js';

/** A ledger client and an in-process executor on a fresh topic prefix; both closed when the test ends. */
export async function ledgerWithExecutor(opts: Partial<ExecutorOptions> & { config?: LedgerConfig } = {}): Promise<{ ledger: Ledger; executor: ExecutorHandle; config: LedgerConfig }> {
  const config = opts.config ?? testConfig();
  const executor = await startExecutor({ tools, config, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, ...opts });
  onTestFinished(() => executor.stop());
  const ledger = await connectLedger(config);
  onTestFinished(() => ledger.close());
  await executor.started;
  return { ledger, executor, config };
}

export function chainOfItems(n: number, tool = 'noop') {
  // A DAG: item i depends on i-1 and (for every third) on i-3 as well.
  return Array.from({ length: n }, (_, i) => ({
    id: `item-${String(i).padStart(2, '0')}`,
    title: `step ${i}`,
    why: `step ${i} of the test plan`,
    tool,
    input: { i },
    dependsOn: [i > 0 ? `item-${String(i - 1).padStart(2, '0')}` : undefined, i >= 3 && i % 3 === 0 ? `item-${String(i - 3).padStart(2, '0')}` : undefined].filter(
      (x): x is string => x !== undefined,
    ),
  }));
}
