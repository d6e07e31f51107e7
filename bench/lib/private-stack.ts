// A bench's own one-broker stack (broker and registry on free loopback ports, storage in a temp folder),
// for a bench that needs broker settings the shared local stack does not have; wiped when the bench ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeStackPorts } from '../../stack/processes.js';
import { stackReset, stackUp } from '../../stack/stack.js';

export interface PrivateStack {
  readonly brokers: string[];
  readonly registryUrl: string;
  readonly replicationFactor: number;
  readonly brokerSettings: Readonly<Record<string, string>>;
  down(): Promise<void>;
}

export async function privateStack(name: string, brokerSettings: Readonly<Record<string, string>>): Promise<PrivateStack> {
  const dir = mkdtempSync(join(tmpdir(), `plan-ledger-bench-${name}-`));
  const down = async () => {
    await stackReset({ dir, confirm: true }).catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const up = await stackUp({ dir, ...(await freeStackPorts()), brokerSettings, log: (l) => console.log(`[${name} stack] ${l}`) });
    return { brokers: up.info.brokers, registryUrl: up.info.registryUrl, replicationFactor: up.info.replicationFactor, brokerSettings, down };
  } catch (e) {
    await down();
    throw e;
  }
}
