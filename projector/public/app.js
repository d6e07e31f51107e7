/* global document, window, fetch, localStorage, setTimeout, clearTimeout, prompt, URLSearchParams, TextDecoder */
// The plan-ledger dashboard: plain DOM, no framework, no build step. Reads the projector's API with a
// bearer token (read scope), listens to /api/stream for changes (falls back to polling), and submits
// commands with a write-scoped token; the recorded actor is the token's principal.

const $ = (sel) => document.querySelector(sel);

/** Creates an element; strings become text nodes (never HTML). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined && c !== false) el.append(c instanceof window.Node ? c : String(c));
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof window.Node ? c : document.createTextNode(String(c)));
  return el;
}

const state = { view: 'plans', plans: [], cursor: null, selected: null, detail: null, audit: null, asOf: null, verified: new Map(), version: 0, big: null };

/**
 * A plan of more than BIG_PLAN items is read in pages (its header, a page of items, a window of its
 * timeline) and its graph drawn for the current page only: a 100,000-item plan is tens of MB of JSON and
 * more SVG nodes than a browser can draw.
 */
const BIG_PLAN = 300;
const ITEM_PAGE = 100;
const AUDIT_PAGE = 100;
const ITEM_STATUSES = ['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'];
const token = $('#token');
token.value = localStorage.getItem('plan-ledger.token') ?? '';
const auth = () => (token.value.trim() ? { authorization: `Bearer ${token.value.trim()}` } : {});
const onToken = async () => {
  localStorage.setItem('plan-ledger.token', token.value.trim());
  await whoami();
  await refresh();
  live();
};
token.addEventListener('change', () => void onToken());
$('#auth').addEventListener('submit', (e) => {
  e.preventDefault();
  void onToken();
});

/** Who the token belongs to; write buttons are shown only to a token with the write scope. */
const me = { principal: null, scopes: [] };
async function whoami() {
  try {
    Object.assign(me, await getJson('/api/whoami'));
  } catch {
    Object.assign(me, { principal: null, scopes: [] });
  }
  $('#principal').textContent = me.principal ? `${me.principal} (${me.scopes.join(', ')})` : 'no valid token';
  document.body.classList.toggle('can-write', me.scopes.includes('write'));
}

function toast(message, kind = 'ok') {
  const t = $('#toast');
  t.textContent = message;
  t.className = `toast ${kind}`;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.hidden = true), 5000);
}

async function getJson(path) {
  const res = await fetch(path, { headers: { accept: 'application/json', ...auth() } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.message ?? `${res.status} ${res.statusText}`);
  return body;
}

const ago = (ms) => {
  if (!ms) return '';
  const d = Math.max(0, Date.now() - ms) / 1000;
  if (d < 60) return `${Math.round(d)}s ago`;
  if (d < 3600) return `${Math.round(d / 60)}m ago`;
  if (d < 86400) return `${Math.round(d / 3600)}h ago`;
  return new Date(ms).toLocaleDateString();
};
const dur = (ms) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60_000).toFixed(1)} min`);
const time = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false }) + '.' + String(ms % 1000).padStart(3, '0');

function statusPill(status, stalled) {
  return stalled ? h('span', { class: 'pill s-stalled', title: stalled.message }, 'stalled') : h('span', { class: `pill s-${status}` }, status);
}

function progressBar(p) {
  const total = Math.max(1, p.total);
  const seg = (cls, n) => (n ? h('span', { class: cls, style: `width:${(100 * n) / total}%` }) : null);
  return h('div', { class: 'bar', title: `${p.completed}/${p.total} completed, ${p.running} running, ${p.failed} failed` },
    seg('completed', p.completed), seg('running', p.running), seg('failed', p.failed), seg('cancelled', p.cancelled));
}

// ---------------------------------------------------------------------------------------------------
// plans list

function query(cursor) {
  const q = new URLSearchParams({ limit: '100' });
  const st = $('#status-filter').value;
  const label = $('#label-filter').value.trim();
  if (st) q.set('status', st);
  if (label) q.set('label', label);
  if (cursor) q.set('cursor', cursor);
  return `/api/plans?${q}`;
}

async function loadPlans() {
  try {
    const page = await getJson(query());
    state.plans = page.plans;
    state.cursor = page.nextCursor;
    state.total = page.total;
    renderPlans();
  } catch (e) {
    toast(`plans: ${e.message}`, 'err');
    $('#plan-list').replaceChildren(h('li', { class: 'empty' }, `${e.message}. Enter an API token with the read scope above.`));
  }
}

async function loadMore() {
  const page = await getJson(query(state.cursor));
  state.plans.push(...page.plans);
  state.cursor = page.nextCursor;
  renderPlans();
}

function renderPlans() {
  const list = $('#plan-list');
  list.replaceChildren(
    ...state.plans.map((p) =>
      h('li', { class: `plan-item${p.planId === state.selected ? ' selected' : ''}`, 'data-plan': p.planId, onclick: () => select(p.planId) },
        h('div', { class: 'goal', title: p.goal }, p.goal || p.planId),
        statusPill(p.status, p.stalled),
        h('div', { class: 'pid mono' }, p.planId),
        h('div', { class: 'meta' }, `${p.progress.completed}/${p.progress.total} · ${ago(p.updatedAt)}`),
        progressBar(p.progress),
      ),
    ),
  );
  if (state.plans.length === 0) list.append(h('li', { class: 'empty' }, 'No plans yet.'));
  $('#more').hidden = !state.cursor;
  const counts = {};
  for (const p of state.plans) counts[p.stalled ? 'stalled' : p.status] = (counts[p.stalled ? 'stalled' : p.status] ?? 0) + 1;
  $('#counts').replaceChildren(h('span', { class: 'chip' }, `${state.total ?? state.plans.length} plans`), ...Object.entries(counts).map(([k, n]) => h('span', { class: 'chip' }, `${n} ${k}`)));
}

// ---------------------------------------------------------------------------------------------------
// plan detail

async function select(planId) {
  if (state.selected !== planId) state.asOf = null;
  state.selected = planId;
  window.history.replaceState(null, '', `#${encodeURIComponent(planId)}`);
  renderPlans();
  await loadDetail();
}

