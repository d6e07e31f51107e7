// Shared by the hostile-input tier: a real stack on a fresh prefix with an executor in a child process
// (test/hostile/tools.ts), a counting EffectsService, a ledger client, a raw record writer; a probe that proves
// a partition still serves a normal plan and measures how long that took; the DLQ; and the results file
// test-results/hostile.json (one section per test file, one row per case).
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import type { LedgerConfig } from '../../src/config.js';
import { isLedgerError } from '../../src/errors.js';
import { partitionFor, type LogRecord } from '../../src/kafka/index.js';
import type { PlanState } from '../../src/plan/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { cleanup, testLedger, type TestLedger } from '../projector/support.js';
import { randomPrefix, readAll, testConfig, testLogger, waitFor } from '../support/helpers.js';
import { spawnExecutor } from '../support/processes.js';

export interface ExecutorChild {
  readonly pid: number;
  readonly logs: Array<Record<string, unknown>>;
  readonly stderr: string[];
}

export interface HostileStack extends TestLedger {
  readonly ledger: Ledger;
  readonly effects: EffectsService;
  readonly executor: ExecutorChild;
  /** Kills the executor now (a wedged one is replaced by a fresh stack so later cases are judged on their own). */
  stopExecutor(): Promise<void>;
}

/**
 * Topics on a fresh prefix, an EffectsService, a `plan-ledger executor --tools test/hostile/tools.ts`
 * child process (killed when the test ends) that owns every partition, and a ledger client.
 */
export async function hostileStack(opts: { concurrency?: number; env?: Record<string, string>; config?: LedgerConfig } = {}): Promise<HostileStack> {
  const config = opts.config ?? testConfig();
  const l = await testLedger(config);
  const effects = await new EffectsService().start();
  cleanup(() => effects.stop());
  const label = randomPrefix('hostile-ex');
  const child = spawnExecutor(config, { label, tools: 'test/hostile/tools.ts', concurrency: opts.concurrency ?? 8, maxLogs: 20_000, env: { EFFECTS_URL: effects.url, ...opts.env } });
  const { logs, stderr } = child;
  const stopExecutor = async () => {
    if (child.proc.exitCode === null && child.proc.signalCode === null) {
      child.kill('SIGKILL');
      await child.exited;
    }
  };
  await waitFor(() => logs.filter((x) => x.msg === 'partition restored').length >= config.partitions, {
    timeoutMs: 60_000,
    message: `executor ${label} owns every partition (stderr: ${stderr.join('').slice(-500)})`,
  });
  const ledger = await connectLedger(config, { logger: testLogger });
  cleanup(() => ledger.close());
  return { ...l, ledger, effects, executor: { pid: child.pid, logs, stderr }, stopExecutor };
}

/** A plan id on `partition` (ids are hashed to partitions). */
export function planIdOn(partition: number, partitions: number, label: string): string {
  for (let i = 0; ; i++) {
    const id = `${label}-${i}`;
    if (partitionFor(id, partitions) === partition) return id;
  }
}

export interface ProbeResult {
  readonly ok: boolean;
  /** From the probe's createPlan to its plan completed; null when it did not complete. */
  readonly ms: number | null;
  readonly error?: string;
}

let probes = 0;

/**
 * Proves that `partition` serves a normal plan: a one-item plan (the `counted` tool) created and run to
 * completion. Returns how long it took; fails (ok false) past `timeoutMs`.
 */
export async function probe(s: HostileStack, partition: number, timeoutMs = 15_000): Promise<ProbeResult> {
  probes += 1;
  const planId = planIdOn(partition, s.config.partitions, `probe-${probes}-${randomPrefix('p')}`);
  const started = Date.now();
  try {
    await s.ledger.createPlan({ planId, goal: 'the partition still serves', mode: 'execute', items: [{ id: 'probe', title: 'probe', why: 'a normal plan after a bad input', tool: 'counted', input: { partition } }] }, { timeoutMs });
    await s.ledger.waitFor(planId, 'completed', { timeoutMs: Math.max(1000, timeoutMs - (Date.now() - started)) });
    return { ok: true, ms: Date.now() - started };
  } catch (e) {
    return { ok: false, ms: null, error: e instanceof Error ? e.message : String(e) };
  }
}

/** Highest number of invocations the EffectsService(s) saw for one idempotency key (one attempt). */
export function maxInvocationsPerAttempt(...services: EffectsService[]): { max: number; key: string | null } {
  const counts = new Map<string, number>();
  for (const effects of services) for (const c of effects.calls) counts.set(c.key, (counts.get(c.key) ?? 0) + 1);
  let max = 0;
  let key: string | null = null;
  for (const [k, n] of counts) if (n > max) [max, key] = [n, k];
  return { max, key };
}

