import { describe, expect, it } from 'vitest';
import {
  decide,
  evolve,
  nextRetryAt,
  planDigest,
  rejectionEvent,
  RejectionCode,
  verifyChain,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';
import { cmd, command, fold, item, PLAN, run, runLenient } from './fixtures.js';
import { given } from './spec.js';

const NOW = 5000;
const a = item('a');
const b = item('b', ['a']);

/** History helpers: each returns the events of a plan in a given situation. */
const executePlan = (items = [a, b]) => run([cmd.create(items)]).events;
const proposedPlan = () => run([cmd.create([a, b], 'propose'), cmd.propose()]).events;
function approvedPlan(): PlanEvent[] {
  const created = run([cmd.create([a, b], 'propose'), cmd.propose()]);
  return [...created.events, ...run([cmd.approve((created.state as PlanState).digest)], 1000, created.state).events];
}
/** a in progress (attempt 1). */
const aStarted = () => run([cmd.create([a, b]), cmd.intent('a')]).events;
const aCommitted = (outcome: 'succeeded' | 'failed_retryable' | 'failed_terminal' = 'succeeded', items = [a, b]) =>
  run([cmd.create(items), cmd.intent('a'), cmd.commit('a', 1, outcome)]).events;
const stateOf = (events: PlanEvent[]) => fold(events) as PlanState;

describe('CreatePlan', () => {
  it('creates an execute-mode plan with its items', () => {
    const { state } = given([])
      .when(cmd.create([a, b]))
      .then([
        { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: { team: 'core' }, parent: null, policy: null } },
        { type: 'ItemAdded', data: { item: a, followUpOf: null } },
        { type: 'ItemAdded', data: { item: b, followUpOf: null } },
      ]);
    expect(state?.status).toBe('running');
    expect(state?.itemOrder).toEqual(['a', 'b']);
    expect(state?.items['b']?.status).toBe('pending');
    expect(state?.digest).toBe(planDigest({ goal: 'ship it', mode: 'execute', items: { a: { ...a } as never, b: { ...b } as never }, itemOrder: ['a', 'b'] }));
  });
  it('creates a propose-mode plan in draft', () => {
    const { state } = given([]).when(cmd.create([], 'propose')).then([
      { type: 'PlanCreated', data: { goal: 'ship it', mode: 'propose', labels: { team: 'core' }, parent: null, policy: null } },
    ]);
    expect(state?.status).toBe('draft');
  });
  it('fills defaults of optional fields that the client left out', () => {
    const c = command('CreatePlan', { goal: 'g', mode: 'execute', labels: {} } as never);
    given([]).when(c).then([{ type: 'PlanCreated', data: { goal: 'g', mode: 'execute', labels: {}, parent: null, policy: null } }]);
  });
  it('PLAN_EXISTS when the plan exists', () => given(executePlan()).when(cmd.create()).thenRejects('PLAN_EXISTS', 'planId'));
  it('DUPLICATE_ITEM for an id twice in one command', () => given([]).when(cmd.create([a, item('a')])).thenRejects('DUPLICATE_ITEM', 'data.items[1].id'));
  it('UNKNOWN_DEPENDENCY for a dependency on nothing', () => given([]).when(cmd.create([item('x', ['nope'])])).thenRejects('UNKNOWN_DEPENDENCY', 'data.items[0].dependsOn[0]'));
  it('DEPENDENCY_CYCLE for a cycle', () =>
    given([]).when(cmd.create([item('x', ['z']), item('y', ['x']), item('z', ['y'])])).thenRejects('DEPENDENCY_CYCLE', 'data.items[0].dependsOn'));
  it('DEPENDENCY_CYCLE for a self-dependency', () => given([]).when(cmd.create([item('x', ['x'])])).thenRejects('DEPENDENCY_CYCLE', 'data.items[0].dependsOn[0]'));
  it('PAYLOAD_TOO_LARGE for a large input', () =>
    given([])
      .when(cmd.create([item('x', [], { inputJson: JSON.stringify('y'.repeat(300)) })]), { now: NOW, limits: { maxPayloadBytes: 100 } })
      .thenRejects('PAYLOAD_TOO_LARGE', 'data.items[0].inputJson'));
  it('PAYLOAD_TOO_LARGE for too many items', () =>
    given([]).when(cmd.create([a, item('x'), item('y')]), { now: NOW, limits: { maxItems: 2 } }).thenRejects('PAYLOAD_TOO_LARGE', 'data.items'));
  it('INVALID_FIELD for a bad id, non-canonical input, bad retry policy, unknown field, wrong type', () => {
    given([]).when(cmd.create([item('has space')])).thenRejects('INVALID_FIELD', 'data.items[0].id');
    given([]).when(cmd.create([item('x', [], { inputJson: '{"b":1, "a":2}' })])).thenRejects('INVALID_FIELD', 'data.items[0].inputJson');
    given([])
      .when(cmd.create([item('x', [], { retry: { maxAttempts: 0, initialBackoffMs: 1, backoffMultiplier: 2, maxBackoffMs: 5 } })]))
      .thenRejects('INVALID_FIELD', 'data.items[0].retry.maxAttempts');
    given([]).when({ ...cmd.create(), extra: 1 }).thenRejects('INVALID_FIELD', 'extra');
    given([]).when(command('CreatePlan', { goal: 'g', mode: 'sideways', labels: {}, parent: null, items: [] } as never)).thenRejects('INVALID_FIELD', 'data.mode');
    given([]).when(cmd.create([], 'execute', { planId: '' })).thenRejects('INVALID_FIELD', 'planId');
    given([]).when(command('CreatePlan', { goal: ' ', mode: 'execute', labels: {}, parent: null, items: [] })).thenRejects('INVALID_FIELD', 'data.goal');
  });
  it('INVALID_FIELD for a command of another plan than the state', () => given(executePlan()).when(cmd.add([item('c')], { planId: 'other' })).thenRejects('INVALID_FIELD', 'planId'));
  it('INVALID_FIELD for a reserved plan id (starting with __, like the projector\'s __watermark)', () => {
    for (const planId of ['__watermark', '__x', '__']) {
      const d = decide(undefined, cmd.create([a], 'execute', { planId }), { now: NOW });
      expect(d).toMatchObject({ ok: false, rejection: { code: 'INVALID_FIELD', field: 'planId' } });
      if (!d.ok) expect(d.rejection.message).toMatch(/reserved/);
    }
    given([]).when(cmd.add([a], { planId: '__watermark' })).thenRejects('INVALID_FIELD', 'planId');
    given([])
      .when(command('CreatePlan', { goal: 'g', mode: 'execute', labels: {}, parent: { planId: '__watermark', itemId: 'a' }, items: [] }))
      .thenRejects('INVALID_FIELD', 'data.parent.planId');
    // One leading underscore, or __ inside the id, is an ordinary id.
    for (const planId of ['_p', 'p__1']) expect(decide(undefined, cmd.create([a], 'execute', { planId }), { now: NOW }).ok).toBe(true);
  });
});

