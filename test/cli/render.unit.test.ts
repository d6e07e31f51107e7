import { describe, expect, it } from 'vitest';
import { auditRows } from '../../src/audit/timeline.js';
import { loadTools } from '../../cli/executor.js';
import { painter } from '../../cli/output.js';
import { takeovers } from '../../src/audit/takeovers.js';
import { renderAudit, renderFailures, renderForks, renderPlan, renderTakeovers } from '../../cli/render.js';
import { compilePolicy, decide, evolveAll, type AnyCommand, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import { history, logged } from '../audit/fixtures.js';
import { cmd, command, item, run } from '../plan/fixtures.js';

describe('CLI rendering', () => {
  const { events, state } = history();

  it('renders the plan for review: digest, then one aligned row per item', () => {
    const text = renderPlan(state, painter(false));
    expect(text).toContain(`digest  ${state.digest}   (approved)`);
    const rows = text.split('\n').filter((l) => /^ {2}(ITEM|lookup|pay) /.test(l));
    expect(rows).toHaveLength(3);
    expect(new Set(rows.map((r) => r.indexOf(r.trim().split(/\s+/)[1]!)))).toHaveProperty('size', 1);
    expect(text).not.toContain('\u001b[');
  });

  it('renders the audit timeline with elided keys and causations, one line per event', () => {
    const text = renderAudit('plan-1', auditRows(logged(events)), painter(false));
    const lines = text.split('\n');
    expect(lines).toHaveLength(events.length + 1);
    expect(lines[0]).toMatch(/^TIME \(UTC\)\s+SEQ\s+P\/OFFSET\s+EVENT\s+ACTOR\s+ITEM#ATT\s+IDEMPOTENCY KEY\s+OUTCOME\s+\+INTENT\s+CAUSATION$/);
    expect(lines.find((l) => l.includes('ResultCommitted') && l.includes('pay#1'))).toMatch(/ex-2\s+pay#1\s+…\/pay\/1\s+succeeded\s+6\.0s/);
  });

  it('colors only when asked', () => {
    expect(renderPlan(state, painter(true))).toContain('\u001b[32mcompleted\u001b[39m');
  });
});

describe('CLI rendering of a failed plan', () => {
  const unknownTool = { code: 'UNKNOWN_TOOL', message: 'no tool named "lookup_ordr" is registered with executor ex-1', detailsJson: null };
  const { state } = run([
    cmd.create([item('lookup', [], { tool: 'lookup_ordr' }), item('pay', ['lookup'])]),
    cmd.intent('lookup'),
    cmd.commit('lookup', 1, 'failed_terminal', { error: unknownTool }),
    cmd.settle('lookup'),
  ]);

  it('names each failed item with its attempt, reason, error code and message', () => {
    expect(state!.status).toBe('failed');
    expect(renderFailures(state!)).toEqual(['failed  item lookup (attempt 1, terminal): UNKNOWN_TOOL: no tool named "lookup_ordr" is registered with executor ex-1']);
    const text = renderPlan(state!, painter(false)).split('\n');
    expect(text[2]).toMatch(/^status {2}failed /);
    expect(text[3]).toBe('failed  item lookup (attempt 1, terminal): UNKNOWN_TOOL: no tool named "lookup_ordr" is registered with executor ex-1');
  });

  it('says so when a failure recorded no error, and keeps a message of several lines on one', () => {
    const multi = run([cmd.create([item('x')]), cmd.intent('x'), cmd.commit('x', 1, 'failed_terminal', { error: { code: 'NOPE', message: 'first\n  second', detailsJson: null } }), cmd.settle('x')]).state!;
    expect(renderFailures(multi)).toEqual(['failed  item x (attempt 1, terminal): NOPE: first second']);
    const bare = run([cmd.create([item('x')]), cmd.intent('x'), cmd.commit('x', 1, 'failed_terminal', { error: null }), cmd.settle('x')]).state!;
    expect(renderFailures(bare)).toEqual(['failed  item x (attempt 1, terminal): no error recorded']);
  });

  it('prints nothing for a plan without failed items', () => {
    expect(renderFailures(history().state)).toEqual([]);
  });
});

describe('CLI rendering of attempts taken over', () => {
  // As executors write them: an executor's events carry its id as actor. ex-1 records pay's intent and
  // is killed; ex-2 takes the plan over and runs pay again. ex-1 commits ship's result and is killed
  // before settling it; ex-2 settles it.
  const ex1 = { actor: 'ex-1' };
  const ex2 = { actor: 'ex-2' };
  const steps: Array<[Parameters<typeof run>[0], number]> = [
    [[cmd.create([item('pay'), item('ship', ['pay'])])], 1_000],
    [[cmd.intent('pay', ex1)], 2_000],
    [[cmd.commit('pay', 1, 'succeeded', { executorId: 'ex-2' }, ex2), cmd.settle('pay', ex2), command('RecordIntent', { itemId: 'ship', executorId: 'ex-2', fencingToken: 8 }, ex2)], 8_500],
    [[cmd.commit('ship', 1, 'succeeded', { executorId: 'ex-2' }, ex2)], 9_000],
    [[cmd.settle('ship', { actor: 'ex-3' })], 15_000],
  ];
  const events: PlanEvent[] = [];
  let state: PlanState | undefined;
  for (const [commands, now] of steps) {
    const r = run(commands, now, state);
    events.push(...r.events);
    state = r.state;
  }
  const taken = takeovers(events);

  it('finds who lost each attempt, who went on with it, and when', () => {
    expect(taken).toEqual([
      { itemId: 'pay', attempt: 1, idempotencyKey: 'plan-1/pay/1', kind: 'invoked', from: 'ex-1', fromAt: '1970-01-01T00:00:02.000Z', to: 'ex-2', at: '1970-01-01T00:00:08.500Z', seq: 5 },
      { itemId: 'ship', attempt: 1, idempotencyKey: 'plan-1/ship/1', kind: 'settled', from: 'ex-2', fromAt: '1970-01-01T00:00:09.000Z', to: 'ex-3', at: '1970-01-01T00:00:15.000Z', seq: 9 },
    ]);
    const alone = run([cmd.create([item('pay')]), cmd.intent('pay', ex1), cmd.commit('pay', 1, 'succeeded', {}, ex1), cmd.settle('pay', ex1)]).events;
    expect(takeovers(alone)).toEqual([]);
  });

  it('show names both executors in EXECUTOR and says what the new owner did, with the same key', () => {
    const text = renderPlan(state!, painter(false), undefined, taken).split('\n');
    expect(text.find((l) => l.startsWith('  pay '))).toMatch(/^ {2}pay +completed +echo +- +1 +ex-1→ex-2 +do pay$/);
    expect(text.find((l) => l.startsWith('  ship '))).toMatch(/^ {2}ship +completed +echo +pay +1 +ex-2→ex-3 +do ship$/);
    expect(text.slice(-3)).toEqual([
      'taken over (an executor lost the plan mid-attempt; the next owner went on with the same idempotency key):',
      '  pay#1  re-invoked by ex-2 at 1970-01-01T00:00:08.500Z (result committed): ex-1 recorded the intent at 1970-01-01T00:00:02.000Z and lost the plan; same idempotency key …/pay/1',
      '  ship#1  settled by ex-3 at 1970-01-01T00:00:15.000Z: ex-2 committed the result at 1970-01-01T00:00:09.000Z and lost the plan; not invoked again, same idempotency key …/ship/1',
    ]);
    expect(renderTakeovers('plan-1', [])).toEqual([]);
  });
});

describe('CLI rendering of an approval policy', () => {
  const production = compilePolicy({ id: 'production', approval: 'always', approvers: 2, forbidSelfApproval: true, rules: [] });
  const base = { planId: 'plan-p', issuedAt: 0, correlationId: 'c' };
  const steps: AnyCommand[] = [
    { ...base, commandId: 'c1', actor: 'alice', type: 'CreatePlan', data: { goal: 'refund', mode: 'execute', labels: {}, parent: null, items: [{ id: 'pay', title: 'pay', why: 'refund', dependsOn: [], tool: 'payments.refund', inputJson: '{}', retry: null }] } },
  ];
  let state: PlanState | undefined;
  const events: PlanEvent[] = [];
  for (const c of steps) {
    const d = decide(state, c, { now: 1_700_000_000_000, policy: production });
    if (!d.ok) throw new Error(d.rejection.message);
    events.push(...d.events);
    state = evolveAll(state, d.events);
  }
  const approve = decide(state, { ...base, commandId: 'c2', actor: 'bob', type: 'ApprovePlan', data: { digest: state!.digest, by: 'bob', comment: null } }, { now: 1_700_000_001_000 });
  if (!approve.ok) throw new Error(approve.rejection.message);
  events.push(...approve.events);
  state = evolveAll(state, approve.events);

  it('show prints the rule that applied and the approvals so far', () => {
    const text = renderPlan(state!, painter(false));
    expect(text).toContain(`policy  production@${production.hash.slice(0, 12)} rule always: policy production reviews every plan; 2 approvers, not the creator   (seq 3)`);
    expect(text).toContain('approvals 1 of 2 (bob)');
    expect(text).toMatch(/status {2}proposed/);
  });

  it('audit prints the rule in the timeline', () => {
    const lines = renderAudit('plan-p', auditRows(logged(events)), painter(false)).split('\n');
    expect(lines.find((l) => l.includes('PlanProposed'))).toMatch(/policy:always/);
    expect(lines.find((l) => l.includes('PlanCreated'))).toMatch(/policy:review/);
    expect(lines.find((l) => l.includes('ApprovalRecorded'))).toMatch(/bob.*approval 1\/2/);
  });
});

describe('tools modules', () => {
  it('examples/tools.ts and demo/tools.ts load as executors load them', async () => {
    expect((await loadTools('examples/tools.ts')).map((t) => t.name)).toEqual(['echo', 'wait', 'http.get', 'http.post', 'plan.steps']);
    expect((await loadTools('demo/tools.ts')).map((t) => t.name)).toEqual(['orders.lookup', 'refunds.compute', 'payments.refund', 'customer.notify']);
  });
});

describe('CLI rendering of a source plan\'s forks', () => {
  it('lists them, prints nothing when there are none, and names the partitions and prefix without a watermark', () => {
    expect(renderForks({ plans: [{ planId: 'p-fix', status: 'completed' }], total: 3 })).toEqual(['forks   p-fix (completed) and 2 more']);
    expect(renderForks({ plans: [], total: 0 })).toEqual([]);
    expect(renderForks({ notListed: { prefix: 'demo-ab12', partitions: [1, 2], of: 3 } })).toEqual([
      'forks   not listed: no projector has covered partitions 1,2 of prefix "demo-ab12" yet (a projector on this prefix watermarks every partition, an empty one too, within seconds: plan-ledger projector; the API lists forks too)',
    ]);
    expect(renderForks({ notListed: { prefix: 'plan-ledger', partitions: [0], of: 1 } })[0]).toContain('no projector has covered partition 0 of prefix "plan-ledger" yet');
    expect(renderForks({ notListed: { prefix: 'demo-ab12', partitions: [0, 1, 2, 3, 4, 5], of: 6 } })[0]).toContain('no projector has covered any of the 6 partitions of prefix "demo-ab12" yet');
  });
});