/** Every record of the DLQ topic so far. */
export function deadLetters(s: TestLedger): Promise<LogRecord[]> {
  return readAll(s.kafka, s.topics.dlq);
}

/** The DLQ record whose cause names this source record; waits for it. */
export async function deadLetterOf(s: TestLedger, source: { topic: string; partition: number; offset: string }, timeoutMs = 20_000): Promise<LogRecord> {
  return waitFor(
    async () =>
      (await deadLetters(s)).find(
        (r) => r.headers['source-topic'] === source.topic && r.headers['source-partition'] === String(source.partition) && r.headers['source-offset'] === source.offset,
      ),
    { timeoutMs, intervalMs: 300, message: `a DLQ record for ${source.topic} ${source.partition}/${source.offset}` },
  );
}

/** The cause headers a DLQ record must carry (src/projection/poison.ts dlqHeaders). */
export const CAUSE_HEADERS = ['source-topic', 'source-partition', 'source-offset', 'error-code', 'error-reason', 'error-message'] as const;

/** What a bad input ended as: the property every hostile case must satisfy. */
export type Ending =
  | { kind: 'rejected'; code: string } // a CommandRejected with its code (LedgerError REJECTED)
  | { kind: 'error'; code: string; message: string } // a LedgerError with a code, before anything was appended
  | { kind: 'http'; status: number; error: string; code?: string } // an HTTP error answer with its code
  | { kind: 'dlq'; code: string; reason: string } // a DLQ record with its cause
  | { kind: 'plan'; status: string; failedCodes: string[] } // accepted, and the plan ended (completed or failed with codes)
  | { kind: 'broker'; message: string } // the broker refused the record itself (nothing to dead-letter)
  | { kind: 'violation'; message: string }; // none of the above: a bug

/**
 * An ending a case accepts, listed per case (test/hostile/commands.ts): a valid command completes; an
 * invalid one is refused with one of the named codes, or accepted and then failed with one of the named
 * item codes. Anything else — an invalid command that completes, a code not listed — is a violation.
 */
export type Expected =
  | { readonly kind: 'completed' }
  | { readonly kind: 'rejected'; readonly codes: readonly string[] } // CommandRejected codes
  | { readonly kind: 'error'; readonly codes: readonly string[] } // LedgerError codes thrown before anything is appended
  | { readonly kind: 'failed'; readonly codes: readonly string[] } // accepted; the plan failed, every failed item with one of these codes
  | { readonly kind: 'http'; readonly status: number; readonly errors: readonly string[] }; // an HTTP 4xx answer with one of these `error`s

function matches(ending: Ending, e: Expected): boolean {
  switch (e.kind) {
    case 'completed':
      return ending.kind === 'plan' && ending.status === 'completed';
    case 'rejected':
      return ending.kind === 'rejected' && e.codes.includes(ending.code);
    case 'error':
      return ending.kind === 'error' && e.codes.includes(ending.code);
    case 'failed':
      return ending.kind === 'plan' && ending.status === 'failed' && ending.failedCodes.length > 0 && ending.failedCodes.every((c) => e.codes.includes(c));
    case 'http':
      return ending.kind === 'http' && ending.status === e.status && e.errors.includes(ending.error);
  }
}

export function describeExpected(e: Expected): string {
  return e.kind === 'completed' ? 'completed' : e.kind === 'http' ? `HTTP ${e.status} ${e.errors.join('|')}` : `${e.kind} ${e.codes.join('|')}`;
}

/**
 * The ending as judged against the case's list: unchanged when it is one of them, else a violation that
 * names what happened and what was accepted (an invalid command accepted and completed says so).
 */
export function judge(ending: Ending, expected: readonly Expected[]): Ending {
  if (ending.kind === 'violation' || expected.some((e) => matches(ending, e))) return ending;
  const completed = ending.kind === 'plan' && ending.status === 'completed';
  const invalid = !expected.some((e) => e.kind === 'completed');
  const what = completed && invalid ? 'an invalid command was accepted and completed' : `unexpected ending ${JSON.stringify(ending)}`;
  return { kind: 'violation', message: `${what}; expected ${expected.map(describeExpected).join(' or ')}`.slice(0, 500) };
}

/** Errors a client may end with that are not a clear answer: the command went unanswered or blew up. */
const UNCLEAR_CODES = new Set(['TIMEOUT', 'UNAVAILABLE', 'INTERNAL']);

