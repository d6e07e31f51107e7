import { readFile, writeFile } from 'node:fs/promises';
import { buildBundle, verifyBundle } from '../audit/bundle.js';
import { auditTopic, erasePlan } from '../audit/erase.js';
import type { LedgerLog, LoggedEvent } from '../audit/log.js';
import { auditRows, isBefore, parseAsOf, planAsOf, type AsOf } from '../audit/timeline.js';
import { verifyFromLog } from '../audit/live.js';
import { describeBroken, type PlanVerification } from '../audit/verify.js';
import { LedgerError } from '../errors.js';
import { evolve, type PlanEvent, type PlanState } from '../plan/index.js';
import { withLedger, withLog } from './connect.js';
import { json, out, painter } from './output.js';
import { renderAsOf, renderAudit, renderPlan, renderVerification, replaySummary } from './render.js';

async function planRecords(log: LedgerLog, planId: string): Promise<LoggedEvent[]> {
  const records = await log.readPlan(planId);
  if (records.length === 0 || records.every((r) => r.event.type === 'CommandRejected')) {
    throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${log.config.topicPrefix}"`, { planId });
  }
  return records;
}

export async function audit(planId: string, o: { asOf?: string; json?: boolean }): Promise<void> {
  const asOf = o.asOf === undefined ? null : parseAsOf(o.asOf, '--as-of');
  await withLog(async (log) => {
    const records = await planRecords(log, planId);
    const upTo = records.filter((r) => isBefore(r.event, asOf));
    const rows = auditRows(upTo);
    const state = planAsOf(planId, upTo.map((r) => r.event), null);
    if (o.json) {
      for (const r of rows) json(r);
      json(state);
      return;
    }
    const paint = painter();
    out(`${paint('bold', 'audit')} ${planId}   ${records.length} events on ${log.names.events} partition ${log.partitionOf(planId)}${asOf ? `, shown up to ${o.asOf}` : ''}`);
    out(renderAudit(planId, rows, paint));
    if (asOf) {
      out('');
      out(renderAsOf(state, paint));
    }
  });
}

/** Rebuilds a plan from its events with the domain's `evolve`, up to `until`. */
function rebuild(events: readonly PlanEvent[], until: AsOf | null): PlanState | undefined {
  let s: PlanState | undefined;
  for (const e of events) {
    if (!isBefore(e, until)) break;
    s = evolve(s, e);
  }
  return s;
}

export async function replay(planId: string | undefined, o: { all?: boolean; until?: string; state?: boolean; json?: boolean }): Promise<void> {
  if (!planId === !o.all) throw new LedgerError('VALIDATION', 'replay: name one plan or pass --all', { field: 'planId' });
  const until = o.until === undefined ? null : parseAsOf(o.until, '--until');
  await withLog(async (log) => {
    const plans = planId ? new Map([[planId, await planRecords(log, planId)]]) : await readAllWithProgress(log);
    const paint = painter();
    let n = 0;
    const broken: string[] = [];
    for (const [id, records] of plans) {
      let s: PlanState | undefined;
      try {
        s = rebuild(records.map((r) => r.event), until);
      } catch (e) {
        broken.push(`plan ${id} cannot be rebuilt: ${(e as Error).message} (see plan-ledger verify ${id})`);
        if (planId || o.json) continue;
        out(`${id.padEnd(40)} ${paint('red', 'cannot be rebuilt')}: ${(e as Error).message}`);
        continue;
      }
      if (!s || s.status === 'none') continue;
      n++;
      const summary = { ...replaySummary(s), events: records.length, ...(o.state ? { state: s } : {}) };
      if (o.json) json(summary);
      else if (planId) {
        out(renderPlan(s, paint));
        out(`stateDigest ${summary.stateDigest}   (rebuilt from ${s.seq} of ${records.length} events, no projector)`);
        if (o.state) out(JSON.stringify(s, null, 2));
      } else out(`${id.padEnd(40)} ${s.status.padEnd(10)} seq ${String(s.seq).padEnd(6)} stateDigest ${summary.stateDigest}`);
    }
    if (!planId && !o.json) out(`${n} plans rebuilt from ${log.names.events}`);
    if (broken.length) throw new LedgerError('INTEGRITY', broken[0]!, { broken: broken.length });
    if (planId && n === 0) throw new LedgerError('NOT_FOUND', `plan ${planId} did not exist yet at ${o.until}`, { planId });
  });
}

