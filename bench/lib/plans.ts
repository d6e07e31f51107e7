// Plans decided by the domain, as an executor writes them, for the benchmarks that need a log or states
// without running an executor: create with 10 items (a DAG), then each item intent → result → settle;
// item 1 fails once and is retried (45 events per plan).
import { decide, evolve, type AnyCommand, type ItemSpec, type PlanEvent, type PlanState } from '../../src/plan/index.js';

export const ITEMS = 10;

export function items(): ItemSpec[] {
  return Array.from({ length: ITEMS }, (_, i) => ({
    id: `it-${i}`,
    title: `step ${i} of the plan`,
    why: `step ${i} is needed because the goal says so`,
    dependsOn: i === 0 ? [] : i % 3 === 0 ? [`it-${i - 1}`, `it-${i - 3}`] : [`it-${i - 1}`],
    tool: 'http.call',
    inputJson: `{"i":${i},"url":"https://example.test/api/${i}"}`,
    retry: i === 1 ? { maxAttempts: 3, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } : null,
  }));
}

/** The commands of a plan's life, one step (a batch decided together) per entry. */
export function lifecycle(planId: string): AnyCommand[][] {
  let n = 0;
  const m = () => ({ commandId: `${planId}-c${++n}`, planId, issuedAt: 0, actor: 'bench', correlationId: planId });
  const steps: AnyCommand[][] = [[{ ...m(), type: 'CreatePlan', data: { goal: `goal of ${planId}`, mode: 'execute', labels: { team: 'bench' }, parent: null, items: items() } } as AnyCommand]];
  const attempt = (itemId: string, a: number, outcome: 'succeeded' | 'failed_retryable') => [
    [{ ...m(), type: 'RecordIntent', data: { itemId, executorId: 'ex-bench', fencingToken: 1 } }],
    [{ ...m(), type: 'CommitResult', data: { itemId, attempt: a, outcome, outputJson: outcome === 'succeeded' ? `{"item":"${itemId}","status":200}` : null, error: outcome === 'succeeded' ? null : { code: 'HTTP_503', message: 'unavailable', detailsJson: null }, durationMs: 12, executorId: 'ex-bench', followUps: [] } }],
    [{ ...m(), type: 'SettleItem', data: { itemId } }],
  ] as AnyCommand[][];
  for (let i = 0; i < ITEMS; i++) {
    if (i === 1) steps.push(...attempt('it-1', 1, 'failed_retryable'), ...attempt('it-1', 2, 'succeeded'));
    else steps.push(...attempt(`it-${i}`, 1, 'succeeded'));
  }
  return steps;
}

export function decideAll(steps: AnyCommand[], states: Map<string, PlanState>, now: number): PlanEvent[] {
  const out: PlanEvent[] = [];
  for (const c of steps) {
    const d = decide(states.get(c.planId), c, { now });
    if (!d.ok) throw new Error(`${c.type} rejected: ${d.rejection.message}`);
    let s = states.get(c.planId);
    for (const e of d.events) s = evolve(s, e);
    states.set(c.planId, s!);
    out.push(...d.events);
  }
  return out;
}
