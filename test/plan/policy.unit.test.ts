import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  compilePolicy,
  decide,
  evaluatePolicy,
  evolveAll,
  globMatch,
  readyItems,
  stateDigest,
  verifyChain,
  type AnyCommand,
  type ApprovalPolicy,
  type PlanEvent,
  type PlanState,
  type PolicyContent,
  type PolicyDecision,
} from '../../src/plan/index.js';
import { cmd, command, item, PLAN } from './fixtures.js';
import { given } from './spec.js';

const policy = (over: Partial<PolicyContent>): ApprovalPolicy =>
  compilePolicy({ id: 'test', approval: 'rules', approvers: 1, forbidSelfApproval: false, rules: [], ...over });

const production = policy({ id: 'production', approval: 'always', approvers: 2, forbidSelfApproval: true });
const sandbox = policy({ id: 'sandbox', approval: 'never' });
const payments = policy({ id: 'payments', rules: [{ name: 'payments', tool: 'payments.*' }] });

const fetch = item('fetch', [], { tool: 'http.get' });
const charge = item('charge', ['fetch'], { tool: 'payments.charge' });

/** Decides commands one after another, each with its own policy (undefined: none); rejections throw. */
function decideAll(steps: Array<[AnyCommand | ((s: PlanState) => AnyCommand), ApprovalPolicy | undefined]>, start: { events: PlanEvent[]; state?: PlanState } = { events: [] }) {
  let state = start.state;
  const events = [...start.events];
  let now = 1000;
  for (const [c, p] of steps) {
    const d = decide(state, typeof c === 'function' ? c(state as PlanState) : c, { now, ...(p ? { policy: p } : {}) });
    if (!d.ok) throw new Error(`${d.rejection.code}: ${d.rejection.message}`);
    events.push(...d.events);
    state = evolveAll(state, d.events);
    now += 10;
  }
  return { events, state: state as PlanState };
}

const approve = (by: string, digest: string) => command('ApprovePlan', { digest, by, comment: null }, { actor: by });

