/* global setTimeout, clearTimeout, window */
// A running item's live output, read from the plan's stream (GET /api/plans/:id/stream, server-sent
// events with a cursor per chunk): the model's text as it comes, the tool calls it starts, its usage, a
// tool's progress, and how each run of an attempt ended (final, superseded by a new owner's run after a
// take-over, abandoned). A dropped connection resumes after the last chunk it got. What the browser holds
// is bounded: the text of a run past MAX_TEXT characters is counted, not kept.
import { h, planPath } from './core.js';
import { readEvents } from './sse.js';

const MAX_TEXT = 256 * 1024;
const MAX_PROGRESS = 20;
const RETRY_MS = 2000;

let live = null;

/** The live stream of `planId`/`itemId`, started if it is not the one running; `onChange` when it moves. */
export function followLive(planId, itemId, onChange) {
  const key = `${planId}/${itemId}`;
  if (live?.key === key) {
    live.onChange = onChange;
    return live;
  }
  stopLive();
  live = { key, planId, itemId, onChange, ac: null, cursor: null, runs: [], status: 'connecting', error: null, timer: null, chunks: 0 };
  connect(live);
  return live;
}

export function stopLive() {
  if (!live) return;
  live.ac?.abort();
  clearTimeout(live.timer);
  live = null;
}

export const liveOf = (planId, itemId) => (live?.key === `${planId}/${itemId}` ? live : null);

function runOf(l, c) {
  let r = l.runs.find((x) => x.attempt === c.attempt && x.run === c.run);
  if (!r) {
    r = { attempt: c.attempt, run: c.run, text: '', chars: 0, calls: [], progress: [], usage: null, end: null, reason: null };
    l.runs.push(r);
    l.runs.sort((a, b) => a.attempt - b.attempt || a.run - b.run);
  }
  return r;
}

function apply(l, c) {
  if (c.itemId !== l.itemId) return false;
  l.chunks += 1;
  const r = runOf(l, c);
  if (c.kind === 'text' && typeof c.text === 'string') {
    r.chars += c.text.length;
    if (r.text.length < MAX_TEXT) r.text += c.text.slice(0, MAX_TEXT - r.text.length);
  } else if (c.kind === 'tool-call') r.calls.push({ toolCallId: c.toolCallId, toolName: c.toolName });
  else if (c.kind === 'usage') r.usage = c.usage;
  else if (c.kind === 'progress') r.progress = [...r.progress, JSON.stringify(c.data ?? null).slice(0, 500)].slice(-MAX_PROGRESS);
  else if (c.kind === 'end') {
    r.end = c.end;
    r.reason = c.reason ?? null;
    // A superseded marker ends every earlier run of the attempt.
    if (c.end === 'superseded') for (const x of l.runs) if (x.attempt === c.attempt && x.run < c.run && !x.end) x.end = 'superseded';
  }
  return true;
}

let pending = null;
const changed = (l) => {
  if (pending) return;
  pending = setTimeout(() => {
    pending = null;
    if (live === l) l.onChange();
  }, 60);
};

function connect(l) {
  const ac = new window.AbortController();
  l.ac = ac;
  const from = l.cursor ? `?from=${encodeURIComponent(l.cursor)}` : '';
  readEvents(`${planPath(l.planId)}/stream${from}`, {
    signal: ac.signal,
    onOpen: () => {
      l.status = 'live';
      l.error = null;
      changed(l);
    },
    onEvent: (type, data, id) => {
      if (type === 'chunk') {
        if (id) l.cursor = id;
        let c;
        try {
          c = JSON.parse(data);
        } catch {
          return;
        }
        if (apply(l, c)) changed(l);
      } else if (type === 'error') {
        let e = {};
        try {
          e = JSON.parse(data);
        } catch {
          // not JSON
        }
        l.error = `${e.code ?? 'ERROR'}: ${e.message ?? data}`;
        l.status = 'ended';
        changed(l);
      }
    },
  }).then(
    () => retry(l, 'the stream closed; reconnecting…'),
    (e) => e.name !== 'AbortError' && retry(l, e.status ? e.message : 'disconnected; reconnecting…'),
  );
}

function retry(l, why) {
  if (live !== l || l.status === 'ended') return;
  l.status = 'reconnecting';
  l.error = why;
  changed(l);
  l.timer = setTimeout(() => live === l && connect(l), RETRY_MS);
}

const END_TEXT = { final: 'final: the result is recorded', superseded: 'superseded: a new owner re-runs this attempt', abandoned: 'abandoned' };

/** The live output of the open item, as it stands. */
export function liveSection(l) {
  const runs = l.runs;
  const status = l.status === 'live' ? `live · ${l.chunks} chunk${l.chunks === 1 ? '' : 's'}` : l.status;
  return h('div', { class: 'live-output', id: 'live-output', 'data-status': l.status },
    h('div', { class: 'live-head' }, h('span', { class: `live-badge ${l.status}` }, status), l.error ? h('span', { class: 'muted', id: 'live-error' }, ` ${l.error}`) : null),
    runs.length === 0 ? h('div', { class: 'muted', id: 'live-empty' }, 'Nothing streamed yet: the text appears here as the model writes it.') : null,
    ...runs.map((r, i) => h('div', { class: `live-run${r.end === 'superseded' ? ' superseded' : ''}`, 'data-run': `${r.attempt}/${r.run}` },
      runs.length > 1 || r.end ? h('div', { class: 'muted' }, `attempt ${r.attempt}, run ${r.run}${r.end ? ` · ${END_TEXT[r.end] ?? r.end}${r.reason ? ` (${r.reason})` : ''}` : ''}`) : null,
      r.text ? h('pre', { class: 'turn-text', id: i === runs.length - 1 ? 'live-text' : null }, r.text, r.chars > r.text.length ? `\n… ${r.chars - r.text.length} more characters streamed (the recorded text will be shown when the turn ends)` : '') : null,
      r.calls.length ? h('div', { class: 'live-calls', id: i === runs.length - 1 ? 'live-calls' : null }, 'tool calls started: ', ...r.calls.map((c, k) => [k ? ', ' : '', h('code', {}, c.toolName)])) : null,
      r.progress.length ? h('ul', { class: 'live-progress' }, ...r.progress.map((p) => h('li', { class: 'mono' }, p))) : null,
      r.usage ? h('div', { class: 'muted' }, `usage ${r.usage.inputTokens} in / ${r.usage.outputTokens} out`) : null)));
}
