/* global URLSearchParams */
// A plan's view: read (a big plan in pages: its header, a page of items, a window of its timeline) and
// drawn (head and actions, integrity, time travel, lineage, waits, failed items, usage, graph, attempts,
// timeline). Items open from the graph, the items table, the attempts and the failed items.
import { $, getJson, h, hooks, planPath, state, toast } from './core.js';
import { graph, legend } from './graph.js';
import { attemptsTable, digestRow, failedBox, planHead, relatedBox, reviewBox, stallBox, timelineList, travelBox, usageBox, verifyBox, waitsBox } from './plan-parts.js';

/**
 * A plan of more than BIG_PLAN items is read in pages (its header, a page of items, a window of its
 * timeline) and its graph drawn for the current page only: a 100,000-item plan is tens of MB of JSON and
 * more SVG nodes than a browser can draw.
 */
const BIG_PLAN = 300;
const ITEM_PAGE = 100;
const AUDIT_PAGE = 100;
const FAILED_SHOWN = 20;
const ITEM_STATUSES = ['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'];

export async function loadDetail() {
  const id = state.selected;
  if (!id) return;
  const path = planPath(id);
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
    if (state.selected !== id) return;
    state.detail = null;
    $('#detail').replaceChildren(h('div', { class: 'empty', id: 'detail-error' }, `Plan ${id}: ${e.message}`));
  }
}

const itemsPath = (b) => {
  const q = new URLSearchParams({ offset: String(b.offset), limit: String(ITEM_PAGE) });
  if (b.filter) q.set('status', b.filter);
  return `${planPath(b.planId)}/items?${q}`;
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
  const failed = head.state?.counts?.failed ? getJson(`${planPath(id)}/items?status=failed&limit=${FAILED_SHOWN}`) : Promise.resolve({ items: [] });
  const [page, audit, failedPage] = await Promise.all([fetchPage(b), getJson(`${planPath(id)}/audit?limit=${shown}`), failed]);
  if (state.selected !== id) return;
  Object.assign(b, { head, page, timeline: audit.timeline, attempts: audit.attempts, auditPage: audit.page, failed: failedPage.items });
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
    const older = await getJson(`${planPath(b.planId)}/audit?limit=${AUDIT_PAGE}&before=${before}`);
    if (state.big !== b) return;
    b.timeline = [...older.timeline, ...b.timeline];
    b.attempts = [...older.attempts, ...b.attempts];
    b.auditPage = { ...b.auditPage, nextBefore: older.page.nextBefore };
    renderDetail();
  } catch (e) {
    toast(`timeline: ${e.message}`, 'err');
  }
}

function itemTable(planId, items) {
  return h('div', { class: 'items-wrap' }, h('table', { class: 'grid items', id: 'items' },
    h('thead', {}, h('tr', {}, ...['item', 'title', 'status', 'tool', 'depends on', 'attempts'].map((x) => h('th', {}, x)))),
    h('tbody', {}, ...items.map((it) => h('tr', { 'data-item-row': it.id, class: 'clickable', onclick: () => hooks.openItem(planId, it.id) },
      h('td', { class: 'mono' }, it.id),
      h('td', { title: it.why }, it.title),
      h('td', {}, h('span', { class: `pill s-${it.status}` }, it.status.replace('_', ' '))),
      h('td', { class: 'mono' }, it.tool),
      h('td', { class: 'mono' }, it.dependsOn.length > 3 ? `${it.dependsOn.slice(0, 3).join(', ')} +${it.dependsOn.length - 3}` : it.dependsOn.join(', ')),
      h('td', { class: 'num' }, String(it.attempts.length)))))));
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
    failedBox(head.planId, b.failed ?? []),
    h('h2', {}, `Items (${plan.itemCount})`),
    h('div', { class: 'item-filters', id: 'item-filters' },
      chip('', plan.itemCount, 'all'),
      ...ITEM_STATUSES.filter((st) => page.counts[st] > 0 || b.filter === st).map((st) => chip(st, page.counts[st], st.replace('_', ' ')))),
    h('div', { class: 'pager' },
      h('button', { id: 'items-prev', disabled: page.offset === 0, onclick: () => void loadItems({ offset: Math.max(0, page.offset - ITEM_PAGE) }) }, '‹ prev'),
      h('span', { id: 'items-range', class: 'mono' }, range),
      h('button', { id: 'items-next', disabled: page.nextOffset === null, onclick: () => void loadItems({ offset: page.nextOffset }) }, 'next ›')),
    itemTable(head.planId, page.items),
    h('div', { class: 'muted graph-note', id: 'graph-note' }, page.items.length ? `graph of items ${from}–${to} of ${page.total}${b.filter ? ` ${b.filter.replace('_', ' ')}` : ''} (dependencies on items of other pages not drawn)` : 'no items match'),
    page.items.length ? graph(pageGraph, head.planId) : null,
    legend(),
    h('h2', {}, `Attempts (${b.attempts.length} of ${b.auditPage.attempts}, newest)`),
    attemptsTable(plan, b.attempts),
    h('h2', {}, `Timeline (${b.timeline.length} of ${b.auditPage.events} events, newest)`),
    timelineList(b.timeline),
    b.auditPage.nextBefore ? h('button', { id: 'older', class: 'more', onclick: () => void loadOlder() }, 'older events') : null,
  ].filter(Boolean));
}

export function renderDetail() {
  if (state.big && state.big.planId === state.selected) return renderBig();
  const { detail, audit } = state;
  if (!detail) return;
  // Time travel: the plan as the as-of fold rebuilt it, with the attempts and timeline up to then.
  const plan = state.asOf && audit.state ? audit.state : detail.state;
  const root = $('#detail');
  const fill = (...children) => root.replaceChildren(...children.filter((c) => c !== null && c !== undefined));
  if (!plan) {
    fill(h('div', { class: 'empty' }, `Plan ${detail.planId} has no state yet.`), stallBox(detail.stalled));
    return;
  }
  const items = plan.itemOrder.map((id) => plan.items[id]).filter(Boolean);
  fill(
    planHead(plan, detail),
    h('div', { class: 'digest-row' }, 'integrity', verifyBox(detail.planId)),
    travelBox(detail, audit),
    relatedBox(detail),
    stallBox(detail.stalled),
    plan.status === 'proposed' && !state.asOf ? reviewBox(plan, plan.itemOrder.length) : digestRow(plan),
    waitsBox(plan),
    failedBox(plan.planId, items.filter((it) => it.status === 'failed')),
    usageBox(state.asOf ? null : detail.agent, plan.planId),
    h('h2', {}, `Items (${plan.itemOrder.length})`),
    graph(plan, plan.planId),
    legend(),
    h('h2', {}, 'Attempts'),
    attemptsTable(plan, audit.attempts),
    h('h2', {}, `Timeline (${audit.timeline.length} events)`),
    timelineList(audit.timeline),
  );
}
