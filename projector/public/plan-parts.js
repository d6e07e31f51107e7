/* global window, setTimeout, clearTimeout, document */
// The parts of a plan's view: its head with the plan's actions, the verify badge, time travel, lineage,
// the forms that answer waits, failed items with Retry, an agent run's usage, the review box, the
// attempts table (take-overs marked) and the timeline.
import { canWrite, cancelPlan, command, dur, getJson, h, hooks, itemLink, planLink, planPath, retryItem, state, statusPill, time, toast } from './core.js';

const FINISHED = ['completed', 'cancelled'];

export function planHead(plan, detail) {
  const live = !state.asOf;
  return h('div', { class: 'd-head' },
    h('div', { style: 'flex:1;min-width:0' },
      h('h1', {}, plan.goal),
      h('div', { class: 'ids mono' }, `${plan.planId} · ${plan.mode} mode · seq ${plan.seq} · partition ${detail.partition}`),
      h('div', { class: 'labels' }, ...Object.entries(plan.labels).map(([k, v]) => h('span', { class: 'label' }, `${k}: ${v}`))),
    ),
    h('div', { class: 'head-actions' },
      statusPill(plan.status, live ? detail.stalled : null),
      live && canWrite() && !FINISHED.includes(plan.status) ? h('button', { class: 'danger', id: 'plan-cancel', 'data-cancel': plan.planId, onclick: () => cancelPlan(plan.planId, 'plan view') }, 'Cancel plan') : null));
}

export const digestRow = (plan) =>
  h('div', { class: 'digest-row' }, 'digest ', h('code', {}, plan.digest), plan.approvedDigest ? h('span', {}, ` · approved by ${plan.approvals.filter((a) => a.decision === 'approved').map((a) => a.by).join(', ')}`) : null);

export const timelineList = (timeline) =>
  h('ul', { class: 'events' }, ...timeline.slice().reverse().map((t) =>
    h('li', { class: `t-${t.type}` },
      h('span', { class: 'when mono' }, time(t.at)),
      h('b', {}, t.type), ' ', t.summary, ' ',
      h('span', { class: 'who' }, `— ${t.actor}`), ' ',
      h('span', { class: 'seq mono' }, `#${t.seq}`),
    )));

/** The `verify` checks (hash chain, determinism, snapshots), computed by the projector when asked. */
export function verifyBox(planId) {
  const v = state.verified.get(planId);
  const badge = !v
    ? h('span', { class: 'vbadge wait', id: 'verify-badge', 'data-state': 'unknown' }, 'not verified yet')
    : v.pending
      ? h('span', { class: 'vbadge wait', id: 'verify-badge', 'data-state': 'pending' }, 'verifying…')
      : v.error
        ? h('span', { class: 'vbadge bad', id: 'verify-badge', 'data-state': 'error', title: v.error }, 'verify failed to run')
        : h('span', { class: `vbadge ${v.ok ? 'ok' : 'bad'}`, id: 'verify-badge', 'data-state': v.ok ? 'ok' : 'broken', title: v.checks.map((c) => `${c.ok ? '✓' : '✗'} ${c.name}: ${c.detail}`).join('\n') },
          v.ok ? `verified ✓ ${v.events} events` : `broken at seq ${v.firstBroken?.seq ?? '?'}: ${v.firstBroken?.reason ?? ''}`);
  const run = async () => {
    state.verified.set(planId, { pending: true });
    hooks.renderDetail();
    try {
      state.verified.set(planId, { ...(await getJson(`${planPath(planId)}/verify`)), at: Date.now() });
    } catch (e) {
      state.verified.set(planId, { error: e.message });
    }
    if (state.selected === planId) hooks.renderDetail();
  };
  return h('span', { class: 'verify' }, badge,
    v && v.checks ? h('span', { class: 'muted', id: 'verify-checks' }, v.checks.map((c) => `${c.ok ? '✓' : '✗'} ${c.name}`).join('  ')) : null,
    h('button', { id: 'verify', onclick: run, disabled: v?.pending }, v ? 'verify again' : 'verify'));
}

