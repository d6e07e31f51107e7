import type { RetryPolicy } from './generated/types.js';
import { idempotencyKey, type ItemId, type PlanId } from './ids.js';
import { currentAttempt, getItem, isPlanFinished, type ItemState, type PlanState } from './state.js';

/** The policy used when an item has none: 3 attempts, 1 s, 2 s, ... capped at 60 s. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 3,
  initialBackoffMs: 1000,
  backoffMultiplier: 2,
  maxBackoffMs: 60_000,
});

export function resolveRetryPolicy(policy: RetryPolicy | null): RetryPolicy {
  return policy ?? { ...DEFAULT_RETRY_POLICY };
}

/**
 * When the next attempt may start after the `attempt`-th (1-based, counted in the current retry budget)
 * failed: `from + min(maxBackoffMs, round(initialBackoffMs * backoffMultiplier^(attempt-1)))`.
 *
 * @example nextRetryAt(null, 1, 10_000) === 11_000; nextRetryAt(null, 3, 10_000) === 14_000
 */
export function nextRetryAt(policy: RetryPolicy | null, attempt: number, from: number): number {
  const p = resolveRetryPolicy(policy);
  const exponent = Math.max(0, attempt - 1);
  const raw = p.initialBackoffMs * Math.pow(p.backoffMultiplier, exponent);
  const backoff = Math.min(p.maxBackoffMs, Number.isFinite(raw) ? Math.round(raw) : p.maxBackoffMs);
  return from + Math.max(0, backoff);
}

// ---------------------------------------------------------------------------------------------------------
// Times written by one owner, read by another (docs/concepts/item-protocol.md#clocks)
//
// `retryAt` and a wait's `deadline` are absolute times on the clock of the owner that decided them. A later
// owner whose clock is behind would wait out the difference on top (a retry or a timeout minutes late); one
// whose clock is ahead comes early by the difference. So an owner never waits longer than the full delay
// from when it first saw the retry or the wait: it is due at min(recorded time, firstSeen + delay), where the
// delay is exact — a wait's is `deadline - startedAt` (both from its WaitStarted event, one clock), a retry's
// is its backoff, recomputed from the item's policy and attempt count as `nextRetryAt` computed it. An owner
// whose clock is ahead is early by at most its skew (a retry starts sooner; a wait times out sooner), which
// no time on record can prevent; the skew each owner measures is a metric (plan_ledger_clock_skew_ms).

/**
 * When the owner deciding or scanning first saw an item's open retry or wait, on its own clock: `mark` names
 * which retry or wait ({@link dueMark}). The owner answers from its memo and records the first question, so
 * the same question gets the same answer; without one, the recorded times alone decide.
 */
export type FirstSeen = (planId: string, itemId: string, mark: string) => number;

/** Names an item's open retry (`r:<attempts>:<retryAt>`) or wait (`w:<attempt>:<deadline>`): a new one gets a new first-seen time. */
export function dueMark(item: ItemState): string | null {
  if (item.status === 'pending' && item.retryAt !== null) return `r:${item.attempts.length}:${item.retryAt}`;
  const a = item.status === 'in_progress' ? currentAttempt(item) : undefined;
  if (a?.wait !== undefined && a.wait.deadline !== null) return `w:${a.attempt}:${a.wait.deadline}`;
  return null;
}

/**
 * The delay a pending retry was scheduled with: 0 for a manual retry (RetryItem: `attemptBase` is the
 * attempt count), else the backoff {@link nextRetryAt} added after the attempts used so far.
 */
export function retryDelayMs(item: ItemState): number {
  const used = item.attempts.length - item.attemptBase;
  return used <= 0 ? 0 : nextRetryAt(item.retry, used, 0);
}

/** When a pending item's retry is due for this owner: min(retryAt, firstSeen + its delay); null when it has none. */
export function retryDueAt(state: PlanState, item: ItemState, firstSeen?: FirstSeen): number | null {
  if (item.retryAt === null) return null;
  if (firstSeen === undefined) return item.retryAt;
  const mark = dueMark(item);
  return mark === null ? item.retryAt : Math.min(item.retryAt, firstSeen(state.planId, item.id, mark) + retryDelayMs(item));
}

/** When a waiting item's wait times out for this owner: min(deadline, firstSeen + timeout); null without a deadline. */
export function waitDueAt(state: PlanState, item: ItemState, firstSeen?: FirstSeen): number | null {
  const a = item.status === 'in_progress' ? currentAttempt(item) : undefined;
  const deadline = a?.wait?.deadline ?? null;
  if (a === undefined || deadline === null) return null;
  if (firstSeen === undefined) return deadline;
  const mark = dueMark(item);
  return mark === null ? deadline : Math.min(deadline, firstSeen(state.planId, item.id, mark) + Math.max(0, deadline - a.startedAt));
}