describe('AddItems', () => {
  it('adds items that depend on earlier and same-batch items', () => {
    const c = item('c', ['d', 'a']);
    const d = item('d', ['b']);
    given(executePlan()).when(cmd.add([c, d])).then([
      { type: 'ItemAdded', data: { item: c, followUpOf: null } },
      { type: 'ItemAdded', data: { item: d, followUpOf: null } },
    ]);
  });
  it('sends a proposed plan back to draft with a new digest', () => {
    const before = stateOf(proposedPlan());
    const { state } = given(proposedPlan()).when(cmd.add([item('c')])).then([{ type: 'ItemAdded', data: { item: item('c'), followUpOf: null } }]);
    expect(state?.status).toBe('draft');
    expect(state?.digest).not.toBe(before.digest);
  });
  it('PLAN_NOT_FOUND before CreatePlan', () => given([]).when(cmd.add([a])).thenRejects('PLAN_NOT_FOUND', 'planId'));
  it('DUPLICATE_ITEM for an existing id', () => given(executePlan()).when(cmd.add([item('b')])).thenRejects('DUPLICATE_ITEM', 'data.items[0].id'));
  it('REAPPROVAL_REQUIRED on an approved propose-mode plan', () => given(approvedPlan()).when(cmd.add([item('c')])).thenRejects('REAPPROVAL_REQUIRED'));
  it('PLAN_FINISHED on a cancelled plan', () => given(run([cmd.create([a]), cmd.cancel()]).events).when(cmd.add([item('c')])).thenRejects('PLAN_FINISHED'));
  it('INVALID_FIELD for an empty batch', () => given(executePlan()).when(cmd.add([])).thenRejects('INVALID_FIELD', 'data.items'));
});

