import { runAgent } from '../src/agent/run.js';
import { BUDGET_SIGNAL, summarizeAgentRun } from '../src/agent/records.js';
import { LedgerError } from '../src/errors.js';
import { isPlanFinished } from '../src/plan/index.js';
import { withLedger } from './connect.js';
import { json, out, paintStatus, painter } from './output.js';
import { renderAgentRun, renderFailures } from './render.js';

export interface AgentOpts {
  goal: string;
  propose?: boolean;
  maxTurns?: number;
  budgetTokens?: number;
  wait?: boolean;
  waitTimeout?: number;
  json?: boolean;
}

/** Starts a run of an agent that the executors have registered (the model lives there, not here). */
export async function agent(name: string, o: AgentOpts): Promise<void> {
  await withLedger(async (ledger) => {
    const started = await runAgent(ledger, {
      agent: name,
      goal: o.goal,
      mode: o.propose ? 'propose' : 'execute',
      ...(o.maxTurns !== undefined ? { maxTurns: o.maxTurns } : {}),
      ...(o.budgetTokens !== undefined ? { budget: { tokens: o.budgetTokens } } : {}),
    });
    // An agent no live executor serves (its agent:<name> turn tool): one line on stderr, as `run` says it.
    for (const w of started.warnings) process.stderr.write(`plan-ledger: warning: ${w}\n`);
    const paint = painter();
    if (!o.wait || o.propose) {
      if (o.json) json({ ...started, mode: o.propose ? 'propose' : 'execute' });
      else {
        out(o.propose ? `proposed agent run ${started.planId}: approve digest ${started.digest}` : `started agent run ${started.planId} (first turn ${started.firstTurn})`);
        out(`follow it with: plan-ledger wait ${started.planId}   (or plan-ledger tail ${started.planId} --follow)`);
      }
      return;
    }
    // Until the run ends, or pauses for its budget (an operator raises it, or cancels the plan).
    const final = await ledger.waitFor(started.planId, (s) => isPlanFinished(s.status) || summarizeAgentRun(s)?.pausedOn != null, { timeoutMs: o.waitTimeout ?? 600_000 });
    const run = summarizeAgentRun(final);
    if (o.json) json({ ...started, status: final.status, run });
    else {
      out(`agent run ${final.planId} ${paintStatus(paint, final.status)} at seq ${final.seq}`);
      for (const line of renderFailures(final)) out(line);
      out(renderAgentRun(final, true).join('\n'));
      if (run?.finished === 'answer' && run.answer !== null) out(`\n${run.answer}`);
    }
    if (run?.pausedOn) {
      throw new LedgerError('CONFLICT', `agent run ${final.planId} paused: its budget is spent (${run.totals.totalTokens} tokens); raise it with plan-ledger signal ${final.planId} ${BUDGET_SIGNAL} --data '{"tokens": N}', or cancel it`, { planId: final.planId });
    }
    if (final.status !== 'completed') {
      throw new LedgerError('CONFLICT', `agent run ${final.planId} ended ${final.status}: see plan-ledger audit ${final.planId}`, { planId: final.planId });
    }
  });
}
