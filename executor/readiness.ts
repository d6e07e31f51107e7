import { SCAN_WINDOW } from '../src/executor-bounds.js';
import { getItem, readyItem, scanItems, type FirstSeen, type ItemScan, type ItemView, type PlanEvent, type PlanState } from '../src/plan/index.js';

function addDependant(index: Map<string, string[]>, dep: string, id: string): void {
  const list = index.get(dep);
  if (list) list.push(id);
  else index.set(dep, [id]);
}

/**
 * Where an owner looks for a plan's ready items, so a step costs the same on a chain of 10 items and one
 * of 100,000: from a cursor past the plan's settled front, a window of {@link SCAN_WINDOW} items, plus the
 * candidates its steps noted (the dependants of an item completed, an item added or scheduled for
 * retry). A plan whose readiness may have changed anywhere (a command, a takeover, a retry coming due, a
 * wait started or timed out) gets one full scan.
 */
export class ReadinessIndex {
  /** Per plan, the index in its item order before which every item is settled (completed, failed, cancelled). */
  private readonly cursor = new Map<string, number>();
  /**
   * Per plan, items past the window at its cursor whose readiness a step may have changed: the dependants
   * of an item it completed, an item it added or scheduled for retry. A step looks at the window and at
   * these, so it costs the same on a chain of 10 items and one of 100,000.
   */
  private readonly candidates = new Map<string, Set<string>>();
  /** Per plan, the items that depend on each item; built from the plan when first needed, kept up to date by the steps. */
  private readonly dependants = new Map<string, Map<string, string[]>>();
  /** Plans whose readiness may have changed anywhere (a command, a takeover, a retry coming due): their next look scans the whole plan. */
  private readonly fullScan = new Set<string>();

  /** The plan's readiness may have changed anywhere: its next look scans all of it. */
  rescan(planId: string): void {
    this.fullScan.add(planId);
  }

  /** A command may have changed anything (re-opened an item, added items): the next look starts over, with its dependants rebuilt. */
  reset(planId: string): void {
    this.cursor.delete(planId);
    this.dependants.delete(planId);
    this.fullScan.add(planId);
  }

  /** The plan is finished or stalled: its cursor goes (the rest goes with {@link forget}). */
  forgetCursor(planId: string): void {
    this.cursor.delete(planId);
  }

  /** Keeps nothing more of the plan. */
  forget(planId: string): void {
    this.cursor.delete(planId);
    this.candidates.delete(planId);
    this.dependants.delete(planId);
    this.fullScan.delete(planId);
  }

  /**
   * One look at a plan: its ready items (up to `budget`), the scan (for the plan's next wake-up: an
   * incomplete one unless the whole plan was scanned) and what it found to expire. A candidate waiting
   * for its retry reports when through `onRetryAt`.
   */
  look(planId: string, state: PlanState, now: number, budget: number, firstSeen: FirstSeen, onRetryAt: (at: number) => void): { found: ItemScan; scan: Pick<ItemScan, 'nextWakeUp' | 'complete'>; ready: ItemView[] } {
    const full = this.fullScan.has(planId);
    const found = scanItems(state, now, { from: this.cursor.get(planId) ?? 0, limit: budget, firstSeen, ...(full ? {} : { maxScan: SCAN_WINDOW }) });
    this.cursor.set(planId, found.firstOpen);
    if (full && found.complete) this.fullScan.delete(planId);
    const scan = full ? found : { nextWakeUp: found.nextWakeUp, complete: false };
    const ready = full ? found.ready : this.withCandidates(planId, state, now, found.ready, budget, firstSeen, onRetryAt);
    return { found, scan, ready };
  }

  /**
   * Notes, from a step's events, the items whose readiness they may have changed: the dependants of a
   * completed item, an added item (and whom it depends on), an item scheduled for retry.
   */
  noteChanges(planId: string, state: PlanState, events: readonly PlanEvent[]): void {
    if (!events.length) return;
    let set = this.candidates.get(planId);
    const add = (id: string) => (set ??= this.candidates.set(planId, new Set()).get(planId)!).add(id);
    for (const e of events) {
      if (e.type === 'ItemCompleted') {
        for (const id of this.dependantsOf(planId, state).get(e.data.itemId) ?? []) add(id);
      } else if (e.type === 'ItemAdded') {
        add(e.data.item.id);
        const index = this.dependants.get(planId);
        if (index) for (const dep of e.data.item.dependsOn) addDependant(index, dep, e.data.item.id);
      } else if (e.type === 'ItemRetryScheduled') {
        add(e.data.itemId);
      }
    }
  }

  private dependantsOf(planId: string, state: PlanState): Map<string, string[]> {
    let index = this.dependants.get(planId);
    if (index) return index;
    index = new Map();
    for (const id of state.itemOrder) {
      for (const dep of getItem(state, id)?.dependsOn ?? []) addDependant(index, dep, id);
    }
    this.dependants.set(planId, index);
    return index;
  }

  /**
   * The window's ready items and then the plan's candidates that are ready, up to `budget`; a candidate
   * that is not ready is dropped (a later change brings it back), one waiting for its retry notes the
   * wake-up, and a ready one past the budget stays for the next look.
   */
  private withCandidates(planId: string, state: PlanState, now: number, ready: ItemView[], budget: number, firstSeen: FirstSeen, onRetryAt: (at: number) => void): ItemView[] {
    const set = this.candidates.get(planId);
    if (!set?.size) return ready;
    const out = [...ready];
    const taken = new Set(out.map((r) => r.itemId as string));
    for (const id of [...set]) {
      if (out.length >= budget) break;
      set.delete(id);
      if (taken.has(id)) continue;
      const r = readyItem(state, id, now, firstSeen);
      if (r === null) continue;
      if (typeof r === 'number') onRetryAt(r);
      else out.push(r);
    }
    if (!set.size) this.candidates.delete(planId);
    return out;
  }
}