describe('ProposePlan / ApprovePlan / RejectPlan', () => {
  it('proposes the current digest', () => {
    const history = run([cmd.create([a, b], 'propose')]).events;
    const { state } = given(history).when(cmd.propose()).then([{ type: 'PlanProposed', data: { digest: stateOf(history).digest, itemCount: 2, policy: null } }]);
    expect(state?.status).toBe('proposed');
  });
  it('INVALID_STATE to propose an execute-mode plan or a proposed one', () => {
    given(executePlan()).when(cmd.propose()).thenRejects('INVALID_STATE');
    given(proposedPlan()).when(cmd.propose()).thenRejects('INVALID_STATE');
  });
  it('approves the current digest', () => {
    const digest = stateOf(proposedPlan()).digest;
    const { state } = given(proposedPlan()).when(cmd.approve(digest)).then([{ type: 'PlanApproved', data: { digest, by: 'ops', comment: 'lgtm' } }]);
    expect(state?.status).toBe('approved');
    expect(state?.approvedDigest).toBe(digest);
    expect(state?.approvals).toEqual([{ decision: 'approved', digest, by: 'ops', at: NOW, seq: 5, note: 'lgtm' }]);
  });
  it('STALE_DIGEST for another digest, also after items changed', () => {
    given(proposedPlan()).when(cmd.approve('f'.repeat(64))).thenRejects('STALE_DIGEST', 'data.digest');
    const old = stateOf(proposedPlan()).digest;
    const changed = run([cmd.create([a, b], 'propose'), cmd.propose(), cmd.add([item('c')])]).events;
    given(changed).when(cmd.approve(old)).thenRejects('STALE_DIGEST', 'data.digest');
  });
  it('INVALID_STATE to approve a draft at its digest (it must be proposed first)', () => {
    const history = run([cmd.create([a], 'propose')]).events;
    given(history).when(cmd.approve(stateOf(history).digest)).thenRejects('INVALID_STATE');
  });
  it('rejects a proposal back to draft', () => {
    const digest = stateOf(proposedPlan()).digest;
    const { state } = given(proposedPlan()).when(cmd.rejectPlan(digest)).then([{ type: 'PlanRejected', data: { digest, by: 'ops', reason: 'too risky' } }]);
    expect(state?.status).toBe('draft');
    expect(state?.approvals.map((x) => x.decision)).toEqual(['rejected']);
  });
  it('RejectPlan: STALE_DIGEST and PLAN_NOT_FOUND', () => {
    given(proposedPlan()).when(cmd.rejectPlan('0')).thenRejects('STALE_DIGEST');
    given([]).when(cmd.rejectPlan('0')).thenRejects('PLAN_NOT_FOUND');
  });
  it('nothing runs before approval; the first intent moves approved -> running', () => {
    given(proposedPlan()).when(cmd.intent('a')).thenRejects('INVALID_STATE');
    const { state } = given(approvedPlan())
      .when(cmd.intent('a'))
      .then([{ type: 'IntentRecorded', data: { itemId: 'a', attempt: 1, idempotencyKey: `${PLAN}/a/1`, executorId: 'ex-1', fencingToken: 7 } }]);
    expect(state?.status).toBe('running');
  });
});

