// Bounded reads of one plan, whatever its size: a page of its items (in plan order, optionally by status),
// its header without the items, a window of its audit timeline. A plan may hold 100,000 items; every
// answer here is bounded by the page size, never by the plan.
import { ItemStatus, type ItemState, type PlanEvent, type PlanState } from '../../../src/plan/index.js';
import { attemptsOf, QueryError, summarize, timelineEntry, type AttemptTimeline, type PlanProgress, type PlanSummary, type PlanView, type TimelineEntry } from '../../../src/projection/index.js';

export const ITEM_PAGE_DEFAULT = 100;
export const ITEM_PAGE_MAX = 1000;
export const AUDIT_PAGE_DEFAULT = 100;
export const AUDIT_PAGE_MAX = 1000;
/** Rejection records a plan header carries (the newest); `rejectionCount` says how many the plan holds. */
export const HEADER_REJECTIONS = 50;

export type ItemCounts = Record<ItemStatus, number>;

const ITEM_STATUSES = Object.values(ItemStatus);

// Counted once per plan and seq: every item change is an event, so a seq names the counts. A plan that
// changes between two requests is counted again (O(items), ~1 ms at 100,000).
const counted = new WeakMap<PlanState, { seq: number; counts: ItemCounts }>();

/** Items per status. */
export function itemCounts(state: PlanState): ItemCounts {
  const known = counted.get(state);
  if (known !== undefined && known.seq === state.seq) return known.counts;
  const counts = Object.fromEntries(ITEM_STATUSES.map((s) => [s, 0])) as ItemCounts;
  for (const id of state.itemOrder) {
    const it = itemOf(state, id);
    if (it !== undefined) counts[it.status] += 1;
  }
  counted.set(state, { seq: state.seq, counts });
  return counts;
}

const itemOf = (state: PlanState, id: string): ItemState | undefined => (Object.prototype.hasOwnProperty.call(state.items, id) ? state.items[id] : undefined);

/** `status=completed,failed` (or repeated) as item statuses; throws {@link QueryError} naming `status`. */
export function parseItemStatuses(value: string | readonly string[] | undefined): ItemStatus[] {
  const raw = value === undefined ? [] : (typeof value === 'string' ? [value] : value).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
  const out = new Set<ItemStatus>();
  for (const s of raw) {
    if (!(ITEM_STATUSES as string[]).includes(s)) throw new QueryError('status', `status: unknown item status "${s.slice(0, 64)}" (one of ${ITEM_STATUSES.join(', ')})`);
    out.add(s as ItemStatus);
  }
  return [...out];
}

/**
 * A paging number as the route got it from the schema, checked again: ajv's coercion turns `1e400` into
 * Infinity, which passes `type: integer` and `maximum`. Throws {@link QueryError} naming the parameter.
 */
export function pageNumber(field: string, value: number | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isSafeInteger(value) || value < min || value > max) throw new QueryError(field, `querystring: ${field} must be an integer ${min}..${max}`);
  return value;
}

export interface ItemPage {
  planId: string;
  /** The plan's seq the page was read at. */
  seq: number;
  offset: number;
  limit: number;
  /** The statuses kept (any of); empty: all. */
  status: ItemStatus[];
  /** Items matching the filter (all pages). */
  total: number;
  /** Items in the plan, and per status. */
  itemCount: number;
  counts: ItemCounts;
  /** Pass as `offset` for the next page; null on the last page. */
  nextOffset: number | null;
  items: ItemState[];
}

/**
 * Items `offset .. offset+limit-1` of those matching `status`, in plan order (`itemOrder`). Without a
 * filter the page is a slice; with one, the walk stops at the page's last match (the total comes from the
 * per-status counts), so a page costs what the items before it cost, not the plan.
 */
export function itemPage(state: PlanState, q: { offset?: number; limit?: number; status?: readonly ItemStatus[] }): ItemPage {
  const offset = q.offset ?? 0;
  const limit = q.limit ?? ITEM_PAGE_DEFAULT;
  const status = [...(q.status ?? [])];
  const counts = itemCounts(state);
  const itemCount = state.itemOrder.length;
  const items: ItemState[] = [];
  let total: number;
  if (status.length === 0 || status.length === ITEM_STATUSES.length) {
    total = itemCount;
    for (const id of state.itemOrder.slice(offset, offset + limit)) {
      const it = itemOf(state, id);
      if (it !== undefined) items.push(it);
    }
  } else {
    const keep = new Set<string>(status);
    total = status.reduce((n, s) => n + counts[s], 0);
    let seen = 0;
    for (const id of state.itemOrder) {
      if (items.length >= limit || seen >= total) break;
      const it = itemOf(state, id);
      if (it === undefined || !keep.has(it.status)) continue;
      if (seen >= offset) items.push(it);
      seen += 1;
    }
  }
  const next = offset + limit;
  return { planId: state.planId, seq: state.seq, offset, limit, status, total, itemCount, counts, nextOffset: next < total ? next : null, items };
}