async function loadDetail() {
  const id = state.selected;
  if (!id) return;
  const path = `/api/plans/${encodeURIComponent(id)}`;
  try {
    // The header first (a few KB whatever the size): a big plan is read in pages from there on.
    const head = await getJson(`${path}?items=none`);
    if (state.selected !== id) return;
    if ((head.state?.itemCount ?? 0) > BIG_PLAN) return await loadBig(id, head);
    const asOf = state.asOf;
    const [detail, audit] = await Promise.all([getJson(path), getJson(`${path}/audit${asOf ? `?asOf=${asOf}` : ''}`)]);
    if (state.selected !== id || state.asOf !== asOf) return;
    state.big = null;
    state.detail = detail;
    state.audit = audit;
    renderDetail();
  } catch (e) {
    $('#detail').replaceChildren(h('div', { class: 'empty' }, e.message));
  }
}

// ---------------------------------------------------------------------------------------------------
// a big plan: header, a page of items (filter by status, prev / next), the graph of that page, the
// newest events with "older events"

const itemsPath = (b) => {
  const q = new URLSearchParams({ offset: String(b.offset), limit: String(ITEM_PAGE) });
  if (b.filter) q.set('status', b.filter);
  return `/api/plans/${encodeURIComponent(b.planId)}/items?${q}`;
};

/** The page at b.offset; when the plan moved on and the filter has fewer items now, its last page. */
async function fetchPage(b) {
  const page = await getJson(itemsPath(b));
  if (page.items.length > 0 || page.total === 0 || b.offset === 0) return page;
  b.offset = Math.floor((page.total - 1) / ITEM_PAGE) * ITEM_PAGE;
  return getJson(itemsPath(b));
}

async function loadBig(id, head) {
  const b = state.big?.planId === id ? state.big : { planId: id, filter: '', offset: 0, timeline: [], attempts: [] };
  // A refresh keeps what is shown: the same page of items, as many of the newest events (up to 1,000).
  const shown = Math.min(1000, Math.max(AUDIT_PAGE, b.timeline.length));
  const [page, audit] = await Promise.all([fetchPage(b), getJson(`/api/plans/${encodeURIComponent(id)}/audit?limit=${shown}`)]);
  if (state.selected !== id) return;
  Object.assign(b, { head, page, timeline: audit.timeline, attempts: audit.attempts, auditPage: audit.page });
  state.asOf = null;
  state.big = b;
  state.detail = head;
  state.audit = null;
  renderDetail();
}

/** Another page of items or another filter: only the items are read again. */
async function loadItems(change) {
  const b = state.big;
  if (!b) return;
  Object.assign(b, change);
  try {
    const page = await fetchPage(b);
    if (state.big !== b || state.selected !== b.planId) return;
    b.page = page;
    renderDetail();
  } catch (e) {
    toast(`items: ${e.message}`, 'err');
  }
}

async function loadOlder() {
  const b = state.big;
  const before = b?.auditPage?.nextBefore;
  if (!before) return;
  try {
    const older = await getJson(`/api/plans/${encodeURIComponent(b.planId)}/audit?limit=${AUDIT_PAGE}&before=${before}`);
    if (state.big !== b) return;
    b.timeline = [...older.timeline, ...b.timeline];
    b.attempts = [...older.attempts, ...b.attempts];
    b.auditPage = { ...b.auditPage, nextBefore: older.page.nextBefore };
    renderDetail();
  } catch (e) {
    toast(`timeline: ${e.message}`, 'err');
  }
}

