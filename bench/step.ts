// One item step of the domain (RecordIntent → CommitResult → SettleItem, decided and applied as the
// executor does: decide on the state, evolveInPlace) on a plan of 10 items and on a plan of 100,000:
// the cost of a step must not grow with the plan. Writes bench/results/step.json.
//   npx tsx bench/step.ts [--rounds 5] [--big 100000]
import { writeFileSync } from 'node:fs';
import { execSync } from 'node:child_process';
import { cpus } from 'node:os';
import { decide, evolveInPlace, type PlanState } from '../src/plan/index.js';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const rounds = arg('rounds', 5);
const big = arg('big', 100_000);
const STEPS = 200;

function perStepMs(items: number): number {
  let s: PlanState | undefined;
  let now = 1;
  const run = (type: string, data: unknown) => {
    const d = decide(s, { type, planId: 'p', commandId: `c${now}`, issuedAt: 0, actor: 'bench', correlationId: 'c', data } as never, { now: now++, limits: { maxItems: 1_000_000 } });
    if (!d.ok) throw new Error(`${type}: ${d.rejection.code} ${d.rejection.message}`);
    s = evolveInPlace(s, d.events);
  };
  run('CreatePlan', { goal: 'g', mode: 'execute', labels: {}, parent: null, items: Array.from({ length: items }, (_, i) => ({ id: `i${i}`, title: 't', why: 'w', dependsOn: [], tool: 'noop', inputJson: '{}', retry: null })) });
  const steps = Math.min(STEPS, items);
  const t0 = performance.now();
  for (let k = 0; k < steps; k++) {
    const itemId = `i${k}`;
    run('RecordIntent', { itemId, executorId: 'e', fencingToken: 1 });
    run('CommitResult', { itemId, attempt: 1, outcome: 'succeeded', outputJson: '{}', error: null, durationMs: 1, executorId: 'e', followUps: [] });
    run('SettleItem', { itemId });
  }
  return (performance.now() - t0) / steps;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
perStepMs(10);
perStepMs(1000); // warm-up
const small: number[] = [];
const large: number[] = [];
for (let r = 0; r < rounds; r++) {
  if (r % 2 === 0) {
    small.push(perStepMs(10));
    large.push(perStepMs(big));
  } else {
    large.push(perStepMs(big));
    small.push(perStepMs(10));
  }
}
const result = {
  name: 'step',
  date: new Date().toISOString(),
  commit: execSync('git rev-parse --short HEAD').toString().trim(),
  machine: { cores: cpus().length, node: process.version },
  command: `npx tsx bench/step.ts --rounds ${rounds} --big ${big}`,
  what: 'ms per item step (intent, result, settle: decide + evolveInPlace), median of rounds; alternating order',
  rounds: { items10: small, [`items${big}`]: large },
  median: { items10: median(small), [`items${big}`]: median(large) },
  ratio: median(large) / median(small),
};
writeFileSync('bench/results/step.json', `${JSON.stringify(result, null, 2)}\n`);
console.log(JSON.stringify({ median: result.median, ratio: +result.ratio.toFixed(2) }));
