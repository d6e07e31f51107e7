// `plan-ledger demo --agent`: the same refund, asked of a support agent. Its model (a scripted AI SDK test
// model, offline) looks the order up through an MCP tool (the shop's MCP server), works out the refund from
// the lookup's result and calls the refund tool; the executor running the refund is SIGKILLed while the
// payment call is held; the other executor resumes the call with the same idempotency key, then asks the
// model for the next turn. The model is asked exactly once per turn: no finished turn is asked again.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { runAgent, summarizeAgentRun } from '../src/agent/index.js';
import { verifyFromLog } from '../src/audit/live.js';
import { LedgerLog } from '../src/audit/log.js';
import { auditRows } from '../src/audit/timeline.js';
import { elide, painter } from '../cli/output.js';
import { renderAgentRun, renderAudit, renderPlan, renderVerification } from '../cli/render.js';
import { connectLedger, type Ledger, type StreamChunk } from '../src/client/index.js';
import { loadConfig } from '../src/config.js';
import { isLedgerError } from '../src/errors.js';
import { CopyCounter } from '../src/kafka/index.js';
import { partitionFor } from '../src/kafka/partitioner.js';
import { packageRoot } from '../src/package-root.js';
import { isPlanFinished } from '../src/plan/index.js';
import { settingIfSet } from '../src/settings.js';
import { paintStatusText, ready, spawnExecutor, stopExecutor, until, type DemoOptions, type Executor } from './demo.js';
import { ShopService, type RefundCall } from './shop-service.js';

/**
 * Prints each turn's text as it streams (`turn-2  says "…"`, one line per stream record), from the plan's
 * first record; `stop` ends the live read, and `done` resolves once the rest has been read to its end.
 */
function followWords(ledger: Ledger, planId: string, say: (what: string, text: string) => void): { stop: () => void; done: Promise<void> } {
  const live = new AbortController();
  let cursor: string | undefined;
  const print = (c: StreamChunk) => {
    cursor = c.cursor;
    if (c.kind === 'text' && c.text) say(c.itemId, `says ${JSON.stringify(c.text)}`);
    else if (c.kind === 'end' && c.end !== 'final') say(c.itemId, `stream ${c.end}${c.reason ? `: ${c.reason}` : ''}`);
  };
  const done = (async () => {
    for await (const c of ledger.stream(planId, { from: 'beginning', signal: live.signal })) print(c);
    // The plan has finished: what was written before it (all of its stream) is read to the end.
    for await (const c of ledger.stream(planId, { from: cursor ?? 'beginning', follow: false })) print(c);
  })().catch((e: unknown) => say('stream', `not readable: ${(e as Error).message}`));
  return { stop: () => live.abort(), done };
}

