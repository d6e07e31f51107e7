/* global document, window, setTimeout, clearTimeout, URLSearchParams */
// The plan-ledger dashboard: plain DOM, no framework, no build step (ES modules: core, graph, detail,
// plan-parts, item, live-text, sse, views). Reads the projector's API with a bearer token (read scope),
// listens to /api/stream for changes (falls back to polling), and submits commands with a write-scoped
// token; the recorded actor is the token's principal. This module: the plan list and its search, the
// routes (#<plan>, #<plan>/<item>, #/problems, #/overview, #/executors) and live updates.
import { $, ago, h, hooks, loadToken, progressBar, saveToken, state, statusPill, toast, whoami, getJson } from './core.js';
import { loadDetail, renderDetail } from './detail.js';
import { closeItem, loadItem, openItem } from './item.js';
import { readEvents } from './sse.js';
import { isPage, loadPage } from './views.js';

const MAX_SEARCH = 200;

loadToken();
const onToken = async () => {
  saveToken();
  await whoami();
  await refresh();
  live();
};
$('#token').addEventListener('change', () => void onToken());
$('#auth').addEventListener('submit', (e) => {
  e.preventDefault();
  void onToken();
});

// ---------------------------------------------------------------------------------------------------
// plans list and search

/** The search box's text, or why it cannot be searched for (then nothing is asked). */
function searchText() {
  const q = $('#search').value.trim();
  if (q.length > MAX_SEARCH) return { error: `A search is at most ${MAX_SEARCH} characters; this one has ${q.length.toLocaleString('en-US')}.` };
  return { q };
}

function query(cursor) {
  const q = new URLSearchParams({ limit: '100' });
  const st = $('#status-filter').value;
  const label = $('#label-filter').value.trim();
  const search = searchText().q;
  if (st) q.set('status', st);
  if (label) q.set('label', label);
  if (search) q.set('q', search);
  if (cursor) q.set('cursor', cursor);
  return `/api/plans?${q}`;
}

function listMessage(text) {
  state.plans = [];
  state.cursor = null;
  $('#plan-list').replaceChildren(h('li', { class: 'empty', id: 'list-message' }, text));
  $('#counts').replaceChildren();
  $('#more').hidden = true;
}

async function loadPlans() {
  const search = searchText();
  $('#search-note').textContent = search.error ?? '';
  if (search.error) return listMessage(search.error);
  try {
    const page = await getJson(query());
    state.plans = page.plans;
    state.cursor = page.nextCursor;
    state.total = page.total;
    renderPlans();
  } catch (e) {
    // A search the API refuses (control characters ...) says why; a missing token says what to do.
    if (search.q || $('#label-filter').value.trim()) {
      $('#search-note').textContent = e.message;
      return listMessage(`No search: ${e.message}`);
    }
    toast(`plans: ${e.message}`, 'err');
    listMessage(`${e.message}. Enter an API token with the read scope above.`);
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
        Object.keys(p.labels).length ? h('div', { class: 'plan-labels' }, ...Object.entries(p.labels).map(([k, v]) => h('span', { class: 'label' }, `${k}: ${v}`))) : null,
        progressBar(p.progress),
      ),
    ),
  );
  const q = searchText().q;
  if (state.plans.length === 0) list.append(h('li', { class: 'empty', id: 'list-message' }, q ? `No plan's id, goal or label holds “${q}”.` : 'No plans yet.'));
  $('#more').hidden = !state.cursor;
  const counts = {};
  for (const p of state.plans) counts[p.stalled ? 'stalled' : p.status] = (counts[p.stalled ? 'stalled' : p.status] ?? 0) + 1;
  $('#counts').replaceChildren(h('span', { class: 'chip', id: 'plan-total' }, `${state.total ?? state.plans.length} ${q ? 'found' : 'plans'}`), ...Object.entries(counts).map(([k, n]) => h('span', { class: 'chip' }, `${n} ${k}`)));
}