describe('CancelPlan', () => {
  it('cancels pending items and finishes the plan', () => {
    const { state } = given(aStarted()).when(cmd.cancel()).then([{ type: 'PlanCancelled', data: { reason: 'stop', cancelledItemIds: ['b'] } }]);
    expect(state?.status).toBe('cancelled');
    expect(state?.items['a']?.status).toBe('in_progress');
    expect(state?.items['b']?.status).toBe('cancelled');
  });
  it('PLAN_FINISHED when already cancelled', () => given(run([cmd.create([a]), cmd.cancel()]).events).when(cmd.cancel()).thenRejects('PLAN_FINISHED'));
  it('a result of an item in flight is still recorded; retryable failures settle as plan_cancelled', () => {
    const history = run([cmd.create([a, b]), cmd.intent('a'), cmd.cancel(), cmd.commit('a', 1, 'failed_retryable')]).events;
    given(history)
      .when(cmd.settle('a'))
      .then([{ type: 'ItemFailed', data: { itemId: 'a', attempt: 1, reason: 'plan_cancelled', error: { code: 'BOOM', message: 'it broke', detailsJson: null } } }]);
  });
});

describe('ErasePlan', () => {
  const completed = () => run([cmd.create([a]), cmd.intent('a'), cmd.commit('a', 1), cmd.settle('a')]).events;
  it('PLAN_NOT_FOUND for a missing plan, also one that only has rejected commands', () => {
    given([]).when(cmd.erase()).thenRejects('PLAN_NOT_FOUND', 'planId');
    given(runLenient([cmd.add([a])]).events).when(cmd.erase(true)).thenRejects('PLAN_NOT_FOUND', 'planId');
  });
  it('INVALID_STATE for a running or approved plan without force, saying how to force it', () => {
    for (const history of [executePlan(), aStarted(), approvedPlan()]) {
      const d = decide(stateOf(history), cmd.erase(), { now: NOW });
      expect(d).toMatchObject({ ok: false, rejection: { code: 'INVALID_STATE', field: null } });
      if (!d.ok) expect(d.rejection.message).toBe(`plan ${PLAN} is ${stateOf(history).status}; erase --force to erase it anyway`);
    }
  });
  it('accepted with no events (the executor carries the erasure out) with force, or once nothing runs', () => {
    given(aStarted()).when(cmd.erase(true)).thenNothing();
    given(approvedPlan()).when(cmd.erase(true)).thenNothing();
    for (const history of [completed(), proposedPlan(), run([cmd.create([], 'propose')]).events, run([cmd.create([a]), cmd.cancel()]).events]) {
      given(history).when(cmd.erase()).thenNothing();
    }
    const failed = run([cmd.create([a]), cmd.intent('a'), cmd.commit('a', 1, 'failed_terminal'), cmd.settle('a')]).events;
    expect(stateOf(failed).status).toBe('failed');
    given(failed).when(cmd.erase()).thenNothing();
  });
  it('INVALID_FIELD without who asked; force defaults to false', () => {
    given(completed()).when(cmd.erase(false, undefined, ' ')).thenRejects('INVALID_FIELD', 'data.by');
    given(executePlan()).when(command('ErasePlan', { reason: 'r', by: 'dpo' } as never)).thenRejects('INVALID_STATE');
  });
});

