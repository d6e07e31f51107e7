// Durable waits in the domain: a wait item's attempt starts waiting (WaitStarted, its deadline on record),
// completes on a SignalItem (ItemSignalled + ItemCompleted), or times out (ExpireWait: a retryable
// WAIT_TIMEOUT result the retry policy acts on). Every rule of `decide` for them, given/when/then.
import avsc from 'avsc';
import { describe, expect, it } from 'vitest';
import {
  decide,
  fromAvroCommand,
  fromAvroEvent,
  planCommandSchema,
  planDigest,
  planEventSchema,
  recoveryAction,
  scanItems,
  stateDigest,
  toAvroCommand,
  toAvroEvent,
  verifyChain,
  type ItemSpec,
  type PlanCommand,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';
import { cmd, command, fold, item, run } from './fixtures.js';
import { given } from './spec.js';

const T0 = 1000;
const wait = (id: string, signal: string, timeoutMs: number | null = 60_000, over: Partial<ItemSpec> = {}): ItemSpec =>
  item(id, [], { tool: 'wait', inputJson: '{}', wait: { signal, timeoutMs, prompt: `answer ${signal}` }, ...over });
const reply = wait('reply', 'customer-reply');
const after = item('ship', ['reply']);
const signal = (name: string, data: unknown = { address: '1 Main St' }, signalId = 'sig-1', meta?: Parameters<typeof command>[2]) =>
  command('SignalItem', { signal: name, signalId, dataJson: JSON.stringify(data) }, meta);
const expire = (itemId: string, attempt = 1) => command('ExpireWait', { itemId, attempt, executorId: 'ex-2' });

/** reply waits (attempt 1, started at T0, deadline T0 + 60 s); ship depends on it. */
const waiting = (items: ItemSpec[] = [reply, after]) => run([cmd.create(items), cmd.intent('reply')], T0).events;
const stateOf = (events: PlanEvent[]) => fold(events) as PlanState;
/** The history followed by what the commands decide on it. */
const extend = (history: PlanEvent[], commands: Parameters<typeof run>[0], now = T0 + 1) => [...history, ...run(commands, now, stateOf(history)).events];

describe('wait items in a plan', () => {
  it('CreatePlan records the wait in ItemAdded; the digest an operator approves covers it', () => {
    const { state } = given([])
      .when(cmd.create([reply]))
      .then([
        { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: { team: 'core' }, parent: null, policy: null } },
        { type: 'ItemAdded', data: { item: reply, followUpOf: null } },
      ]);
    expect(state?.items['reply']?.wait).toEqual({ signal: 'customer-reply', timeoutMs: 60_000, prompt: 'answer customer-reply' });
    const longer = stateOf(run([cmd.create([wait('reply', 'customer-reply', 120_000)])]).events);
    const asTool = stateOf(run([cmd.create([item('reply', [], { tool: 'wait', inputJson: '{}' })])]).events);
    expect(new Set([state!.digest, longer.digest, asTool.digest]).size).toBe(3);
    expect(state!.digest).toBe(planDigest(state!));
  });
  it('INVALID_FIELD for a bad signal name or timeout; PAYLOAD_TOO_LARGE for a huge prompt', () => {
    given([]).when(cmd.create([wait('w', 'has space')])).thenRejects('INVALID_FIELD', 'data.items[0].wait.signal');
    given([]).when(cmd.create([wait('w', '')])).thenRejects('INVALID_FIELD', 'data.items[0].wait.signal');
    given([]).when(cmd.create([wait('w', 's', 0)])).thenRejects('INVALID_FIELD', 'data.items[0].wait.timeoutMs');
    given([]).when(cmd.create([wait('w', 's', -5)])).thenRejects('INVALID_FIELD', 'data.items[0].wait.timeoutMs');
    given([]).when(cmd.create([wait('w', 's', 400 * 24 * 3600 * 1000)])).thenRejects('INVALID_FIELD', 'data.items[0].wait.timeoutMs');
    given([])
      .when(cmd.create([item('w', [], { wait: { signal: 's', timeoutMs: null, prompt: 'x'.repeat(5000) } })]))
      .thenRejects('PAYLOAD_TOO_LARGE', 'data.items[0].wait.prompt');
  });
});

