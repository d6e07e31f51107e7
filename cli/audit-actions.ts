import { readFile, writeFile } from 'node:fs/promises';
import { openerOf } from './keys.js';
import { showEvents, showPlan } from '../src/secrets/redact.js';
import { buildBundle, verifyBundle } from '../src/audit/bundle.js';
import { auditTopic, erasePlan } from '../src/audit/erase.js';
import { auditPlan, describeReplayFailure, readPlanHistory, replayAll, replayPlan, verifyAll, verifyPlanInLog, type ReplayFailure } from '../src/audit/live.js';
import { takeovers } from '../src/audit/takeovers.js';
import { parseAsOf } from '../src/audit/timeline.js';
import { describeBroken, type PlanVerification } from '../src/audit/verify.js';
import { LedgerError } from '../src/errors.js';
import type { PlanEvent } from '../src/plan/index.js';
import { withLedger, withLog } from './connect.js';
import { json, out, painter } from './output.js';
import { forksOf } from './plan-actions.js';
import { renderAgentRun, renderAsOf, renderFailures, renderForks, renderAudit, renderPlan, renderTakeovers, renderVerification } from './render.js';

export async function audit(planId: string, o: { asOf?: string; json?: boolean }): Promise<void> {
  const asOf = o.asOf === undefined ? null : parseAsOf(o.asOf, '--as-of');
  await withLog(async (log) => {
    const open = await openerOf(log, planId);
    // The events as read, for the take-overs: they need the executor ids the intents and results record.
    let events: readonly PlanEvent[] = [];
    const a = await auditPlan(log, planId, asOf, (upTo) => showEvents((events = upTo), undefined, open));
    if (a.state.state) a.state = { ...a.state, state: showPlan(a.state.state, open) };
    if (o.json) {
      for (const r of a.rows) json(r);
      json(a.state);
      return;
    }
    const paint = painter();
    out(`${paint('bold', 'audit')} ${planId}   ${a.events} events on ${a.topic} partition ${a.partition}${asOf ? `, shown up to ${o.asOf}` : ''}`);
    // Why it failed, before the timeline (with --as-of, the plan as it was then says it below).
    if (!asOf && a.state.state) for (const line of renderFailures(a.state.state)) out(line);
    // Lineage both ways: the first event names a fork's origin; the plans forked from this one follow.
    for (const line of renderForks(await forksOf(log, planId))) out(line);
    out(renderAudit(planId, a.rows, paint));
    for (const line of renderTakeovers(planId, takeovers(events))) out(line);
    const agent = a.state.state ? renderAgentRun(a.state.state, true) : [];
    if (agent.length) out(['', ...agent].join('\n'));
    if (asOf) {
      out('');
      out(renderAsOf(a.state, paint));
    }
  });
}

export async function replay(planId: string | undefined, o: { all?: boolean; until?: string; state?: boolean; json?: boolean }): Promise<void> {
  if (!planId === !o.all) throw new LedgerError('VALIDATION', 'replay: name one plan or pass --all', { field: 'planId' });
  const until = o.until === undefined ? null : parseAsOf(o.until, '--until');
  await withLog(async (log) => {
    const paint = painter();
    if (planId) {
      const r = await replayPlan(log, planId, until, o.until);
      const shown = showPlan(r.state);
      const summary = { planId: r.planId, status: r.status, seq: r.seq, items: r.items, digest: r.digest, stateDigest: r.stateDigest, events: r.events, ...(o.state ? { state: shown } : {}) };
      if (o.json) return json(summary);
      out(renderPlan(shown, paint));
      out(`stateDigest ${r.stateDigest}   (rebuilt from ${r.seq} of ${r.events} events, no projector)`);
      if (o.state) out(JSON.stringify(shown, null, 2));
      return;
    }
    // Streamed: each plan is printed as it is rebuilt; only the failures are kept.
    let rebuilt = 0;
    const broken: ReplayFailure[] = [];
    await withProgress((progress) =>
      replayAll(
        log,
        until,
        (r) => {
          if (!r.ok) {
            broken.push(r);
            if (!o.json) out(`${r.planId.padEnd(40)} ${paint('red', 'cannot be rebuilt')}: ${r.reason}`);
            return;
          }
          rebuilt += 1;
          if (o.json) json({ planId: r.planId, status: r.status, seq: r.seq, items: r.items, digest: r.digest, stateDigest: r.stateDigest, events: r.events, ...(o.state ? { state: showPlan(r.state) } : {}) });
          else out(`${r.planId.padEnd(40)} ${r.status.padEnd(10)} seq ${String(r.seq).padEnd(6)} stateDigest ${r.stateDigest}`);
        },
        progress,
      ),
    );
    if (!o.json) out(`${rebuilt} plans rebuilt from ${log.names.events}`);
    if (broken[0]) throw new LedgerError('INTEGRITY', describeReplayFailure(broken[0]), { broken: broken.length });
  });
}

/** Runs a streamed read of the whole log with a progress bar on a terminal (offsets read of both passes). */
async function withProgress(run: (progress?: (done: number, total: number) => void) => Promise<void>): Promise<void> {
  if (!process.stderr.isTTY) return run();
  const { SingleBar, Presets } = await import('cli-progress');
  let bar: InstanceType<typeof SingleBar> | undefined;
  try {
    await run((done, total) => {
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
    if (planId) return report([await verifyPlanInLog(log, planId)], o);
    const results: PlanVerification[] = [];
    await withProgress((progress) => verifyAll(log, (v) => void results.push(v), progress));
    report(results, { json: o.json, brief: true });
  });
}

export async function exportPlan(planId: string, o: { output?: string; json?: boolean }): Promise<void> {
  await withLog(async (log) => {
    const records = await readPlanHistory(log, planId);
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