/** A seq slider: the plan as it was after event N (the as-of fold), back to now with one click. */
export function travelBox(detail, audit) {
  const now = detail.state.seq;
  if (now < 2) return null;
  const at = state.asOf ?? now;
  const label = state.asOf ? `as of seq ${at} of ${now} · ${audit.asOf?.at ? new Date(audit.asOf.at).toLocaleTimeString([], { hour12: false }) : ''} · ${audit.state?.status ?? ''}` : `now · seq ${now}`;
  let timer = null;
  const go = (value) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const n = Number(value);
      state.asOf = n >= now ? null : n;
      void hooks.loadDetail();
    }, 120);
  };
  return h('div', { class: `travel${state.asOf ? ' past' : ''}` },
    h('span', { class: 'muted' }, 'time travel'),
    h('input', { type: 'range', id: 'asof', min: 1, max: now, step: 1, value: at, 'aria-label': 'show the plan as of seq', oninput: (e) => go(e.target.value) }),
    h('span', { id: 'asof-label', class: 'mono' }, label),
    state.asOf ? h('button', { id: 'asof-now', onclick: () => go(now) }, 'now') : null);
}

/** Delegation and lineage, both ways: parent and child plans, the plan it was forked from and its forks. */
export function relatedBox(detail) {
  const parent = detail.parent;
  const children = detail.children ?? [];
  const origin = detail.forkedFrom;
  const forks = detail.forks ?? [];
  if (!parent && children.length === 0 && !origin && forks.length === 0) return null;
  return h('div', { class: 'related' },
    parent ? h('div', { id: 'parent' }, 'delegated by item ', h('b', { class: 'mono' }, parent.itemId), ' of ', planLink(parent.planId, { 'data-parent': parent.planId }), parent.status ? ` (${parent.status})` : '') : null,
    children.length ? h('div', { id: 'children' }, 'child plans: ', ...children.flatMap((c, i) => [i ? ', ' : '', h('b', { class: 'mono' }, c.itemId), ' → ', planLink(c.planId, { 'data-child': c.planId }), ` (${c.status})`])) : null,
    origin ? h('div', { id: 'forked-from' }, 'forked from ', planLink(origin.planId, { 'data-origin': origin.planId }), ` at seq ${origin.seq}${origin.status ? ` (${origin.status})` : ''} · hash `, h('code', { title: origin.chainHead }, origin.chainHead.slice(0, 16))) : null,
    forks.length ? h('div', { id: 'forks' }, 'forks: ', ...forks.flatMap((f, i) => [i ? ', ' : '', planLink(f.planId, { 'data-fork': f.planId }), ` (${f.status}${f.seq ? `, from seq ${f.seq}` : ''})`])) : null);
}

const drafts = new Map();

/** Sends the form's JSON as the signal's payload; a payload that is not JSON is refused here, before it is sent. */
async function signal(planId, name, textarea, button, key) {
  let data;
  try {
    if (!textarea.value.trim()) throw new Error('it is empty (e.g. {"ok": true}, or null to answer nothing)');
    data = JSON.parse(textarea.value);
  } catch (e) {
    toast(`the answer must be JSON: ${e.message}`, 'err');
    return;
  }
  button.disabled = true;
  try {
    const out = await command(`${planPath(planId)}/signals/${encodeURIComponent(name)}`, { data });
    drafts.delete(key);
    toast(`Signalled ${name} on ${planId} (${out.events?.map((e) => e.type).join(', ') ?? 'submitted'})`);
    await hooks.refresh();
  } catch (e) {
    toast(`signal failed: ${e.message}`, 'err');
    button.disabled = false;
  }
}

/** What a waiting item asks, until when, and (with a write token) the form whose JSON answers it. */
export function waitForm(planId, it, attrs = {}) {
  const w = it.attempts[it.attempts.length - 1].wait;
  const until = w.deadline === null ? 'no deadline' : `until ${new Date(w.deadline).toLocaleString([], { hour12: false })}`;
  const head = h('div', {}, h('b', {}, `${it.id} waits for `), h('code', {}, w.signal), ` (${until})`, it.wait?.prompt ? h('div', { class: 'prompt', 'data-prompt': it.id }, it.wait.prompt) : null);
  if (!canWrite()) return h('div', { class: 'wait', 'data-wait': it.id, ...attrs }, head, h('div', { class: 'muted' }, 'answer with a write token, or: ', h('code', {}, `plan-ledger signal ${planId} ${w.signal} --data @answer.json`)));
  // A live update re-renders the plan: the answer being typed is kept across it.
  const key = `${planId}/${it.id}`;
  const answer = h('textarea', { class: 'mono', rows: 3, 'data-answer': it.id, 'aria-label': `answer for ${it.id} (JSON)`, placeholder: '{"answer": "..."}', oninput: (e) => drafts.set(key, e.target.value) });
  answer.value = drafts.get(key) ?? '';
  const send = h('button', { class: 'primary', 'data-signal': it.id, onclick: () => void signal(planId, w.signal, answer, send, key) }, 'Answer');
  return h('div', { class: 'wait', 'data-wait': it.id, ...attrs }, head, h('div', { class: 'answer' }, answer, send));
}

