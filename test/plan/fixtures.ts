import { decide, evolve, rejectionEvent, type AnyCommand, type AnyCommandType, type DecidablePayloads, type ItemSpec, type PlanEvent, type PlanState } from '../../src/plan/index.js';

export const PLAN = 'plan-1';

let counter = 0;

/** A command with fresh ids; metadata can be overridden. */
export function command<K extends AnyCommandType>(
  type: K,
  data: DecidablePayloads[K],
  meta: Partial<{ commandId: string; planId: string; issuedAt: number; actor: string; correlationId: string }> = {},
): AnyCommand {
  counter += 1;
  const commandId = meta.commandId ?? `cmd-${counter}`;
  return {
    commandId,
    planId: meta.planId ?? PLAN,
    issuedAt: meta.issuedAt ?? 0,
    actor: meta.actor ?? 'tester',
    correlationId: meta.correlationId ?? 'corr-1',
    type,
    data,
  } as AnyCommand;
}

export function item(id: string, dependsOn: string[] = [], over: Partial<ItemSpec> = {}): ItemSpec {
  return { id, title: `do ${id}`, why: `because ${id}`, dependsOn, tool: 'echo', inputJson: `{"id":${JSON.stringify(id)}}`, retry: null, ...over };
}

type Meta = Parameters<typeof command>[2];

export const cmd = {
  create: (items: ItemSpec[] = [], mode: 'execute' | 'propose' = 'execute', meta?: Meta) =>
    command('CreatePlan', { goal: 'ship it', mode, labels: { team: 'core' }, parent: null, items }, meta),
  add: (items: ItemSpec[], meta?: Meta) => command('AddItems', { items }, meta),
  propose: (meta?: Meta) => command('ProposePlan', { comment: null }, meta),
  approve: (digest: string, meta?: Meta) => command('ApprovePlan', { digest, by: 'ops', comment: 'lgtm' }, meta),
  rejectPlan: (digest: string, meta?: Meta) => command('RejectPlan', { digest, by: 'ops', reason: 'too risky' }, meta),
  cancel: (meta?: Meta) => command('CancelPlan', { reason: 'stop' }, meta),
  retry: (itemId: string, meta?: Meta) => command('RetryItem', { itemId }, meta),
  erase: (force = false, meta?: Meta, by = 'dpo') => command('ErasePlan', { reason: 'GDPR request 481', by, force }, meta),
  childFinished: (parentItemId: string, childPlanId: string, status: 'completed' | 'failed' | 'cancelled', outputJson: string | null = null, meta?: Meta) =>
    command('ChildPlanFinished', { parentItemId, childPlanId, status, outputJson, error: null }, meta),
  intent: (itemId: string, meta?: Meta) => command('RecordIntent', { itemId, executorId: 'ex-1', fencingToken: 7 }, meta),
  commit: (
    itemId: string,
    attempt: number,
    outcome: 'succeeded' | 'failed_retryable' | 'failed_terminal' = 'succeeded',
    over: Partial<DecidablePayloads['CommitResult']> = {},
    meta?: Meta,
  ) =>
    command(
      'CommitResult',
      {
        itemId,
        attempt,
        outcome,
        outputJson: outcome === 'succeeded' ? `{"done":${JSON.stringify(itemId)}}` : null,
        error: outcome === 'succeeded' ? null : { code: 'BOOM', message: 'it broke', detailsJson: null },
        durationMs: 5,
        executorId: 'ex-1',
        followUps: [],
        ...over,
      },
      meta,
    ),
  settle: (itemId: string, meta?: Meta) => command('SettleItem', { itemId }, meta),
  delegate: (itemId: string, attempt: number, childPlanId: string, meta?: Meta) => command('DelegateItem', { itemId, attempt, childPlanId }, meta),
};

/** Runs commands through decide/evolve; a rejection throws (use for building histories). */
export function run(commands: AnyCommand[], now = 1000, start?: PlanState): { events: PlanEvent[]; state: PlanState | undefined } {
  let state = start;
  const events: PlanEvent[] = [];
  for (const c of commands) {
    const d = decide(state, c, { now });
    if (!d.ok) throw new Error(`${c.type} rejected: ${d.rejection.code} ${d.rejection.message}`);
    for (const e of d.events) {
      state = evolve(state, e);
      events.push(e);
    }
  }
  return { events, state };
}

/** Like run, but rejected commands append their CommandRejected event (as the executor does). */
export function runLenient(commands: AnyCommand[], now = 1000, start?: PlanState): { events: PlanEvent[]; state: PlanState | undefined } {
  let state = start;
  const events: PlanEvent[] = [];
  for (const c of commands) {
    const d = decide(state, c, { now });
    const out = d.ok ? d.events : [rejectionEvent(state, c, d.rejection, { now })];
    for (const e of out) {
      state = evolve(state, e);
      events.push(e);
    }
  }
  return { events, state };
}

export function fold(events: readonly PlanEvent[], start?: PlanState): PlanState | undefined {
  let s = start;
  for (const e of events) s = evolve(s, e);
  return s;
}
