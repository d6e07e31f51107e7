/* global document, window, fetch, localStorage, setTimeout, clearTimeout */
// What every part of the dashboard shares: DOM builders that only ever make text nodes of data (never
// HTML), the page's state, the token and the API calls made with it, formatting, and the hooks by which
// one part asks another to act (set by app.js).

export const $ = (sel) => document.querySelector(sel);

/** Creates an element; strings become text nodes (never HTML). */
export function h(tag, attrs = {}, ...children) {
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
/** Creates an SVG element; strings become text nodes. */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c instanceof window.Node ? c : document.createTextNode(String(c)));
  return el;
}

/** The page's state: the view, the plan list, the selected plan and its detail, the opened item. */
export const state = { view: 'plans', plans: [], cursor: null, selected: null, detail: null, audit: null, asOf: null, verified: new Map(), big: null, item: null };

/** What one part asks of another (set by app.js): refresh(), select(planId), openItem(planId, itemId), closeItem(). */
export const hooks = {};

const tokenInput = () => $('#token');
export const auth = () => {
  const t = tokenInput()?.value.trim();
  return t ? { authorization: `Bearer ${t}` } : {};
};
export const saveToken = () => localStorage.setItem('plan-ledger.token', tokenInput().value.trim());
export const loadToken = () => {
  tokenInput().value = localStorage.getItem('plan-ledger.token') ?? '';
};

/** Who the token belongs to; write buttons are shown only to a token with the write scope. */
export const me = { principal: null, scopes: [] };
export const canWrite = () => me.scopes.includes('write');
export async function whoami() {
  try {
    Object.assign(me, await getJson('/api/whoami'));
  } catch {
    Object.assign(me, { principal: null, scopes: [] });
  }
  $('#principal').textContent = me.principal ? `${me.principal} (${me.scopes.join(', ')})` : 'no valid token';
  document.body.classList.toggle('can-write', canWrite());
}

let toastTimer = null;
export function toast(message, kind = 'ok') {
  const t = $('#toast');
  t.textContent = message;
  t.className = `toast ${kind}`;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 5000);
}

export async function getJson(path) {
  const res = await fetch(path, { headers: { accept: 'application/json', ...auth() } });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(body.message ?? `${res.status} ${res.statusText}`);
  return body;
}

/** POSTs a command with the token; the answer names the events the ledger recorded. */
export async function command(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/json', ...auth() }, body: JSON.stringify(body) });
  const out = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(out.message ?? `${res.status}`);
  return out;
}

export const planPath = (planId) => `/api/plans/${encodeURIComponent(planId)}`;
export const itemPath = (planId, itemId) => `${planPath(planId)}/items/${encodeURIComponent(itemId)}`;

export const ago = (ms) => {
  if (!ms) return '';
  const d = Math.max(0, Date.now() - ms) / 1000;
  if (d < 60) return `${Math.round(d)}s ago`;
  if (d < 3600) return `${Math.round(d / 60)}m ago`;
  if (d < 86400) return `${Math.round(d / 3600)}h ago`;
  return new Date(ms).toLocaleDateString();
};
export const dur = (ms) => (ms === null || ms === undefined ? '—' : ms < 1000 ? `${ms} ms` : ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${(ms / 60_000).toFixed(1)} min`);
export const time = (ms) => new Date(ms).toLocaleTimeString([], { hour12: false }) + '.' + String(ms % 1000).padStart(3, '0');
/** A size for a person, with the exact count: "1.2 MB (1,234,567 bytes)". */
export const bytes = (n) => {
  const exact = `${n.toLocaleString('en-US')} bytes`;
  if (n < 1024) return exact;
  const [v, u] = n < 1024 * 1024 ? [n / 1024, 'KiB'] : [n / (1024 * 1024), 'MiB'];
  return `${v.toFixed(1)} ${u} (${exact})`;
};

export function statusPill(status, stalled) {
  return stalled ? h('span', { class: 'pill s-stalled', title: stalled.message }, 'stalled') : h('span', { class: `pill s-${status}` }, status.replace('_', ' '));
}

export function progressBar(p) {
  const total = Math.max(1, p.total);
  const seg = (cls, n) => (n ? h('span', { class: cls, style: `width:${(100 * n) / total}%` }) : null);
  return h('div', { class: 'bar', title: `${p.completed}/${p.total} completed, ${p.running} running, ${p.failed} failed` },
    seg('completed', p.completed), seg('running', p.running), seg('failed', p.failed), seg('cancelled', p.cancelled));
}

export const planLink = (planId, attrs = {}) => h('a', { class: 'plan-link mono', href: `#${encodeURIComponent(planId)}`, ...attrs }, planId);
/** A link that opens an item of a plan (`#<plan>/<item>`). */
export const itemLink = (planId, itemId, attrs = {}) => h('a', { class: 'plan-link mono', href: `#${encodeURIComponent(planId)}/${encodeURIComponent(itemId)}`, 'data-open-item': itemId, ...attrs }, itemId);

/** Sends a command from a button (disabled meanwhile), says what the ledger recorded, then refreshes. */
export async function act(label, path, body, after = () => hooks.refresh?.()) {
  try {
    const out = await command(path, body);
    toast(`${label}: ${out.events?.map((e) => e.type).join(', ') || 'submitted'}`);
  } catch (e) {
    toast(`${label} failed: ${e.message}`, 'err');
  }
  await after();
}
export const cancelPlan = (planId, where, after) => {
  const reason = window.prompt(`Cancel plan ${planId}: why?`, `cancelled by the operator from the ${where}`);
  if (reason) void act(`cancel ${planId}`, `${planPath(planId)}/cancel`, { reason }, after);
};
export const retryItem = (planId, itemId, after) => void act(`retry ${planId}/${itemId}`, `${itemPath(planId, itemId)}/retry`, {}, after);
