import { decide, evolveInPlace, type PlanState } from '../src/plan/index.js';
const n = Number(process.env.N ?? 100000);
const items = Array.from({ length: n }, (_, i) => ({ id: `i${i}`, title: 't', why: 'w', dependsOn: [], tool: 'noop', inputJson: '{}', retry: null }));
let s: PlanState | undefined;
let now = 1;
const run = (type: string, data: unknown) => { const d = decide(s, { type, planId: 'p', commandId: `c${now}`, issuedAt: 0, actor: 'a', correlationId: 'c', data } as never, { now: now++, limits: { maxItems: 1e6 } }); if (!d.ok) throw new Error(JSON.stringify(d.rejection)); s = evolveInPlace(s, d.events); return d.events; };
run('CreatePlan', { goal: 'g', mode: 'execute', labels: {}, parent: null, items });
const t = performance.now();
for (let k = 0; k < 300; k++) {
  const id = `i${k}`;
  run('RecordIntent', { itemId: id, executorId: 'e', fencingToken: 1 });
  run('CommitResult', { itemId: id, attempt: 1, outcome: 'succeeded', outputJson: '{}', error: null, durationMs: 1, executorId: 'e', followUps: [] });
  run('SettleItem', { itemId: id });
}
console.log('ms per step', ((performance.now() - t) / 300).toFixed(3));