export const isWaiting = (it) => it.status === 'in_progress' && Boolean(it.attempts[it.attempts.length - 1]?.wait);

/** Each item waiting for a signal, with its form. */
export function waitsBox(plan) {
  const waiting = plan.itemOrder.map((id) => plan.items[id]).filter(isWaiting);
  if (!waiting.length || state.asOf) return null;
  return h('div', { class: 'waits', id: 'waits' }, ...waiting.map((it) => waitForm(plan.planId, it)));
}

/** Failed items with their cause, each with Retry (write token) and a link that opens it. */
export function failedBox(planId, failed) {
  if (!failed.length || state.asOf) return null;
  return h('div', { class: 'failed-items', id: 'failed-items' },
    h('b', {}, `${failed.length} failed item${failed.length > 1 ? 's' : ''}`),
    h('table', { class: 'grid' }, h('tbody', {}, ...failed.map((it) => {
      const err = it.failure?.error ?? it.attempts[it.attempts.length - 1]?.error;
      return h('tr', { 'data-failed-item': it.id },
        h('td', {}, itemLink(planId, it.id), h('div', { class: 'muted' }, it.title)),
        h('td', { class: 'cause' }, h('b', {}, `${it.failure?.reason ?? 'failed'}${err ? ` · ${err.code}` : ''}`), err ? h('div', {}, err.message) : null),
        h('td', {}, canWrite() ? h('button', { class: 'primary', 'data-retry': `${planId}/${it.id}`, onclick: () => retryItem(planId, it.id) }, 'Retry item') : h('code', {}, `plan-ledger retry ${planId} ${it.id}`)));
    }))));
}

/** An agent run's usage: how it ended, token totals and one row per recorded model turn. */
export function usageBox(agent, planId) {
  if (!agent) return null;
  const t = agent.totals;
  return h('div', { class: 'usage', id: 'usage' },
    h('div', {}, h('b', {}, `agent ${agent.agent}`), ' · ', h('span', { id: 'usage-state' }, agent.finished ? `finished ${agent.finished}` : agent.pausedOn ? 'paused: budget spent (its wait asks for a raise)' : 'not finished'), ' · ',
      h('span', { id: 'usage-totals' }, `${t.turns} turns · ${t.inputTokens} in / ${t.outputTokens} out / ${t.totalTokens} tokens`),
      agent.unread ? ` · ${agent.unread} turn outputs stored by reference not read` : '',
      agent.stopReason ? h('div', { class: 'muted', id: 'usage-stop' }, `stopped: ${agent.stopReason}`) : null),
    agent.turns.length ? h('table', { class: 'grid turns', id: 'turns' },
      h('thead', {}, h('tr', {}, ...['turn', 'model', 'finish', 'in', 'out', 'tool calls'].map((x) => h('th', {}, x)))),
      h('tbody', {}, ...agent.turns.map((x) => h('tr', { 'data-turn': x.itemId },
        h('td', {}, itemLink(planId, x.itemId)), h('td', { class: 'mono' }, x.modelId || '—'), h('td', {}, x.finished ? `${x.finishReason} (${x.finished})` : x.finishReason),
        h('td', { class: 'num' }, String(x.usage.inputTokens)), h('td', { class: 'num' }, String(x.usage.outputTokens)), h('td', { class: 'num' }, String(x.toolCalls)))))) : null);
}

export function stallBox(stalled) {
  if (!stalled) return null;
  return h('div', { class: 'stall' }, h('b', {}, `Stalled at offset ${stalled.offset}: ${stalled.code} ${stalled.reason}. `), stalled.message,
    stalled.heldEvents ? ` (${stalled.heldEvents} later records held back)` : '', ' The record is in the DLQ topic.');
}

