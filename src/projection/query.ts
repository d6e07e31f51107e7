import { PlanStatus, type PlanState } from '../plan/index.js';
import type { Stall } from './poison.js';

/** Item counts by status, for progress bars. */
export interface PlanProgress {
  total: number;
  pending: number;
  running: number;
  completed: number;
  failed: number;
  cancelled: number;
}

/** A plan as a list shows it. */
export interface PlanSummary {
  planId: string;
  goal: string;
  mode: PlanState['mode'];
  status: PlanStatus;
  labels: Record<string, string>;
  parent: PlanState['parent'];
  seq: number;
  digest: string;
  createdAt: number | null;
  updatedAt: number;
  progress: PlanProgress;
  stalled: Pick<Stall, 'code' | 'reason' | 'message' | 'offset' | 'heldEvents'> | null;
}

/**
 * The plan's view in a projection: a state (absent when its first record was poison) and maybe a stall.
 * A plan the reader does not hold in memory (cold: finished, its snapshot archived) comes with no state and
 * its `summary`, which lists and filters it as its state would.
 */
export interface PlanView {
  readonly planId: string;
  readonly state: PlanState | undefined;
  readonly stalled: Stall | null;
  readonly summary?: PlanSummary;
}

export function progressOf(state: PlanState | undefined): PlanProgress {
  const p: PlanProgress = { total: 0, pending: 0, running: 0, completed: 0, failed: 0, cancelled: 0 };
  if (state === undefined) return p;
  for (const id of state.itemOrder) {
    const item = Object.prototype.hasOwnProperty.call(state.items, id) ? state.items[id] : undefined;
    if (item === undefined) continue;
    p.total += 1;
    switch (item.status) {
      case 'pending':
        p.pending += 1;
        break;
      case 'in_progress':
      case 'result_committed':
        p.running += 1;
        break;
      case 'completed':
        p.completed += 1;
        break;
      case 'failed':
        p.failed += 1;
        break;
      case 'cancelled':
        p.cancelled += 1;
        break;
    }
  }
  return p;
}

export function summarize(view: PlanView): PlanSummary {
  if (view.state === undefined && view.summary !== undefined) return view.summary;
  const s = view.state;
  const st = view.stalled;
  return {
    planId: view.planId,
    goal: s?.goal ?? '',
    mode: s?.mode ?? null,
    status: s?.status ?? 'none',
    labels: s?.labels ?? {},
    parent: s?.parent ?? null,
    seq: s?.seq ?? 0,
    digest: s?.digest ?? '',
    createdAt: s?.createdAt ?? null,
    updatedAt: s?.updatedAt ?? 0,
    progress: progressOf(s),
    stalled: st ? { code: st.code, reason: st.reason, message: st.message, offset: st.offset, heldEvents: st.heldEvents } : null,
  };
}

