/* global document, fetch, setTimeout, URL, window */
// An item opened (from the graph, a table, a link): its input, output or error, checkpoint and evidence,
// attempts (each with its executor, times and a take-over mark), its events, and for an agent's model turn
// the text, tool calls and usage — recorded, or live while the turn runs. Payloads are shown as the API
// gives them (redacted, decrypted only by the projector, never here); a large one as its size and a
// download through the API.
import { $, auth, bytes, canWrite, cancelPlan, dur, getJson, h, hooks, itemLink, itemPath, retryItem, state, statusPill, time, toast } from './core.js';
import { followLive, liveOf, liveSection, stopLive } from './live-text.js';
import { isWaiting, takeoverMark, timelineList, waitForm } from './plan-parts.js';

const FINISHED = ['completed', 'cancelled'];
const PRETTY_MAX = 16 * 1024;

export async function openItem(planId, itemId) {
  if (state.item?.planId !== planId || state.item?.itemId !== itemId) state.item = { planId, itemId, view: null, error: null };
  const panel = $('#item');
  panel.hidden = false;
  document.body.classList.add('item-open');
  if (!state.item.view) panel.replaceChildren(h('div', { class: 'empty' }, `Opening ${itemId}…`));
  await loadItem();
  for (const n of document.querySelectorAll('svg.graph g.node')) n.classList.toggle('open', n.dataset.item === itemId);
}

export function closeItem() {
  state.item = null;
  stopLive();
  $('#item').hidden = true;
  document.body.classList.remove('item-open');
  for (const n of document.querySelectorAll('svg.graph g.node.open')) n.classList.remove('open');
}

/** Reads the open item again (a live change of its plan, an action). */
export async function loadItem() {
  const it = state.item;
  if (!it) return;
  try {
    const view = await getJson(itemPath(it.planId, it.itemId));
    if (state.item !== it) return;
    it.view = view;
    it.error = null;
  } catch (e) {
    if (state.item !== it) return;
    it.error = e.message;
  }
  renderItem();
}

async function download(planId, itemId, p, button) {
  button.disabled = true;
  try {
    const res = await fetch(p.download, { headers: auth() });
    if (!res.ok) {
      const body = await res.json().catch(() => ({}));
      throw new Error(body.message ?? `${res.status} ${res.statusText}`);
    }
    const blob = await res.blob();
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: `${planId}-${itemId}-${p.name}.json`, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30_000);
    toast(`downloaded ${p.label} of ${itemId}: ${bytes(blob.size)}`);
  } catch (e) {
    toast(`download of ${p.label} failed: ${e.message}`, 'err');
  }
  button.disabled = false;
}

/** A payload's text: pretty-printed when it is whole and small, else as stored. */
function payloadText(p) {
  if (p.text === null) return null;
  if (!p.truncated && p.text.length <= PRETTY_MAX) {
    try {
      return JSON.stringify(JSON.parse(p.text), null, 2);
    } catch {
      return p.text;
    }
  }
  return p.text;
}

function payloadBox(planId, itemId, p) {
  const get = h('button', { 'data-download': p.name, onclick: (e) => void download(planId, itemId, p, e.currentTarget) }, 'Download');
  const note = p.reference
    ? `stored by reference (sha256 ${p.reference.sha256.slice(0, 12)}…, ${p.reference.chunks} chunk${p.reference.chunks > 1 ? 's' : ''}): not shown here, download it`
    : p.truncated
      ? `the first ${p.text.length.toLocaleString('en-US')} characters of ${bytes(p.bytes)}: download it whole`
      : null;
  return h('div', { class: 'payload', 'data-payload': p.name },
    h('div', { class: 'payload-head' }, h('b', {}, p.label), h('span', { class: 'muted size', 'data-bytes': p.bytes }, bytes(p.bytes)), p.sealed ? h('span', { class: 'sealed', title: "the projector does not hold this plan's key" }, 'sealed') : null, get),
    note ? h('div', { class: 'muted payload-note' }, note) : null,
    p.text !== null ? h('pre', { class: 'payload-text' }, payloadText(p), p.truncated ? '\n…' : '') : null);
}