function renderBig() {
  const b = state.big;
  const { head, page } = b;
  const plan = head.state;
  const from = page.items.length ? page.offset + 1 : 0;
  const to = page.offset + page.items.length;
  const range = `${from}–${to} of ${page.total}${b.filter ? ` ${b.filter.replace('_', ' ')}` : ''}`;
  const chip = (status, n, label) =>
    h('button', { class: `chip${b.filter === status ? ' on' : ''}`, 'data-filter': status || 'all', onclick: () => void loadItems({ filter: status, offset: 0 }) }, `${label} ${n}`);
  const pageGraph = { itemOrder: page.items.map((it) => it.id), items: Object.fromEntries(page.items.map((it) => [it.id, it])) };
  $('#detail').replaceChildren(...[
    planHead(plan, head),
    h('div', { class: 'digest-row' }, 'integrity', verifyBox(head.planId)),
    h('div', { class: 'travel muted', id: 'travel-big' }, `time travel: the as-of view folds the whole plan; for ${plan.itemCount} items use `, h('code', {}, `plan-ledger audit ${head.planId} --as-of <seq>`)),
    relatedBox(head),
    stallBox(head.stalled),
    plan.status === 'proposed' ? reviewBox(plan, plan.itemCount) : digestRow(plan),
    h('h2', {}, `Items (${plan.itemCount})`),
    h('div', { class: 'item-filters', id: 'item-filters' },
      chip('', plan.itemCount, 'all'),
      ...ITEM_STATUSES.filter((st) => page.counts[st] > 0 || b.filter === st).map((st) => chip(st, page.counts[st], st.replace('_', ' ')))),
    h('div', { class: 'pager' },
      h('button', { id: 'items-prev', disabled: page.offset === 0, onclick: () => void loadItems({ offset: Math.max(0, page.offset - ITEM_PAGE) }) }, '‹ prev'),
      h('span', { id: 'items-range', class: 'mono' }, range),
      h('button', { id: 'items-next', disabled: page.nextOffset === null, onclick: () => void loadItems({ offset: page.nextOffset }) }, 'next ›')),
    itemTable(page.items),
    h('div', { class: 'muted graph-note', id: 'graph-note' }, page.items.length ? `graph of items ${from}–${to} of ${page.total}${b.filter ? ` ${b.filter.replace('_', ' ')}` : ''} (dependencies on items of other pages not drawn)` : 'no items match'),
    page.items.length ? graph(pageGraph) : null,
    legend(),
    h('h2', {}, `Attempts (${b.attempts.length} of ${b.auditPage.attempts}, newest)`),
    attemptsTable(plan, b.attempts),
    h('h2', {}, `Timeline (${b.timeline.length} of ${b.auditPage.events} events, newest)`),
    timelineList(b.timeline),
    b.auditPage.nextBefore ? h('button', { id: 'older', class: 'more', onclick: () => void loadOlder() }, 'older events') : null,
  ].filter((c) => c !== null && c !== undefined));
}

function itemTable(items) {
  return h('div', { class: 'items-wrap' }, h('table', { class: 'grid items', id: 'items' },
    h('thead', {}, h('tr', {}, ...['item', 'title', 'status', 'tool', 'depends on', 'attempts'].map((x) => h('th', {}, x)))),
    h('tbody', {}, ...items.map((it) => h('tr', { 'data-item-row': it.id },
      h('td', { class: 'mono' }, it.id),
      h('td', { title: it.why }, it.title),
      h('td', {}, h('span', { class: `pill s-${it.status}` }, it.status.replace('_', ' '))),
      h('td', { class: 'mono' }, it.tool),
      h('td', { class: 'mono' }, it.dependsOn.length > 3 ? `${it.dependsOn.slice(0, 3).join(', ')} +${it.dependsOn.length - 3}` : it.dependsOn.join(', ')),
      h('td', { class: 'num' }, String(it.attempts.length)))))));
}

function planHead(plan, detail) {
  return h('div', { class: 'd-head' },
    h('div', { style: 'flex:1;min-width:0' },
      h('h1', {}, plan.goal),
      h('div', { class: 'ids mono' }, `${plan.planId} · ${plan.mode} mode · seq ${plan.seq} · partition ${detail.partition}`),
      h('div', { class: 'labels' }, ...Object.entries(plan.labels).map(([k, v]) => h('span', { class: 'label' }, `${k}: ${v}`))),
    ),
    statusPill(plan.status, state.asOf ? null : detail.stalled));
}

const digestRow = (plan) =>
  h('div', { class: 'digest-row' }, 'digest ', h('code', {}, plan.digest), plan.approvedDigest ? h('span', {}, ` · approved by ${plan.approvals.filter((a) => a.decision === 'approved').map((a) => a.by).join(', ')}`) : null);

const timelineList = (timeline) =>
  h('ul', { class: 'events' }, ...timeline.slice().reverse().map((t) =>
    h('li', { class: `t-${t.type}` },
      h('span', { class: 'when mono' }, time(t.at)),
      h('b', {}, t.type), ' ', t.summary, ' ',
      h('span', { class: 'who' }, `— ${t.actor}`), ' ',
      h('span', { class: 'seq mono' }, `#${t.seq}`),
    )));

