import { planDigest } from './digest.js';
import type { PlanEvent } from './events.js';
import { isNextEvent } from './event-order.js';
import { Fold } from './fold.js';
import { GENESIS_HASH } from './hash-chain.js';
import type { PlanState } from './state.js';

let emptyDigest: string | undefined;

/** The state of a plan before anything happened (status `none`). */
export function initialState(planId: string): PlanState {
  const empty: PlanState = {
    planId,
    goal: '',
    mode: null,
    status: 'none',
    labels: {},
    parent: null,
    items: {},
    itemOrder: [],
    digest: '',
    approvedDigest: null,
    approvals: [],
    seq: 0,
    lastHash: GENESIS_HASH,
    rejections: [],
    appliedCommandIds: {},
    createdAt: null,
    updatedAt: 0,
  };
  emptyDigest ??= planDigest(empty); // the same for every plan: no goal, no mode, no items
  return { ...empty, digest: emptyDigest };
}

/**
 * Applies one event. Pure: the input state is never mutated; the new state shares every object the event
 * did not change (copy-on-write of the touched item, its attempt and the maps that hold them).
 *
 * An event whose seq is already applied is ignored (exact re-sends before compaction), so projections
 * are identical before and after compaction. An event that cannot apply (another plan, a gap in seq,
 * an unknown item, a conflicting re-send) throws a `PlanError` `INVALID_EVENT`; `decide` never
 * produces such events.
 *
 * @example
 * let state: PlanState | undefined;
 * for (const e of events) state = evolve(state, e); // the same state as evolveAll(undefined, events)
 */
export function evolve(state: PlanState | undefined, event: PlanEvent): PlanState {
  const current = state ?? initialState(event.planId);
  if (!isNextEvent(current, event)) return current;
  const fold = new Fold(current);
  fold.apply(event);
  return fold.result();
}

/**
 * {@link evolveAll} for the one holder of a state: `state` is taken over and changed in place (its items map,
 * item order and lists are not copied), so applying events costs what they change at any plan size — an
 * executor's step on a 100,000-item plan does not copy 100,000 map entries. The result is `state` itself
 * (or a new state when `state` is undefined). Never use it on a state anyone else may read: `evolve` and
 * `evolveAll` are the pure ones.
 */
export function evolveInPlace(state: PlanState | undefined, events: Iterable<PlanEvent>): PlanState | undefined {
  const list = [...events];
  let start = state;
  let i = 0;
  // Exact re-sends at the front change nothing.
  for (; i < list.length; i++) {
    const current = start ?? initialState(list[i]!.planId);
    start = current;
    if (isNextEvent(current, list[i]!)) break;
  }
  if (i >= list.length) return start;
  // Checked first on a branch (which copies no items), so events the domain refuses throw before the
  // state is touched: a refused event leaves `state` exactly as it was, as with the pure folds.
  const probe = new Fold(start!, true);
  for (let j = i; j < list.length; j++) probe.apply(list[j]!);
  const fold = new Fold(start!, false, true);
  for (let j = i; j < list.length; j++) fold.apply(list[j]!);
  return fold.result();
}

/**
 * Folds events into a state (from scratch, or from a snapshot): the same state as applying them one by one
 * with `evolve`, for one copy of each thing the events change instead of one per event — use it to replay
 * a log. Pure: `state` is never mutated. Undefined only when `state` is undefined and there are no events.
 *
 * @example evolveAll(snapshot, tail) // restore: the snapshot's state plus the events after it
 */
export function evolveAll(state: PlanState | undefined, events: Iterable<PlanEvent>): PlanState | undefined {
  let fold: Fold | undefined;
  let s = state;
  for (const e of events) {
    if (fold === undefined) {
      const current = s ?? initialState(e.planId);
      s = current;
      if (!isNextEvent(current, e)) continue;
      fold = new Fold(current);
    }
    fold.apply(e);
  }
  return fold === undefined ? s : fold.result();
}