function turnBox(v, planId) {
  const t = v.turn;
  const calls = t.toolCalls;
  return h('div', { class: 'turn', id: 'turn' },
    h('h3', {}, `Model turn ${t.turn} of agent ${t.agent}`),
    h('div', { class: 'muted', id: 'turn-meta' }, `model ${t.modelId || '—'} · finish ${t.finishReason}${t.finished ? ` · the run ended: ${t.finished}` : t.next ? ` · next ${t.next}` : ''}${t.stopReason ? ` · ${t.stopReason}` : ''}`),
    h('div', { id: 'turn-usage' }, `${t.usage.inputTokens} in / ${t.usage.outputTokens} out / ${t.usage.totalTokens} tokens`, h('span', { class: 'muted' }, ` · run so far ${t.totals.totalTokens} tokens in ${t.totals.turns} turn${t.totals.turns === 1 ? '' : 's'}`)),
    t.text ? h('pre', { class: 'turn-text', id: 'turn-text' }, t.text) : h('div', { class: 'muted' }, 'no text'),
    t.textTruncated || t.textCut ? h('div', { class: 'muted' }, `the text is ${bytes(t.textBytes)}; ${t.textTruncated ? 'the agent recorded only its start' : 'the output download has it whole'}`) : null,
    calls.length
      ? h('table', { class: 'grid', id: 'turn-calls' },
        h('thead', {}, h('tr', {}, ...['tool call', 'arguments', 'runs as'].map((x) => h('th', {}, x)))),
        h('tbody', {}, ...calls.map((c) => h('tr', { 'data-call': c.toolCallId },
          h('td', { class: 'mono' }, c.toolName),
          h('td', {}, h('code', { class: 'args' }, c.input, c.inputCut ? '…' : '')),
          h('td', {}, c.itemId ? itemLink(planId, c.itemId) : c.error ? h('span', { class: 'cause' }, `${c.error.code}: ${c.error.message}`) : c.notRun ? 'not run (the run stopped)' : '—')))))
      : h('div', { class: 'muted' }, 'no tool calls'));
}

function attemptsBox(v) {
  const rows = v.item.attempts;
  if (!rows.length) return h('div', { class: 'muted' }, 'No attempts yet.');
  const timeline = new Map(v.attempts.map((a) => [a.attempt, a]));
  return h('table', { class: 'grid', id: 'item-attempts' },
    h('thead', {}, h('tr', {}, ...['#', 'executor', 'started', 'finished', 'outcome', 'tool', 'error'].map((x) => h('th', {}, x)))),
    h('tbody', {}, ...rows.map((a) => {
      const t = timeline.get(a.attempt);
      return h('tr', { 'data-item-attempt': a.attempt, class: t?.takeover ? 'taken-over' : null },
        h('td', {}, String(a.attempt)),
        h('td', { class: 'mono', title: `key ${a.idempotencyKey}` }, a.executorId, t?.takeover ? h('div', {}, takeoverMark(t.takeover)) : null),
        h('td', { class: 'mono' }, time(a.startedAt)),
        h('td', { class: 'mono' }, a.finishedAt ? time(a.finishedAt) : '…'),
        h('td', {}, a.wait ? `wait ${a.wait.signal}${a.wait.signalledBy ? ` · answered by ${a.wait.signalledBy}` : ''}` : `${(a.outcome ?? '…').replace('_', ' ')}${t?.settlement ? ` → ${t.settlement}` : ''}`),
        h('td', {}, dur(a.durationMs)),
        h('td', { class: 'cause' }, a.error ? `${a.error.code}: ${a.error.message}` : ''));
    })));
}

