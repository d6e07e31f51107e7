import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { parsePlanFile, toCreatePlanInput } from '../../src/audit/plan-file.js';
import type { Ledger } from '../../src/client/index.js';
import { parsePolicy } from '../../src/policy-file.js';
import { verifyChain, type PlanEvent } from '../../src/plan/index.js';
import { startExecutor } from '../../executor/index.js';
import { tools } from '../fixtures/tools.js';
import { ledgerWithExecutor } from './support.js';

const planFile = parsePlanFile(readFileSync(new URL('../fixtures/policy-plan.yaml', import.meta.url), 'utf8'), 'policy-plan.yaml');

async function rejectionOf(p: Promise<unknown>): Promise<string> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(isLedgerError(e, 'REJECTED')).toBe(true);
  return (e as { details: { rejection: string } }).details.rejection;
}

async function events(ledger: Ledger, planId: string): Promise<PlanEvent[]> {
  const evs = (await ledger.planEvents(planId)).map((r) => r.event);
  expect(verifyChain(evs).ok).toBe(true);
  return evs;
}

describe('approval policy (in-process executor, real broker and registry)', () => {
  it('the same plan file runs at once under a sandbox policy', async () => {
    const { ledger } = await ledgerWithExecutor({ policy: 'examples/policies/sandbox.yaml' });
    const { planId } = await ledger.createPlan(toCreatePlanInput(planFile, 'execute'), { by: 'alice' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.approvals).toEqual([]);
    const evs = await events(ledger, planId);
    const created = evs[0]!;
    expect(created.type === 'PlanCreated' && created.data.policy).toMatchObject({ policyId: 'sandbox', required: false, rule: 'never' });
    expect(evs.some((e) => e.type === 'PlanProposed')).toBe(false);
    expect(evs.filter((e) => e.type === 'ItemCompleted')).toHaveLength(2);
  });

  it('under a production policy it waits for 2 approvers other than its creator; mode execute does not bypass it', async () => {
    const { ledger } = await ledgerWithExecutor({ policy: 'examples/policies/production.yaml' });
    // The client asks for execute mode: the executor proposes the plan instead.
    const created = await ledger.createPlan(toCreatePlanInput(planFile, 'execute'), { by: 'alice' });
    const { planId, digest } = created;
    expect(created.events.map((e) => e.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded', 'PlanProposed']);
    const proposed = created.events[3]!;
    expect(proposed.type === 'PlanProposed' && proposed.data).toMatchObject({ digest, itemCount: 2, policy: { policyId: 'production', required: true, rule: 'always', approvers: 2, forbidSelfApproval: true } });

    // Commands are decided in order and ready items start right after a decision, so once these rejections
    // are back, an item that could run would have recorded its intent already.
    expect(await rejectionOf(ledger.approve(planId, digest, { by: 'alice' }))).toBe('SELF_APPROVAL_FORBIDDEN');
    const first = await ledger.approve(planId, digest, { by: 'bob' });
    expect(first.events.map((e) => e.type)).toEqual(['ApprovalRecorded']);
    expect(await rejectionOf(ledger.approve(planId, digest, { by: 'bob' }))).toBe('DUPLICATE_APPROVER');
    const waiting = await ledger.getPlan(planId);
    expect(waiting?.status).toBe('proposed');
    expect(Object.values(waiting!.items).map((i) => i.attempts.length)).toEqual([0, 0]);
    expect((await events(ledger, planId)).some((e) => e.type === 'IntentRecorded')).toBe(false);

    const second = await ledger.approve(planId, digest, { by: 'carol' });
    expect(second.events.map((e) => e.type)).toEqual(['PlanApproved']);
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.approvals.map((a) => [a.by, a.digest])).toEqual([['bob', digest], ['carol', digest]]);
    expect(done.policy).toMatchObject({ policyId: 'production', rule: 'always', seq: 4 });
    const evs = await events(ledger, planId);
    const approvedAt = evs.find((e) => e.type === 'PlanApproved')!.seq;
    expect(evs.filter((e) => e.type === 'IntentRecorded').every((e) => e.seq > approvedAt)).toBe(true);

    // The audit timeline says which rule decided.
    const audit = await ledger.audit(planId);
    const row = audit.rows.find((r) => r.type === 'PlanProposed')!;
    expect(row.outcome).toBe('policy:always');
    expect(row.summary).toMatch(/policy production@[0-9a-f]{12} rule always: policy production reviews every plan; 2 approvers, not the creator/);
    expect(audit.rows.find((r) => r.type === 'ApprovalRecorded')?.outcome).toBe('approval 1/2');
  });

  it("a tool's follow-up items that a rule covers pause the running plan for a new approval of the new digest", async () => {
    const policy = parsePolicy({ id: 'follow-ups', approval: 'rules', rules: [{ name: 'planned-work', tool: 'noop' }] });
    const { ledger } = await ledgerWithExecutor({ policy });
    const { planId, digest: firstDigest } = await ledger.createPlan(
      { goal: 'plan at run time', mode: 'execute', items: [{ id: 'plan', title: 'plan two steps', why: 'dynamic planning', tool: 'planner', input: { count: 2 } }] },
      { by: 'alice' },
    );
    // planner is not covered: it runs at once; its noop follow-ups are, so the plan pauses.
    const paused = await ledger.waitFor(planId, (s) => s.status === 'proposed' && s.items['plan']?.status === 'completed', { timeoutMs: 60_000 });
    expect(paused.itemOrder).toEqual(['plan', 'follow-0', 'follow-1']);
    expect([paused.items['follow-0']!.attempts.length, paused.items['follow-1']!.attempts.length]).toEqual([0, 0]);
    const evs = await events(ledger, planId);
    const types = evs.map((e) => e.type);
    const pause = evs.find((e) => e.type === 'PlanProposed')!;
    expect(types.slice(types.indexOf('ResultCommitted'), types.indexOf('PlanProposed') + 1)).toEqual(['ResultCommitted', 'ItemAdded', 'ItemAdded', 'PlanProposed']);
    expect(pause.type === 'PlanProposed' && pause.data).toMatchObject({ digest: paused.digest, itemCount: 3, policy: { policyId: 'follow-ups', rule: 'planned-work', reason: 'item follow-0 uses tool noop (noop)' } });
    expect(pause.actor).not.toBe('alice'); // the executor decided it, from the tool's result

    // An approval of the plan's first digest is stale; the new digest runs the follow-ups.
    expect(await rejectionOf(ledger.approve(planId, firstDigest, { by: 'bob' }))).toBe('STALE_DIGEST');
    await ledger.approve(planId, paused.digest, { by: 'bob' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.itemOrder.map((id) => done.items[id]!.status)).toEqual(['completed', 'completed', 'completed']);
  });

  it('a policy change applies to new decisions only: an executor restarted under the sandbox keeps the pending review', async () => {
    const { ledger, executor, config } = await ledgerWithExecutor({ policy: 'examples/policies/production.yaml' });
    const { planId, digest } = await ledger.createPlan(toCreatePlanInput(planFile, 'execute'), { by: 'alice' });
    await ledger.approve(planId, digest, { by: 'bob' });
    await executor.stop();

    const sandboxed = await startExecutor({ tools, config, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, policy: 'examples/policies/sandbox.yaml' });
    try {
      await sandboxed.started;
      // Restored from the log, not decided again: still proposed, still needing a second approver.
      expect(sandboxed.planState(planId)?.status).toBe('proposed');
      expect(await rejectionOf(ledger.approve(planId, digest, { by: 'alice' }))).toBe('SELF_APPROVAL_FORBIDDEN');
      // A new plan is decided under the sandbox: it runs at once.
      const fresh = await ledger.createPlan(toCreatePlanInput(planFile, 'execute'), { by: 'alice' });
      await ledger.waitFor(fresh.planId, 'completed', { timeoutMs: 60_000 });
      expect((await ledger.approve(planId, digest, { by: 'carol' })).events.map((e) => e.type)).toEqual(['PlanApproved']);
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    } finally {
      await sandboxed.stop();
    }
  });
});