let searchTimer = null;
$('#search').addEventListener('input', () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => void loadPlans(), 250);
});
$('#search').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') {
    clearTimeout(searchTimer);
    void loadPlans();
  }
});

// ---------------------------------------------------------------------------------------------------
// plans and items: #<plan>, #<plan>/<item> (a plan id holds no "/")

const setHash = (planId, itemId) => window.history.replaceState(null, '', `#${encodeURIComponent(planId)}${itemId ? `/${encodeURIComponent(itemId)}` : ''}`);

async function select(planId) {
  if (state.selected !== planId) {
    state.asOf = null;
    if (state.item && state.item.planId !== planId) closeItem();
  }
  state.selected = planId;
  setHash(planId, state.item?.itemId);
  renderPlans();
  await loadDetail();
}

hooks.refresh = refresh;
hooks.select = select;
hooks.loadDetail = loadDetail;
hooks.renderDetail = renderDetail;
hooks.openItem = async (planId, itemId) => {
  if (state.selected !== planId) await select(planId);
  setHash(planId, itemId);
  await openItem(planId, itemId);
};
hooks.closeItem = () => {
  closeItem();
  if (state.selected) setHash(state.selected);
};

async function route() {
  const hash = window.location.hash.slice(1);
  const page = hash.startsWith('/') ? hash.slice(1) : null;
  state.view = page !== null && isPage(page) ? page : 'plans';
  for (const a of document.querySelectorAll('.tabs a')) a.classList.toggle('on', a.dataset.view === state.view);
  $('main.layout').hidden = state.view !== 'plans';
  $('#page').hidden = state.view === 'plans';
  if (state.view !== 'plans') {
    closeItem();
    delete $('#page').dataset.loaded;
    return loadPage();
  }
  if (!hash || page !== null) return;
  const cut = hash.indexOf('/');
  const planId = decodeURIComponent(cut < 0 ? hash : hash.slice(0, cut));
  const itemId = cut < 0 ? null : decodeURIComponent(hash.slice(cut + 1));
  if (planId !== state.selected) await select(planId);
  if (itemId) await openItem(planId, itemId);
  else if (state.item) closeItem();
}
window.addEventListener('hashchange', () => void route());

// ---------------------------------------------------------------------------------------------------
// live updates

let refreshTimer = null;
async function refresh() {
  await loadPlans();
  if (state.selected) await loadDetail();
  if (state.item) await loadItem();
}
function scheduleRefresh(changed) {
  if (refreshTimer) return;
  refreshTimer = setTimeout(async () => {
    refreshTimer = null;
    if (state.view === 'problems') await loadPage();
    await loadPlans();
    if (state.selected && (!changed || changed.includes(state.selected))) await loadDetail();
    if (state.item && (!changed || changed.includes(state.item.planId))) await loadItem();
  }, 150);
}

// /api/stream: a change event names the plans that changed. On any failure: poll every 3 s and reconnect.
let stream = null;
let polling = null;
function live() {
  const el = $('#live');
  const text = $('#live-text-status');
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
  readEvents('/api/stream', {
    signal: ac.signal,
    onEvent: (type, data) => {
      if (type === 'hello') {
        el.className = 'live on';
        text.textContent = 'live';
        if (polling) {
          clearTimeout(polling);
          polling = null;
        }
      } else if (type === 'change') scheduleRefresh(JSON.parse(data).plans);
    },
  }).then(
    () => fallback('reconnecting'),
    (e) => e.name !== 'AbortError' && fallback(e.status === 503 ? 'too many live views' : e.status === 401 || e.status === 403 ? 'no read token' : 'reconnecting'),
  );
}

$('#status-filter').addEventListener('change', loadPlans);
$('#label-filter').addEventListener('change', loadPlans);
$('#more').addEventListener('click', loadMore);

await whoami();
await loadPlans();
await route();
if (state.view === 'plans' && !state.selected && state.plans[0]) await select(state.plans[0].planId);
live();