describe('RecordIntent on a wait item: WaitStarted', () => {
  it('starts the wait with its deadline on record; no tool intent, the item is in progress and awaits its signal', () => {
    const { events, state } = given(run([cmd.create([reply, after])]).events)
      .when(cmd.intent('reply'), { now: T0 })
      .then([{ type: 'WaitStarted', data: { itemId: 'reply', attempt: 1, signal: 'customer-reply', deadline: T0 + 60_000, executorId: 'ex-1' } }]);
    expect(events.some((e) => e.type === 'IntentRecorded')).toBe(false);
    expect(state?.items['reply']?.status).toBe('in_progress');
    expect(state?.items['reply']?.attempts[0]?.wait).toEqual({ signal: 'customer-reply', deadline: T0 + 60_000 });
    expect(recoveryAction(state!, 'reply')).toEqual({ kind: 'await_signal', attempt: 1, signal: 'customer-reply', deadline: T0 + 60_000 });
  });
  it('a wait without timeout has no deadline', () =>
    given(run([cmd.create([wait('w', 'go', null)])]).events)
      .when(cmd.intent('w'), { now: T0 })
      .then([{ type: 'WaitStarted', data: { itemId: 'w', attempt: 1, signal: 'go', deadline: null, executorId: 'ex-1' } }]));
  it('INVALID_STATE while its dependencies are open, like any item', () =>
    given(run([cmd.create([item('a'), wait('w', 'go', null, { dependsOn: ['a'] })])]).events)
      .when(cmd.intent('w'))
      .thenRejects('INVALID_STATE', 'data.itemId'));
  it('the scan: a waiting item is never ready; its deadline is the wake-up, past it the wait is expired', () => {
    const s = stateOf(waiting());
    expect(scanItems(s, T0 + 10)).toMatchObject({ ready: [], nextWakeUp: T0 + 60_000, expired: [] });
    expect(scanItems(s, T0 + 60_000)).toMatchObject({ ready: [], expired: [{ itemId: 'reply', attempt: 1 }] });
  });
  it('no tool result, checkpoint or evidence is accepted for a waiting attempt (INVALID_STATE)', () => {
    given(waiting()).when(cmd.commit('reply', 1)).thenRejects('INVALID_STATE', 'data.itemId');
    given(waiting()).when(command('RecordCheckpoint', { itemId: 'reply', attempt: 1, stateJson: '{}' })).thenRejects('INVALID_STATE', 'data.itemId');
    given(waiting()).when(command('RecordEvidence', { itemId: 'reply', attempt: 1, name: 'n', valueJson: '{}' })).thenRejects('INVALID_STATE', 'data.itemId');
  });
});

