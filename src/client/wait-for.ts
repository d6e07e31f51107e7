import { LedgerError } from '../errors.js';
import { evolveAll, evolveInPlace, type PlanEvent, type PlanState, type PlanStatus } from '../plan/index.js';
import type { EventsTail } from './events-tail.js';
import type { FollowedPlans } from './followed.js';

/**
 * `Ledger.waitFor`: the plan's state once it matches `status` (a status, or a predicate), read back whole
 * through `deps.readable`; TIMEOUT after `opts.timeoutMs` (default 60 s; `Infinity`: none) naming the status
 * it is in; the reason of `opts.signal` once it aborts.
 * Listens on the events tail first and reads the plan after (a plan this client created is followed
 * already), so no event in between is missed, and each is applied once, by seq.
 */
export async function waitForPlan(
  deps: { events: EventsTail; followed: FollowedPlans; read: (planId: string) => Promise<PlanState | undefined>; readable: (s: PlanState) => Promise<PlanState> },
  planId: string,
  status: PlanStatus | ((s: PlanState) => boolean),
  opts: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<PlanState> {
  opts.signal?.throwIfAborted();
  const match = typeof status === 'function' ? status : (s: PlanState) => s.status === status;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  let state: PlanState | undefined;
  // The first live event copies the state read (it may be shared); later ones change the copy in place,
  // so following a plan costs what each event changes, at any plan size.
  let owned = false;
  const buffered: PlanEvent[] = [];
  let live = false;
  let resolveMatch!: (s: PlanState) => void;
  const matched = new Promise<PlanState>((r) => (resolveMatch = r));
  const apply = (e: PlanEvent) => {
    if (!live) return void buffered.push(e);
    if (state && e.seq <= state.seq) return;
    const next = owned ? evolveInPlace(state, [e]) : evolveAll(state, [e]);
    if (next === undefined) return;
    state = next;
    owned = true;
    if (match(next)) resolveMatch(next);
  };
  // Listen first, then read the log: events in between are seen by both and applied once (by seq).
  const stop = deps.events.listen(planId, apply);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    // A plan this client created has been followed on the tail since before its first event: its state
    // is here already, with the same tail delivering what comes next. Otherwise, read it from the log.
    const followed = deps.followed.take(planId);
    owned = followed !== undefined;
    state = followed ?? (await deps.read(planId));
    live = true;
    for (const e of buffered.sort((a, b) => a.seq - b.seq)) apply(e);
    if (state && match(state)) return await deps.readable(state);
    const reached = await Promise.race([
      matched,
      new Promise<PlanState>((_, reject) => {
        if (opts.signal) {
          const signal = opts.signal;
          onAbort = () => reject(signal.reason);
          signal.addEventListener('abort', onAbort, { once: true });
        }
        if (timeoutMs === Infinity) return;
        timer = setTimeout(
          () => reject(new LedgerError('TIMEOUT', `plan ${planId} did not reach ${typeof status === 'string' ? status : 'the condition'} within ${timeoutMs} ms (now ${state?.status ?? 'unknown'})`, { planId, status: state?.status })),
          timeoutMs,
        );
      }),
    ]);
    return await deps.readable(reached);
  } finally {
    stop();
    clearTimeout(timer);
    if (onAbort) opts.signal?.removeEventListener('abort', onAbort);
  }
}
