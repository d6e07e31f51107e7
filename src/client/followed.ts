import { Lru } from '../lru.js';
import { evolveAll, evolveInPlace, type PlanEvent, type PlanState } from '../plan/index.js';

/** How a followed plan subscribes to the client's events tail; returns the unsubscribe. */
export type Subscribe = (planId: string, listener: (e: PlanEvent) => void) => () => void;

interface Followed {
  state: PlanState | undefined;
  stop: () => void;
}

/**
 * The plans this client created, followed on its events tail from their first event: the common
 * `createPlan` → `waitFor` needs no read of the log, since the client has seen every event of the plan
 * (its listener was on the tail before the command was sent). A plan stops being followed when a
 * `waitFor` takes its state over, when an event arrives out of order (the tail restarted: the state could
 * miss one, so readers go to the log), when it holds more than `maxItems` items, or when more than
 * `maxPlans` are followed (the oldest goes). Bounded in count and plan size, so a client that creates
 * plans and never waits for them holds a few MiB at most.
 */
export class FollowedPlans {
  /** Oldest begun first: past `maxPlans` the oldest stops being followed. */
  private readonly plans: Lru<string, Followed>;

  constructor(
    private readonly subscribe: Subscribe,
    private readonly limits: { maxPlans: number; maxItems: number } = { maxPlans: 256, maxItems: 1_000 },
  ) {
    this.plans = new Lru({ maxWeight: limits.maxPlans, onEvict: (_, f) => f.stop() });
  }

  /** Starts following a plan about to be created: call before its CreatePlan command is sent. */
  begin(planId: string): void {
    this.drop(planId);
    const f: Followed = { state: undefined, stop: () => {} };
    f.stop = this.subscribe(planId, (e) => {
      if (e.seq !== (f.state?.seq ?? 0) + 1) return this.drop(planId, f);
      const next = f.state === undefined ? evolveAll(undefined, [e]) : evolveInPlace(f.state, [e]);
      if (next === undefined || Object.keys(next.items).length > this.limits.maxItems) return this.drop(planId, f);
      f.state = next;
    });
    this.plans.set(planId, f);
  }

  /**
   * The plan's state as followed from its first event, handed over to the caller (who may change it in
   * place) and no longer followed; undefined when the plan is not followed (then read it from the log).
   */
  take(planId: string): PlanState | undefined {
    const f = this.plans.peek(planId);
    if (f?.state === undefined) return undefined;
    this.drop(planId, f);
    return f.state;
  }

  /** Stops following a plan (only `f`, when given: a newer `begin` of the same id stays). */
  drop(planId: string, f?: Followed): void {
    const cur = this.plans.peek(planId);
    if (!cur || (f !== undefined && cur !== f)) return;
    cur.stop();
    this.plans.delete(planId);
  }

  get size(): number {
    return this.plans.size;
  }
}