describe('RecordIntent', () => {
  it('records attempt 1 with the stable idempotency key', () => {
    const { state } = given(executePlan())
      .when(cmd.intent('a'))
      .then([{ type: 'IntentRecorded', data: { itemId: 'a', attempt: 1, idempotencyKey: `${PLAN}/a/1`, executorId: 'ex-1', fencingToken: 7 } }]);
    expect(state?.items['a']?.status).toBe('in_progress');
    expect(state?.items['a']?.attempts[0]?.startedAt).toBe(NOW);
  });
  it('counts attempts after a retry', () => {
    const committed = aCommitted('failed_retryable');
    const history = [...committed, ...run([cmd.settle('a')], 1000, stateOf(committed)).events];
    const retryAt = stateOf(history).items['a']?.retryAt as number;
    expect(retryAt).toBe(2000);
    given(history).when(cmd.intent('a'), { now: 1500 }).thenRejects('INVALID_STATE', 'data.itemId');
    given(history)
      .when(cmd.intent('a'), { now: 2000 })
      .then([{ type: 'IntentRecorded', data: { itemId: 'a', attempt: 2, idempotencyKey: `${PLAN}/a/2`, executorId: 'ex-1', fencingToken: 7 } }]);
  });
  it('ITEM_NOT_FOUND, INVALID_STATE for unmet dependencies or an item in flight', () => {
    given(executePlan()).when(cmd.intent('zzz')).thenRejects('ITEM_NOT_FOUND', 'data.itemId');
    given(executePlan()).when(cmd.intent('b')).thenRejects('INVALID_STATE', 'data.itemId');
    given(aStarted()).when(cmd.intent('a')).thenRejects('INVALID_STATE', 'data.itemId');
  });
  it('ITEM_NOT_FOUND is safe for ids like __proto__', () => given(executePlan()).when(cmd.intent('__proto__')).thenRejects('ITEM_NOT_FOUND'));
  // Internal commands are validated against their generated records (schemas/internal/) like a client's.
  it('INVALID_FIELD for a malformed internal command: a wrong type, a missing field, an unknown field', () => {
    const intent = cmd.intent('a');
    given(executePlan()).when({ ...intent, data: { ...intent.data, fencingToken: 'seven' } } as never).thenRejects('INVALID_FIELD', 'data.fencingToken');
    given(executePlan()).when({ ...intent, data: { itemId: 'a', fencingToken: 7 } } as never).thenRejects('INVALID_FIELD', 'data.executorId');
    given(executePlan()).when({ ...intent, data: { ...intent.data, extra: 1 } } as never).thenRejects('INVALID_FIELD', 'data.extra');
    const commit = cmd.commit('a', 1);
    given(aStarted()).when({ ...commit, data: { ...commit.data, outcome: 'maybe' } } as never).thenRejects('INVALID_FIELD', 'data.outcome');
  });
});

describe('CommitResult', () => {
  it('commits a result', () => {
    const { state } = given(aStarted())
      .when(cmd.commit('a', 1))
      .then([
        {
          type: 'ResultCommitted',
          data: { itemId: 'a', attempt: 1, outcome: 'succeeded', outputJson: '{"done":"a"}', error: null, durationMs: 5, executorId: 'ex-1', followUpIds: [] },
        },
      ]);
    expect(state?.items['a']?.status).toBe('result_committed');
    expect(state?.items['a']?.attempts[0]).toMatchObject({ outcome: 'succeeded', finishedAt: NOW, durationMs: 5, outputJson: '{"done":"a"}' });
  });
  it('adds follow-up items, also in an approved propose-mode plan', () => {
    const approved = approvedPlan();
    const history = [...approved, ...run([cmd.intent('a')], 1000, stateOf(approved)).events];
    const f = item('f', ['a']);
    const { state } = given(history)
      .when(cmd.commit('a', 1, 'succeeded', { followUps: [f] }))
      .then([
        {
          type: 'ResultCommitted',
          data: { itemId: 'a', attempt: 1, outcome: 'succeeded', outputJson: '{"done":"a"}', error: null, durationMs: 5, executorId: 'ex-1', followUpIds: ['f'] },
        },
        { type: 'ItemAdded', data: { item: f, followUpOf: 'a' } },
      ]);
    expect(state?.status).toBe('running');
    expect(state?.items['f']?.followUpOf).toBe('a');
  });
  it('validates follow-ups like AddItems', () => {
    given(aStarted()).when(cmd.commit('a', 1, 'succeeded', { followUps: [item('b')] })).thenRejects('DUPLICATE_ITEM', 'data.followUps[0].id');
    given(aStarted()).when(cmd.commit('a', 1, 'succeeded', { followUps: [item('f', ['nope'])] })).thenRejects('UNKNOWN_DEPENDENCY');
    given(aStarted()).when(cmd.commit('a', 1, 'failed_terminal', { followUps: [item('f')] })).thenRejects('INVALID_FIELD', 'data.followUps');
  });
  it('INVALID_STATE for a stale attempt or an item not in flight; PAYLOAD_TOO_LARGE for a big output', () => {
    given(aStarted()).when(cmd.commit('a', 2)).thenRejects('INVALID_STATE', 'data.attempt');
    given(executePlan()).when(cmd.commit('a', 1)).thenRejects('INVALID_STATE');
    given(aStarted())
      .when(cmd.commit('a', 1, 'succeeded', { outputJson: JSON.stringify('x'.repeat(200)) }), { now: NOW, limits: { maxPayloadBytes: 64 } })
      .thenRejects('PAYLOAD_TOO_LARGE', 'data.outputJson');
  });
});

