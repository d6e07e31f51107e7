// `plan-ledger demo` (npm run demo): an agent refunds an order in propose mode; an operator approves the
// digest; the executor running the payment is SIGKILLed in the middle of the call; the other executor
// resumes the attempt with the same idempotency key; the payment service performs exactly one refund.
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { verifyFromLog } from '../src/audit/live.js';
import { LedgerLog } from '../src/audit/log.js';
import { parsePlanFile, toCreatePlanInput } from '../src/audit/plan-file.js';
import { auditRows } from '../src/audit/timeline.js';
import { renderAudit, renderPlan, renderVerification, renderWhy } from '../cli/render.js';
import { elide, painter, type Painter } from '../cli/output.js';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { ServiceProcess } from '../stack/service-process.js';
import { configToEnv, loadConfig, type LedgerConfig } from '../src/config.js';
import { isLedgerError } from '../src/errors.js';
import { CopyCounter, partitionFor } from '../src/kafka/index.js';
import { packageRoot } from '../src/package-root.js';
import { isPlanFinished } from '../src/plan/index.js';
import { settingIfSet } from '../src/settings.js';
import { ShopService, type RefundCall } from './shop-service.js';

export interface Executor {
  readonly label: string;
  readonly proc: ChildProcess;
  readonly pid: number;
  assigned: number[];
  restored: Set<number>;
  exited: Promise<void>;
  onRestored?: (partition: number, plans: number) => void;
}

export interface DemoOptions {
  keepOpen?: boolean;
  stopStack?: boolean;
}