function renderDetail() {
  if (state.big && state.big.planId === state.selected) return renderBig();
  const { detail, audit } = state;
  // Time travel: the plan as the as-of fold rebuilt it, with the attempts and timeline up to then.
  const plan = state.asOf && audit.state ? audit.state : detail.state;
  const root = $('#detail');
  const fill = (...children) => root.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
  if (!plan) {
    fill(h('div', { class: 'empty' }, `Plan ${detail.planId} has no state yet.`), stallBox(detail.stalled));
    return;
  }
  fill(
    planHead(plan, detail),
    h('div', { class: 'digest-row' }, 'integrity', verifyBox(detail.planId)),
    travelBox(detail, audit),
    relatedBox(detail),
    stallBox(detail.stalled),
    plan.status === 'proposed' && !state.asOf ? reviewBox(plan, plan.itemOrder.length) : digestRow(plan),
    waitsBox(plan),
    usageBox(state.asOf ? null : detail.agent),
    h('h2', {}, `Items (${plan.itemOrder.length})`),
    graph(plan),
    legend(),
    h('h2', {}, 'Attempts'),
    attemptsTable(plan, audit.attempts),
    h('h2', {}, `Timeline (${audit.timeline.length} events)`),
    timelineList(audit.timeline),
  );
}

const planLink = (planId, attrs = {}) => h('a', { class: 'plan-link mono', href: `#${encodeURIComponent(planId)}`, ...attrs }, planId);

/** The `verify` checks (hash chain, determinism, snapshots), computed by the projector when asked. */
function verifyBox(planId) {
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
    renderDetail();
    try {
      state.verified.set(planId, { ...(await getJson(`/api/plans/${encodeURIComponent(planId)}/verify`)), at: Date.now() });
    } catch (e) {
      state.verified.set(planId, { error: e.message });
    }
    if (state.selected === planId) renderDetail();
  };
  return h('span', { class: 'verify' }, badge,
    v && v.checks ? h('span', { class: 'muted', id: 'verify-checks' }, v.checks.map((c) => `${c.ok ? '✓' : '✗'} ${c.name}`).join('  ')) : null,
    h('button', { id: 'verify', onclick: run, disabled: v?.pending }, v ? 'verify again' : 'verify'));
}

/** A seq slider: the plan as it was after event N (the as-of fold), back to now with one click. */
function travelBox(detail, audit) {
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
      void loadDetail();
    }, 120);
  };
  return h('div', { class: `travel${state.asOf ? ' past' : ''}` },
    h('span', { class: 'muted' }, 'time travel'),
    h('input', { type: 'range', id: 'asof', min: 1, max: now, step: 1, value: at, 'aria-label': 'show the plan as of seq', oninput: (e) => go(e.target.value) }),
    h('span', { id: 'asof-label', class: 'mono' }, label),
    state.asOf ? h('button', { id: 'asof-now', onclick: () => go(now) }, 'now') : null);
}

/**
 * Delegation and lineage, both ways: the parent plan and item this plan runs for, the child plans its items
 * run; the plan and point it was forked from, the plans forked from it.
 */
function relatedBox(detail) {
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

/**
 * Each item waiting for a signal: what it asks, until when, and (with a write token) a form whose answer is
 * the signal's JSON payload. A read token sees the command that answers it.
 */
function waitsBox(plan) {
  const waiting = plan.itemOrder.map((id) => plan.items[id]).filter((it) => it.status === 'in_progress' && it.attempts[it.attempts.length - 1]?.wait);
  if (!waiting.length || state.asOf) return null;
  return h('div', { class: 'waits', id: 'waits' }, ...waiting.map((it) => {
    const w = it.attempts[it.attempts.length - 1].wait;
    const until = w.deadline === null ? 'no deadline' : `until ${new Date(w.deadline).toLocaleString([], { hour12: false })}`;
    const head = h('div', {}, h('b', {}, `${it.id} waits for `), h('code', {}, w.signal), ` (${until})`, it.wait?.prompt ? h('div', { class: 'prompt', 'data-prompt': it.id }, it.wait.prompt) : null);
    if (!me.scopes.includes('write')) return h('div', { class: 'wait', 'data-wait': it.id }, head, h('div', { class: 'muted' }, 'answer with a write token, or: ', h('code', {}, `plan-ledger signal ${plan.planId} ${w.signal} --data @answer.json`)));
    // A live update re-renders the plan: the answer being typed is kept across it.
    const key = `${plan.planId}/${it.id}`;
    const answer = h('textarea', { class: 'mono', rows: 3, 'data-answer': it.id, 'aria-label': `answer for ${it.id} (JSON)`, placeholder: '{"answer": "..."}', oninput: (e) => drafts.set(key, e.target.value) });
    answer.value = drafts.get(key) ?? '';
    const send = h('button', { class: 'primary', 'data-signal': it.id, onclick: () => void signal(plan.planId, w.signal, answer, send, key) }, 'Answer');
    return h('div', { class: 'wait', 'data-wait': it.id }, head, h('div', { class: 'answer' }, answer, send));
  }));
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
    const out = await command(`/api/plans/${encodeURIComponent(planId)}/signals/${encodeURIComponent(name)}`, { data });
    drafts.delete(key);
    toast(`Signalled ${name} on ${planId} (${out.events?.map((e) => e.type).join(', ') ?? 'submitted'})`);
    await refresh();
  } catch (e) {
    toast(`signal failed: ${e.message}`, 'err');
    button.disabled = false;
  }
}

