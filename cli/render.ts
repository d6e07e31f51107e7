import type { AuditRow, PlanAsOf } from '../src/audit/timeline.js';
import type { Takeover } from '../src/audit/takeovers.js';
import type { PlanVerification } from '../src/audit/verify.js';
import { summarizeAgentRun } from '../src/agent/records.js';
import { describePolicyDecision, type PlanState } from '../src/plan/index.js';
import { elide, ms, paintStatus, painter, table, type Painter } from './output.js';

/**
 * The plan as an operator reviews it: header, then one row per item. With the plan's `taken` over attempts
 * (from its events), an item's EXECUTOR names who lost its latest attempt and who went on with it, and the
 * take-overs follow the table.
 */
export function renderPlan(s: PlanState, paint: Painter = painter(false), forks?: ForkList | ForksNotListed | null, taken: readonly Takeover[] = []): string {
  const lines = [
    `${paint('bold', 'plan')}    ${s.planId}   (${s.mode ?? '-'} mode)`,
    `goal    ${s.goal}`,
    `status  ${paintStatus(paint, s.status)}   seq ${s.seq}   items ${s.itemOrder.length}`,
    ...renderFailures(s),
    `digest  ${s.digest}${s.approvedDigest ? `   (approved${s.approvedDigest === s.digest ? '' : ' at an older digest'})` : ''}`,
  ];
  const labels = Object.entries(s.labels);
  if (labels.length) lines.push(`labels  ${labels.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  if (s.forkedFrom) lines.push(`forked  from ${s.forkedFrom.planId} at seq ${s.forkedFrom.seq} (hash ${s.forkedFrom.chainHead})`);
  if (forks !== undefined) lines.push(...renderForks(forks));
  lines.push(...renderPolicy(s));
  lines.push(...renderAgentRun(s, false));
  if (s.itemOrder.length) {
    lines.push('');
    const rows = s.itemOrder.map((id) => {
      const it = s.items[id]!;
      const last = it.attempts[it.attempts.length - 1];
      const moved = taken.filter((t) => t.itemId === id && t.attempt === last?.attempt);
      return [
        id,
        paintStatus(paint, it.status),
        it.tool,
        it.dependsOn.join(',') || '-',
        String(it.attempts.length),
        moved.length ? [moved[0]!.from, ...moved.map((t) => t.to)].join('→') : (last?.executorId ?? ''),
        it.title,
      ];
    });
    lines.push(table(['ITEM', 'STATUS', 'TOOL', 'DEPENDS ON', 'ATT', 'EXECUTOR', 'TITLE'], rows, { indent: 2, paint }));
    lines.push(...renderTakeovers(s.planId, taken));
    lines.push(...renderWaits(s));
    lines.push(...renderProgress(s));
  }
  const rejected = s.rejections[s.rejections.length - 1];
  if (rejected) lines.push('', `last rejected command: ${rejected.commandType} ${rejected.code}: ${rejected.message}`);
  return lines.join('\n');
}

const failureReasons = { terminal: 'terminal', retries_exhausted: 'retries exhausted', plan_cancelled: 'plan cancelled' } as const;

/**
 * Why the plan failed: one line per failed item with the error code and message its last attempt ended
 * with, so a person reads the cause where they look (show, audit, run --wait), not only in --json.
 */
export function renderFailures(s: PlanState): string[] {
  const lines: string[] = [];
  for (const id of s.itemOrder) {
    const it = s.items[id]!;
    if (it.status !== 'failed' || it.failure === null) continue;
    const last = it.attempts[it.attempts.length - 1];
    const error = it.failure.error ?? last?.error ?? null;
    // A tool's message may span lines; the cause stays one line.
    const cause = error ? `${error.code}: ${error.message.replace(/\s*\n\s*/g, ' ')}` : 'no error recorded';
    const where = [last ? `attempt ${last.attempt}` : 'no attempt', failureReasons[it.failure.reason]].join(', ');
    lines.push(`failed  item ${id} (${where}): ${cause}`);
  }
  return lines;
}

/**
 * Each attempt an executor lost mid-way and another went on with: who lost it, who took it and when, and
 * that the idempotency key stayed the same (what keeps an effect single when the tool ran twice).
 */
export function renderTakeovers(planId: string, taken: readonly Takeover[]): string[] {
  if (!taken.length) return [];
  const lines = ['', 'taken over (an executor lost the plan mid-attempt; the next owner went on with the same idempotency key):'];
  for (const t of taken) {
    const key = elide(t.idempotencyKey, planId);
    lines.push(
      t.kind === 'invoked'
        ? `  ${t.itemId}#${t.attempt}  re-invoked by ${t.to} at ${t.at} (result committed): ${t.from} recorded the intent at ${t.fromAt} and lost the plan; same idempotency key ${key}`
        : `  ${t.itemId}#${t.attempt}  settled by ${t.to} at ${t.at}: ${t.from} committed the result at ${t.fromAt} and lost the plan; not invoked again, same idempotency key ${key}`,
    );
  }
  return lines;
}