/** Runs the demo; resolves with the process exit code (0 when exactly one refund happened and the ledger verifies). */
export async function runDemo(o: DemoOptions = {}): Promise<number> {
  const t0 = Date.now();
  const paint = painter();
  const say = (what: string, text: string) => process.stdout.write(`${paint('dim', `[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s]`)} ${what.padEnd(16)} ${text}\n`);
  const section = (title: string) => process.stdout.write(`\n${paint('bold', `── ${title} `.padEnd(72, '─'))}\n`);
  const root = packageRoot();
  const demoToken = `demo-${randomBytes(12).toString('hex')}`;

  process.stdout.write(`${paint('bold', 'plan-ledger demo')}: an agent refunds an order; the executor paying it is killed mid-call\n\n`);

  // 1. Kafka + registry: the configured ones, or the local stack.
  let startedStack = false;
  const localStack = !settingIfSet('PLAN_LEDGER_BROKERS') || !settingIfSet('PLAN_LEDGER_REGISTRY_URL');
  if (localStack) {
    const { stackUp } = await import('../stack/stack.js');
    const up = await stackUp({ log: (l) => say('local stack', l) });
    startedStack = !up.alreadyRunning;
    say('local stack', up.alreadyRunning ? `already running (${up.info.brokers.join(',')})` : `started in ${up.seconds.toFixed(1)}s (${up.info.brokers.join(',')})`);
  }
  const prefix = `demo-${randomBytes(3).toString('hex')}`;
  // Default partition count (PLAN_LEDGER_PARTITIONS or 6), so plain `plan-ledger audit` finds the plan later.
  const config = loadConfig({ topicPrefix: prefix });
  say('topics', `prefix ${prefix} (fresh each run), ${config.partitions} partitions`);

  const logDir = join(tmpdir(), 'plan-ledger-demo', prefix);
  mkdirSync(logDir, { recursive: true });
  const shop = await new ShopService().start();
  say('shop service', `${shop.url}  (refunds are idempotent by Idempotency-Key)`);

  const executors: Executor[] = [];
  let projector: { url: string; stop(): Promise<void>; caughtUp(): Promise<boolean>; flush(): Promise<void> } | undefined;
  let ledger: Ledger | undefined;
  let log: LedgerLog | undefined;
  const onSignal = () => {
    for (const e of executors) e.proc.kill('SIGKILL');
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  try {
    // 2. Two executors (child processes) in one consumer group, and the projector in this process.
    for (const label of ['executor-A', 'executor-B']) executors.push(spawnExecutor(root, config, label, shop.url, logDir));
    await until(() => ready(executors, config.partitions), 60_000, 'both executors own and restored their partitions', executors);
    for (const e of executors) say(e.label, `pid ${e.pid}, owns partitions ${e.assigned.join(',')}`);

    try {
      const { startProjector } = await import('../projector/index.js');
      const quiet = pino({ level: 'silent' });
      // PLAN_LEDGER_HTTP_PORT when set, else 8787, else any free port.
      const port = settingIfSet('PLAN_LEDGER_HTTP_PORT') !== undefined ? undefined : 8787;
      // The API needs a token for reads too: the demo makes one for its operator and prints it.
      const apiTokens = [{ token: demoToken, principal: 'demo-operator', scopes: ['read', 'write'] as const }];
      projector = await startProjector({ config, logger: quiet, port, defaultMetrics: false, apiTokens }).catch(() =>
        startProjector({ config, logger: quiet, port: 0, defaultMetrics: false, apiTokens }),
      );
      say('projector', `dashboard ${projector.url}/  (token ${demoToken})`);
    } catch (e) {
      say('projector', `not started (${(e as Error).message}); the demo goes on without a dashboard`);
    }

    ledger = await connectLedger(config);
    const planFile = join(root, 'demo', 'refund-plan.yaml');
    const plan = parsePlanFile(readFileSync(planFile, 'utf8'), 'demo/refund-plan.yaml');

    // 3. The agent proposes; the operator approves the digest it reviewed.
    section('1. the agent proposes a plan (nothing runs before approval)');
    const created = await ledger.createPlan(toCreatePlanInput(plan, 'propose'), { by: 'refund-agent' });
    const planId = created.planId;
    const planPartition = partitionFor(planId, config.partitions);
    const proposed = await ledger.propose(planId, { by: 'refund-agent' });
    const review = await ledger.getPlan(planId);
    process.stdout.write(`${renderPlan(review!, paint)}\n\nwhy:\n${renderWhy(review!)}\n`);

    section('2. an operator reviews the digest and approves it');
    say('alice', `approves digest ${proposed.digest}`);

    // The payment service says who is calling; kill exactly that executor while its call is held.
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
      // Kill while the reply is held (2 s): the refund happened, the caller never learns it.
      setTimeout(() => {
        say('shop', `${who} calls POST /refunds, key ${key}: refund performed, reply held 2 s`);
        if (!killed) return;
        killed.proc.kill('SIGKILL');
        say(paint('red', 'SIGKILL'), `${killed.label} (pid ${killed.pid}) while its payment call is in flight`);
        for (const e of executors.filter((x) => x !== killed)) {
          e.onRestored = (p) => {
            if (p === planPartition) say(e.label, `took partition ${p} over after the session timeout (6 s) and restored it from the log: intent without result, so invoke again with the same key`);
          };
        }
      }, 400);
    });

    section('3. the plan runs; the payment call is cut off and resumed');
    // Followed from before the approval, so every state from there on is narrated (see demo/agent-demo.ts).
    const seen = new Map<string, string>();
    const finished = ledger.waitFor(
      planId,
      (s) => {
        for (const id of s.itemOrder) {
          const it = s.items[id]!;
          const a = it.attempts[it.attempts.length - 1];
          // Intents, settlements and retries; the audit timeline below has every event.
          const status = it.status === 'pending' && a ? 'retry scheduled' : it.status === 'result_committed' ? 'in_progress' : it.status;
          if (status !== 'pending' && seen.get(id) !== status) {
            say(id, status === 'in_progress' ? `intent recorded by ${a?.executorId}, key ${elide(a?.idempotencyKey ?? '', planId)}` : paintStatusText(paint, status));
          }
          seen.set(id, status);
        }
        if (s.status !== seen.get('__plan')) {
          if (s.status !== 'proposed') say('plan', paintStatusText(paint, s.status));
          seen.set('__plan', s.status);
        }
        return isPlanFinished(s.status);
      },
      { timeoutMs: 90_000 },
    );
    finished.catch(() => {}); // awaited below; a failed approval must not leave it unhandled
    await ledger.approve(planId, proposed.digest, { by: 'alice' });
    const final = await finished;

    // 4. What the outside world saw.
    section('4. what the payment service saw');
    const refunds = [...shop.refunds.values()];
    const planCalls = calls.filter((c) => c.idempotencyKey.startsWith(`${planId}/`));
    process.stdout.write(`  refunds performed   ${paint(refunds.length === 1 ? 'green' : 'red', String(refunds.length))}${refunds.map((r) => `   ${r.refundId}  ${(r.amountCents / 100).toFixed(2)} ${r.currency}  key ${elide(r.idempotencyKey, planId)}`).join('')}\n`);
    process.stdout.write(`  calls               ${planCalls.length}   ${planCalls.map((c) => `${c.executorId} ${c.replay ? '(replay, same key)' : '(performed)'}`).join(', ')}\n`);
    process.stdout.write(`  customer e-mails    ${shop.notifications.size}\n`);

    // 5. Audit and verify, from the log alone.
    log = await LedgerLog.open(config, pino({ level: 'silent' }));
    if (projector) {
      await projector.caughtUp();
      await projector.flush();
    }
    // Counting copies as it reads, so verify's duplicates check runs as in `plan-ledger verify`.
    const copies = new CopyCounter();
    const records = await log.readPlan(planId, copies);
    section('5. audit timeline (plan-ledger audit)');
    process.stdout.write(`${renderAudit(planId, auditRows(records), paint)}\n`);
    section('6. verify (plan-ledger verify)');
    const v = await verifyFromLog(log, planId, records, copies.duplicates());
    process.stdout.write(`${renderVerification(v, paint)}\n`);

    const oneRefund = refunds.length === 1 && planCalls.every((c) => c.idempotencyKey === refunds[0]!.idempotencyKey);
    const ok = final.status === 'completed' && oneRefund && v.ok && killed !== undefined;
    section('result');
    process.stdout.write(`  plan ${planId} ${paintStatusText(paint, final.status)}; ${killed ? `${killed.label} was killed mid-payment; ` : ''}exactly ${refunds.length} refund${refunds.length === 1 ? '' : 's'}; verify ${v.ok ? 'OK' : 'FAILED'}\n`);
    if (projector) process.stdout.write(`  dashboard   ${projector.url}/#${planId}  token ${demoToken}${o.keepOpen ? '' : '   (closed now; run with --keep-open to browse it)'}\n`);
    process.stdout.write(`  inspect     PLAN_LEDGER_TOPIC_PREFIX=${prefix} plan-ledger audit ${planId}\n`);
    process.stdout.write(`  logs        ${logDir}\n`);
    if (localStack && !(startedStack && o.stopStack)) process.stdout.write(`  the local stack keeps running for the next run: plan-ledger stack down stops it\n`);
    process.stdout.write(`  ${ok ? paint('green', 'demo OK') : paint('red', 'demo FAILED')} in ${((Date.now() - t0) / 1000).toFixed(1)}s\n`);

    if (o.keepOpen && projector) {
      process.stdout.write(`\nthe dashboard stays open at ${projector.url}/#${planId} — Ctrl-C to finish\n`);
      process.removeListener('SIGINT', onSignal);
      await new Promise<void>((r) => process.once('SIGINT', () => r()));
    }
    return ok ? 0 : 1;
  } catch (e) {
    process.stderr.write(`plan-ledger demo: ${isLedgerError(e) || e instanceof Error ? e.message : String(e)}\n  executor logs: ${logDir}\n`);
    return 1;
  } finally {
    process.removeListener('SIGINT', onSignal);
    await Promise.all(executors.map((e) => stopExecutor(e)));
    await ledger?.close().catch(() => {});
    await log?.close().catch(() => {});
    await projector?.stop().catch(() => {});
    await shop.stop();
    if (startedStack && o.stopStack) {
      const { stackDown } = await import('../stack/stack.js');
      await stackDown();
      process.stdout.write('  local stack stopped (the demo started it)\n');
    }
  }
}

