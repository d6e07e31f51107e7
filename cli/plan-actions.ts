import { readFile } from 'node:fs/promises';
import { openerOf } from './keys.js';
import { showPlan } from '../src/secrets/redact.js';
import type { PlanFile } from '../src/audit/plan-file.js';
import { takeovers } from '../src/audit/takeovers.js';
import type { CommandOutcome, Ledger } from '../src/client/index.js';
import { isLedgerError, LedgerError } from '../src/errors.js';
import { evolve, FORK_LABEL, isPlanFinished, type PlanEvent, type PlanState, type PlanStatus } from '../src/plan/index.js';
import { listPlansFromIndex } from '../src/client/list-plans.js';
import { PlanIndex } from '../src/client/plan-index.js';
import { planStartOffset } from '../src/client/reads.js';
import { LedgerLog } from '../src/audit/log.js';
import { cliLogger, withLedger, withLog } from './connect.js';
import { json, out, paintStatus, painter } from './output.js';
import { renderFailures, renderPlan, renderWhy, type ForkList, type ForksNotListed } from './render.js';

interface CommandOpts {
  json?: boolean;
  timeout: number;
  by?: string;
}

/** A warning of the CLI: one line on stderr (stdout is for results), so `--json` output stays one document. */
function warn(line: string): void {
  process.stderr.write(`plan-ledger: warning: ${line}\n`);
}

/** Only `run` and `propose` read plan files: the YAML parser loads for them, not for `show` or `audit`. */
async function loadPlanFile(file: string): Promise<PlanFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new LedgerError('VALIDATION', `cannot read plan file ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { field: 'file' });
  }
  const { parsePlanFile } = await import('../src/audit/plan-file.js');
  return parsePlanFile(text, file);
}

function stateAfter(outcome: CommandOutcome, before?: PlanState): PlanState | undefined {
  let s = before;
  for (const e of outcome.events) if (!s || e.seq > s.seq) s = evolve(s, e);
  return s;
}

function commandJson(outcome: CommandOutcome, s: PlanState | undefined) {
  return {
    ok: true,
    planId: outcome.planId,
    commandId: outcome.commandId,
    status: s?.status ?? null,
    digest: s?.digest ?? null,
    seq: s?.seq ?? null,
    events: outcome.events.map((e) => ({ seq: e.seq, type: e.type })),
  };
}

/** The plan folded from its events; a history that does not fold is an integrity failure, in one line. */
function rebuilt(planId: string, records: readonly { event: PlanEvent }[]): PlanState | undefined {
  let s: PlanState | undefined;
  try {
    for (const r of records) s = evolve(s, r.event);
  } catch (e) {
    throw new LedgerError('INTEGRITY', `plan ${planId} cannot be rebuilt from its events: ${(e as Error).message} (see plan-ledger verify ${planId})`, { planId });
  }
  return s;
}

async function current(ledger: Ledger, planId: string): Promise<PlanState> {
  const s = await ledger.getPlan(planId);
  if (!s || s.status === 'none') throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${ledger.config.topicPrefix}"`, { planId });
  return s;
}