describe('SignalItem', () => {
  it('completes the waiting item with the data as its output, recorded with the signaller as actor; its dependants become ready', () => {
    const { state } = given(waiting())
      .when(signal('customer-reply', { address: '1 Main St' }, 'sig-1', { actor: 'alice' }), { now: T0 + 500 })
      .then([
        { type: 'ItemSignalled', data: { itemId: 'reply', attempt: 1, signal: 'customer-reply', signalId: 'sig-1', dataJson: '{"address":"1 Main St"}' } },
        { type: 'ItemCompleted', data: { itemId: 'reply', attempt: 1 } },
      ]);
    const it = state!.items['reply']!;
    expect(it.status).toBe('completed');
    expect(it.outputJson).toBe('{"address":"1 Main St"}');
    expect(it.attempts[0]).toMatchObject({ outcome: 'succeeded', durationMs: 500, wait: { signalId: 'sig-1', signalledBy: 'alice' } });
    expect(state!.signals).toEqual({ 'sig-1': 5 }); // the seq of its ItemSignalled
    expect(scanItems(state!, T0 + 600).ready.map((r) => r.itemId)).toEqual(['ship']);
  });
  it('the last item signalled completes the plan', () =>
    given(waiting([reply]))
      .when(signal('customer-reply'), { now: T0 + 1 })
      .then([
        { type: 'ItemSignalled', data: { itemId: 'reply', attempt: 1, signal: 'customer-reply', signalId: 'sig-1', dataJson: '{"address":"1 Main St"}' } },
        { type: 'ItemCompleted', data: { itemId: 'reply', attempt: 1 } },
        { type: 'PlanCompleted', data: { itemCount: 1 } },
      ]));
  it('reaches every item waiting for the name, in item order', () => {
    const history = run([cmd.create([wait('x', 'go', null), wait('y', 'go', null)]), cmd.intent('x'), cmd.intent('y')], T0).events;
    const { state } = given(history)
      .when(signal('go', 1, 'g1'))
      .then([
        { type: 'ItemSignalled', data: { itemId: 'x', attempt: 1, signal: 'go', signalId: 'g1', dataJson: '1' } },
        { type: 'ItemCompleted', data: { itemId: 'x', attempt: 1 } },
        { type: 'ItemSignalled', data: { itemId: 'y', attempt: 1, signal: 'go', signalId: 'g1', dataJson: '1' } },
        { type: 'ItemCompleted', data: { itemId: 'y', attempt: 1 } },
        { type: 'PlanCompleted', data: { itemCount: 2 } },
      ]);
    expect(state!.signals).toEqual({ g1: history.length + 1 });
  });
  it('DUPLICATE_SIGNAL for a signal id delivered before, even to another name; the same command redelivered is a no-op', () => {
    const first = signal('customer-reply', { a: 1 }, 'sig-1', { commandId: 'signal-cmd-1' });
    const all = extend(extend(waiting([reply, wait('other', 'other-reply')]), [cmd.intent('other')]), [first]);
    given(all).when(signal('customer-reply', { a: 2 }, 'sig-1')).thenRejects('DUPLICATE_SIGNAL', 'data.signalId');
    given(all).when(signal('other-reply', { a: 2 }, 'sig-1')).thenRejects('DUPLICATE_SIGNAL', 'data.signalId');
    given(all).when(first).thenNothing();
    expect(stateOf(all).items['reply']!.attempts).toHaveLength(1);
    expect(stateOf(all).items['other']!.status).toBe('in_progress');
  });
  it('NOT_WAITING for a name no item waits for, naming the waits there are', () => {
    const d = decide(stateOf(waiting()), signal('nobody'), { now: T0 });
    expect(d).toMatchObject({ ok: false, rejection: { code: 'NOT_WAITING', field: 'data.signal' } });
    if (!d.ok) expect(d.rejection.message).toContain('waiting: customer-reply');
  });
  it('NOT_WAITING for a wait item that has not started (its dependency is open) and after it was signalled', () => {
    given(run([cmd.create([item('a'), wait('w', 'go', null, { dependsOn: ['a'] })])]).events).when(signal('go')).thenRejects('NOT_WAITING', 'data.signal');
    given(extend(waiting(), [signal('customer-reply', 1, 's1')])).when(signal('customer-reply', 2, 's2')).thenRejects('NOT_WAITING', 'data.signal');
  });
  it('PLAN_NOT_FOUND for a plan that does not exist; PLAN_FINISHED for a finished one', () => {
    given([]).when(signal('customer-reply')).thenRejects('PLAN_NOT_FOUND', 'planId');
    const done = extend(waiting([reply]), [signal('customer-reply', 1, 's1')]);
    expect(stateOf(done).status).toBe('completed');
    given(done).when(signal('customer-reply', 1, 's2')).thenRejects('PLAN_FINISHED');
    // A redelivery of the signal that finished the plan is still told it was delivered.
    given(done).when(signal('customer-reply', 1, 's1')).thenRejects('DUPLICATE_SIGNAL', 'data.signalId');
  });
  it('the data is checked like any payload: canonical JSON, size; the ids like any id', () => {
    given(waiting()).when(command('SignalItem', { signal: 'customer-reply', signalId: 's', dataJson: '{ "a": 1 }' })).thenRejects('INVALID_FIELD', 'data.dataJson');
    given(waiting())
      .when(signal('customer-reply', 'x'.repeat(300)), { now: T0, limits: { maxPayloadBytes: 100 } })
      .thenRejects('PAYLOAD_TOO_LARGE', 'data.dataJson');
    given(waiting()).when(signal('customer-reply', 1, '')).thenRejects('INVALID_FIELD', 'data.signalId');
    given(waiting()).when(signal('customer-reply', 1, 'x'.repeat(257))).thenRejects('INVALID_FIELD', 'data.signalId');
    given(waiting()).when(signal('has space')).thenRejects('INVALID_FIELD', 'data.signal');
    given(waiting()).when(command('SignalItem', { signal: 'customer-reply', signalId: 's' } as never)).thenRejects('INVALID_FIELD', 'data.dataJson');
  });
});