/** What an executor needs to run an item's next attempt. */
export interface ItemView {
  planId: PlanId;
  itemId: ItemId;
  title: string;
  tool: string;
  inputJson: string;
  /** The attempt the executor will record (previous attempts + 1). */
  nextAttempt: number;
  /** The idempotency key of that attempt. */
  idempotencyKey: string;
  retry: RetryPolicy;
  /** Outputs of the items it depends on, by item id. */
  dependencies: Record<string, string | null>;
}

function canStartItems(state: PlanState): boolean {
  if (isPlanFinished(state.status)) return false;
  return state.status === 'running' || state.status === 'approved';
}

function depsCompleted(state: PlanState, item: ItemState): boolean {
  return item.dependsOn.every((d) => getItem(state, d)?.status === 'completed');
}

/**
 * Items an executor may start now, in the order they were added: pending, every dependency completed,
 * retry time reached, in a running (or approved propose-mode) plan. Items in flight are never ready.
 */
export function readyItems(state: PlanState, now: number, firstSeen?: FirstSeen): ItemView[] {
  return scanItems(state, now, firstSeen === undefined ? {} : { firstSeen }).ready;
}

/** What {@link scanItems} found. */
export interface ItemScan {
  /** Ready items from `from` on, at most `limit`, in item order. */
  ready: ItemView[];
  /** The earliest retryAt of a pending item waiting for it, or deadline of a waiting item, among the items looked at (null: none). */
  nextWakeUp: number | null;
  /** Waiting items (wait items in progress) whose deadline has passed, among the items looked at: their timeout is due. */
  expired: Array<{ itemId: string; attempt: number }>;
  /** Index in `itemOrder` of the first item from `from` on that is not completed, failed or cancelled (the order's length when none). */
  firstOpen: number;
  /** Whether the scan reached the end of the item order (false: it stopped at `limit`). */
  complete: boolean;
}

const SETTLED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

/**
 * One pass over a plan's items from index `from` (default 0), stopping once `limit` ready items are found
 * or `maxScan` items have been looked at: what {@link readyItems} and {@link nextWakeUp} tell, for an
 * executor that keeps a cursor past the settled front of a large plan and looks only at a window there, so
 * a step costs what is open near the front, not the plan's size (the items a step can ready further on it
 * looks at one by one: {@link readyItem}).
 */
export function scanItems(state: PlanState, now: number, opts: { from?: number; limit?: number; maxScan?: number; firstSeen?: FirstSeen } = {}): ItemScan {
  const from = Math.max(0, opts.from ?? 0);
  const limit = opts.limit ?? Infinity;
  const end = Math.min(state.itemOrder.length, from + (opts.maxScan ?? Infinity));
  const order = state.itemOrder;
  let firstOpen = -1;
  if (!canStartItems(state)) {
    let i = from;
    for (; i < end; i++) {
      if (!SETTLED.has(getItem(state, order[i]!)?.status ?? 'completed')) {
        firstOpen = i;
        break;
      }
    }
    return { ready: [], nextWakeUp: null, expired: [], firstOpen: firstOpen < 0 ? i : firstOpen, complete: end >= order.length };
  }
  const out: ItemView[] = [];
  const expired: ItemScan['expired'] = [];
  let wake: number | null = null;
  let i = from;
  for (; i < end && out.length < limit; i++) {
    const id = order[i]!;
    const item = getItem(state, id);
    if (item === undefined) continue;
    if (firstOpen < 0 && !SETTLED.has(item.status)) firstOpen = i;
    if (item.status === 'in_progress') {
      const due = waitDueAt(state, item, opts.firstSeen);
      if (due !== null) {
        if (due <= now) expired.push({ itemId: id, attempt: currentAttempt(item)!.attempt });
        else wake = wake === null ? due : Math.min(wake, due);
      }
      continue;
    }
    const r = readyAt(state, id, item, now, opts.firstSeen);
    if (r === null) continue;
    if (typeof r === 'number') wake = wake === null ? r : Math.min(wake, r);
    else out.push(r);
  }
  // No open item in the window: the settled front reaches at least where the scan stopped.
  return { ready: out, nextWakeUp: wake, expired, firstOpen: firstOpen < 0 ? i : firstOpen, complete: i >= order.length };
}

/**
 * One item as {@link scanItems} sees it: its view when it can start now, the time it may (a pending
 * retry), or null (not pending, a dependency not completed, or the plan cannot start items).
 */
export function readyItem(state: PlanState, itemId: string, now: number, firstSeen?: FirstSeen): ItemView | number | null {
  const item = getItem(state, itemId);
  if (item === undefined || !canStartItems(state)) return null;
  return readyAt(state, itemId, item, now, firstSeen);
}