async function create(file: string, o: CommandOpts & { wait?: boolean; waitTimeout?: number; strictTools?: boolean }, forcePropose: boolean): Promise<void> {
  const plan = await loadPlanFile(file);
  const { toCreatePlanInput } = await import('../src/audit/plan-file.js');
  const mode = forcePropose ? 'propose' : (plan.mode ?? 'execute');
  const paint = painter(!o.json && painter().enabled);
  await withLedger(async (ledger) => {
    const created = await ledger.createPlan(toCreatePlanInput(plan, mode), { timeoutMs: o.timeout, strictTools: o.strictTools === true });
    for (const w of created.warnings) warn(w);
    let outcome: CommandOutcome = created;
    let state = stateAfter(created);
    if (mode === 'propose') {
      outcome = await ledger.propose(created.planId, { timeoutMs: o.timeout });
      state = stateAfter(outcome, state);
    }
    const s = state!;
    if (!o.json) {
      out(renderPlan(s, paint));
      // A propose plan, or an execute plan the executor's approval policy proposed instead of running.
      if (mode === 'propose' || s.status === 'proposed') {
        out('');
        out(paint('bold', 'why each item exists'));
        out(renderWhy(s));
        out('');
        out(`approve with:  plan-ledger approve ${s.planId} --digest ${s.digest}`);
      }
    }
    if (!o.wait) {
      if (o.json) json({ ...commandJson(outcome, s), mode, warnings: created.warnings });
      else out(`\nfollow it with: plan-ledger wait ${s.planId}   (or plan-ledger tail ${s.planId} --follow)`);
      return;
    }
    const seen = new Map<string, string>();
    const final = await ledger.waitFor(
      s.planId,
      (st) => {
        if (!o.json) {
          for (const id of st.itemOrder) {
            const status = st.items[id]!.status;
            if (seen.get(id) !== status && status !== 'pending') out(`  ${new Date(st.updatedAt).toISOString().slice(11, 23)}  ${id.padEnd(24)} ${paintStatus(paint, status)}`);
            seen.set(id, status);
          }
        }
        return isPlanFinished(st.status);
      },
      { timeoutMs: o.waitTimeout ?? 600_000 },
    );
    if (o.json) json({ ...commandJson(outcome, final), mode, warnings: created.warnings });
    else {
      out(`\nplan ${final.planId} ${paintStatus(paint, final.status)} at seq ${final.seq}`);
      for (const line of renderFailures(final)) out(line);
    }
    if (final.status !== 'completed') {
      throw new LedgerError('CONFLICT', `plan ${final.planId} ended ${final.status}: see plan-ledger audit ${final.planId}`, { planId: final.planId });
    }
  });
}

/**
 * Waits until the plan reaches `status` (default completed) or finishes otherwise, and prints where it
 * ended. A finished plan does not go on (short of a manual retry), so a status other than the one asked
 * for is the end of the wait: exit 1, as for a timeout.
 */
export async function waitPlan(planId: string, o: { status: PlanStatus; timeout: number; json?: boolean }): Promise<void> {
  const paint = painter(!o.json && painter().enabled);
  await withLedger(async (ledger) => {
    await current(ledger, planId);
    let final: PlanState;
    try {
      final = await ledger.waitFor(planId, (st) => st.status === o.status || isPlanFinished(st.status), { timeoutMs: o.timeout });
    } catch (e) {
      if (!isLedgerError(e, 'TIMEOUT')) throw e;
      throw new LedgerError('TIMEOUT', `plan ${planId} did not reach ${o.status} within ${o.timeout} ms (now ${String(e.details.status ?? 'unknown')})`, { planId, status: e.details.status });
    }
    const reached = final.status === o.status;
    if (o.json) json({ planId, status: final.status, seq: final.seq, digest: final.digest, reached, failedItems: failedItemsJson(final) });
    else {
      out(`plan ${final.planId} ${paintStatus(paint, final.status)} at seq ${final.seq}`);
      for (const line of renderFailures(final)) out(line);
    }
    if (!reached) throw new LedgerError('CONFLICT', `plan ${planId} ended ${final.status}, not ${o.status}: see plan-ledger audit ${planId}`, { planId, status: final.status });
  });
}

/** The failed items of a plan with their cause, as `wait --json` prints them. */
const failedItemsJson = (s: PlanState) =>
  s.itemOrder.flatMap((id) => {
    const it = s.items[id]!;
    return it.status === 'failed' && it.failure ? [{ itemId: id, attempt: it.attempts.length ? it.attempts[it.attempts.length - 1]!.attempt : null, reason: it.failure.reason, error: it.failure.error ?? it.attempts[it.attempts.length - 1]?.error ?? null }] : [];
  });

export const run = (file: string, o: CommandOpts & { wait?: boolean; waitTimeout?: number; strictTools?: boolean }) => create(file, o, false);
export const propose = (file: string, o: CommandOpts & { strictTools?: boolean }) => create(file, o, true);