describe('SettleItem', () => {
  it('completes a succeeded item, then the plan when every item completed', () => {
    given(aCommitted()).when(cmd.settle('a')).then([{ type: 'ItemCompleted', data: { itemId: 'a', attempt: 1 } }]);
    const { state } = given(aCommitted('succeeded', [a]))
      .when(cmd.settle('a'))
      .then([
        { type: 'ItemCompleted', data: { itemId: 'a', attempt: 1 } },
        { type: 'PlanCompleted', data: { itemCount: 1 } },
      ]);
    expect(state?.status).toBe('completed');
    expect(state?.items['a']?.outputJson).toBe('{"done":"a"}');
  });
  it('schedules a retry with exponential backoff', () => {
    given(aCommitted('failed_retryable'))
      .when(cmd.settle('a'))
      .then([{ type: 'ItemRetryScheduled', data: { itemId: 'a', attempt: 1, retryAt: NOW + 1000, manual: false } }]);
  });
  it('fails an item whose retries are exhausted; the plan fails when nothing can progress', () => {
    const once = item('a', [], { retry: { maxAttempts: 1, initialBackoffMs: 10, backoffMultiplier: 2, maxBackoffMs: 100 } });
    const history = run([cmd.create([once, b]), cmd.intent('a'), cmd.commit('a', 1, 'failed_retryable')]).events;
    const error = { code: 'BOOM', message: 'it broke', detailsJson: null };
    const { state } = given(history)
      .when(cmd.settle('a'))
      .then([
        { type: 'ItemFailed', data: { itemId: 'a', attempt: 1, reason: 'retries_exhausted', error } },
        { type: 'PlanFailed', data: { failedItemIds: ['a'], reason: 'item a failed; nothing else can progress' } },
      ]);
    expect(state?.status).toBe('failed');
    expect(state?.items['a']?.failure).toEqual({ reason: 'retries_exhausted', error });
  });
  it('a terminal failure does not fail the plan while an independent item can progress', () => {
    const history = run([cmd.create([a, b, item('c')]), cmd.intent('a'), cmd.commit('a', 1, 'failed_terminal')]).events;
    const { state } = given(history)
      .when(cmd.settle('a'))
      .then([{ type: 'ItemFailed', data: { itemId: 'a', attempt: 1, reason: 'terminal', error: { code: 'BOOM', message: 'it broke', detailsJson: null } } }]);
    expect(state?.status).toBe('running');
  });
  it('INVALID_STATE unless a result is committed; ITEM_NOT_FOUND', () => {
    given(aStarted()).when(cmd.settle('a')).thenRejects('INVALID_STATE');
    given(aStarted()).when(cmd.settle('x')).thenRejects('ITEM_NOT_FOUND');
  });
});

describe('RetryItem', () => {
  const failedPlan = () => run([cmd.create([a, b]), cmd.intent('a'), cmd.commit('a', 1, 'failed_terminal'), cmd.settle('a')]).events;
  it('makes a failed item pending and a failed plan running, with a fresh retry budget', () => {
    expect(stateOf(failedPlan()).status).toBe('failed');
    const { state } = given(failedPlan()).when(cmd.retry('a')).then([{ type: 'ItemRetryScheduled', data: { itemId: 'a', attempt: 1, retryAt: NOW, manual: true } }]);
    expect(state?.status).toBe('running');
    expect(state?.items['a']).toMatchObject({ status: 'pending', attemptBase: 1, failure: null });
  });
  it('INVALID_STATE for an item that did not fail; ITEM_NOT_FOUND; PLAN_FINISHED on a completed plan', () => {
    given(executePlan()).when(cmd.retry('a')).thenRejects('INVALID_STATE', 'data.itemId');
    given(failedPlan()).when(cmd.retry('nope')).thenRejects('ITEM_NOT_FOUND', 'data.itemId');
    const done = run([cmd.create([a]), cmd.intent('a'), cmd.commit('a', 1), cmd.settle('a')]).events;
    given(done).when(cmd.retry('a')).thenRejects('PLAN_FINISHED');
  });
});