/** An agent run's usage: how it ended, token totals and one row per recorded model turn. */
function usageBox(agent) {
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
        h('td', { class: 'mono' }, x.itemId), h('td', { class: 'mono' }, x.modelId || '—'), h('td', {}, x.finished ? `${x.finishReason} (${x.finished})` : x.finishReason),
        h('td', { class: 'num' }, String(x.usage.inputTokens)), h('td', { class: 'num' }, String(x.usage.outputTokens)), h('td', { class: 'num' }, String(x.toolCalls)))))) : null);
}

function stallBox(stalled) {
  if (!stalled) return null;
  return h('div', { class: 'stall' }, h('b', {}, `Stalled at offset ${stalled.offset}: ${stalled.code} ${stalled.reason}. `), stalled.message,
    stalled.heldEvents ? ` (${stalled.heldEvents} later records held back)` : '', ' The record is in the DLQ topic.');
}

function reviewBox(plan, itemCount) {
  const approve = h('button', { class: 'primary', id: 'approve', onclick: () => decide('approve', plan) }, 'Approve');
  const reject = h('button', { class: 'danger', id: 'reject', onclick: () => decide('reject', plan) }, 'Reject');
  return h('div', { class: 'review' },
    h('div', {}, h('div', {}, h('b', {}, 'Waiting for review.'), ` ${itemCount} items; approving runs them as shown, at this digest:`), h('code', { class: 'digest', id: 'digest' }, plan.digest)),
    h('div', { class: 'actions' }, reject, approve));
}

/** POSTs a command with the token; the answer names the events the ledger recorded. */
async function command(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: JSON.stringify(body) });
  const out = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(out.message ?? `${res.status}`);
  return out;
}

async function decide(action, plan) {
  let body;
  if (action === 'approve') body = { digest: plan.digest };
  else {
    const reason = prompt('Why is the plan rejected?');
    if (!reason) return;
    body = { digest: plan.digest, reason };
  }
  for (const b of document.querySelectorAll('.review button')) b.disabled = true;
  try {
    const out = await command(`/api/plans/${encodeURIComponent(plan.planId)}/${action}`, body);
    toast(`${action === 'approve' ? 'Approved' : 'Rejected'} ${plan.planId} (${out.events?.map((e) => e.type).join(', ') ?? 'submitted'})`);
    await refresh();
  } catch (e) {
    toast(`${action} failed: ${e.message}`, 'err');
    for (const b of document.querySelectorAll('.review button')) b.disabled = false;
  }
}

/** Layered DAG: column = longest dependency path from a root; edges as curves, nodes coloured by status. */
function graph(plan) {
  const items = plan.itemOrder.map((id) => plan.items[id]);
  const depth = new Map();
  const depthOf = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const it = plan.items[id];
    const d = it && it.dependsOn.length ? 1 + Math.max(...it.dependsOn.map((x) => depthOf(x, seen))) : 0;
    depth.set(id, d);
    return d;
  };
  const cols = [];
  for (const it of items) (cols[depthOf(it.id)] ??= []).push(it);
  const W = 176, H = 48, GX = 64, GY = 18, PAD = 20;
  const pos = new Map();
  cols.forEach((col, c) => col.forEach((it, r) => pos.set(it.id, { x: PAD + c * (W + GX), y: PAD + r * (H + GY) })));
  const width = PAD * 2 + Math.max(1, cols.length) * (W + GX) - GX;
  const height = PAD * 2 + Math.max(1, ...cols.map((c) => c.length)) * (H + GY) - GY;
  const svg = s('svg', { class: 'graph', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'item dependency graph' },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#56627a' }))));
  for (const it of items) {
    const to = pos.get(it.id);
    for (const dep of it.dependsOn) {
      const from = pos.get(dep);
      if (!from) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x - 2, y2 = to.y + H / 2, mx = (x1 + x2) / 2;
      svg.append(s('path', { class: `edge${plan.items[dep]?.status === 'completed' ? ' done' : ''}`, d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, 'marker-end': 'url(#arrow)' }));
    }
  }
  for (const it of items) {
    const p = pos.get(it.id);
    const attempts = it.attempts.length;
    const title = it.title.length > 24 ? `${it.title.slice(0, 23)}…` : it.title;
    svg.append(s('g', { class: `node st-${it.status}`, transform: `translate(${p.x},${p.y})`, 'data-item': it.id },
      s('title', {}, `${it.id}: ${it.title}\n${it.why}\nstatus ${it.status}, tool ${it.tool}, ${attempts} attempt(s)`),
      s('rect', { width: W, height: H }),
      s('text', { x: 12, y: 20 }, title),
      s('text', { x: 12, y: 37, class: 'sub' }, `${it.id} · ${it.status.replace('_', ' ')}${attempts > 1 ? ` · ${attempts} tries` : ''}`)));
  }
  return h('div', { class: 'graph-wrap' }, svg);
}