export async function show(planId: string, o: { json?: boolean }): Promise<void> {
  await withLog(async (log) => {
    // One read of the projector's topics serves both: where the plan's events start on its partition (by
    // its snapshot's creation time, not the partition's start) and the plans forked from it. Then the
    // plan's events, its key and the forks are read at once.
    const index = new PlanIndex(log.kafka, log.admin, log.codec, log.config, cliLogger());
    try {
      await index.sync();
      const reads = { kafka: log.kafka, admin: log.admin, codec: log.codec, config: log.config, index };
      const located = LedgerLog.over({ config: log.config, kafka: log.kafka, admin: log.admin, codec: log.codec, planStart: (id) => planStartOffset(reads, id) });
      const [records, opener, forks] = await Promise.all([located.readPlan(planId), openerOf(log, planId), forksIn(index, log, planId)]);
      const s = rebuilt(planId, records);
      if (!s || s.status === 'none') throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${log.config.topicPrefix}"`, { planId });
      const shown = showPlan(s, opener);
      const listed = 'plans' in forks ? forks : null;
      if (o.json) json({ ...shown, forks: listed ? listed.plans.map(forkJson) : null, forksTotal: listed ? listed.total : null });
      // Who ran each attempt is in the events (the state keeps an attempt's first executor only).
      else out(renderPlan(shown, painter(), forks, takeovers(records.map((r) => r.event))));
    } finally {
      await index.close();
    }
  });
}

/**
 * The lineage the other way: plans forked from this one (their `forkedFrom` label), from the projector's
 * topics. Not listed where a partition has no projector's watermark (which ones, on which prefix): finding
 * them there would mean reading that partition's whole log, which `show` of one plan should not do.
 */
export async function forksOf(log: LedgerLog, planId: string): Promise<ForkList | ForksNotListed> {
  const index = new PlanIndex(log.kafka, log.admin, log.codec, log.config, cliLogger());
  try {
    await index.sync();
    return await forksIn(index, log, planId);
  } finally {
    await index.close();
  }
}

/** {@link forksOf} from an index its caller has synced. */
async function forksIn(index: PlanIndex, log: LedgerLog, planId: string): Promise<ForkList | ForksNotListed> {
  const partitions = Array.from({ length: log.config.partitions }, (_, p) => p).filter((p) => index.watermark(p) === null);
  if (partitions.length) return { notListed: { prefix: log.config.topicPrefix, partitions, of: log.config.partitions } };
  const page = await listPlansFromIndex({ kafka: log.kafka, codec: log.codec, config: log.config, logger: cliLogger(), index }, { label: `${FORK_LABEL}:${planId}`, limit: FORKS_SHOWN });
  return { plans: page.plans, total: Math.max(page.total, page.plans.length) };
}

const FORKS_SHOWN = 20;
const forkJson = (p: ForkList['plans'][number]) => ({ planId: p.planId, status: p.status, goal: p.goal ?? null });

async function command(planId: string, o: CommandOpts, send: (ledger: Ledger) => Promise<CommandOutcome>, say: (s: PlanState) => string): Promise<void> {
  // Existence from the log as the CLI reads it (an erased plan's tombstones hide its events).
  await withLog(async (log) => {
    const s = rebuilt(planId, await log.readPlan(planId));
    if (!s || s.status === 'none') throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${log.config.topicPrefix}"`, { planId });
  });
  await withLedger(async (ledger) => {
    const outcome = await send(ledger);
    const s = await current(ledger, planId);
    if (o.json) json(commandJson(outcome, s));
    else out(`${say(s)}  (status ${paintStatus(painter(), s.status)}, seq ${s.seq})`);
  });
}

