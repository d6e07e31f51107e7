import { decide, evolveInPlace, readyItems, pendingRecoveries, type PlanState } from '../src/plan/index.js';
const n = Number(process.env.N ?? 100000);
const items = Array.from({ length: n }, (_, i) => ({ id: `i${i}`, title: 't', why: 'w', dependsOn: [], tool: 'noop', inputJson: '{}', retry: null }));
let s: PlanState | undefined;
let now = 1;
const run = (type: string, data: unknown) => { const d = decide(s, { type, planId: 'p', commandId: `c${now}`, issuedAt: 0, actor: 'a', correlationId: 'c', data } as never, { now: now++, limits: { maxItems: 1e6 } }); if (!d.ok) throw new Error(JSON.stringify(d.rejection)); s = evolveInPlace(s, d.events); return d.events; };
const t0 = performance.now();
run('CreatePlan', { goal: 'g', mode: 'execute', labels: {}, parent: null, items });
console.log('create ms', Math.round(performance.now() - t0));
const steps = 200;
let tReady = 0, tRec = 0, tStep = 0;
for (let k = 0; k < steps; k++) {
  let t = performance.now(); const r = readyItems(s!, now); tReady += performance.now() - t;
  t = performance.now(); pendingRecoveries(s!); tRec += performance.now() - t;
  const id = r[0]!.itemId;
  t = performance.now();
  run('RecordIntent', { itemId: id, executorId: 'e', fencingToken: 1 });
  run('CommitResult', { itemId: id, attempt: 1, outcome: 'succeeded', outputJson: '{}', error: null, durationMs: 1, executorId: 'e', followUps: [] });
  run('SettleItem', { itemId: id });
  tStep += performance.now() - t;
}
console.log(JSON.stringify({ n, readyMsPerCall: +(tReady / steps).toFixed(3), recoveriesMsPerCall: +(tRec / steps).toFixed(3), decideEvolveMsPerStep: +(tStep / steps).toFixed(3) }));
