// A runnable agent on the ledger: `npx tsx examples/agent/run.ts` (from a checkout, with the local stack
// up: `npx plan-ledger stack up`; or with PLAN_LEDGER_BROKERS and PLAN_LEDGER_REGISTRY_URL set).
//
// It starts an executor in this process serving the warehouse agent (examples/agent/agent.ts: a scripted
// AI SDK test model, two plain tools and one MCP tool), starts a run, prints each model turn and tool call
// as the executor records it, then the answer and the commands that show and audit the run.
import { spawnSync } from 'node:child_process';
import type { LedgerConfig, PlanState } from '../../index.js';

// The Kafka client waits for records on libuv's thread pool, whose size (UV_THREADPOOL_SIZE, 4 by default)
// is fixed before this file's first line runs. Without it set, this file runs itself again with 64, as the
// plan-ledger CLI does.
if (!process.env.UV_THREADPOOL_SIZE) {
  const again = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, UV_THREADPOOL_SIZE: '64' } });
  process.exit(again.status ?? 1);
}
const { connectLedger, isLedgerError, loadConfig, runAgent, startExecutor, summarizeAgentRun } = await import('../../index.js');
const { inventory, tools } = await import('./agent.js');

const out = (line = '') => process.stdout.write(`${line}\n`);
const short = (v: unknown, max = 100) => {
  const s = JSON.stringify(v);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

let config: LedgerConfig;
try {
  // The same as the CLI: PLAN_LEDGER_* when set, else the running local stack.
  config = loadConfig();
} catch (e) {
  process.stderr.write(`examples/agent: ${(e as Error).message}\n`);
  process.exit(2);
}
out(`stack     ${config.brokers.join(',')}  topics ${config.topicPrefix}.*`);

const executor = await startExecutor({ config, tools });
const ledger = await connectLedger(config);
let code = 1;
try {
  const { planId } = await runAgent(ledger, { agent: 'warehouse', goal: 'Can order 7 ship today? Reserve its stock if so.' });
  out(`plan      ${planId}`);

  // Print each item once, when it completes: a model turn (its text and the calls it asked for) or a tool call.
  const shown = new Set<string>();
  const print = (s: PlanState) => {
    for (const id of s.itemOrder) {
      const it = s.items[id]!;
      if (shown.has(id) || it.status !== 'completed' || it.outputJson === null) continue;
      shown.add(id);
      const output = JSON.parse(it.outputJson) as Record<string, unknown>;
      if (it.tool.startsWith('agent:')) {
        const t = output as { turn: number; text: string; toolCalls: { toolName: string; input: unknown }[]; usage: { inputTokens: number; outputTokens: number } };
        out(`turn ${t.turn}    "${t.text}"  (${t.usage.inputTokens} in / ${t.usage.outputTokens} out tokens)`);
        for (const c of t.toolCalls) out(`            asks for ${c.toolName} ${short(c.input)}`);
      } else {
        // An agent tool's output is { result } or { error }; an MCP tool's result is the server's answer.
        const result = (output.result as { structuredContent?: unknown } | undefined)?.structuredContent ?? output.result ?? output;
        out(`  call    ${it.tool} ${short(JSON.parse(it.inputJson))} -> ${short(result)}  (item ${id}, key ${it.attempts.at(-1)?.idempotencyKey})`);
      }
    }
  };
  const final = await ledger.waitFor(planId, (s) => (print(s), s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled'), { timeoutMs: 60_000 });
  print(final);

  const run = summarizeAgentRun(final)!;
  out(`result    plan ${final.status}, finished: ${run.finished}, ${run.turns.length} turns, ${run.turns.reduce((n, t) => n + t.toolCalls, 0)} tool calls, ${run.totals.totalTokens} tokens`);
  out(`answer    ${run.answer}`);
  const env = process.env.PLAN_LEDGER_TOPIC_PREFIX ? `PLAN_LEDGER_TOPIC_PREFIX=${config.topicPrefix} ` : '';
  out(`follow    ${env}npx plan-ledger show ${planId}     # items, attempts, the run's outcome and tokens`);
  out(`audit     ${env}npx plan-ledger audit ${planId}    # every event: each turn's model, tokens and tool calls`);
  out(`verify    ${env}npx plan-ledger verify ${planId}   # seq, hash chain, independent rebuilds`);
  code = final.status === 'completed' && run.finished === 'answer' ? 0 : 1;
} catch (e) {
  process.stderr.write(`examples/agent: ${isLedgerError(e) ? `${e.code}: ` : ''}${(e as Error).message}\n`);
} finally {
  await ledger.close();
  await executor.stop();
  await inventory.close();
}
process.exit(code);