describe('DelegateItem / ChildPlanFinished', () => {
  const delegated = () => run([cmd.create([a, b]), cmd.intent('a'), cmd.delegate('a', 1, 'child-1')]).events;
  it('delegates the current attempt', () => {
    const { state } = given(aStarted()).when(cmd.delegate('a', 1, 'child-1')).then([{ type: 'ItemDelegated', data: { itemId: 'a', attempt: 1, childPlanId: 'child-1' } }]);
    expect(state?.items['a']?.attempts[0]?.childPlanId).toBe('child-1');
  });
  it('INVALID_STATE to delegate twice or a stale attempt; INVALID_FIELD for a bad child id', () => {
    given(delegated()).when(cmd.delegate('a', 1, 'child-2')).thenRejects('INVALID_STATE');
    given(aStarted()).when(cmd.delegate('a', 2, 'child-2')).thenRejects('INVALID_STATE', 'data.attempt');
    given(aStarted()).when(cmd.delegate('a', 1, 'bad id')).thenRejects('INVALID_FIELD', 'data.childPlanId');
    given(aStarted()).when(cmd.delegate('a', 1, '__watermark')).thenRejects('INVALID_FIELD', 'data.childPlanId');
  });
  it('a completed child commits a succeeded result for the delegated attempt', () => {
    given(delegated())
      .when(cmd.childFinished('a', 'child-1', 'completed', '{"x":1}'), { now: 1600 })
      .then([
        {
          type: 'ResultCommitted',
          data: { itemId: 'a', attempt: 1, outcome: 'succeeded', outputJson: '{"x":1}', error: null, durationMs: 600, executorId: 'ex-1', followUpIds: [] },
        },
      ]);
  });
  it('a failed child commits a terminal failure', () => {
    given(delegated())
      .when(cmd.childFinished('a', 'child-1', 'failed'), { now: 1000 })
      .then([
        {
          type: 'ResultCommitted',
          data: {
            itemId: 'a',
            attempt: 1,
            outcome: 'failed_terminal',
            outputJson: null,
            error: { code: 'CHILD_PLAN_FAILED', message: 'child plan child-1 failed', detailsJson: null },
            durationMs: 0,
            executorId: 'ex-1',
            followUpIds: [],
          },
        },
      ]);
  });
  it('CommitResult is refused for a delegated item; ChildPlanFinished for another child is INVALID_STATE', () => {
    given(delegated()).when(cmd.commit('a', 1)).thenRejects('INVALID_STATE');
    given(delegated()).when(cmd.childFinished('a', 'child-9', 'completed')).thenRejects('INVALID_STATE', 'data.childPlanId');
    given(delegated()).when(cmd.childFinished('zz', 'child-1', 'completed')).thenRejects('ITEM_NOT_FOUND', 'data.parentItemId');
  });
});

