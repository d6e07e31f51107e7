/**
 * A generator of valid command sequences: a plan with a random DAG of items, driven through propose /
 * approve, intents, results (success, retryable and terminal failures, follow-ups, delegation), settling,
 * retries, the odd cancel or erasure, duplicate deliveries and invalid commands (which become CommandRejected).
 * A scenario is plain data, so fast-check shrinks it; `simulate` is deterministic.
 */
import fc from 'fast-check';
import {
  canonicalJson,
  decide,
  evolve,
  getItem,
  readyItems,
  rejectionEvent,
  type AnyCommand,
  type AnyCommandType,
  type DecidablePayloads,
  type Decision,
  type ItemSpec,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';

export interface Scenario {
  planId: string;
  mode: 'execute' | 'propose';
  items: ItemSpec[];
  choices: number[];
}

const itemsArb: fc.Arbitrary<ItemSpec[]> = fc
  .array(
    fc.record({
      deps: fc.array(fc.nat(), { maxLength: 2 }),
      maxAttempts: fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      input: fc.jsonValue({ maxDepth: 2 }),
      title: fc.string({ maxLength: 12 }),
    }),
    { minLength: 1, maxLength: 6 },
  )
  .map((raw) =>
    raw.map((r, k): ItemSpec => ({
      id: `i${k}`,
      title: r.title,
      why: `step ${k}`,
      dependsOn: k === 0 ? [] : [...new Set(r.deps.map((d) => `i${d % k}`))],
      tool: 'echo',
      inputJson: canonicalJson(r.input),
      retry: r.maxAttempts === null ? null : { maxAttempts: r.maxAttempts, initialBackoffMs: 100, backoffMultiplier: 2, maxBackoffMs: 400 },
    })),
  );

export const scenarioArb = (planId = 'plan-p'): fc.Arbitrary<Scenario> =>
  fc.record({
    planId: fc.constant(planId),
    mode: fc.constantFrom('execute' as const, 'propose' as const),
    items: itemsArb,
    choices: fc.array(fc.nat({ max: 10_000 }), { minLength: 5, maxLength: 60 }),
  });

export interface Step {
  before: PlanState | undefined;
  command: AnyCommand;
  now: number;
  decision: Decision;
  events: PlanEvent[];
}

export interface Simulation {
  events: PlanEvent[];
  steps: Step[];
  state: PlanState;
}

export function simulate(s: Scenario): Simulation {
  let state: PlanState | undefined;
  let now = 1000;
  let n = 0;
  const events: PlanEvent[] = [];
  const steps: Step[] = [];
  const mk = <K extends AnyCommandType>(type: K, data: DecidablePayloads[K]): AnyCommand =>
    ({ commandId: `${s.planId}-c${++n}`, planId: s.planId, issuedAt: now, actor: 'sim', correlationId: `${s.planId}-corr`, type, data }) as AnyCommand;
  const apply = (command: AnyCommand): void => {
    const decision = decide(state, command, { now });
    const out = decision.ok ? decision.events : [rejectionEvent(state, command, decision.rejection, { now })];
    steps.push({ before: state, command, now, decision, events: out });
    for (const e of out) {
      state = evolve(state, e);
      events.push(e);
    }
  };

  apply(mk('CreatePlan', { goal: `goal of ${s.planId}`, mode: s.mode, labels: { sim: 'yes' }, parent: null, items: s.items }));
  let last: AnyCommand | undefined;
  for (const choice of s.choices) {
    const st = state as PlanState;
    now += choice % 3 === 0 ? 0 : 350;
    const actions: Array<() => AnyCommand> = [];
    const fresh = `n${st.seq}`;
    if (st.status === 'draft') {
      actions.push(() => mk('ProposePlan', { comment: null }));
      if (st.itemOrder.length < 10) actions.push(() => mk('AddItems', { items: [{ ...s.items[0]!, id: fresh, dependsOn: st.itemOrder.slice(-1) }] }));
    }
    if (st.status === 'proposed') {
      actions.push(() => mk('ApprovePlan', { digest: st.digest, by: 'ops', comment: null }));
      actions.push(() => mk('ApprovePlan', { digest: st.digest, by: 'ops', comment: 'again' }));
      if (choice % 4 === 0) actions.push(() => mk('RejectPlan', { digest: st.digest, by: 'ops', reason: 'no' }));
    }
    for (const view of readyItems(st, now)) actions.push(() => mk('RecordIntent', { itemId: view.itemId, executorId: 'ex', fencingToken: 1 }));
    for (const id of st.itemOrder) {
      const it = getItem(st, id)!;
      const attempt = it.attempts[it.attempts.length - 1];
      if (it.status === 'in_progress' && attempt !== undefined) {
        if (attempt.childPlanId !== null) {
          const status = (['completed', 'completed', 'failed'] as const)[choice % 3]!;
          actions.push(() => mk('ChildPlanFinished', { parentItemId: id, childPlanId: attempt.childPlanId!, status, outputJson: status === 'completed' ? '{"child":true}' : null, error: null }));
        } else {
          const outcome = (['succeeded', 'succeeded', 'failed_retryable', 'failed_terminal'] as const)[choice % 4]!;
          const followUps: ItemSpec[] =
            outcome === 'succeeded' && choice % 5 === 0 && st.itemOrder.length < 10 ? [{ ...s.items[0]!, id: `f${st.seq}`, dependsOn: [id] }] : [];
          actions.push(() =>
            mk('CommitResult', {
              itemId: id,
              attempt: attempt.attempt,
              outcome,
              outputJson: outcome === 'succeeded' ? canonicalJson({ out: id, n: attempt.attempt }) : null,
              error: outcome === 'succeeded' ? null : { code: 'E', message: 'failed', detailsJson: null },
              durationMs: choice % 50,
              executorId: 'ex',
              followUps,
            }),
          );
          if (choice % 6 === 0) actions.push(() => mk('DelegateItem', { itemId: id, attempt: attempt.attempt, childPlanId: `${s.planId}.child.${id}` }));
        }
      }
      if (it.status === 'result_committed') actions.push(() => mk('SettleItem', { itemId: id }));
      if (it.status === 'failed' && st.status !== 'cancelled') actions.push(() => mk('RetryItem', { itemId: id }));
    }
    // Noise: redeliveries, commands that are rejected, a rare cancel.
    if (last !== undefined && choice % 9 === 0) {
      const again = last;
      actions.push(() => again);
    }
    if (choice % 11 === 0) actions.push(() => mk('RecordIntent', { itemId: st.itemOrder[choice % st.itemOrder.length] ?? 'x', executorId: 'ex', fencingToken: 1 }));
    if (choice % 13 === 0) actions.push(() => mk('SettleItem', { itemId: 'missing' }));
    if (choice % 97 === 0) actions.push(() => mk('CancelPlan', { reason: 'enough' }));
    if (choice % 89 === 0) actions.push(() => mk('ErasePlan', { reason: 'erasure requested', by: 'dpo', force: choice % 2 === 0 }));
    const pick = actions[choice % Math.max(1, actions.length)];
    if (pick === undefined) continue;
    last = pick();
    apply(last);
    // An accepted erasure decides no events; the executor then forgets the plan, so the scenario ends.
    if (last.type === 'ErasePlan' && steps[steps.length - 1]!.decision.ok) break;
  }
  return { events, steps, state: state as PlanState };
}
