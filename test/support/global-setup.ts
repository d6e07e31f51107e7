import type { TestProject } from 'vitest/node';
import { stackDown, stackUp } from '../../stack/stack.js';
import { setting } from '../../src/settings.js';

declare module 'vitest' {
  export interface ProvidedContext {
    brokers: string;
    registryUrl: string;
  }
}

/**
 * Integration and e2e tests talk to a real broker and registry: the ones named by PLAN_LEDGER_BROKERS /
 * PLAN_LEDGER_REGISTRY_URL, or else the local stack — brought up here and taken down again only if
 * this run started it.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let startedHere = false;
  if (!process.env.PLAN_LEDGER_BROKERS || !process.env.PLAN_LEDGER_REGISTRY_URL) {
    const up = await stackUp({ log: (l) => console.log(`[stack] ${l}`) });
    startedHere = !up.alreadyRunning;
    process.env.PLAN_LEDGER_BROKERS = up.info.brokers.join(',');
    process.env.PLAN_LEDGER_REGISTRY_URL = up.info.registryUrl;
    console.log(`[stack] ${up.alreadyRunning ? 'reusing' : `started in ${up.seconds.toFixed(1)}s:`} ${up.info.brokers.join(',')} ${up.info.registryUrl}`);
  }
  project.provide('brokers', process.env.PLAN_LEDGER_BROKERS);
  project.provide('registryUrl', process.env.PLAN_LEDGER_REGISTRY_URL);
  return async () => {
    if (startedHere && !setting('PLAN_LEDGER_KEEP_STACK')) await stackDown();
  };
}