async function decide(action, plan) {
  let body;
  if (action === 'approve') body = { digest: plan.digest };
  else {
    const reason = window.prompt('Why is the plan rejected?');
    if (!reason) return;
    body = { digest: plan.digest, reason };
  }
  for (const b of document.querySelectorAll('.review button')) b.disabled = true;
  try {
    const out = await command(`${planPath(plan.planId)}/${action}`, body);
    toast(`${action === 'approve' ? 'Approved' : 'Rejected'} ${plan.planId} (${out.events?.map((e) => e.type).join(', ') ?? 'submitted'})`);
    await hooks.refresh();
  } catch (e) {
    toast(`${action} failed: ${e.message}`, 'err');
    for (const b of document.querySelectorAll('.review button')) b.disabled = false;
  }
}

export function reviewBox(plan, itemCount) {
  const approve = h('button', { class: 'primary', id: 'approve', onclick: () => decide('approve', plan) }, 'Approve');
  const reject = h('button', { class: 'danger', id: 'reject', onclick: () => decide('reject', plan) }, 'Reject');
  return h('div', { class: 'review' },
    h('div', {}, h('div', {}, h('b', {}, 'Waiting for review.'), ` ${itemCount} items; approving runs them as shown, at this digest:`), h('code', { class: 'digest', id: 'digest' }, plan.digest)),
    h('div', { class: 'actions' }, reject, approve));
}

/** "taken over: X → Y, re-invoked with the same key" for an attempt a new owner went on with. */
export function takeoverMark(t) {
  if (!t) return null;
  const what = t.kind === 'invoked' ? 're-invoked with the same key' : 'settled (the result was committed before)';
  return h('span', { class: 'takeover', 'data-takeover': `${t.itemId}/${t.attempt}`, title: `${t.from} last acted at ${t.fromAt}; ${t.to} ${what} at ${t.at} (seq ${t.seq}); key ${t.idempotencyKey}` },
    `taken over: ${t.from} → ${t.to}, ${what}`);
}

export function attemptsTable(plan, attempts) {
  if (!attempts.length) return h('div', { class: 'empty', style: 'padding:12px' }, plan.status === 'proposed' || plan.status === 'draft' ? 'Nothing runs before approval.' : 'No attempts yet.');
  const t0 = Math.min(...attempts.map((a) => a.intentAt));
  const t1 = Math.max(...attempts.map((a) => a.settledAt ?? a.resultAt ?? a.intentAt)) || t0 + 1;
  const span = Math.max(1, t1 - t0);
  const pct = (t) => `${(100 * (t - t0)) / span}%`;
  return h('table', { class: 'attempts' },
    h('thead', {}, h('tr', {}, h('th', {}, 'item'), h('th', {}, '#'), h('th', {}, 'executor'), h('th', {}, 'intent → result → settled'), h('th', {}, 'tool'), h('th', {}, 'total'), h('th', { style: 'width:35%' }, 'when'))),
    h('tbody', {}, ...attempts.map((a) => {
      const resultAt = a.resultAt ?? null;
      const settledAt = a.settledAt ?? null;
      return h('tr', { 'data-attempt': `${a.itemId}/${a.attempt}`, class: a.takeover ? 'taken-over' : null },
        h('td', {}, itemLink(plan.planId, a.itemId)),
        h('td', {}, String(a.attempt)),
        h('td', { class: 'mono' }, a.executorId, a.takeover ? h('div', {}, takeoverMark(a.takeover)) : null),
        h('td', {}, h('span', { class: 'steps' },
          h('b', {}, 'intent'), '→', resultAt ? h('b', {}, a.outcome.replace('_', ' ')) : '…', '→', settledAt ? h('b', {}, a.settlement) : '…',
          a.childPlanId ? h('span', {}, ' (child ', planLink(a.childPlanId, { 'data-child-attempt': a.childPlanId }), ')') : '')),
        h('td', {}, dur(a.toolMs)),
        h('td', {}, dur(a.totalMs)),
        h('td', {}, h('div', { class: 'track', title: `${time(a.intentAt)} → ${resultAt ? time(resultAt) : '…'} → ${settledAt ? time(settledAt) : '…'}` },
          h('span', { class: 'tool', style: `left:${pct(a.intentAt)};width:max(3px, calc(${pct(resultAt ?? t1)} - ${pct(a.intentAt)}))` }),
          settledAt && resultAt ? h('span', { class: `settle ${a.settlement}`, style: `left:${pct(resultAt)};width:max(3px, calc(${pct(settledAt)} - ${pct(resultAt)}))` }) : null)));
    })));
}
