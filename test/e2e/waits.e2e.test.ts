// A durable wait across a kill -9: executor A (a child process) starts an item's wait and is killed; B
// takes the partition over and holds the wait without invoking anything; the answer arrives through the
// CLI (`plan-ledger signal --data @file`) and the plan goes on on B. The audit shows the wait, the takeover
// and the signaller.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AuditRow } from '../../src/audit/timeline.js';
import { connectLedger } from '../../src/client/index.js';
import { verifyChain } from '../../src/plan/index.js';
import { testConfig } from '../support/helpers.js';
import { ownsPartitions, runCli, spawnExecutor } from '../support/processes.js';

const cli = runCli;

describe('a wait outlives kill -9 of its executor', () => {
  it('B takes the waiting plan over without invoking anything; a signal through the CLI completes it; a second one is DUPLICATE_SIGNAL', async () => {
    const config = testConfig({ partitions: 1 });
    const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-waits-'));
    const a = spawnExecutor(config, { label: 'wait-exec-A' });
    await a.waitForLog(ownsPartitions, 60_000);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({
        goal: 'refund once support confirms',
        mode: 'execute',
        items: [
          { id: 'confirm', title: 'support confirms the refund', why: 'a person decides', wait: { signal: 'support-ok', timeoutMs: 600_000, prompt: 'Refund order 42?' } },
          { id: 'refund', title: 'refund', why: 'after the confirmation', tool: 'noop', input: { order: 42 }, dependsOn: ['confirm'] },
        ],
      });
      await ledger.waitFor(planId, (s) => s.items['confirm']?.status === 'in_progress', { timeoutMs: 30_000 });
      a.kill('SIGKILL');
      expect((await a.exited).signal).toBe('SIGKILL');

      const b = spawnExecutor(config, { label: 'wait-exec-B' });
      await b.waitForLog(ownsPartitions, 60_000);
      const held = await ledger.getPlan(planId);
      expect(held?.items['confirm']?.status).toBe('in_progress');
      const shown = await cli(config, ['show', planId]);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain('confirm waits for signal support-ok (until ');
      expect(shown.stdout).toContain('Refund order 42?');
      expect(shown.stdout).toContain(`plan-ledger signal ${planId} support-ok --data @answer.json`);

      const file = join(dir, 'answer.json');
      writeFileSync(file, JSON.stringify({ approved: true, note: 'customer is right' }));
      const sent = await cli(config, ['signal', planId, 'support-ok', '--data', `@${file}`, '--signal-id', 'ticket-77', '--by', 'agent-smith', '--json']);
      expect(sent.stderr).toBe('');
      expect(sent.code).toBe(0);
      expect(JSON.parse(sent.stdout)).toMatchObject({ ok: true, planId });

      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
      expect(done.items['confirm']!.outputJson).toBe('{"approved":true,"note":"customer is right"}');
      expect(done.items['confirm']!.attempts).toHaveLength(1);

      const again = await cli(config, ['signal', planId, 'support-ok', '--data', '{"approved":false}', '--signal-id', 'ticket-77']);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toMatch(/DUPLICATE_SIGNAL/);
      const wrong = await cli(config, ['signal', planId, 'nobody-asked', '--data', '1']);
      expect(wrong.code).not.toBe(0);
      expect(wrong.stderr).toMatch(/PLAN_FINISHED/);
      b.kill('SIGTERM');

      const events = (await ledger.planEvents(planId)).map((r) => r.event);
      expect(verifyChain(events).ok).toBe(true);
      expect(events.find((e) => e.type === 'WaitStarted')?.actor).toBe('wait-exec-A');
      expect(events.find((e) => e.type === 'ItemSignalled')).toMatchObject({ actor: 'agent-smith', data: { signalId: 'ticket-77' } });
      // The wait never took a tool intent; the dependant ran once, on the survivor.
      expect(events.filter((e) => e.type === 'IntentRecorded').map((e) => [e.data.itemId, e.actor])).toEqual([['refund', 'wait-exec-B']]);
      expect(events.filter((e) => e.type === 'CommandRejected').map((e) => e.type === 'CommandRejected' && e.data.code)).toEqual(['DUPLICATE_SIGNAL', 'PLAN_FINISHED']);

      const audit = await cli(config, ['audit', planId, '--json']);
      expect(audit.code).toBe(0);
      const rows = audit.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { kind: string } & Partial<AuditRow>)
        .filter((r) => r.kind === 'event');
      expect(rows.map((r) => [r.type, r.outcome])).toContainEqual(['WaitStarted', 'waiting:support-ok']);
      expect(rows.map((r) => [r.type, r.actor, r.outcome])).toContainEqual(['ItemSignalled', 'agent-smith', 'signalled:support-ok']);
      // The signal's row carries the wait's attempt key and the time waited, across the takeover.
      const signalled = rows.find((r) => r.type === 'ItemSignalled')!;
      expect(signalled.idempotencyKey).toBe(`${planId}/confirm/1`);
      expect(signalled.sinceIntentMs).toBeGreaterThan(6000); // at least the session timeout before B took over
      const verify = await cli(config, ['verify', planId]);
      expect(verify.code).toBe(0);
    } finally {
      await ledger.close();
    }
  }, 180_000);
});