describe('idempotency and rejections', () => {
  it('a client command that already caused events is accepted with no events', () => {
    const created = cmd.create([a, b], 'propose');
    const added = cmd.add([item('c')]);
    const { events, state } = run([created, added]);
    given(events).when(created).thenNothing();
    given(events).when(added).thenNothing();
    const proposed = cmd.propose();
    const approved = cmd.approve((state as PlanState).digest);
    const more = run([proposed, approved], 1000, state).events;
    for (const c of [created, added, proposed, approved]) given([...events, ...more]).when(c).thenNothing();
  });
  it('RetryItem and ChildPlanFinished seen again are accepted with no events', () => {
    const retry = cmd.retry('a');
    const failed = run([cmd.create([a, b]), cmd.intent('a'), cmd.commit('a', 1, 'failed_terminal'), cmd.settle('a'), retry]).events;
    given(failed).when(retry).thenNothing();
    const finished = cmd.childFinished('a', 'child-1', 'completed', '{"x":1}');
    const delegated = run([cmd.create([a, b]), cmd.intent('a'), cmd.delegate('a', 1, 'child-1'), finished]).events;
    given(delegated).when(finished).thenNothing();
  });
  it('an executor command seen again is decided on the state, not remembered', () => {
    // Internal commands never travel the wire, so they are not redelivered; the state refuses a repeat.
    const intent = cmd.intent('a');
    const commit = cmd.commit('a', 1);
    const settle = cmd.settle('a');
    const { events, state } = run([cmd.create([a, b]), intent, commit, settle]);
    given(events).when(intent).thenRejects('INVALID_STATE', 'data.itemId');
    given(events).when(commit).thenRejects('INVALID_STATE', 'data.itemId');
    given(events).when(settle).thenRejects('INVALID_STATE', 'data.itemId');
    expect(Object.keys((state as PlanState).appliedCommandIds)).toHaveLength(1); // only CreatePlan
  });
  it('a rejected command is recorded in the chain, also before the plan exists, and is not rejected twice', () => {
    const c = cmd.add([a]);
    const d = decide(undefined, c, { now: 7 });
    expect(d.ok).toBe(false);
    if (d.ok) return;
    const rejected = rejectionEvent(undefined, c, d.rejection, { now: 7 });
    expect(rejected).toMatchObject({
      type: 'CommandRejected',
      seq: 1,
      eventId: `${PLAN}:1`,
      causationId: c.commandId,
      data: { commandId: c.commandId, commandType: 'AddItems', code: 'PLAN_NOT_FOUND', field: 'planId' },
    });
    const s1 = evolve(undefined, rejected);
    expect(s1.status).toBe('none');
    expect(s1.rejections).toHaveLength(1);
    given([rejected]).when(c).thenNothing();
    const { state } = given([rejected]).when(cmd.create([a])).then([
      { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: { team: 'core' }, parent: null, policy: null } },
      { type: 'ItemAdded', data: { item: a, followUpOf: null } },
    ]);
    expect(state?.seq).toBe(3);
    expect(state?.rejections[0]?.code).toBe('PLAN_NOT_FOUND');
  });
  it('rejectionEvent tolerates garbage and still chains', () => {
    const history = executePlan();
    const e = rejectionEvent(stateOf(history), { type: 42, commandId: ['x'] }, { code: 'INVALID_FIELD', message: 'bad', field: 'type' }, { now: 9 });
    expect(e.data).toMatchObject({ commandId: '', commandType: 'unknown', code: 'INVALID_FIELD' });
    expect(verifyChain([...history, e]).ok).toBe(true);
  });
  it('garbage becomes INVALID_FIELD', () => {
    for (const garbage of [null, 1, 'x', [], { type: 'CreatePlan' }, { ...cmd.create(), data: null }]) {
      const d = decide(undefined, garbage, { now: 1 });
      expect(d.ok).toBe(false);
      if (!d.ok) expect(d.rejection.code).toBe(RejectionCode.INVALID_FIELD);
    }
    const d = decide(undefined, cmd.create(), { now: Number.NaN });
    expect(d).toMatchObject({ ok: false, rejection: { code: 'INVALID_FIELD', field: 'ctx.now' } });
  });
  it('every rejection code is covered by a spec above (SELF_APPROVAL_FORBIDDEN and DUPLICATE_APPROVER in policy.unit.test.ts, NOT_WAITING and DUPLICATE_SIGNAL in wait.unit.test.ts)', () => {
    expect(Object.keys(RejectionCode)).toHaveLength(16);
  });
});

describe('nextRetryAt', () => {
  it('doubles from 1 s and caps at 60 s by default', () => {
    expect([1, 2, 3, 4, 7, 8].map((n) => nextRetryAt(null, n, 100))).toEqual([1100, 2100, 4100, 8100, 60100, 60100]);
    expect(nextRetryAt({ maxAttempts: 5, initialBackoffMs: 10, backoffMultiplier: 1.5, maxBackoffMs: 100 }, 3, 0)).toBe(23);
  });
});