export function paintStatusText(paint: Painter, status: string): string {
  return status === 'completed' ? paint('green', status) : status === 'failed' || status === 'cancelled' ? paint('red', status) : paint('yellow', status);
}

/**
 * The demo module `name` (no extension) beside this one: demo/<name>.ts from a checkout (tsx), or
 * dist/demo/<name>.js from an installed package (or PLAN_LEDGER_USE_DIST), which ships no TypeScript.
 */
export function demoModule(name: string): string {
  const here = fileURLToPath(import.meta.url);
  return join(dirname(here), `${name}${extname(here)}`);
}

export function spawnExecutor(root: string, config: LedgerConfig, label: string, shopUrl: string, logDir: string, tools = 'tools', env: Record<string, string> = {}): Executor {
  // Read as the lines come (the process speaks only after it started, so `track.e` is set by then).
  const track: { e?: Executor } = {};
  const h = new ServiceProcess({
    label,
    args: [join(root, 'bin', 'plan-ledger.js'), 'executor', '--tools', demoModule(tools), '--id', label],
    cwd: root,
    env: {
      ...configToEnv(config),
      PLAN_LEDGER_SESSION_TIMEOUT_MS: '6000',
      PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: '500',
      PLAN_LEDGER_LOG_LEVEL: 'info',
      PLAN_LEDGER_EXECUTOR_LABEL: label,
      DEMO_SHOP_URL: shopUrl,
      ...env,
    },
    logFile: join(logDir, `${label}.log`),
    maxLines: 0,
    onLine: (line) => {
      const e = track.e;
      if (e === undefined) return;
      const l = line as { msg?: string; component?: string; partitions?: number[]; partition?: number; plans?: number };
      if (l.msg === 'assignment') {
        // A partition kept across a rebalance is not restored again.
        e.assigned = l.partitions ?? [];
        e.restored = new Set([...e.restored].filter((p) => e.assigned.includes(p)));
      } else if (l.msg === 'partition restored' && l.component === 'partition-owner' && l.partition !== undefined) {
        // Only the owner's line: the log read under it (component restore) says 'partition restored' too.
        e.restored.add(l.partition);
        e.onRestored?.(l.partition, l.plans ?? 0);
      }
    },
  });
  track.e = { label, proc: h.proc, pid: h.pid, assigned: [], restored: new Set(), exited: h.exited.then(() => undefined) };
  return track.e;
}

/** Both executors own a share of the partitions and have restored it. */
export function ready(executors: Executor[], partitions: number): boolean {
  const owned = new Set(executors.flatMap((e) => e.assigned));
  return owned.size === partitions && executors.every((e) => e.assigned.length > 0 && e.assigned.every((p) => e.restored.has(p)));
}

export async function until(cond: () => boolean, timeoutMs: number, what: string, executors: Executor[]): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    const dead = executors.find((e) => e.proc.exitCode !== null);
    if (dead) throw new Error(`${dead.label} exited with code ${dead.proc.exitCode} before ${what}`);
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function stopExecutor(e: Executor): Promise<void> {
  if (e.proc.exitCode !== null || e.proc.signalCode !== null) return;
  e.proc.kill('SIGTERM');
  const timer = setTimeout(() => e.proc.kill('SIGKILL'), 10_000);
  await e.exited;
  clearTimeout(timer);
}