async function readAllWithProgress(log: LedgerLog): Promise<Map<string, LoggedEvent[]>> {
  if (!process.stderr.isTTY) return log.readAll();
  const { SingleBar, Presets } = await import('cli-progress');
  let bar: InstanceType<typeof SingleBar> | undefined;
  try {
    return await log.readAll((done, total) => {
      if (!bar && total >= 2000) {
        bar = new SingleBar({ format: 'reading events {bar} {percentage}% {value}/{total} offsets', stream: process.stderr, clearOnComplete: true }, Presets.shades_classic);
        bar.start(total, 0);
      }
      bar?.update(done);
    });
  } finally {
    bar?.stop();
  }
}

function report(results: PlanVerification[], o: { json?: boolean; brief?: boolean }): void {
  const paint = painter();
  for (const v of results) {
    if (o.json) json(v);
    else if (o.brief && v.ok) out(`${paint('green', 'OK')}      ${v.planId}  ${v.events} events, chain head ${v.head?.slice(0, 16)}, stateDigest ${v.stateDigest?.slice(0, 16)}`);
    else out(renderVerification(v, paint));
  }
  if (o.brief && !o.json) out(`${results.filter((v) => v.ok).length} of ${results.length} plans verify`);
  const broken = results.find((v) => !v.ok);
  if (broken) throw new LedgerError('INTEGRITY', describeBroken(broken), { planId: broken.planId, firstBroken: broken.firstBroken });
}

export async function verify(planId: string | undefined, o: { all?: boolean; bundle?: string; json?: boolean }): Promise<void> {
  const targets = [planId, o.all, o.bundle].filter(Boolean).length;
  if (targets !== 1) throw new LedgerError('VALIDATION', 'verify: name one plan, or pass --all, or --bundle <file>', { field: 'planId' });
  if (o.bundle) {
    let raw: unknown;
    try {
      raw = JSON.parse(await readFile(o.bundle, 'utf8'));
    } catch (e) {
      throw new LedgerError('VALIDATION', `cannot read bundle ${o.bundle}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { field: '--bundle' });
    }
    return report([verifyBundle(raw)], o);
  }
  await withLog(async (log) => {
    if (planId) return report([await verifyFromLog(log, planId, await planRecords(log, planId))], o);
    const plans = await readAllWithProgress(log);
    const results: PlanVerification[] = [];
    for (const [id, records] of plans) {
      // Commands sent to a plan that never existed leave a valid chain of rejections: nothing to verify.
      if (records[0]?.event.seq === 1 && records.every((r) => r.event.type === 'CommandRejected')) continue;
      results.push(await verifyFromLog(log, id, records));
    }
    report(results, { json: o.json, brief: true });
  });
}

export async function exportPlan(planId: string, o: { output?: string; json?: boolean }): Promise<void> {
  await withLog(async (log) => {
    const records = await planRecords(log, planId);
    const ids = [...new Set(records.map((r) => r.schemaId))];
    const schemas = new Map(await Promise.all(ids.map(async (id) => [id, await log.codec.schemaFor(id)] as const)));
    const bundle = buildBundle({
      planId,
      topicPrefix: log.config.topicPrefix,
      topic: log.names.events,
      partition: log.partitionOf(planId),
      records,
      schemas,
      exportedAt: Date.now(),
    });
    const text = `${JSON.stringify(bundle, null, 2)}\n`;
    if (!o.output) return void process.stdout.write(text);
    await writeFile(o.output, text);
    const summary = { file: o.output, planId, events: bundle.events.length, schemas: Object.keys(bundle.schemas).map(Number), head: bundle.chain.head, stateDigest: bundle.final.stateDigest };
    if (o.json) json(summary);
    else out(`exported ${summary.events} events of plan ${planId} to ${o.output}\n  chain head   ${summary.head}\n  stateDigest  ${summary.stateDigest}\n  schemas      ${summary.schemas.join(', ')}\ncheck it offline with: plan-ledger verify --bundle ${o.output}`);
  });
}

export async function erase(planId: string, o: { force?: boolean; reason: string; by: string; json?: boolean; timeout?: number }): Promise<void> {
  await withLog((log) =>
    withLedger(async (ledger) => {
      const { erasure: record } = await erasePlan(ledger, log, planId, { force: o.force, by: o.by, reason: o.reason, timeoutMs: o.timeout });
      if (o.json) return json(record);
      out(`erased plan ${planId}: ${record.tombstones.events} event tombstones, ${record.tombstones.snapshots} snapshot tombstone on partition ${record.partition}`);
      out(`  by executor ${record.executorId}, recorded on ${auditTopic(log.config.topicPrefix)} (chain head ${record.chainHead.slice(0, 16)}, by ${record.by}: ${record.reason})`);
      out('  compaction removes the records; until then readers already skip them');
    }),
  );
}
