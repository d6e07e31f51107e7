import { digestAfterAdding, planDigest } from './digest.js';
import { PlanError } from './errors.js';
import type { PlanEvent } from './events.js';
import { GENESIS_HASH } from './hash-chain.js';
import { idempotencyKey } from './ids.js';
import { currentAttempt, getItem, type AttemptState, type ItemState, type PlanState } from './state.js';

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
  return { ...empty, digest: planDigest(empty) };
}

function invalid(event: PlanEvent, message: string): never {
  throw new PlanError('INVALID_EVENT', `${event.eventId} (${event.type}): ${message}`, 'type');
}

/**
 * Applies one event. Pure: the input state is never mutated (new objects, structural sharing).
 *
 * An event whose seq is already applied is ignored (exact re-sends before compaction), so projections
 * are identical before and after compaction. An event that cannot apply (another plan, a gap in seq,
 * an unknown item, a conflicting re-send) throws a `PlanError` `INVALID_EVENT`; `decide` never
 * produces such events.
 */
export function evolve(state: PlanState | undefined, event: PlanEvent): PlanState {
  const current = state ?? initialState(event.planId);
  if (event.planId !== current.planId) invalid(event, `belongs to another plan than ${current.planId}`);
  if (event.seq <= current.seq) {
    // Already applied. Only an exact re-send is harmless; a different event with a used seq is a fork.
    if (event.seq === current.seq && event.hash !== current.lastHash) invalid(event, `conflicts with applied seq ${event.seq}`);
    return current;
  }
  if (event.seq !== current.seq + 1) invalid(event, `seq gap: expected ${current.seq + 1}`);
  if (event.prevHash !== current.lastHash) invalid(event, 'prevHash does not match the last applied hash');
  if (current.status === 'none' && event.type !== 'PlanCreated' && event.type !== 'CommandRejected') invalid(event, 'plan does not exist');

  const applied = Object.prototype.hasOwnProperty.call(current.appliedCommandIds, event.causationId) || event.causationId === '';
  const base: PlanState = {
    ...current,
    seq: event.seq,
    lastHash: event.hash,
    updatedAt: event.occurredAt,
    appliedCommandIds: applied ? current.appliedCommandIds : { ...current.appliedCommandIds, [event.causationId]: event.seq },
  };

  const item = (id: string): ItemState => getItem(current, id) ?? invalid(event, `unknown item ${id}`);
  const withItem = (s: PlanState, next: ItemState): PlanState => ({ ...s, items: { ...s.items, [next.id]: next } });
  const withAttempt = (it: ItemState, attempt: number, patch: Partial<AttemptState>): ItemState => {
    const last = currentAttempt(it);
    if (last === undefined || last.attempt !== attempt) invalid(event, `attempt ${attempt} is not the current attempt of ${it.id}`);
    return { ...it, attempts: [...it.attempts.slice(0, -1), { ...last, ...patch }] };
  };

  switch (event.type) {
    case 'PlanCreated': {
      if (current.status !== 'none') invalid(event, 'plan exists');
      const created: PlanState = {
        ...base,
        goal: event.data.goal,
        mode: event.data.mode,
        status: event.data.mode === 'execute' ? 'running' : 'draft',
        labels: event.data.labels,
        parent: event.data.parent,
        items: {},
        itemOrder: [],
        createdAt: event.occurredAt,
      };
      return { ...created, digest: planDigest(created) };
    }
    case 'ItemAdded': {
      const spec = event.data.item;
      if (getItem(current, spec.id) !== undefined) invalid(event, `duplicate item ${spec.id}`);
      const added: ItemState = {
        ...spec,
        status: 'pending',
        addedSeq: event.seq,
        addedAt: event.occurredAt,
        followUpOf: event.data.followUpOf,
        attempts: [],
        retryAt: null,
        attemptBase: 0,
        outputJson: null,
        failure: null,
      };
      const itemOrder = [...current.itemOrder, spec.id];
      const digest = digestAfterAdding(current, spec, itemOrder);
      return {
        ...withItem(base, added),
        itemOrder,
        digest,
        // A structural change sends a proposed plan back to draft: it must be proposed (and approved) again.
        status: current.status === 'proposed' ? 'draft' : current.status,
      };
    }
    case 'PlanProposed':
      return { ...base, status: 'proposed' };
    case 'PlanApproved':
      return {
        ...base,
        status: 'approved',
        approvedDigest: event.data.digest,
        approvals: [
          ...current.approvals,
          { decision: 'approved', digest: event.data.digest, by: event.data.by, at: event.occurredAt, seq: event.seq, note: event.data.comment },
        ],
      };
    case 'PlanRejected':
      return {
        ...base,
        status: 'draft',
        approvals: [
          ...current.approvals,
          { decision: 'rejected', digest: event.data.digest, by: event.data.by, at: event.occurredAt, seq: event.seq, note: event.data.reason },
        ],
      };
    case 'ItemDelegated': {
      const it = item(event.data.itemId);
      return withItem(base, withAttempt(it, event.data.attempt, { childPlanId: event.data.childPlanId }));
    }
    case 'IntentRecorded': {
      const it = item(event.data.itemId);
      const attempt: AttemptState = {
        attempt: event.data.attempt,
        idempotencyKey: event.data.idempotencyKey,
        executorId: event.data.executorId,
        fencingToken: event.data.fencingToken,
        startedAt: event.occurredAt,
        finishedAt: null,
        outcome: null,
        outputJson: null,
        error: null,
        durationMs: null,
        childPlanId: null,
      };
      if (event.data.idempotencyKey !== idempotencyKey(current.planId, it.id, event.data.attempt)) invalid(event, 'unexpected idempotency key');
      const next = withItem(base, { ...it, status: 'in_progress', retryAt: null, attempts: [...it.attempts, attempt] });
      return current.status === 'approved' ? { ...next, status: 'running' } : next;
    }
    case 'ResultCommitted': {
      const it = item(event.data.itemId);
      const updated = withAttempt(it, event.data.attempt, {
        finishedAt: event.occurredAt,
        outcome: event.data.outcome,
        outputJson: event.data.outputJson,
        error: event.data.error,
        durationMs: event.data.durationMs,
      });
      return withItem(base, { ...updated, status: 'result_committed' });
    }
    case 'ItemCompleted': {
      const it = item(event.data.itemId);
      const last = currentAttempt(it);
      return withItem(base, { ...it, status: 'completed', outputJson: last?.outputJson ?? null });
    }
    case 'ItemRetryScheduled': {
      const it = item(event.data.itemId);
      const retried: ItemState = event.data.manual
        ? { ...it, status: 'pending', retryAt: event.data.retryAt, attemptBase: it.attempts.length, failure: null }
        : { ...it, status: 'pending', retryAt: event.data.retryAt };
      const next = withItem(base, retried);
      return current.status === 'failed' ? { ...next, status: 'running' } : next;
    }
    case 'ItemFailed': {
      const it = item(event.data.itemId);
      return withItem(base, { ...it, status: 'failed', failure: { reason: event.data.reason, error: event.data.error } });
    }
    case 'PlanCompleted':
      return { ...base, status: 'completed' };
    case 'PlanFailed':
      return { ...base, status: 'failed' };
    case 'PlanCancelled': {
      const items = { ...current.items };
      for (const id of event.data.cancelledItemIds) {
        Object.defineProperty(items, id, { value: { ...item(id), status: 'cancelled' }, enumerable: true, writable: true, configurable: true });
      }
      return { ...base, status: 'cancelled', items };
    }
    case 'CommandRejected':
      return {
        ...base,
        rejections: [
          ...current.rejections,
          {
            seq: event.seq,
            at: event.occurredAt,
            commandId: event.data.commandId,
            commandType: event.data.commandType,
            code: event.data.code,
            message: event.data.message,
            field: event.data.field,
          },
        ],
      };
  }
}

/** Folds events into a state (from scratch, or from a snapshot). */
export function evolveAll(state: PlanState | undefined, events: Iterable<PlanEvent>): PlanState | undefined {
  let s = state;
  for (const e of events) s = evolve(s, e);
  return s;
}