/** Classifies what a client call threw. */
export function endingOfError(e: unknown): Ending {
  if (!isLedgerError(e)) return { kind: 'violation', message: `not a LedgerError: ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`.slice(0, 500) };
  if (e.code === 'REJECTED') {
    const rejection = e.details['rejection'];
    return typeof rejection === 'string' ? { kind: 'rejected', code: rejection } : { kind: 'violation', message: `REJECTED without a rejection code: ${e.message}` };
  }
  if (UNCLEAR_CODES.has(e.code)) return { kind: 'violation', message: `LedgerError ${e.code}: ${e.message}`.slice(0, 500) };
  return { kind: 'error', code: e.code, message: e.message.slice(0, 300) };
}

/** An accepted plan must end: completed, or failed with a recorded code on every failed item. */
export async function endingOfPlan(s: HostileStack, planId: string, timeoutMs = 20_000): Promise<Ending> {
  let state: PlanState;
  try {
    state = await s.ledger.waitFor(planId, (p) => ['completed', 'failed', 'cancelled'].includes(p.status), { timeoutMs });
  } catch (e) {
    const now = await s.ledger.getPlan(planId).catch(() => undefined);
    return { kind: 'violation', message: `plan ${planId} did not end within ${timeoutMs} ms (status ${now?.status ?? 'none'}): ${(e as Error).message}`.slice(0, 500) };
  }
  const failed = Object.values(state.items).filter((i) => i.status === 'failed');
  const codes = failed.map((i) => i.failure?.error?.code ?? i.failure?.reason ?? '');
  if (codes.some((c) => c === '')) return { kind: 'violation', message: `plan ${planId} has a failed item without a recorded code` };
  return { kind: 'plan', status: state.status, failedCodes: codes };
}

export interface CaseRow {
  readonly name: string;
  readonly partition: number;
  readonly ending: Ending;
  /** ms until the same partition served a normal plan afterwards; null when it did not. */
  readonly nextPlanMs: number | null;
  readonly probeError?: string;
  /** The executor was replaced after this case (its partition did not serve the next plan). */
  readonly replacedExecutor?: boolean;
}

/**
 * Writes one test file's rows into test-results/hostile.json (other files' sections are kept), with the
 * highest invocation count per attempt key seen.
 */
export function recordResults(section: string, rows: readonly CaseRow[], extra: Record<string, unknown> = {}): void {
  const path = 'test-results/hostile.json';
  mkdirSync('test-results', { recursive: true });
  let all: Record<string, unknown> = {};
  try {
    all = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
  } catch {
    // first writer
  }
  const ms = rows.map((r) => r.nextPlanMs).filter((x): x is number => x !== null);
  all[section] = {
    at: new Date().toISOString(),
    cases: rows.length,
    violations: rows.filter((r) => r.ending.kind === 'violation' || r.nextPlanMs === null).length,
    nextPlanMs: ms.length ? { min: Math.min(...ms), max: Math.max(...ms), median: ms.sort((a, b) => a - b)[Math.floor(ms.length / 2)] } : null,
    ...extra,
    rows,
  };
  writeFileSync(path, `${JSON.stringify(all, null, 2)}\n`);
}

/** Rows that break the property: an unclear ending, or a partition that did not serve the next plan. */
export function violations(rows: readonly CaseRow[]): string[] {
  return rows.filter((r) => r.ending.kind === 'violation' || r.nextPlanMs === null).map((r) => `${r.name} (p${r.partition}): ${r.ending.kind === 'violation' ? r.ending.message : JSON.stringify(r.ending)}${r.nextPlanMs === null ? `; next plan not served: ${r.probeError ?? ''}` : ''}`);
}

/**
 * Runs the cases one by one on a stack; after a case whose partition does not serve the next plan, the
 * stack is replaced (fresh prefix, fresh executor) so the cases after it are judged on their own. Returns
 * every stack used (for invocation counts and verify).
 */
export async function runCases<C extends { name: string }>(
  cases: readonly C[],
  rows: CaseRow[],
  make: () => Promise<HostileStack>,
  run: (s: HostileStack, c: C) => Promise<{ ending: Ending; partition: number }>,
): Promise<HostileStack[]> {
  const stacks = [await make()];
  for (const c of cases) {
    const s = stacks.at(-1)!;
    const started = Date.now();
    const { ending, partition } = await run(s, c);
    const p = await probe(s, partition);
    const replace = !p.ok;
    rows.push({ name: `${c.name} [${Date.now() - started} ms]`, partition, ending, nextPlanMs: p.ms, ...(p.error ? { probeError: p.error } : {}), ...(replace ? { replacedExecutor: true } : {}) });
    if (replace) {
      await s.stopExecutor();
      stacks.push(await make());
    }
  }
  return stacks;
}