/** Plans forked from a plan (the first of them, and how many in all). */
export interface ForkList {
  plans: ReadonlyArray<{ planId: string; status: string; goal?: string }>;
  total: number;
}

/** Why forks are not listed: these partitions of the prefix (of `of` in all) have no projector watermark. */
export interface ForksNotListed {
  notListed: { prefix: string; partitions: readonly number[]; of: number };
}

/** One line naming a plan's forks with their statuses; nothing when it has none; otherwise why they are not listed. */
export function renderForks(forks: ForkList | ForksNotListed | null): string[] {
  if (forks === null || 'notListed' in forks) {
    const n = forks?.notListed.partitions.length ?? 0;
    const where =
      forks === null
        ? 'a partition'
        : `${n > 1 && n === forks.notListed.of ? `any of the ${n} partitions` : `partition${n === 1 ? '' : 's'} ${forks.notListed.partitions.join(',')}`} of prefix "${forks.notListed.prefix}"`;
    return [`forks   not listed: no projector has covered ${where} yet (a projector on this prefix watermarks every partition, an empty one too, within seconds: plan-ledger projector; the API lists forks too)`];
  }
  if (forks.total === 0) return [];
  const more = forks.total - forks.plans.length;
  return [`forks   ${forks.plans.map((f) => `${f.planId} (${f.status})`).join(', ')}${more > 0 ? ` and ${more} more` : ''}`];
}

/** Each item waiting for a signal: what it asks, its deadline, and how to answer it. */
export function renderWaits(s: PlanState): string[] {
  const lines: string[] = [];
  for (const id of s.itemOrder) {
    const it = s.items[id]!;
    const w = it.status === 'in_progress' ? it.attempts[it.attempts.length - 1]?.wait : undefined;
    if (w === undefined) continue;
    const until = w.deadline === null ? 'no deadline' : `until ${new Date(w.deadline).toISOString()}`;
    lines.push('', `${id} waits for signal ${w.signal} (${until})${it.wait?.prompt ? `: ${it.wait.prompt}` : ''}`);
    lines.push(`  answer: plan-ledger signal ${s.planId} ${w.signal} --data @answer.json`);
  }
  return lines;
}

/**
 * An agent run's usage: one line with how it ended and its totals; with `perTurn`, a line per recorded turn
 * (model, finish reason, tokens, tool calls). Nothing for a plan that is not an agent run.
 */
export function renderAgentRun(s: PlanState, perTurn: boolean): string[] {
  const run = summarizeAgentRun(s);
  if (run === undefined) return [];
  const t = run.totals;
  const models = [...new Set(run.turns.map((x) => x.modelId).filter(Boolean))].join(',') || '-';
  const lines = [
    `agent   ${run.agent}   ${run.finished ? `finished ${run.finished}` : run.pausedOn ? `paused: budget spent (${run.pausedOn})` : 'not finished'}   turns ${t.turns}   tokens ${t.inputTokens} in / ${t.outputTokens} out / ${t.totalTokens} total   model ${models}${run.unread ? `   (${run.unread} turn outputs by reference not read)` : ''}`,
  ];
  if (run.stopReason) lines.push(`        stopped: ${run.stopReason}`);
  if (perTurn) {
    for (const x of run.turns) {
      lines.push(`  ${x.itemId}  ${x.modelId || '-'}  ${x.finishReason}  ${x.usage.inputTokens} in / ${x.usage.outputTokens} out  ${x.toolCalls} tool call${x.toolCalls === 1 ? '' : 's'}${x.finished ? `  finished ${x.finished}` : ''}`);
    }
  }
  return lines;
}