describe('ExpireWait: the durable timeout', () => {
  it('INVALID_STATE before the deadline', () => given(waiting()).when(expire('reply'), { now: T0 + 59_999 }).thenRejects('INVALID_STATE', 'data.itemId'));
  it('at the deadline: a retryable WAIT_TIMEOUT result; SettleItem applies the retry policy and the next attempt waits anew', () => {
    const { state } = given(waiting())
      .when(expire('reply'), { now: T0 + 60_000 })
      .then([
        {
          type: 'ResultCommitted',
          data: {
            itemId: 'reply',
            attempt: 1,
            outcome: 'failed_retryable',
            outputJson: null,
            error: { code: 'WAIT_TIMEOUT', message: `no signal customer-reply arrived before the deadline ${new Date(T0 + 60_000).toISOString()}`, detailsJson: null },
            durationMs: 60_000,
            executorId: 'ex-2',
            followUpIds: [],
          },
        },
      ]);
    const settled = run([cmd.settle('reply')], T0 + 60_000, state);
    expect(settled.events.map((e) => e.type)).toEqual(['ItemRetryScheduled']);
    const again = run([cmd.intent('reply')], T0 + 62_000, settled.state);
    expect(again.events[0]).toMatchObject({ type: 'WaitStarted', data: { attempt: 2, deadline: T0 + 62_000 + 60_000 } });
  });
  it('with one attempt allowed the item fails (retries exhausted) and its dependants cannot run: the plan fails', () => {
    const once = wait('reply', 'customer-reply', 1000, { retry: { maxAttempts: 1, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } });
    const started = run([cmd.create([once, after]), cmd.intent('reply')], T0);
    const timedOut = run([expire('reply'), cmd.settle('reply')], T0 + 1000, started.state);
    expect(timedOut.events.map((e) => e.type)).toEqual(['ResultCommitted', 'ItemFailed', 'PlanFailed']);
    expect(timedOut.state!.items['reply']!.failure).toMatchObject({ reason: 'retries_exhausted', error: { code: 'WAIT_TIMEOUT' } });
  });
  it('INVALID_STATE for a wait without deadline, a signalled item, a tool item, a stale attempt; a signal after the timeout is NOT_WAITING', () => {
    given(run([cmd.create([wait('w', 'go', null)]), cmd.intent('w')]).events).when(expire('w'), { now: 10 ** 12 }).thenRejects('INVALID_STATE', 'data.itemId');
    given(extend(waiting(), [signal('customer-reply')])).when(expire('reply'), { now: T0 + 60_000 }).thenRejects('INVALID_STATE', 'data.itemId');
    given(run([cmd.create([item('a')]), cmd.intent('a')]).events).when(expire('a'), { now: 10 ** 12 }).thenRejects('INVALID_STATE', 'data.itemId');
    given(waiting()).when(expire('reply', 2), { now: T0 + 60_000 }).thenRejects('INVALID_STATE', 'data.attempt');
    given(extend(waiting(), [expire('reply')], T0 + 60_000)).when(signal('customer-reply')).thenRejects('NOT_WAITING', 'data.signal');
  });
});

describe('CancelPlan with a waiting item', () => {
  it('cancels the waiting item with the pending ones', () =>
    given(waiting()).when(cmd.cancel()).then([{ type: 'PlanCancelled', data: { reason: 'stop', cancelledItemIds: ['reply', 'ship'] } }]));
});

describe('the contract', () => {
  const eventType = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
  const commandType = avsc.Type.forSchema(planCommandSchema as unknown as avsc.Schema, { wrapUnions: true });
  it('wait events and SignalItem survive an Avro round trip with their hashes; the plan replays to the same state digest', () => {
    const history = extend(waiting(), [signal('customer-reply', { card: { number: '4111' } }, 'sig-9')]);
    const decoded = history.map((e) => fromAvroEvent(eventType.fromBuffer(eventType.toBuffer(toAvroEvent(e)))));
    expect(decoded).toEqual(history);
    expect(verifyChain(decoded).ok).toBe(true);
    expect(stateDigest(fold(decoded)!)).toBe(stateDigest(fold(history)!));
    const c = signal('customer-reply', [1, 2], 'sig-10') as PlanCommand;
    expect(fromAvroCommand(commandType.fromBuffer(commandType.toBuffer(toAvroCommand(c))))).toEqual(c);
  });
  it('an item without a wait carries no wait field (it hashes and digests as before waits existed)', () => {
    const { events } = run([cmd.create([item('a')])]);
    const added = events.find((e) => e.type === 'ItemAdded')!;
    expect(Object.keys((added.data as { item: object }).item)).not.toContain('wait');
    const decoded = fromAvroEvent(eventType.fromBuffer(eventType.toBuffer(toAvroEvent(added))));
    expect(Object.keys((decoded.data as { item: object }).item)).not.toContain('wait');
    expect(decoded.hash).toBe(added.hash);
  });
});