/** A filter problem; `field` names the query parameter. */
export class QueryError extends Error {
  override readonly name = 'QueryError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

export interface PlanQuery {
  /** Plan statuses to keep (any of); `stalled` keeps stalled plans. */
  readonly status?: readonly string[];
  /** Every label must match. */
  readonly labels?: ReadonlyArray<readonly [string, string]>;
  /**
   * Text to find (case-insensitive) in the plan id, the goal, or a label (`key:value`, its key or its
   * value); see {@link matchesSearch}.
   */
  readonly q?: string;
  readonly limit?: number;
  readonly cursor?: string;
}

export interface PlanPage {
  plans: PlanSummary[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
  /** Plans matching the filter in total (all pages). */
  total: number;
}

export const MAX_LIMIT = 500;
/** The longest search text (`q`), in characters. */
export const MAX_SEARCH = 200;
export const DEFAULT_LIMIT = 50;
const STATUS_FILTERS = new Set<string>([...Object.values(PlanStatus), 'stalled']);

/**
 * Parses the query string form: `status=running,proposed` (or repeated), `label=team:core` (repeated =
 * all must match), `q` (text in the id, goal or a label), `limit`, `cursor`. Throws {@link QueryError}
 * naming the parameter.
 */
export function parsePlanQuery(q: { status?: string | string[]; label?: string | string[]; q?: string; limit?: string | number; cursor?: string }): PlanQuery {
  const many = (v: string | string[] | undefined) => (v === undefined ? [] : (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean));
  const status = many(q.status);
  for (const s of status) if (!STATUS_FILTERS.has(s)) throw new QueryError('status', `status: unknown status "${s}" (one of ${[...STATUS_FILTERS].join(', ')})`);
  const labels = (q.label === undefined ? [] : Array.isArray(q.label) ? q.label : [q.label]).map((l): [string, string] => {
    const i = l.indexOf(':');
    if (i <= 0) throw new QueryError('label', `label: expected key:value, got "${l}"`);
    return [l.slice(0, i), l.slice(i + 1)];
  });
  let limit = DEFAULT_LIMIT;
  if (q.limit !== undefined && q.limit !== '') {
    limit = Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new QueryError('limit', `limit: expected an integer 1..${MAX_LIMIT}, got "${String(q.limit)}"`);
  }
  if (q.cursor !== undefined && q.cursor !== '') decodeCursor(q.cursor);
  const search = parseSearch(q.q);
  return { status, labels, limit, cursor: q.cursor || undefined, ...(search !== undefined ? { q: search } : {}) };
}

// C0 and C1 controls, DEL, the line and paragraph separators and the bidirectional overrides: nothing a
// plan id, goal or label is searched for.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/**
 * The search text of `q=`: trimmed, at most {@link MAX_SEARCH} characters, no control characters; undefined
 * when empty. Throws {@link QueryError} naming `q`.
 */
export function parseSearch(q: string | undefined): string | undefined {
  if (q === undefined) return undefined;
  const text = q.trim();
  if (text.length > MAX_SEARCH) throw new QueryError('q', `q: a search is at most ${MAX_SEARCH} characters (this one has ${text.length})`);
  const bad = CONTROL.exec(text);
  if (bad) throw new QueryError('q', `q: a search cannot hold control characters (U+${bad[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at ${bad.index + 1})`);
  return text === '' ? undefined : text;
}

/** Whether a plan's id, goal or one of its labels (`key:value`) holds `needle` (lower case). */
export function matchesSearch(s: { planId: string; goal: string; labels: Record<string, string> }, needle: string): boolean {
  if (s.planId.toLowerCase().includes(needle) || s.goal.toLowerCase().includes(needle)) return true;
  for (const [k, v] of Object.entries(s.labels)) if (`${k}:${v}`.toLowerCase().includes(needle)) return true;
  return false;
}

type CursorKey = [createdAt: number, planId: string];

export function encodeCursor(s: Pick<PlanSummary, 'createdAt' | 'planId'>): string {
  return Buffer.from(JSON.stringify([s.createdAt ?? 0, s.planId]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): CursorKey {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'number' && typeof v[1] === 'string') return [v[0], v[1]];
  } catch {
    // fall through
  }
  throw new QueryError('cursor', 'cursor: not a cursor this API returned');
}

/** Newest first (createdAt descending), then planId: a stable order, so cursors survive live updates. */
function compare(a: CursorKey, b: CursorKey): number {
  if (a[0] !== b[0]) return b[0] - a[0];
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

/**
 * One page of plans matching `query`. Pages follow a keyset cursor (createdAt, planId), so a plan added
 * or changed while paging never shifts a page: no duplicates, no gaps for plans that existed throughout.
 */
export function queryPlans(views: Iterable<PlanView>, query: PlanQuery = {}): PlanPage {
  const status = new Set(query.status ?? []);
  const labels = query.labels ?? [];
  const needle = query.q?.toLowerCase();
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  const limit = query.limit ?? DEFAULT_LIMIT;
  const matching: Array<{ key: CursorKey; view: PlanView }> = [];
  for (const v of views) {
    const s = v.state ?? v.summary;
    if (status.size > 0) {
      const st = s?.status ?? 'none';
      if (!status.has(st) && !(status.has('stalled') && v.stalled !== null)) continue;
    }
    if (labels.length > 0 && (s === undefined || !labels.every(([k, val]) => Object.prototype.hasOwnProperty.call(s.labels, k) && s.labels[k] === val))) continue;
    if (needle !== undefined && !matchesSearch({ planId: v.planId, goal: s?.goal ?? '', labels: s?.labels ?? {} }, needle)) continue;
    matching.push({ key: [s?.createdAt ?? 0, v.planId], view: v });
  }
  matching.sort((a, b) => compare(a.key, b.key));
  const start = after === null ? 0 : firstAfter(matching, after);
  const page = matching.slice(start, start + limit).map((m) => summarize(m.view));
  const last = page[page.length - 1];
  return { plans: page, nextCursor: start + limit < matching.length && last ? encodeCursor(last) : null, total: matching.length };
}

function firstAfter(sorted: Array<{ key: CursorKey }>, after: CursorKey): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(sorted[mid]!.key, after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
