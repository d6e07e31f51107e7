import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent, summarizeAgentRun } from '../../src/agent/index.js';
import { parsePolicy } from '../../src/policy-file.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { call, response, text, turnOf, scriptedModel } from './script.js';

describe('an approval policy on agent runs (in-process executor, real broker and registry)', () => {
  it('a policy guarding the refund tool pauses the run before the call with it visible; approval resumes it, rejection ends it', async () => {
    const refunds: string[] = [];
    const lookup = defineAgentTool({ name: 'lookup', inputSchema: z.object({ orderId: z.string() }), run: (input: { orderId: string }) => ({ orderId: input.orderId, cents: 1200 }) });
    const refund = defineAgentTool({
      name: 'refund',
      inputSchema: z.object({ orderId: z.string(), cents: z.number() }),
      run(input: { orderId: string; cents: number }, ctx) {
        refunds.push(ctx.idempotencyKey);
        return { refunded: input.cents };
      },
    });
    const model = scriptedModel(async (options) => {
        const turn = turnOf(options);
        if (turn === 1) return response([call('c1', 'lookup', { orderId: 'A' })]);
        if (turn === 2) return response([text('Refunding A.'), call('c2', 'refund', { orderId: 'A', cents: 1200 })]);
        return response([text('Refunded.')]);
      });
    const agent = defineAgent({ name: 'guarded', model, tools: [lookup, refund] });
    const policy = parsePolicy({ id: 'guard-refunds', approval: 'rules', approvers: 1, forbidSelfApproval: false, rules: [{ name: 'refunds', tool: 'refund' }] });
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent), policy });

    // Approved: the lookup ran without review; the refund waits, visible, until the digest is approved.
    const approved = await runAgent(ledger, { agent, goal: 'Refund A', mode: 'execute' });
    const paused = await ledger.waitFor(approved.planId, 'proposed', { timeoutMs: 60_000 });
    expect(paused.items['turn-1.call-0']!.status).toBe('completed');
    expect(paused.items['turn-2.call-0']).toMatchObject({ tool: 'refund', status: 'pending', attempts: [], why: 'Refunding A.' });
    expect(JSON.parse(paused.items['turn-2.call-0']!.inputJson)).toEqual({ orderId: 'A', cents: 1200 });
    expect(paused.items['turn-3']).toMatchObject({ status: 'pending', attempts: [] });
    expect(paused.policy).toMatchObject({ policyId: 'guard-refunds', rule: 'refunds', required: true });
    expect(refunds).toHaveLength(0);
    expect(model.doStreamCalls).toHaveLength(2);
    await ledger.approve(approved.planId, paused.digest, { by: 'operator' });
    const done = await ledger.waitFor(approved.planId, 'completed', { timeoutMs: 60_000 });
    expect(refunds).toEqual([`${approved.planId}/turn-2.call-0/1`]);
    expect(model.doStreamCalls).toHaveLength(3);
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'Refunded.', totals: { turns: 3 } });

    // Rejected: the refund never runs and no further turn is asked; cancelling ends the run.
    const rejected = await runAgent(ledger, { agent, goal: 'Refund A again', mode: 'execute' });
    const paused2 = await ledger.waitFor(rejected.planId, 'proposed', { timeoutMs: 60_000 });
    await ledger.reject(rejected.planId, 'no second refund', { by: 'operator', digest: paused2.digest });
    expect((await ledger.waitFor(rejected.planId, 'draft', { timeoutMs: 30_000 })).items['turn-2.call-0']!.attempts).toHaveLength(0);
    await ledger.cancel(rejected.planId, 'refund rejected');
    const cancelled = await ledger.waitFor(rejected.planId, 'cancelled', { timeoutMs: 30_000 });
    expect(cancelled.items['turn-2.call-0']!.attempts).toHaveLength(0);
    expect(cancelled.items['turn-3']!.attempts).toHaveLength(0);
    expect(refunds).toHaveLength(1);
    expect(model.doStreamCalls).toHaveLength(5);
  });
});
