// The work of a chaos run: plans of ten items with dependencies, most calling the idempotent effects
// service; some with a retried flaky step, a planner that adds follow-ups, a delegation to a child plan,
// and a few that end in a terminal failure on purpose. Each plan knows how it must end.
import type { CreatePlanInput } from '../src/client/index.js';

export interface ChaosPlan {
  readonly planId: string;
  readonly input: CreatePlanInput;
  /** How the plan must end, as its tools dictate. */
  readonly expected: 'completed' | 'failed';
  /** Items whose tool is `effect`: each must perform exactly one effect. */
  readonly effectItems: readonly string[];
  /** The item that fails terminally on purpose (expected `failed`). */
  readonly fatalItem: string | null;
}

export function chaosPlan(runId: string, n: number): ChaosPlan {
  const flaky = n % 4 === 1;
  const planner = n % 5 === 2;
  const delegates = n % 10 === 3;
  const fatal = n % 25 === 7;
  const effect = (holdMs: number) => ({ tool: 'effect', input: { holdMs } });
  const items = [
    { id: 'a', ...effect(20), dependsOn: [] as string[] },
    { id: 'b', ...effect(20), dependsOn: ['a'] },
    { id: 'c', ...effect(50), dependsOn: ['a'] },
    flaky
      ? { id: 'd', tool: 'flaky', input: { succeedOn: 2 }, retry: { maxAttempts: 3, initialBackoffMs: 100, backoffMultiplier: 2, maxBackoffMs: 1000 }, dependsOn: ['b'] }
      : { id: 'd', ...effect(20), dependsOn: ['b'] },
    { id: 'e', ...effect(100), dependsOn: ['b', 'c'] },
    planner ? { id: 'f', tool: 'planner', input: { count: 2 }, dependsOn: ['c'] } : { id: 'f', ...effect(20), dependsOn: ['c'] },
    delegates ? { id: 'g', tool: 'delegator', input: {}, dependsOn: ['d'] } : { id: 'g', ...effect(20), dependsOn: ['d'] },
    { id: 'h', ...effect(50), dependsOn: ['e'] },
    { id: 'i', ...effect(20), dependsOn: ['f', 'g'] },
    fatal ? { id: 'j', tool: 'fatal', input: {}, dependsOn: ['h', 'i'] } : { id: 'j', ...effect(20), dependsOn: ['h', 'i'] },
  ];
  const planId = `${runId}-p${String(n).padStart(4, '0')}`;
  return {
    planId,
    input: {
      planId,
      goal: `chaos plan ${n}`,
      mode: 'execute',
      labels: { chaos: runId },
      items: items.map((i) => ({ ...i, title: `step ${i.id}`, why: 'chaos load' })),
    },
    expected: fatal ? 'failed' : 'completed',
    effectItems: items.filter((i) => i.tool === 'effect').map((i) => i.id),
    fatalItem: fatal ? 'j' : null,
  };
}