/**
 * The plan without what grows with it: no `items`, `itemOrder` or `appliedCommandIds`, the newest
 * {@link HEADER_REJECTIONS} rejections; with the item count and the counts per status instead.
 */
export type PlanHeader = Omit<PlanState, 'items' | 'itemOrder' | 'appliedCommandIds'> & { itemCount: number; counts: ItemCounts; rejectionCount: number };

export function planHeader(state: PlanState): PlanHeader {
  const { items: _items, itemOrder, appliedCommandIds: _applied, rejections, ...rest } = state;
  return { ...rest, rejections: rejections.slice(-HEADER_REJECTIONS), rejectionCount: rejections.length, itemCount: itemOrder.length, counts: itemCounts(state) };
}

/** The list's progress of a plan, from the per-status counts. */
export function progressFromCounts(counts: ItemCounts): PlanProgress {
  const total = ITEM_STATUSES.reduce((n, s) => n + counts[s], 0);
  return { total, pending: counts.pending, running: counts.in_progress + counts.result_committed, completed: counts.completed, failed: counts.failed, cancelled: counts.cancelled };
}

/**
 * `summarize(view)` without its walk over every item (progressOf): the items are left out of the copy it
 * reads (a shallow copy, O(fields)) and the progress comes from the counts, known per seq.
 */
export function headerSummary(view: PlanView): PlanSummary {
  if (view.state === undefined) return summarize(view);
  return { ...summarize({ ...view, state: { ...view.state, itemOrder: [] } }), progress: progressFromCounts(itemCounts(view.state)) };
}

// IntentRecorded events in a plan's history up to its last event, kept per last event object with the
// length (the read model hands out copies of the history array, but the events in it are the same objects).
const intentsUpTo = new WeakMap<PlanEvent, { length: number; intents: number }>();
function countIntents(events: readonly PlanEvent[]): number {
  const last = events[events.length - 1];
  if (last === undefined) return 0;
  const known = intentsUpTo.get(last);
  if (known !== undefined && known.length === events.length) return known.intents;
  let intents = 0;
  for (const e of events) if (e.type === 'IntentRecorded') intents += 1;
  intentsUpTo.set(last, { length: events.length, intents });
  return intents;
}

export interface AuditWindow {
  /** Timeline entries with seq < `before` (all when null), the newest `limit` of them, oldest first. */
  timeline: TimelineEntry[];
  /** The attempts whose intent is in the same window of seqs, oldest first (each with its whole course). */
  attempts: AttemptTimeline[];
  page: {
    limit: number;
    before: number | null;
    /** Pass as `before` for the next older window; null when the window reaches the first event. */
    nextBefore: number | null;
    /** Events and attempts up to the as-of point (all windows). */
    events: number;
    attempts: number;
  };
}

/** A window of `events` (ascending by seq, already cut at the as-of point): the newest `limit` before `before`. */
export function auditWindow(events: readonly PlanEvent[], q: { limit?: number; before?: number }): AuditWindow {
  const limit = q.limit ?? AUDIT_PAGE_DEFAULT;
  const before = q.before ?? null;
  // events[] is ordered by seq: the first index at or past `before`.
  let end = events.length;
  if (before !== null) {
    let lo = 0;
    let hi = events.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (events[mid]!.seq < before) lo = mid + 1;
      else hi = mid;
    }
    end = lo;
  }
  const start = Math.max(0, end - limit);
  const window = events.slice(start, end);
  const first = window[0]?.seq ?? Number.POSITIVE_INFINITY;
  const last = window[window.length - 1]?.seq ?? Number.NEGATIVE_INFINITY;
  // An attempt's result and settlement come after its intent: the events from the window's first on
  // tell the whole course of every attempt whose intent is in the window.
  const attempts = attemptsOf(events.slice(start)).filter((a) => a.intentSeq >= first && a.intentSeq <= last);
  const intents = countIntents(events);
  return {
    timeline: window.map(timelineEntry),
    attempts,
    page: { limit, before, nextBefore: start > 0 ? first : null, events: events.length, attempts: intents },
  };
}