/** Runs the agent demo; resolves with the exit code (0: one refund, each turn asked once, the ledger verifies). */
export async function runAgentDemo(o: DemoOptions = {}): Promise<number> {
  const t0 = Date.now();
  const paint = painter();
  const say = (what: string, text: string) => process.stdout.write(`${paint('dim', `[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s]`)} ${what.padEnd(16)} ${text}\n`);
  const section = (title: string) => process.stdout.write(`\n${paint('bold', `── ${title} `.padEnd(72, '─'))}\n`);
  const root = packageRoot();
  process.stdout.write(`${paint('bold', 'plan-ledger demo --agent')}: a support agent refunds an order; the executor paying it is killed mid-call\n\n`);

  let startedStack = false;
  if (!settingIfSet('PLAN_LEDGER_BROKERS') || !settingIfSet('PLAN_LEDGER_REGISTRY_URL')) {
    const { stackUp } = await import('../stack/stack.js');
    const up = await stackUp({ log: (l) => say('local stack', l) });
    startedStack = !up.alreadyRunning;
    say('local stack', up.alreadyRunning ? `already running (${up.info.brokers.join(',')})` : `started in ${up.seconds.toFixed(1)}s (${up.info.brokers.join(',')})`);
  }
  const prefix = `demo-${randomBytes(3).toString('hex')}`;
  const config = loadConfig({ topicPrefix: prefix });
  say('topics', `prefix ${prefix} (fresh each run), ${config.partitions} partitions`);
  const logDir = join(tmpdir(), 'plan-ledger-demo', prefix);
  mkdirSync(logDir, { recursive: true });
  const modelLog = join(logDir, 'model-calls.jsonl');
  const shop = await new ShopService().start();
  say('shop service', `${shop.url}  (refunds are idempotent by Idempotency-Key)`);

  const executors: Executor[] = [];
  let ledger: Ledger | undefined;
  let log: LedgerLog | undefined;
  const onSignal = () => {
    for (const e of executors) e.proc.kill('SIGKILL');
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  try {
    for (const label of ['executor-A', 'executor-B']) executors.push(spawnExecutor(root, config, label, shop.url, logDir, 'agent-tools', { DEMO_MODEL_LOG: modelLog }));
    await until(() => ready(executors, config.partitions), 60_000, 'both executors own and restored their partitions', executors);
    for (const e of executors) say(e.label, `pid ${e.pid}, owns partitions ${e.assigned.join(',')}, runs agent "support": model demo/scripted-support-model, tools lookup_order (MCP, demo/shop-mcp.ts) and refund`);
    ledger = await connectLedger(config);

    section('1. a run of the support agent is proposed: its first model turn');
    const started = await runAgent(ledger, { agent: 'support', goal: 'Customer A-1042 sent items back: refund what was returned', mode: 'propose' });
    const planId = started.planId;
    const planPartition = partitionFor(planId, config.partitions);
    // The turns' words as the model says them: the plan's live stream, read beside the events (from now, so
    // the reader is there before the first turn runs).
    const words = followWords(ledger, planId, say);
    process.stdout.write(`${renderPlan((await ledger.getPlan(planId))!, paint)}\n`);

    section('2. an operator approves it; the model plans, the executors run its calls');
    say('alice', `approves digest ${started.digest}`);
    let killed: Executor | undefined;
    const calls: RefundCall[] = [];
    shop.on('refund-call', (call) => {
      calls.push(call);
      const key = elide(call.idempotencyKey, planId);
      const who = `${call.executorId} (pid ${call.executorPid})`;
      if (call.replay || killed) {
        say('shop', `${who} calls POST /refunds, key ${key}: ${call.replay ? 'key seen before, the original refund is returned, no new refund' : 'refund performed'}`);
        return;
      }
      killed = executors.find((e) => e.pid === call.executorPid);
      setTimeout(() => {
        say('shop', `${who} calls POST /refunds, key ${key}: refund performed, reply held 2 s`);
        if (!killed) return;
        killed.proc.kill('SIGKILL');
        say(paint('red', 'SIGKILL'), `${killed.label} (pid ${killed.pid}) while the agent's refund call is in flight`);
        for (const e of executors.filter((x) => x !== killed)) {
          e.onRestored = (p) => {
            if (p === planPartition) say(e.label, `took partition ${p} over after the session timeout (6 s): turns 1 and 2 are recorded, the refund has an intent and no result`);
          };
        }
      }, 400);
    });
    // Follow the plan before approving it: the predicate then sees every state from the approval on, one
    // event at a time, however fast the executors run the first turns (started after, it would begin with
    // whatever had happened by then).
    const seen = new Map<string, string>();
    const finished = ledger.waitFor(
      planId,
      (s) => {
        for (const id of s.itemOrder) {
          const it = s.items[id]!;
          const a = it.attempts.at(-1);
          const status = it.status === 'result_committed' ? 'in_progress' : it.status;
          if (status !== 'pending' && seen.get(id) !== status) {
            if (status === 'in_progress') say(id, `${it.tool.startsWith('agent:') ? 'asking the model' : `${it.tool} ${it.inputJson}`}, intent by ${a?.executorId}, key ${elide(a?.idempotencyKey ?? '', planId)}`);
            else if (status === 'completed' && it.tool.startsWith('agent:') && it.outputJson) {
              const out = JSON.parse(it.outputJson) as { text: string; usage: { inputTokens: number; outputTokens: number } };
              say(id, `${paintStatusText(paint, status)}: "${out.text}" (${out.usage.inputTokens} in / ${out.usage.outputTokens} out)`);
            } else say(id, paintStatusText(paint, status));
          }
          seen.set(id, status);
        }
        return isPlanFinished(s.status);
      },
      { timeoutMs: 90_000 },
    );
    finished.catch(() => {}); // awaited below; a failed approval must not leave it unhandled
    await ledger.approve(planId, started.digest, { by: 'alice' });
    const final = await finished.finally(() => words.stop());
    await words.done;

    section('3. what the model and the payment service saw');
    const asks = existsSync(modelLog) ? readFileSync(modelLog, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { executor: string; turn: number }) : [];
    const run = summarizeAgentRun(final);
    const recordedTurns = run?.turns.length ?? 0;
    process.stdout.write(`  model calls         ${asks.length} for ${recordedTurns} recorded turns: ${asks.map((a) => `turn ${a.turn} by ${a.executor}`).join(', ')}\n`);
    const refunds = [...shop.refunds.values()];
    const planCalls = calls.filter((c) => c.idempotencyKey.startsWith(`${planId}/`));
    process.stdout.write(`  refunds performed   ${paint(refunds.length === 1 ? 'green' : 'red', String(refunds.length))}${refunds.map((r) => `   ${r.refundId}  ${(r.amountCents / 100).toFixed(2)} ${r.currency}  key ${elide(r.idempotencyKey, planId)}`).join('')}\n`);
    process.stdout.write(`  refund calls        ${planCalls.length}   ${planCalls.map((c) => `${c.executorId} ${c.replay ? '(replay, same key)' : '(performed)'}`).join(', ')}\n`);

    log = await LedgerLog.open(config, pino({ level: 'silent' }));
    // Counting copies as it reads, so verify's duplicates check runs as in `plan-ledger verify`.
    const copies = new CopyCounter();
    const records = await log.readPlan(planId, copies);
    section('4. audit timeline and usage (plan-ledger audit)');
    process.stdout.write(`${renderAudit(planId, auditRows(records), paint)}\n\n${renderAgentRun(final, true).join('\n')}\n`);
    if (run?.answer) process.stdout.write(`\n  answer: ${run.answer}\n`);
    section('5. verify (plan-ledger verify)');
    const v = await verifyFromLog(log, planId, records, copies.duplicates());
    process.stdout.write(`${renderVerification(v, paint)}\n`);

    const oncePerTurn = asks.length === recordedTurns && new Set(asks.map((a) => a.turn)).size === asks.length;
    const oneRefund = refunds.length === 1 && planCalls.every((c) => c.idempotencyKey === refunds[0]!.idempotencyKey);
    const ok = final.status === 'completed' && run?.finished === 'answer' && oneRefund && oncePerTurn && v.ok && killed !== undefined;
    section('result');
    process.stdout.write(
      `  plan ${planId} ${paintStatusText(paint, final.status)}; ${killed ? `${killed.label} was killed mid-refund; ` : ''}the model was asked ${asks.length} times for ${recordedTurns} turns; exactly ${refunds.length} refund${refunds.length === 1 ? '' : 's'}; verify ${v.ok ? 'OK' : 'FAILED'}\n`,
    );
    process.stdout.write(`  inspect     PLAN_LEDGER_TOPIC_PREFIX=${prefix} plan-ledger audit ${planId}\n`);
    process.stdout.write(`  logs        ${logDir}\n`);
    process.stdout.write(`  ${ok ? paint('green', 'demo OK') : paint('red', 'demo FAILED')} in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);
    return ok ? 0 : 1;
  } catch (e) {
    process.stderr.write(`plan-ledger demo --agent: ${isLedgerError(e) || e instanceof Error ? e.message : String(e)}\n  executor logs: ${logDir}\n`);
    return 1;
  } finally {
    process.removeListener('SIGINT', onSignal);
    await Promise.all(executors.map((e) => stopExecutor(e)));
    await ledger?.close().catch(() => {});
    await log?.close().catch(() => {});
    await shop.stop();
    if (startedStack && o.stopStack) {
      const { stackDown } = await import('../stack/stack.js');
      await stackDown();
      process.stdout.write('  local stack stopped (the demo started it)\n');
    }
  }
}
