// Run in a fresh process by properties.unit.test.ts: reads event logs (JSON) on stdin, prints state digests.
import { readFileSync } from 'node:fs';
import { evolve, stateDigest, type PlanEvent, type PlanState } from '../../src/plan/index.js';

const logs = JSON.parse(readFileSync(0, 'utf8')) as PlanEvent[][];
const digests = logs.map((events) => {
  let state: PlanState | undefined;
  for (const e of events) state = evolve(state, e);
  return state === undefined ? null : stateDigest(state);
});
process.stdout.write(JSON.stringify(digests));