function legend() {
  return h('div', { class: 'legend' }, ...['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'].map((st) =>
    h('span', {}, h('i', { style: `background: var(--${st})` }), st.replace('_', ' '))));
}

function attemptsTable(plan, attempts) {
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
      return h('tr', { 'data-attempt': `${a.itemId}/${a.attempt}` },
        h('td', { class: 'mono' }, a.itemId),
        h('td', {}, String(a.attempt)),
        h('td', { class: 'mono' }, a.executorId),
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

// ---------------------------------------------------------------------------------------------------
// problems: stalled plans, failed items, DLQ records — with retry / cancel for a write token

async function act(label, path, body) {
  try {
    const out = await command(path, body);
    toast(`${label}: ${out.events?.map((e) => e.type).join(', ') || 'submitted'}`);
  } catch (e) {
    toast(`${label} failed: ${e.message}`, 'err');
  }
  await loadPage();
}
const cancelPlan = (planId) => {
  const reason = prompt(`Cancel plan ${planId}: why?`, 'cancelled by the operator from the problems view');
  if (reason) void act(`cancel ${planId}`, `/api/plans/${encodeURIComponent(planId)}/cancel`, { reason });
};
const retryItem = (planId, itemId) => void act(`retry ${planId}/${itemId}`, `/api/plans/${encodeURIComponent(planId)}/items/${encodeURIComponent(itemId)}/retry`, {});

function renderProblems(p) {
  const none = (what) => h('div', { class: 'muted' }, `No ${what}.`);
  const table = (head, rows) => h('table', { class: 'grid' }, h('thead', {}, h('tr', {}, ...head.map((x) => h('th', {}, x)))), h('tbody', {}, ...rows));
  const count = p.stalled.length + p.failed.length + p.deadLettersTotal;
  const badge = $('#problem-count');
  badge.hidden = count === 0;
  badge.textContent = String(count);
  return [
    h('div', { class: 'card' }, h('h2', {}, `Stalled plans (${p.stalled.length})`),
      p.stalled.length ? table(['plan', 'status', 'cause', 'record', 'held back', ''], p.stalled.map((x) =>
        h('tr', { 'data-stalled': x.planId },
          h('td', {}, planLink(x.planId), h('div', { class: 'muted' }, x.goal ?? '')),
          h('td', {}, x.status ?? 'no state'),
          h('td', { class: 'cause' }, h('b', {}, `${x.stall.code} ${x.stall.reason}`), h('div', {}, x.stall.message)),
          h('td', { class: 'mono' }, `events p${x.partition} @ ${x.stall.offset}${x.stall.seq ? ` (seq ${x.stall.seq})` : ''}`),
          h('td', { class: 'num' }, String(x.stall.heldEvents)),
          h('td', {}, x.status && !['completed', 'cancelled'].includes(x.status) ? h('button', { class: 'danger', 'data-cancel': x.planId, onclick: () => cancelPlan(x.planId) }, 'Cancel plan') : null)))) : none('stalled plans')),
    h('div', { class: 'card' }, h('h2', {}, `Failed items (${p.failed.reduce((n, f) => n + f.items.length, 0)})`),
      p.failed.length ? table(['plan', 'item', 'attempts', 'cause', ''], p.failed.flatMap((f) => (f.items.length ? f.items : [null]).map((it) =>
        h('tr', { 'data-failed': `${f.planId}/${it?.itemId ?? ''}` },
          h('td', {}, planLink(f.planId), h('div', { class: 'muted' }, `${f.goal} · ${f.status}`)),
          h('td', { class: 'mono' }, it ? `${it.itemId}` : '—', it ? h('div', { class: 'muted' }, it.title) : null),
          h('td', { class: 'num' }, it ? String(it.attempts) : ''),
          h('td', { class: 'cause' }, it ? [h('b', {}, it.reason ?? ''), h('div', {}, it.error ?? '')] : ''),
          h('td', {},
            it ? h('button', { class: 'primary', 'data-retry': `${f.planId}/${it.itemId}`, onclick: () => retryItem(f.planId, it.itemId) }, 'Retry item') : null, ' ',
            !['completed', 'cancelled'].includes(f.status) ? h('button', { class: 'danger', 'data-cancel': f.planId, onclick: () => cancelPlan(f.planId) }, 'Cancel plan') : null))))) : none('failed items')),
    h('div', { class: 'card' }, h('h2', {}, `Dead-letter queue (${p.deadLettersTotal}${p.deadLettersTotal > p.deadLetters.length ? `, newest ${p.deadLetters.length}` : ''})`),
      p.deadLetters.length ? table(['dlq record', 'plan', 'cause', 'source', 'bytes', ''], p.deadLetters.map((d) =>
        h('tr', { 'data-dlq': `${d.partition}/${d.offset}` },
          h('td', { class: 'mono' }, `p${d.partition} @ ${d.offset}`),
          h('td', {}, d.planId ? (d.known ? planLink(d.planId) : h('span', { class: 'mono' }, d.planId)) : h('span', { class: 'muted' }, 'unreadable key')),
          h('td', { class: 'cause' }, d.cause ? [h('b', {}, `${d.cause.code} ${d.cause.reason}`), h('div', {}, d.cause.message)] : 'no cause headers'),
          h('td', { class: 'mono', 'data-source': d.cause ? `${d.cause.sourceTopic}/${d.cause.sourcePartition}/${d.cause.sourceOffset}` : '' }, d.cause ? `${d.cause.sourceTopic} p${d.cause.sourcePartition} @ ${d.cause.sourceOffset}` : '—'),
          h('td', { class: 'num' }, String(d.bytes)),
          h('td', {}, d.known ? h('button', { class: 'danger', 'data-cancel': d.planId, onclick: () => cancelPlan(d.planId) }, 'Cancel plan') : null)))) : none('dead-lettered records')),
  ];
}

// ---------------------------------------------------------------------------------------------------
// overview: plans by status, activity, consumer groups (members, partitions, lag)

function spark(buckets) {
  const W = 600, H = 80, n = buckets.length, bw = W / n;
  const max = Math.max(1, ...buckets.map((b) => b.itemsCompleted + b.itemsFailed));
  const svg = s('svg', { class: 'spark', width: W, height: H + 2, viewBox: `0 0 ${W} ${H + 2}`, role: 'img', 'aria-label': 'items completed and failed per 10 s' }, s('line', { x1: 0, y1: H, x2: W, y2: H }));
  buckets.forEach((b, i) => {
    const ok = (H * b.itemsCompleted) / max, bad = (H * b.itemsFailed) / max;
    const t = `${new Date(b.at).toLocaleTimeString([], { hour12: false })}: ${b.itemsCompleted} completed, ${b.itemsFailed} failed, ${b.retries} retries, ${b.events} events`;
    if (ok) svg.append(s('rect', { class: 'ok', x: i * bw + 1, y: H - ok, width: bw - 2, height: ok }, s('title', {}, t)));
    if (bad) svg.append(s('rect', { class: 'bad', x: i * bw + 1, y: H - ok - bad, width: bw - 2, height: bad }, s('title', {}, t)));
  });
  return svg;
}

function renderOverview(o) {
  const b = o.activity.buckets;
  const lastMinute = b.slice(-6);
  const perSec = (k, list) => list.reduce((n, x) => n + x[k], 0) / ((list.length * o.activity.bucketMs) / 1000);
  const sum = (k) => b.reduce((n, x) => n + x[k], 0);
  const statuses = Object.entries(o.plansByStatus).sort((x, y) => y[1] - x[1]);
  return [
    h('div', { class: 'card' }, h('h2', {}, 'Plans by status'),
      h('div', { class: 'stats', id: 'by-status' }, ...statuses.map(([k, n]) => h('div', { class: 'stat', 'data-status': k }, h('b', {}, String(n)), h('span', {}, statusPill(k === 'stalled' ? 'failed' : k, k === 'stalled' ? { message: 'stalled' } : null)))))),
    h('div', { class: 'card' }, h('h2', {}, `Activity, last ${Math.round((b.length * o.activity.bucketMs) / 60000)} minutes`),
      h('div', { class: 'stats' },
        h('div', { class: 'stat', id: 'items-per-sec' }, h('b', {}, perSec('itemsCompleted', lastMinute).toFixed(2)), h('span', {}, 'items/s (last minute)')),
        h('div', { class: 'stat', id: 'items-completed' }, h('b', {}, String(sum('itemsCompleted'))), h('span', {}, 'items completed')),
        h('div', { class: 'stat', id: 'items-failed' }, h('b', {}, String(sum('itemsFailed'))), h('span', {}, 'items failed')),
        h('div', { class: 'stat', id: 'retries' }, h('b', {}, String(sum('retries'))), h('span', {}, 'retries scheduled')),
        h('div', { class: 'stat', id: 'events-applied' }, h('b', {}, String(sum('events'))), h('span', {}, 'events applied'))),
      spark(b)),
    ...o.groups.map((g) => h('div', { class: 'card', 'data-group': g.groupId },
      h('h2', {}, `Group ${g.groupId} `, h('span', { class: 'muted' }, `· ${g.state} · ${g.members.length} member(s) · lag ${g.lag.reduce((n, t) => n + t.total, 0)}`)),
      g.members.length ? h('table', { class: 'grid' }, h('thead', {}, h('tr', {}, h('th', {}, 'member'), h('th', {}, 'client'), h('th', {}, 'host'), h('th', {}, 'partitions'))),
        h('tbody', {}, ...g.members.map((m) => h('tr', { 'data-member': m.clientId },
          h('td', { class: 'mono' }, m.memberId.slice(0, 40)), h('td', { class: 'mono' }, m.clientId), h('td', { class: 'mono' }, m.host),
          h('td', { class: 'mono' }, Object.entries(m.partitions).map(([t, ps]) => `${t.split('.').pop()}: ${ps.slice().sort((x, y) => x - y).join(',')}`).join('  ')))))) : h('div', { class: 'muted' }, 'no members'),
      ...g.lag.map((t) => h('table', { class: 'grid', 'data-lag': `${g.groupId}/${t.topic}` },
        h('thead', {}, h('tr', {}, h('th', {}, t.topic), ...t.partitions.map((p) => h('th', {}, `p${p.partition}`)), h('th', {}, 'total'))),
        h('tbody', {}, h('tr', {}, h('td', { class: 'muted' }, 'lag'), ...t.partitions.map((p) => h('td', { class: 'num', title: `committed ${p.committed}, end ${p.end}` }, String(p.lag))), h('td', { class: 'num' }, String(t.total)))))))),
  ];
}

let pageTimer = null;
async function loadPage() {
  const view = state.view;
  if (view === 'plans') return;
  const page = $('#page');
  try {
    const data = await getJson(view === 'problems' ? '/api/problems' : '/api/overview');
    if (state.view !== view) return;
    page.replaceChildren(...(view === 'problems' ? renderProblems(data) : renderOverview(data)));
    page.dataset.loaded = view;
  } catch (e) {
    page.replaceChildren(h('div', { class: 'card' }, e.message));
  }
  clearTimeout(pageTimer);
  if (view === 'overview') pageTimer = setTimeout(() => state.view === 'overview' && void loadPage(), 5000);
}

async function route() {
  const hash = decodeURIComponent(window.location.hash.slice(1));
  state.view = hash === '/problems' ? 'problems' : hash === '/overview' ? 'overview' : 'plans';
  for (const a of document.querySelectorAll('.tabs a')) a.classList.toggle('on', a.dataset.view === state.view);
  $('main.layout').hidden = state.view !== 'plans';
  $('#page').hidden = state.view === 'plans';
  if (state.view !== 'plans') {
    delete $('#page').dataset.loaded;
    return loadPage();
  }
  if (hash && hash !== state.selected) await select(hash);
}
window.addEventListener('hashchange', () => void route());

// ---------------------------------------------------------------------------------------------------
// live updates

let refreshTimer = null;
async function refresh() {
  await loadPlans();
  if (state.selected) await loadDetail();
}
function scheduleRefresh(changed) {
  if (refreshTimer) return;
  refreshTimer = setTimeout(async () => {
    refreshTimer = null;
    if (state.view === 'problems') await loadPage();
    await loadPlans();
    if (state.selected && (!changed || changed.includes(state.selected))) await loadDetail();
  }, 150);
}

// Server-sent events read with fetch (EventSource cannot send an Authorization header, and a token in
// the URL would end up in logs). On any failure: poll every 3 s and reconnect.
let stream = null;
let polling = null;
function live() {
  const el = $('#live');
  const text = $('#live-text');
  stream?.abort();
  const ac = new window.AbortController();
  stream = ac;
  const fallback = (why) => {
    if (stream !== ac) return;
    el.className = 'live off';
    text.textContent = `${why} (polling)…`;
    const poll = async () => {
      await refresh().catch(() => {});
      polling = stream === ac && el.className !== 'live on' ? setTimeout(poll, 3000) : null;
    };
    if (!polling) polling = setTimeout(poll, 3000);
    setTimeout(() => stream === ac && live(), 5000);
  };
  const onEvent = (type, data) => {
    if (type === 'hello') {
      el.className = 'live on';
      text.textContent = 'live';
      if (polling) { clearTimeout(polling); polling = null; }
    } else if (type === 'change') scheduleRefresh(JSON.parse(data).plans);
  };
  (async () => {
    const res = await fetch('/api/stream', { headers: { accept: 'text/event-stream', ...auth() }, signal: ac.signal });
    if (!res.ok) return fallback(res.status === 503 ? 'too many live views' : res.status === 401 || res.status === 403 ? 'no read token' : 'reconnecting');
    const reader = res.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return fallback('reconnecting');
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let type = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) type = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trim());
        }
        if (data.length) onEvent(type, data.join('\n'));
      }
    }
  })().catch((e) => e.name !== 'AbortError' && fallback('reconnecting'));
}

$('#status-filter').addEventListener('change', loadPlans);
$('#label-filter').addEventListener('change', loadPlans);
$('#more').addEventListener('click', loadMore);

await whoami();
await loadPlans();
await route();
if (state.view === 'plans' && !state.selected && state.plans[0]) await select(state.plans[0].planId);
live();