function readyAt(state: PlanState, id: string, item: ItemState, now: number, firstSeen: FirstSeen | undefined): ItemView | number | null {
  if (item.status !== 'pending' || !depsCompleted(state, item)) return null;
  const due = retryDueAt(state, item, firstSeen);
  if (due !== null && due > now) return due;
  const nextAttempt = item.attempts.length + 1;
  return {
    planId: state.planId as PlanId,
    itemId: id as ItemId,
    title: item.title,
    tool: item.tool,
    inputJson: item.inputJson,
    nextAttempt,
    idempotencyKey: idempotencyKey(state.planId, id, nextAttempt),
    retry: resolveRetryPolicy(item.retry),
    dependencies: dependencyOutputs(state, id),
  };
}

/** The earliest retryAt of a pending item still waiting for it, or deadline of a waiting item (for the executor's timer), or null. */
export function nextWakeUp(state: PlanState, now: number, firstSeen?: FirstSeen): number | null {
  if (!canStartItems(state)) return null;
  let min: number | null = null;
  for (const id of state.itemOrder) {
    const item = getItem(state, id);
    if (item === undefined) continue;
    const deadline = waitDueAt(state, item, firstSeen);
    if (deadline !== null) min = min === null ? deadline : Math.min(min, deadline);
    const due = item.status === 'pending' && depsCompleted(state, item) ? retryDueAt(state, item, firstSeen) : null;
    if (due !== null && due > now) min = min === null ? due : Math.min(min, due);
  }
  return min;
}

/** How to continue an item that was mid-protocol when its executor stopped. */
export type RecoveryAction =
  /** Intent recorded, no result: invoke again with the same key (probe first if the tool can). */
  | { kind: 'reinvoke'; attempt: number; idempotencyKey: string }
  /** Result committed, not settled: settle without invoking. */
  | { kind: 'settle'; attempt: number }
  /** Delegated to a child plan: wait for ChildPlanFinished. */
  | { kind: 'await_child'; attempt: number; childPlanId: string }
  /** A wait item waiting for its signal: nothing to invoke; its deadline (if any) is the owner's timer. */
  | { kind: 'await_signal'; attempt: number; signal: string; deadline: number | null };

/**
 * The next step for an item after a crash or rebalance, or null when the item is not mid-protocol.
 * Nothing re-runs a committed result.
 */
export function recoveryAction(state: PlanState, id: string): RecoveryAction | null {
  const item = getItem(state, id);
  if (item === undefined) return null;
  const last = currentAttempt(item);
  if (last === undefined) return null;
  if (item.status === 'result_committed') return { kind: 'settle', attempt: last.attempt };
  if (item.status !== 'in_progress') return null;
  if (last.childPlanId !== null) return { kind: 'await_child', attempt: last.attempt, childPlanId: last.childPlanId };
  if (last.wait !== undefined) return { kind: 'await_signal', attempt: last.attempt, signal: last.wait.signal, deadline: last.wait.deadline };
  return { kind: 'reinvoke', attempt: last.attempt, idempotencyKey: last.idempotencyKey };
}

/** Every item that is mid-protocol with its recovery action, in item order. */
export function pendingRecoveries(state: PlanState): Array<{ itemId: string; action: RecoveryAction }> {
  const out: Array<{ itemId: string; action: RecoveryAction }> = [];
  for (const id of state.itemOrder) {
    const action = recoveryAction(state, id);
    if (action !== null) out.push({ itemId: id, action });
  }
  return out;
}

/** Outputs of the item's dependencies that completed, keyed by item id. */
export function dependencyOutputs(state: PlanState, id: string): Record<string, string | null> {
  const item = getItem(state, id);
  const out: Record<string, string | null> = {};
  if (item === undefined) return out;
  for (const dep of item.dependsOn) {
    const d = getItem(state, dep);
    if (d?.status === 'completed') Object.defineProperty(out, dep, { value: d.outputJson, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/**
 * Whether some item can still make progress: one in flight, or a pending one whose dependencies are
 * completed or can themselves progress (a failed or cancelled dependency blocks for good).
 */
export function canProgress(state: PlanState): boolean {
  const memo = new Map<string, boolean>();
  const progressable = (id: string): boolean => {
    const cached = memo.get(id);
    if (cached !== undefined) return cached;
    memo.set(id, false); // dependency graphs are acyclic; this only guards against corrupt input
    const item = getItem(state, id);
    let result = false;
    if (item !== undefined) {
      if (item.status === 'in_progress' || item.status === 'result_committed') result = true;
      else if (item.status === 'pending') result = item.dependsOn.every((d) => getItem(state, d)?.status === 'completed' || progressable(d));
    }
    memo.set(id, result);
    return result;
  };
  return state.itemOrder.some(progressable);
}
