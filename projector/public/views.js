/* global setTimeout, clearTimeout */
// The operator's pages: Problems (stalled plans, failed items and DLQ records, with retry / cancel for a
// write token), Overview (plans by status, activity, consumer groups and their lag) and Executors (who
// runs, with which tools and agents, on which partitions; stale ones with the reason).
import { $, ago, cancelPlan, getJson, h, planLink, retryItem, s, state, statusPill } from './core.js';

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
          h('td', {}, x.status && !['completed', 'cancelled'].includes(x.status) ? h('button', { class: 'danger', 'data-cancel': x.planId, onclick: () => cancelPlan(x.planId, 'problems view', loadPage) }, 'Cancel plan') : null)))) : none('stalled plans')),
    h('div', { class: 'card' }, h('h2', {}, `Failed items (${p.failed.reduce((n, f) => n + f.items.length, 0)})`),
      p.failed.length ? table(['plan', 'item', 'attempts', 'cause', ''], p.failed.flatMap((f) => (f.items.length ? f.items : [null]).map((it) =>
        h('tr', { 'data-failed': `${f.planId}/${it?.itemId ?? ''}` },
          h('td', {}, planLink(f.planId), h('div', { class: 'muted' }, `${f.goal} · ${f.status}`)),
          h('td', { class: 'mono' }, it ? `${it.itemId}` : '—', it ? h('div', { class: 'muted' }, it.title) : null),
          h('td', { class: 'num' }, it ? String(it.attempts) : ''),
          h('td', { class: 'cause' }, it ? [h('b', {}, it.reason ?? ''), h('div', {}, it.error ?? '')] : ''),
          h('td', {},
            it ? h('button', { class: 'primary', 'data-retry': `${f.planId}/${it.itemId}`, onclick: () => retryItem(f.planId, it.itemId, loadPage) }, 'Retry item') : null, ' ',
            !['completed', 'cancelled'].includes(f.status) ? h('button', { class: 'danger', 'data-cancel': f.planId, onclick: () => cancelPlan(f.planId, 'problems view', loadPage) }, 'Cancel plan') : null))))) : none('failed items')),
    h('div', { class: 'card' }, h('h2', {}, `Dead-letter queue (${p.deadLettersTotal}${p.deadLettersTotal > p.deadLetters.length ? `, newest ${p.deadLetters.length}` : ''})`),
      p.deadLetters.length ? table(['dlq record', 'plan', 'cause', 'source', 'bytes', ''], p.deadLetters.map((d) =>
        h('tr', { 'data-dlq': `${d.partition}/${d.offset}` },
          h('td', { class: 'mono' }, `p${d.partition} @ ${d.offset}`),
          h('td', {}, d.planId ? (d.known ? planLink(d.planId) : h('span', { class: 'mono' }, d.planId)) : h('span', { class: 'muted' }, 'unreadable key')),
          h('td', { class: 'cause' }, d.cause ? [h('b', {}, `${d.cause.code} ${d.cause.reason}`), h('div', {}, d.cause.message)] : 'no cause headers'),
          h('td', { class: 'mono', 'data-source': d.cause ? `${d.cause.sourceTopic}/${d.cause.sourcePartition}/${d.cause.sourceOffset}` : '' }, d.cause ? `${d.cause.sourceTopic} p${d.cause.sourcePartition} @ ${d.cause.sourceOffset}` : '—'),
          h('td', { class: 'num' }, String(d.bytes)),
          h('td', {}, d.known ? h('button', { class: 'danger', 'data-cancel': d.planId, onclick: () => cancelPlan(d.planId, 'problems view', loadPage) }, 'Cancel plan') : null)))) : none('dead-lettered records')),
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

const list = (xs, empty = '—') => (xs.length ? xs.flatMap((x, i) => [i ? ' ' : '', h('code', { class: 'chip-code' }, x)]) : empty);

function executorRows(xs, stale) {
  return xs.map((x) => h('tr', { 'data-executor': x.executorId, class: stale ? 'stale' : null },
    h('td', { class: 'mono' }, h('b', {}, x.executorId), h('div', { class: 'muted' }, `${x.host} · pid ${x.pid}`)),
    h('td', { class: 'mono' }, x.version),
    h('td', { class: 'mono', 'data-partitions': x.partitions.join(',') }, x.partitions.length ? x.partitions.slice().sort((a, b) => a - b).join(', ') : 'none'),
    h('td', { 'data-tools': x.tools.join(',') }, list(x.tools), x.toolsOmitted ? h('span', { class: 'muted' }, ` +${x.toolsOmitted} not announced`) : null),
    h('td', { 'data-agents': x.agents.join(',') }, list(x.agents)),
    h('td', {}, `started ${ago(Date.parse(x.startedAt))}`, h('div', { class: 'muted' }, `heartbeat ${Math.round(x.heartbeatAgeMs / 100) / 10} s ago (every ${x.heartbeatMs / 1000} s)`), stale && x.staleReason ? h('div', { class: 'cause' }, x.staleReason) : null)));
}

function renderExecutors(e) {
  const head = ['executor', 'version', 'partitions', 'tools', 'agents', 'heartbeat'];
  const table = (rows) => h('table', { class: 'grid executors' }, h('thead', {}, h('tr', {}, ...head.map((x) => h('th', {}, x)))), h('tbody', {}, ...rows));
  return [
    h('div', { class: 'card', id: 'executors-live' }, h('h2', {}, `Live executors (${e.live.length})`),
      e.live.length ? table(executorRows(e.live, false)) : h('div', { class: 'muted' }, `No executor has announced itself on ${e.topic} with a recent heartbeat. Start one: plan-ledger executor --tools <file>`)),
    h('div', { class: 'card', id: 'executors-stale' }, h('h2', {}, `Stale (${e.stale.length})`),
      e.stale.length ? table(executorRows(e.stale, true)) : h('div', { class: 'muted' }, 'None: every announced executor heartbeats (one that stopped cleanly is gone).')),
    e.invalid.length ? h('div', { class: 'card', id: 'executors-invalid' }, h('h2', {}, `Unreadable announcements (${e.invalid.length})`),
      h('table', { class: 'grid' }, h('tbody', {}, ...e.invalid.map((x) => h('tr', {}, h('td', { class: 'mono' }, x.key ?? '(no key)'), h('td', { class: 'mono' }, `@ ${x.offset}`), h('td', { class: 'cause' }, x.reason)))))) : null,
    h('div', { class: 'muted' }, `read from ${e.topic} at ${new Date(e.at).toLocaleTimeString([], { hour12: false })}`),
  ].filter(Boolean);
}

const PAGES = {
  problems: { path: '/api/problems', render: renderProblems },
  overview: { path: '/api/overview', render: renderOverview, every: 5000 },
  executors: { path: '/api/executors', render: renderExecutors, every: 5000 },
};
export const isPage = (view) => Object.prototype.hasOwnProperty.call(PAGES, view);

let pageTimer = null;
export async function loadPage() {
  const view = state.view;
  const def = PAGES[view];
  if (!def) return;
  const page = $('#page');
  try {
    const data = await getJson(def.path);
    if (state.view !== view) return;
    page.replaceChildren(...def.render(data));
    page.dataset.loaded = view;
  } catch (e) {
    page.replaceChildren(h('div', { class: 'card' }, e.message));
  }
  clearTimeout(pageTimer);
  if (def.every) pageTimer = setTimeout(() => state.view === view && void loadPage(), def.every);
}