export function renderItem() {
  const it = state.item;
  const panel = $('#item');
  if (!it || panel.hidden) return;
  const close = h('button', { class: 'close', id: 'item-close', 'aria-label': 'close the item', onclick: () => hooks.closeItem() }, '×');
  if (it.error && !it.view) {
    stopLive();
    panel.replaceChildren(h('div', { class: 'item-top' }, h('h2', {}, it.itemId), close), h('div', { class: 'empty', id: 'item-error-load' }, it.error));
    return;
  }
  const v = it.view;
  if (!v) return;
  const item = v.item;
  const isTurn = item.tool.startsWith('agent:');
  const running = item.status === 'in_progress' || item.status === 'result_committed';
  // The live output while a turn (or a tool) runs; the recorded turn once there is one.
  const live = running && !v.turn ? followLive(it.planId, it.itemId, () => {
    const el = $('#live-output');
    const l = liveOf(it.planId, it.itemId);
    if (el && l) el.replaceWith(liveSection(l));
  }) : (stopLive(), null);
  const failure = item.failure;
  const lastError = failure?.error ?? item.attempts[item.attempts.length - 1]?.error ?? null;
  const deps = item.dependsOn;
  panel.replaceChildren(...[
    h('div', { class: 'item-top' },
      h('div', { style: 'min-width:0' }, h('h2', { id: 'item-title' }, item.title || item.id), h('div', { class: 'ids mono' }, `${item.id} · tool ${item.tool} · ${item.attempts.length} attempt(s) · plan ${v.planId}`)),
      statusPill(item.status), close),
    h('div', { class: 'item-actions' },
      canWrite() && item.status === 'failed' ? h('button', { class: 'primary', id: 'item-retry', onclick: () => retryItem(v.planId, item.id) }, 'Retry item') : null,
      canWrite() && !FINISHED.includes(v.planStatus) ? h('button', { class: 'danger', id: 'item-cancel-plan', onclick: () => cancelPlan(v.planId, 'item view') }, 'Cancel plan') : null),
    item.why ? h('div', { class: 'why' }, item.why) : null,
    h('table', { class: 'meta' }, h('tbody', {},
      deps.length ? h('tr', {}, h('th', {}, 'depends on'), h('td', {}, ...deps.flatMap((d, i) => [i ? ', ' : '', itemLink(v.planId, d)]))) : null,
      v.dependants.total ? h('tr', {}, h('th', {}, 'needed by'), h('td', {}, ...v.dependants.ids.flatMap((d, i) => [i ? ', ' : '', itemLink(v.planId, d)]), v.dependants.total > v.dependants.ids.length ? ` +${v.dependants.total - v.dependants.ids.length}` : '')) : null,
      item.followUpOf ? h('tr', {}, h('th', {}, 'follow-up of'), h('td', {}, itemLink(v.planId, item.followUpOf))) : null,
      item.retryAt ? h('tr', {}, h('th', {}, 'retry after'), h('td', { class: 'mono' }, time(item.retryAt))) : null)),
    item.status === 'failed' || lastError
      ? h('div', { class: `item-error${item.status === 'failed' ? '' : ' past'}`, id: 'item-error' },
        h('b', {}, item.status === 'failed' ? `failed: ${failure?.reason ?? ''}` : 'the last attempt failed'),
        lastError ? h('div', {}, h('code', { id: 'item-error-code' }, lastError.code), ' ', h('span', { id: 'item-error-message' }, lastError.message)) : null,
        lastError?.detailsJson ? h('pre', { class: 'payload-text' }, lastError.detailsJson) : null)
      : null,
    isWaiting(item) ? waitForm(v.planId, item, { id: 'item-wait' }) : null,
    v.turn ? turnBox(v, v.planId) : null,
    v.turnUnread ? h('div', { class: 'muted', id: 'turn-unread' }, v.turnUnread) : null,
    live ? h('div', { class: 'turn' }, h('h3', {}, isTurn ? 'The model is writing' : 'Live output'), liveSection(live)) : null,
    h('h3', {}, 'Payloads'),
    h('div', { class: 'payloads', id: 'payloads' }, ...v.payloads.map((p) => payloadBox(v.planId, item.id, p))),
    h('h3', {}, 'Attempts'),
    attemptsBox(v),
    h('h3', {}, `Events (${v.eventCount}${v.eventCount > v.timeline.length ? `, newest ${v.timeline.length}` : ''})`),
    timelineList(v.timeline),
  ].filter(Boolean));
}

window.addEventListener('keydown', (e) => {
  if (e.key === 'Escape' && state.item) hooks.closeItem();
});
