// Kill -9 an executor running an agent: after turn 1 was recorded and before turn 2 was asked (inside a
// tool call of turn 1, before its effect), inside turn 2's refund after its effect, and while the model is
// being asked turn 3. Each time a new executor process takes over; the model is asked exactly once for each
// turn that was recorded before a kill, and each tool effect happens once (the EffectsService dedupes by
// idempotency key; the invocations are counted too).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { summarizeAgentRun, runAgent, type TurnOutput } from '../../src/agent/index.js';
import { renderAgentRun, renderAudit } from '../../cli/render.js';
import { verifyChain } from '../../src/plan/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testConfig, waitFor } from '../support/helpers.js';
import { ownsPartitions, spawnExecutor, type ExecutorProcess } from '../support/processes.js';

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

type AgentEvent = { label: string; kind: 'ask' | 'hang'; turn?: number; tool?: string; where?: string; key?: string };

describe('agent run across kill -9 of its executor (child processes, real broker and registry)', () => {
  it('completes on a new executor after three kills; no recorded turn is asked again, each effect happens once', async () => {
    const config = testConfig({ partitions: 1 });
    const eventsFile = join(mkdtempSync(join(tmpdir(), 'agent-kill-')), 'events.jsonl');
    const events = (): AgentEvent[] => (existsSync(eventsFile) ? readFileSync(eventsFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as AgentEvent) : []);
    const spawn = (label: string, fault: Record<string, string>) =>
      spawnExecutor(config, { label, tools: 'test/fixtures/agent-tools.ts', env: { EFFECTS_URL: effects.url, AGENT_EVENTS_FILE: eventsFile, ...fault } });
    const killAt = async (p: ExecutorProcess, hang: (e: AgentEvent) => boolean) => {
      await waitFor(() => events().find((e) => e.label === p.label && e.kind === 'hang' && hang(e)), { timeoutMs: 60_000, message: `${p.label} reaching its fault` });
      p.kill('SIGKILL');
      expect((await p.exited).signal).toBe('SIGKILL');
    };

    const a = spawn('exec-A', { AGENT_HANG_BEFORE_EFFECT: 'lookup' });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await runAgent(ledger, { agent: 'support', goal: 'Refund the order that cost 12.00', mode: 'execute', maxTurns: 5 });

      // Kill 1: turn 1 is recorded, its lookups are running (before their effects), turn 2 not asked.
      await killAt(a, (e) => e.tool === 'lookup');
      const afterA = await ledger.getPlan(planId);
      expect(afterA?.items['turn-1']?.status).toBe('completed');
      expect(afterA?.items['turn-2']).toMatchObject({ status: 'pending', attempts: [] });
      expect(afterA?.items['turn-1.call-0']?.status).toBe('in_progress');

      // Kill 2: B runs the lookups, asks turn 2, and is killed inside the refund, after its effect.
      const b = spawn('exec-B', { AGENT_HANG_AFTER_EFFECT: 'refund' });
      await killAt(b, (e) => e.tool === 'refund');
      expect((await ledger.getPlan(planId))?.items['turn-2']?.status).toBe('completed');

      // Kill 3: C repeats the refund with the same key (no second effect), and is killed while asking turn 3.
      const c = spawn('exec-C', { AGENT_HANG_TURN: '3' });
      await killAt(c, (e) => e.where === 'model' && e.turn === 3);
      expect((await ledger.getPlan(planId))?.items['turn-2.call-0']?.status).toBe('completed');

      const d = spawn('exec-D', {});
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 90_000 });
      d.kill('SIGTERM');

      const asks = events().filter((e) => e.kind === 'ask').map((e) => [e.label, e.turn]);
      // Turns 1 and 2 were asked once each; turn 3 twice: C's call never answered (nothing recorded), D's did.
      expect(asks).toEqual([
        ['exec-A', 1],
        ['exec-B', 2],
        ['exec-C', 3],
        ['exec-D', 3],
      ]);
      expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'Refunded 12.00 on order A.', totals: { turns: 3, inputTokens: 240, outputTokens: 30 } });
      const turn3 = JSON.parse(done.items['turn-3']!.outputJson!) as TurnOutput;
      expect(turn3.turn).toBe(3);
      expect(done.items['turn-3']!.attempts).toHaveLength(1); // C's attempt was recovered by D with the same key
      expect(done.items['turn-3']!.attempts[0]!.executorId).toBe('exec-C');

      // One effect per tool call; the refund was invoked twice (B, then C recovering) with one key.
      const mine = effects.calls.filter((x) => x.key.startsWith(`${planId}/`));
      expect([...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`)).sort()).toEqual([`${planId}/turn-1.call-0/1`, `${planId}/turn-1.call-1/1`, `${planId}/turn-2.call-0/1`]);
      const refunds = mine.filter((x) => x.itemId === 'turn-2.call-0');
      expect(refunds.map((x) => [x.executorId, x.recovering, x.key])).toEqual([
        ['exec-B', false, `${planId}/turn-2.call-0/1`],
        ['exec-C', true, `${planId}/turn-2.call-0/1`],
      ]);
      expect(JSON.parse(done.items['turn-2.call-0']!.outputJson!)).toMatchObject({ result: { refunded: 1200, replay: true } });
      // The lookups: A hung before the effect, so B's recovering calls were the only ones to reach the service.
      expect(mine.filter((x) => x.itemId.startsWith('turn-1.')).map((x) => [x.executorId, x.recovering]).sort()).toEqual([
        ['exec-B', true],
        ['exec-B', true],
      ]);
      expect(verifyChain((await ledger.planEvents(planId)).map((r) => r.event)).ok).toBe(true);
      // The resumed run's audit (turns, tool calls, keys, usage) and the counts, for the record.
      const audit = await ledger.audit(planId);
      mkdirSync('test-results', { recursive: true });
      writeFileSync(
        'test-results/agent-kill.txt',
        [`model asks (executor, turn): ${JSON.stringify(asks)}`, `effects: ${JSON.stringify([...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`)))}`, `refund invocations: ${JSON.stringify(refunds.map((x) => [x.executorId, x.recovering]))}`, '', renderAudit(planId, audit.rows), '', ...renderAgentRun(done, true), ''].join('\n'),
      );
    } finally {
      await ledger.close();
    }
  });
});
