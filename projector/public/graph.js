// A plan's item graph, readable at 5 items and at hundreds: layers top to bottom (a layer is the longest
// dependency path from a root), each layer's nodes wrapped into rows as wide as the panel (from its left,
// where an opened item's panel leaves them visible), so nothing is
// ever cut off on the right and the text is never scaled down; past 40 items the nodes are compact. A
// tall graph scrolls inside its frame. A node opens its item.
import { $, h, hooks, s, state } from './core.js';

const ITEM_STATUSES = ['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'];
const COMPACT_PAST = 40;

/** Each item's layer: 1 + the deepest of its dependencies drawn here (those of other pages count as none). */
function layersOf(items) {
  const drawn = new Set(items.map((it) => it.id));
  const depth = new Map();
  const depthOf = (it, seen) => {
    if (depth.has(it.id)) return depth.get(it.id);
    if (seen.has(it.id)) return 0; // a cycle cannot be recorded; be safe anyway
    seen.add(it.id);
    let d = 0;
    for (const dep of it.dependsOn) if (drawn.has(dep)) d = Math.max(d, 1 + depthOf(byId.get(dep), seen));
    depth.set(it.id, d);
    return d;
  };
  const byId = new Map(items.map((it) => [it.id, it]));
  // In plan order a dependency comes first, so the walk rarely goes deep.
  for (const it of items) depthOf(it, new Set());
  const layers = [];
  for (const it of items) (layers[depth.get(it.id)] ??= []).push(it);
  return layers.filter(Boolean);
}

const fit = (text, chars) => (text.length > chars ? `${text.slice(0, chars - 1)}…` : text);

/** The graph of `plan` ({ itemOrder, items }) whose items belong to plan `planId`. */
export function graph(plan, planId) {
  const items = plan.itemOrder.map((id) => plan.items[id]).filter(Boolean);
  const compact = items.length > COMPACT_PAST;
  const W = compact ? 150 : 176, H = compact ? 34 : 48, GX = 14, GY = 12, GL = 34, PAD = 16;
  const avail = Math.max(W + 2 * PAD, ($('#detail')?.clientWidth ?? 1000) - 44);
  const perRow = Math.max(1, Math.floor((avail - 2 * PAD + GX) / (W + GX)));
  const width = Math.max(avail, W + 2 * PAD);
  const pos = new Map();
  let y = PAD;
  for (const layer of layersOf(items)) {
    for (let r = 0; r < layer.length; r += perRow) {
      const row = layer.slice(r, r + perRow);
      row.forEach((it, i) => pos.set(it.id, { x: PAD + i * (W + GX), y }));
      y += H + GY;
    }
    y += GL - GY;
  }
  const height = Math.max(H + 2 * PAD, y - GL + PAD);
  const svg = s('svg', { class: `graph${compact ? ' compact' : ''}`, width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `item dependency graph, ${items.length} items` },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L10,5 L0,10 z', fill: '#56627a' }))));
  for (const it of items) {
    const to = pos.get(it.id);
    for (const dep of it.dependsOn) {
      const from = pos.get(dep);
      if (!from) continue;
      const x1 = from.x + W / 2, y1 = from.y + H, x2 = to.x + W / 2, y2 = to.y - 2, dy = Math.max(14, (y2 - y1) / 2);
      svg.append(s('path', { class: `edge${plan.items[dep]?.status === 'completed' ? ' done' : ''}`, d: `M${x1},${y1} C${x1},${y1 + dy} ${x2},${y2 - dy} ${x2},${y2}`, 'marker-end': 'url(#arrow)' }));
    }
  }
  const chars = Math.floor((W - 20) / 6.6);
  for (const it of items) {
    const p = pos.get(it.id);
    const attempts = it.attempts.length;
    const open = () => hooks.openItem?.(planId, it.id);
    const opened = state.item?.planId === planId && state.item?.itemId === it.id;
    svg.append(s('g', { class: `node st-${it.status}${opened ? ' open' : ''}`, transform: `translate(${p.x},${p.y})`, 'data-item': it.id, tabindex: 0, role: 'button', 'aria-label': `open item ${it.id}`, onclick: open, onkeydown: (e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), open()) },
      s('title', {}, `${it.id}: ${it.title}\n${it.why}\nstatus ${it.status}, tool ${it.tool}, ${attempts} attempt(s) — click to open`),
      s('rect', { width: W, height: H }),
      compact
        ? s('text', { x: 10, y: 21 }, fit(it.title || it.id, chars))
        : [s('text', { x: 12, y: 20 }, fit(it.title || it.id, chars)),
          s('text', { x: 12, y: 37, class: 'sub' }, fit(`${it.id} · ${it.status.replace('_', ' ')}${attempts > 1 ? ` · ${attempts} tries` : ''}`, chars + 4))]));
  }
  return h('div', { class: 'graph-wrap', id: 'graph-wrap' }, svg);
}

export function legend() {
  return h('div', { class: 'legend' }, ...ITEM_STATUSES.map((st) => h('span', {}, h('i', { style: `background: var(--${st})` }), st.replace('_', ' '))),
    h('span', { class: 'muted' }, 'click an item to open it'));
}