export const approve = (planId: string, o: CommandOpts & { digest: string; note?: string }) =>
  command(
    planId,
    o,
    (l) => l.approve(planId, o.digest, { by: o.by, note: o.note, timeoutMs: o.timeout }),
    // Under a policy that needs several approvers, one approval is recorded and the plan waits for the rest.
    (s) =>
      s.status === 'proposed' && s.policy !== undefined
        ? `approval of plan ${planId} at digest ${o.digest.slice(0, 16)} recorded as ${o.by}; policy ${s.policy.policyId} needs ${s.policy.approvers} distinct approvers`
        : `approved plan ${planId} at digest ${o.digest.slice(0, 16)} as ${o.by}`,
  );

export const reject = (planId: string, o: CommandOpts & { reason: string }) =>
  command(planId, o, (l) => l.reject(planId, o.reason, { by: o.by, timeoutMs: o.timeout }), () => `rejected plan ${planId}: ${o.reason}`);

export const cancel = (planId: string, o: CommandOpts & { reason: string }) =>
  command(planId, o, (l) => l.cancel(planId, o.reason, { by: o.by, timeoutMs: o.timeout }), () => `cancelled plan ${planId}: ${o.reason}`);

export const retry = (planId: string, itemId: string, o: CommandOpts) =>
  command(planId, o, (l) => l.retryItem(planId, itemId, { by: o.by, timeoutMs: o.timeout }), () => `item ${itemId} of plan ${planId} is pending again`);

/** The signal data of `--data`: JSON text, `@file` read from a file, `@-` from stdin. */
async function signalData(spec: string): Promise<unknown> {
  let text = spec;
  if (spec.startsWith('@')) {
    const file = spec.slice(1);
    try {
      text = file === '-' ? await readStdin() : await readFile(file, 'utf8');
    } catch (e) {
      throw new LedgerError('VALIDATION', `cannot read signal data ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { field: 'data' });
    }
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new LedgerError('VALIDATION', `signal data is not JSON: ${(e as Error).message}`, { field: 'data' });
  }
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export const signal = async (planId: string, name: string, o: CommandOpts & { data: string; signalId?: string }) => {
  const data = await signalData(o.data);
  let completed: string[] = [];
  await command(
    planId,
    o,
    async (l) => {
      const outcome = await l.signal(planId, name, data, { by: o.by, timeoutMs: o.timeout, ...(o.signalId ? { signalId: o.signalId } : {}) });
      completed = outcome.events.flatMap((e) => (e.type === 'ItemSignalled' ? [e.data.itemId] : []));
      return outcome;
    },
    () => `signal ${name} delivered to plan ${planId}: item${completed.length === 1 ? '' : 's'} ${completed.join(', ')} completed`,
  );
};

/** `--set item.input=<json|@file>` pairs as the inputs they set, by item id. */
async function forkInputs(pairs: readonly string[]): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const m = /^([A-Za-z0-9._:-]{1,128})\.input=(.*)$/s.exec(pair);
    if (!m) throw new LedgerError('VALIDATION', `--set must be <item>.input=<json|@file>, got ${JSON.stringify(pair.slice(0, 80))}`, { field: 'set' });
    out[m[1]!] = await signalData(m[2]!);
  }
  return out;
}

export const fork = async (source: string, o: CommandOpts & { at: string; set: string[]; id?: string; mode?: 'propose' | 'execute' }) => {
  const set = await forkInputs(o.set);
  await withLedger(async (ledger) => {
    const outcome = await ledger.fork(source, { at: o.at, set, by: o.by, timeoutMs: o.timeout, ...(o.id ? { planId: o.id } : {}), ...(o.mode ? { mode: o.mode } : {}) });
    const s = await current(ledger, outcome.planId);
    const inherited = outcome.events.filter((e) => e.type === 'ItemInherited').length;
    if (o.json) json({ ...commandJson(outcome, s), forkedFrom: outcome.forkedFrom, inherited });
    else
      out(
        `plan ${outcome.planId} forked from ${source} at seq ${outcome.forkedFrom.seq} (hash ${outcome.forkedFrom.chainHead.slice(0, 16)}): ${inherited} item${inherited === 1 ? '' : 's'} inherited, ${s.itemOrder.length - inherited} to run  (status ${paintStatus(painter(), s.status)}, seq ${s.seq})`,
      );
  });
};
