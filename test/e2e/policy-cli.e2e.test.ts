// The approval policy through the CLI and an executor process: `plan-ledger executor` with PLAN_LEDGER_POLICY
// (production: always, 2 approvers, no self-approval), then run / approve / show / audit as an operator would.
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { AuditRow } from '../../src/audit/timeline.js';
import { connectLedger } from '../../src/client/index.js';
import { ownsPartitions, runCli, spawnExecutor } from '../support/processes.js';
import { testConfig } from '../support/helpers.js';

const cli = runCli;

describe('approval policy through the CLI', () => {
  it('an executor refuses a bad policy file at start, naming the field (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-policy-'));
    const bad = join(dir, 'policy.yaml');
    writeFileSync(bad, 'id: broken\napproval: rules\nrules:\n  - tool: "payments.*"\n  - label: nokey\n');
    const r = await cli(testConfig(), ['executor', '--tools', 'test/fixtures/tools.ts', '--policy', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(`plan-ledger: invalid policy ${bad}: rules[1].label key=value`);
  });

  it('run under production waits for two approvers other than its creator; show and audit name the rule', async () => {
    const config = testConfig();
    const executor = spawnExecutor(config, { label: 'policy-exec', env: { PLAN_LEDGER_POLICY: 'examples/policies/production.yaml' } });
    await executor.waitForLog(ownsPartitions, 60_000);
    expect(executor.logs.find((l) => l.msg === 'approval policy loaded')).toMatchObject({ policyId: 'production', approval: 'always' });

    const run = await cli(config, ['run', 'test/fixtures/policy-plan.yaml']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/\(execute mode\)/);
    expect(run.stdout).toMatch(/status {2}proposed/);
    expect(run.stdout).toMatch(/policy {2}production@[0-9a-f]{12} rule always: policy production reviews every plan; 2 approvers, not the creator/);
    const [, planId, digest] = /approve with: {2}plan-ledger approve (\S+) --digest ([0-9a-f]{64})/.exec(run.stdout)!;

    const bob = await cli(config, ['approve', planId!, '--digest', digest!, '--by', 'bob']);
    expect(bob.code, bob.stderr).toBe(0);
    expect(bob.stdout).toContain('recorded as bob; policy production needs 2 distinct approvers');
    const again = await cli(config, ['approve', planId!, '--digest', digest!, '--by', 'bob']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/^plan-ledger: ApprovePlan rejected: DUPLICATE_APPROVER: bob already approved/);
    const show = await cli(config, ['show', planId!]);
    expect(show.stdout).toContain('approvals 1 of 2 (bob)');
    expect(show.stdout).toMatch(/fetch\s+pending\s+noop\s+-\s+0/);

    const carol = await cli(config, ['approve', planId!, '--digest', digest!, '--by', 'carol']);
    expect(carol.code, carol.stderr).toBe(0);
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const done = await ledger.waitFor(planId!, 'completed', { timeoutMs: 60_000 });
    expect(done.approvals.map((a) => a.by)).toEqual(['bob', 'carol']);

    const audit = await cli(config, ['audit', planId!, '--json']);
    expect(audit.code, audit.stderr).toBe(0);
    // One JSON line per timeline row, then the state.
    const rows = audit.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as AuditRow)
      .filter((r) => r.kind === 'event');
    expect(rows.map((r) => [r.type, r.outcome]).slice(0, 7)).toEqual([
      ['PlanCreated', 'policy:review'],
      ['ItemAdded', null],
      ['ItemAdded', null],
      ['PlanProposed', 'policy:always'],
      ['ApprovalRecorded', 'approval 1/2'],
      ['CommandRejected', 'DUPLICATE_APPROVER'],
      ['PlanApproved', 'approved'],
    ]);
    expect(rows.filter((r) => r.type === 'IntentRecorded').every((r) => r.seq > 7)).toBe(true);
  });
});