/** Each item's latest checkpoint and its evidence (what a tool recorded while it ran). */
export function renderProgress(s: PlanState): string[] {
  const lines: string[] = [];
  const short = (json: string) => (json.length > 100 ? `${json.slice(0, 97)}...` : json);
  for (const id of s.itemOrder) {
    const it = s.items[id]!;
    if (it.checkpoint === undefined && it.evidence === undefined) continue;
    lines.push('', `${id}:`);
    if (it.checkpoint) lines.push(`  checkpoint ${it.checkpoint.checkpoint} (attempt ${it.checkpoint.attempt}, seq ${it.checkpoint.seq})  ${short(it.checkpoint.stateJson)}`);
    for (const e of it.evidence ?? []) lines.push(`  evidence   ${e.name} (attempt ${e.attempt}, seq ${e.seq})  ${short(e.valueJson)}`);
  }
  return lines;
}

/** The policy decision the plan carries (the rule that applied) and, while it is reviewed, the approvals so far. */
export function renderPolicy(s: PlanState): string[] {
  const review = s.policy;
  if (review === undefined) return [];
  const lines = [`policy  ${describePolicyDecision(review)}   (seq ${review.seq})`];
  if (s.status === 'proposed' && review.approvers > 1) {
    const by = [...new Set(s.approvals.filter((a) => a.decision === 'approved' && a.seq > review.seq && a.digest === s.digest).map((a) => a.by))];
    lines.push(`approvals ${by.length} of ${review.approvers}${by.length ? ` (${by.join(', ')})` : ''}`);
  }
  return lines;
}

/** The items' `why`, for a reviewer deciding whether to approve. */
export function renderWhy(s: PlanState): string {
  return s.itemOrder.map((id) => `  ${id}: ${s.items[id]!.why}`).join('\n');
}

/** The audit timeline as aligned columns. */
export function renderAudit(planId: string, rows: readonly AuditRow[], paint: Painter = painter(false)): string {
  const body = rows.map((r) => [
    r.at.slice(11, 23),
    String(r.seq),
    `${r.partition}/${r.offset}`,
    r.type,
    r.actor,
    r.itemId === null ? '' : r.attempt === null ? r.itemId : `${r.itemId}#${r.attempt}`,
    r.idempotencyKey ? elide(r.idempotencyKey, planId) : '',
    r.outcome ? paintStatus(paint, r.outcome) : '',
    ms(r.sinceIntentMs),
    elide(r.causationId, planId),
  ]);
  return table(['TIME (UTC)', 'SEQ', 'P/OFFSET', 'EVENT', 'ACTOR', 'ITEM#ATT', 'IDEMPOTENCY KEY', 'OUTCOME', '+INTENT', 'CAUSATION'], body, { paint });
}

export function renderAsOf(v: PlanAsOf, paint: Painter = painter(false)): string {
  if (!v.state) return `plan ${v.planId} did not exist yet`;
  return `${paint('bold', `as of seq ${v.seq}`)} (${v.at})\n${renderPlan(v.state, paint)}\nstateDigest ${v.stateDigest}`;
}

export function renderVerification(v: PlanVerification, paint: Painter = painter(false)): string {
  const head = `${v.ok ? paint('green', 'OK') : paint('red', 'FAILED')}  plan ${v.planId}: ${v.events} events${v.head ? `, chain head ${v.head.slice(0, 16)}` : ''}`;
  const rows = v.checks.map((c) => [c.ok ? paint('green', 'ok') : paint('red', 'FAIL'), c.name, c.detail]);
  return `${head}\n${table(['', 'CHECK', 'DETAIL'], rows, { indent: 2, paint })}`;
}