describe('evaluatePolicy: each rule kind', () => {
  const subject = (items = [fetch], labels: Record<string, string> = {}, itemCount = items.length) => ({ labels, items, itemCount });

  it('always and never decide every plan the same way, naming the policy and its hash', () => {
    expect(evaluatePolicy(production, subject())).toEqual({
      policyId: 'production', policyHash: production.hash, required: true, rule: 'always', reason: 'policy production reviews every plan', approvers: 2, forbidSelfApproval: true,
    });
    expect(evaluatePolicy(sandbox, subject([charge]))).toMatchObject({ policyId: 'sandbox', required: false, rule: 'never' });
    expect(production.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(production.hash).not.toBe(sandbox.hash);
  });

  it('tool globs match with * across dots, and only when an item under review uses such a tool', () => {
    expect(evaluatePolicy(payments, subject([fetch, charge]))).toMatchObject({ required: true, rule: 'payments', reason: 'item charge uses tool payments.charge (payments.*)' });
    expect(evaluatePolicy(payments, subject([fetch]))).toMatchObject({ required: false, rule: null, reason: 'no rule of policy payments matched' });
    expect([globMatch('payments.*', 'payments.refund.full'), globMatch('payments.*', 'paymentsXcharge'), globMatch('pay?ents.*', 'payments.x'), globMatch('*', '')]).toEqual([true, false, true, true]);
    expect([globMatch('a*b*c', 'axxbyyc'), globMatch('a*b*c', 'axxbyy'), globMatch('*.charge', 'payments.charge'), globMatch('(x)+[y]', '(x)+[y]'), globMatch('', '')]).toEqual([true, false, true, true, true]);
  });

  it('a hostile tool name cannot make a glob backtrack for long: 20 stars against 200 000 characters', () => {
    const glob = `${'*a'.repeat(20)}*b`;
    const tool = 'a'.repeat(200_000);
    expect(globMatch(glob, tool)).toBe(false);
    expect(globMatch(glob, `${tool}b`)).toBe(true);
  });

  it('labels match key=value (the value may be a glob); item counts match above N; a rule with two matchers needs both', () => {
    const p = policy({
      approvers: 1,
      rules: [
        { label: 'env=prod*', approvers: 3 },
        { itemsOver: 2 },
        { name: 'risky-payments', tool: 'payments.*', label: 'risk=high' },
      ],
    });
    expect(evaluatePolicy(p, subject([fetch], { env: 'production' }))).toMatchObject({ required: true, rule: 'rules[0]', reason: 'label env=production (env=prod*)', approvers: 3 });
    expect(evaluatePolicy(p, subject([fetch], { env: 'dev' }))).toMatchObject({ required: false });
    expect(evaluatePolicy(p, subject([fetch], {}, 3))).toMatchObject({ required: true, rule: 'rules[1]', reason: '3 items > 2', approvers: 1 });
    expect(evaluatePolicy(p, subject([fetch], {}, 2))).toMatchObject({ required: false });
    expect(evaluatePolicy(p, subject([charge], { risk: 'high' }))).toMatchObject({ required: true, rule: 'risky-payments', reason: 'item charge uses tool payments.charge (payments.*) and label risk=high (risk=high)' });
    expect(evaluatePolicy(p, subject([charge], { risk: 'low' }))).toMatchObject({ required: false });
  });
});

describe('decide with a policy stays total', () => {
  it('a context policy that is not a compiled policy is INVALID_FIELD on ctx.policy, never a throw', () => {
    for (const bad of [null, 'production', { id: 'x' }, { id: 'x', hash: 'h', rules: 'no' }]) {
      const d = decide(undefined, cmd.create([fetch]), { now: 1, policy: bad as unknown as ApprovalPolicy });
      expect(d).toMatchObject({ ok: false, rejection: { code: 'INVALID_FIELD', field: 'ctx.policy' } });
    }
  });
});

describe('CreatePlan under a policy', () => {
  it('an execute plan the policy covers is proposed at once, with the rule in PlanCreated and PlanProposed: nothing is ready', () => {
    const decision = evaluatePolicy(payments, { labels: { team: 'core' }, items: [fetch, charge], itemCount: 2 });
    const { events, state } = given([]).when(cmd.create([fetch, charge]), { now: 5000, policy: payments }).then([
      { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: { team: 'core' }, parent: null, policy: decision } },
      { type: 'ItemAdded', data: { item: fetch, followUpOf: null } },
      { type: 'ItemAdded', data: { item: charge, followUpOf: null } },
      { type: 'PlanProposed', data: { digest: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown as string, itemCount: 2, policy: decision } },
    ]);
    expect(state?.status).toBe('proposed');
    expect(events[3]?.type === 'PlanProposed' && events[3].data.digest).toBe(state?.digest);
    expect(state?.policy).toEqual({ ...decision, seq: 4 });
    expect(state?.createdBy).toBe('tester');
    expect(readyItems(state!, 5000)).toEqual([]);
  });

  it('the same plan under a sandbox policy runs at once; the decision (no review) is still recorded', () => {
    const { state } = given([]).when(cmd.create([fetch, charge]), { now: 5000, policy: sandbox }).then([
      { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: { team: 'core' }, parent: null, policy: evaluatePolicy(sandbox, { labels: {}, items: [], itemCount: 0 }) } },
      { type: 'ItemAdded', data: { item: fetch, followUpOf: null } },
      { type: 'ItemAdded', data: { item: charge, followUpOf: null } },
    ]);
    expect(state?.status).toBe('running');
    expect(readyItems(state!, 5000).map((i) => i.itemId)).toEqual(['fetch']);
  });

  it('an execute plan no rule covers runs; a propose plan is left for its client to propose, and ProposePlan records the decision', () => {
    expect(decideAll([[cmd.create([fetch]), payments]]).state.status).toBe('running');
    const { state, events } = decideAll([
      [cmd.create([fetch, charge], 'propose'), production],
      [cmd.propose(), production],
    ]);
    expect(events.map((e) => e.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded', 'PlanProposed']);
    expect(state.status).toBe('proposed');
    expect(state.policy).toMatchObject({ policyId: 'production', rule: 'always', approvers: 2, seq: 4 });
  });
});

describe('ApprovePlan under a policy', () => {
  const proposedUnderProduction = () => decideAll([[cmd.create([fetch, charge], 'execute', { actor: 'alice' }), production]]);

  it('needs N distinct approvers of the same digest: ApprovalRecorded until the last, which is PlanApproved', () => {
    const { events, state } = proposedUnderProduction();
    const first = given(events).when(approve('bob', state.digest)).then([
      { type: 'ApprovalRecorded', data: { digest: state.digest, by: 'bob', comment: null, approvals: 1, required: 2 } },
    ]);
    expect(first.state?.status).toBe('proposed');
    expect(readyItems(first.state!, 9000)).toEqual([]);
    const history = [...events, ...first.events];
    given(history).when(approve('bob', state.digest)).thenRejects('DUPLICATE_APPROVER', 'data.by');
    const second = given(history).when(approve('carol', state.digest)).then([{ type: 'PlanApproved', data: { digest: state.digest, by: 'carol', comment: null } }]);
    expect(second.state?.status).toBe('approved');
    expect(second.state?.approvals.map((a) => a.by)).toEqual(['bob', 'carol']);
    expect(readyItems(second.state!, 9000).map((i) => i.itemId)).toEqual(['fetch']);
  });

  it('refuses the creator when the policy forbids self-approval (by name or as the actor)', () => {
    const { events, state } = proposedUnderProduction();
    given(events).when(approve('alice', state.digest)).thenRejects('SELF_APPROVAL_FORBIDDEN', 'data.by');
    given(events).when(command('ApprovePlan', { digest: state.digest, by: 'someone-else', comment: null }, { actor: 'alice' })).thenRejects('SELF_APPROVAL_FORBIDDEN', 'data.by');
    // The creator may approve when the policy allows it.
    const lenient = decideAll([[cmd.create([fetch, charge], 'execute', { actor: 'alice' }), payments]]);
    given(lenient.events).when(approve('alice', lenient.state.digest)).then([{ type: 'PlanApproved', data: { digest: lenient.state.digest, by: 'alice', comment: null } }]);
  });

  it('approvals of an earlier round do not count after a rejection and a new proposal; a stale digest is refused', () => {
    const { events, state } = proposedUnderProduction();
    const after = decideAll(
      [
        [approve('bob', state.digest), production],
        [command('RejectPlan', { digest: state.digest, by: 'carol', reason: 'not yet' }), production],
        [cmd.propose(), production],
        [approve('carol', state.digest), production],
      ],
      { events, state },
    );
    expect(after.events.slice(-4).map((e) => e.type)).toEqual(['ApprovalRecorded', 'PlanRejected', 'PlanProposed', 'ApprovalRecorded']);
    expect(after.state.status).toBe('proposed');
    given(after.events).when(approve('dave', 'f'.repeat(64))).thenRejects('STALE_DIGEST', 'data.digest');
    const done = given(after.events).when(approve('bob', state.digest)).then([{ type: 'PlanApproved', data: { digest: state.digest, by: 'bob', comment: null } }]);
    expect(done.state?.status).toBe('approved');
  });

  it('an execute plan nothing paused is not reviewable, as before', () => {
    const { events, state } = decideAll([[cmd.create([fetch]), sandbox]]);
    given(events).when(approve('bob', state.digest)).thenRejects('INVALID_STATE');
  });
});

describe('a running plan pauses for new items the policy covers', () => {
  /** fetch in flight in a running execute plan (created under the sandbox). */
  const fetchInFlight = () => decideAll([[cmd.create([fetch]), sandbox], [cmd.intent('fetch'), sandbox]]);

  it('AddItems: the items are added and the plan is proposed at the new digest; the item in flight finishes, nothing new starts', () => {
    const { events, state } = fetchInFlight();
    const decision = evaluatePolicy(payments, { labels: { team: 'core' }, items: [charge], itemCount: 2 });
    const paused = given(events).when(cmd.add([charge]), { now: 5000, policy: payments }).then([
      { type: 'ItemAdded', data: { item: charge, followUpOf: null } },
      { type: 'PlanProposed', data: { digest: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown as string, itemCount: 2, policy: decision } },
    ]);
    const s = paused.state!;
    expect(s.status).toBe('proposed');
    expect(s.digest).not.toBe(state.digest);
    expect(paused.events[1]?.type === 'PlanProposed' && paused.events[1].data.digest).toBe(s.digest);
    // The running item finishes while the plan waits.
    const finished = decideAll([[cmd.commit('fetch', 1), payments], [cmd.settle('fetch'), payments]], { events: [...events, ...paused.events], state: s });
    expect(finished.state.items['fetch']?.status).toBe('completed');
    expect(finished.state.status).toBe('proposed');
    expect(readyItems(finished.state, 9000)).toEqual([]);
    given(finished.events).when(cmd.intent('charge')).thenRejects('INVALID_STATE');
    // Approved at the new digest, charge is ready.
    const approved = decideAll([[approve('ops', s.digest), payments]], finished);
    expect(approved.state.status).toBe('approved');
    expect(readyItems(approved.state, 9000).map((i) => i.itemId)).toEqual(['charge']);
  });

  it('AddItems the policy does not cover runs without a pause', () => {
    const { events } = fetchInFlight();
    const { state } = given(events).when(cmd.add([item('log', [], { tool: 'log.write' })]), { now: 5000, policy: payments }).then([
      { type: 'ItemAdded', data: { item: item('log', [], { tool: 'log.write' }), followUpOf: null } },
    ]);
    expect(state?.status).toBe('running');
  });

  it("a tool's follow-up items the policy covers pause the plan; the executor's command is not remembered as a client's", () => {
    const { events } = fetchInFlight();
    const commit = cmd.commit('fetch', 1, 'succeeded', { followUps: [charge] });
    const decision = evaluatePolicy(payments, { labels: { team: 'core' }, items: [charge], itemCount: 2 });
    const { state } = given(events).when(commit, { now: 5000, policy: payments }).then([
      { type: 'ResultCommitted', data: { itemId: 'fetch', attempt: 1, outcome: 'succeeded', outputJson: '{"done":"fetch"}', error: null, durationMs: 5, executorId: 'ex-1', followUpIds: ['charge'] } },
      { type: 'ItemAdded', data: { item: charge, followUpOf: 'fetch' } },
      { type: 'PlanProposed', data: { digest: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown as string, itemCount: 2, policy: decision } },
    ]);
    expect(state?.status).toBe('proposed');
    expect(Object.keys(state!.appliedCommandIds)).not.toContain((commit as { commandId: string }).commandId);
    const settled = decideAll([[cmd.settle('fetch'), payments]], { events: [], state: state! });
    expect(settled.state.items['fetch']?.status).toBe('completed');
    expect(readyItems(settled.state, 9000)).toEqual([]);
  });

  it('follow-ups of an item in flight while the plan waits re-propose it at the new digest, keeping the pending decision', () => {
    const { events, state } = decideAll([[cmd.create([fetch]), sandbox], [cmd.intent('fetch'), sandbox], [cmd.add([charge]), payments]]);
    expect(state.status).toBe('proposed');
    const extra = item('audit', [], { tool: 'log.write' });
    const after = decideAll([[cmd.commit('fetch', 1, 'succeeded', { followUps: [extra] }), payments]], { events, state });
    expect(after.events.slice(-2).map((e) => e.type)).toEqual(['ItemAdded', 'PlanProposed']);
    expect(after.state.status).toBe('proposed');
    expect(after.state.policy).toMatchObject({ rule: 'payments', seq: after.state.seq });
    const last = after.events.at(-1)!;
    expect(last.type === 'PlanProposed' && last.data.digest).toBe(after.state.digest);
  });

  it('an item that fails while the plan waits, blocking what was added, fails the plan on approval instead of leaving it approved', () => {
    const { events, state } = decideAll([[cmd.create([fetch]), sandbox], [cmd.intent('fetch'), sandbox], [cmd.add([charge]), payments]]);
    const failed = decideAll([[cmd.commit('fetch', 1, 'failed_terminal'), payments], [cmd.settle('fetch'), payments]], { events, state });
    expect(failed.state.status).toBe('proposed');
    expect(failed.state.items['fetch']?.status).toBe('failed');
    given(failed.events).when(approve('ops', failed.state.digest)).then([
      { type: 'PlanApproved', data: { digest: failed.state.digest, by: 'ops', comment: null } },
      { type: 'PlanFailed', data: { failedItemIds: ['fetch'], reason: 'item fetch failed while the plan waited for approval; nothing else can progress' } },
    ]);
  });

  it('a rejected pause leaves an execute plan in draft; its client may propose it again', () => {
    const { events, state } = decideAll([[cmd.create([fetch, charge]), payments]]);
    const after = decideAll([[command('RejectPlan', { digest: state.digest, by: 'ops', reason: 'no' }), payments], [cmd.propose(), payments]], { events, state });
    expect(after.events.slice(-2).map((e) => e.type)).toEqual(['PlanRejected', 'PlanProposed']);
    expect(after.state.status).toBe('proposed');
  });
});

describe('replay never evaluates a policy', () => {
  it('a policy change applies to new decisions only; replay from scratch or from any point gives the same state', () => {
    // Created under production (reviewed), then the executor restarts with the sandbox policy.
    const { events, state } = decideAll([[cmd.create([fetch], 'execute', { actor: 'alice' }), production]]);
    expect(state.status).toBe('proposed');
    const later = decideAll(
      [
        [(s) => approve('bob', s.digest), sandbox],
        // The review opened under production still needs its 2 approvers, whatever the policy is now.
        [(s) => approve('carol', s.digest), sandbox],
        [cmd.add([charge]), sandbox], // sandbox: no pause
      ],
      { events, state },
    );
    expect(later.events.map((e) => e.type).slice(-3)).toEqual(['ApprovalRecorded', 'PlanApproved', 'ItemAdded']);
    expect(later.state.status).toBe('approved');
    const replayed = evolveAll(undefined, later.events)!;
    expect(stateDigest(replayed)).toBe(stateDigest(later.state));
    for (let i = 1; i < later.events.length; i++) {
      const from = evolveAll(undefined, later.events.slice(0, i));
      expect(stateDigest(evolveAll(from, later.events.slice(i))!)).toBe(stateDigest(later.state));
    }
    const created = later.events[0]!;
    expect(created.type === 'PlanCreated' && created.data.policy?.policyId).toBe('production');
    expect(verifyChain(later.events).ok).toBe(true);
  });

  it('property: whatever policy each command was decided under, replaying the events gives the decided state and digest', () => {
    const policies = [undefined, sandbox, production, payments, policy({ id: 'big', rules: [{ itemsOver: 2, approvers: 2 }] })];
    const tools = ['http.get', 'payments.charge', 'log.write'];
    const step = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), tool: fc.constantFrom(...tools) }),
      fc.record({ kind: fc.constant('approve' as const), by: fc.constantFrom('alice', 'bob', 'carol') }),
      fc.record({ kind: fc.constant('run' as const) }),
      fc.record({ kind: fc.constant('propose' as const) }),
    );
    fc.assert(
      fc.property(fc.constantFrom('execute' as const, 'propose' as const), fc.array(fc.tuple(step, fc.nat(policies.length - 1)), { maxLength: 12 }), fc.nat(policies.length - 1), (mode, steps, p0) => {
        let state: PlanState | undefined;
        const events: PlanEvent[] = [];
        let n = 0;
        const apply = (c: AnyCommand, p: ApprovalPolicy | undefined) => {
          const d = decide(state, c, { now: 1000 + events.length, ...(p ? { policy: p } : {}) });
          if (!d.ok) return;
          events.push(...d.events);
          state = evolveAll(state, d.events);
        };
        apply(cmd.create([item('i0', [], { tool: 'http.get' })], mode, { actor: 'alice' }), policies[p0]);
        for (const [s, pi] of steps) {
          const p = policies[pi];
          const st = state as PlanState;
          if (s.kind === 'add') apply(cmd.add([item(`i${++n}`, [], { tool: s.tool })]), p);
          else if (s.kind === 'approve') apply(approve(s.by, st.digest), p);
          else if (s.kind === 'propose') apply(cmd.propose(), p);
          else {
            const ready = readyItems(st, 1_000_000)[0];
            if (ready) {
              apply(cmd.intent(ready.itemId), p);
              apply(cmd.commit(ready.itemId, ready.nextAttempt, 'succeeded', n < 20 ? { followUps: [item(`f${++n}`, [], { tool: tools[n % 3] })] } : {}), p);
              apply(cmd.settle(ready.itemId), p);
            }
          }
        }
        const s = state as PlanState;
        expect(verifyChain(events).ok).toBe(true);
        const replayed = evolveAll(undefined, events)!;
        expect(stateDigest(replayed)).toBe(stateDigest(s));
        expect(replayed.digest).toBe(s.digest);
        // Every review the plan is in was opened by an event that recorded its decision (or none).
        const lastProposal = [...events].reverse().find((e): e is Extract<PlanEvent, { type: 'PlanProposed' }> => e.type === 'PlanProposed');
        if (s.status === 'proposed' && lastProposal) {
          const d: PolicyDecision | null = lastProposal.data.policy;
          expect(s.policy ?? null).toEqual(d === null ? null : { ...d, seq: lastProposal.seq });
          expect(lastProposal.data.digest).toBe(s.digest);
        }
        expect(s.planId).toBe(PLAN);
      }),
      { numRuns: 200 },
    );
  });
});
