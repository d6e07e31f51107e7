/**
 * The working copy behind `evolve`, `evolveAll` and `decide`. Not exported from the package: callers only
 * ever see finished states, which are never changed again.
 */
import { extendDigest, planDigest } from './digest.js';
import { causedByClientCommand, invalidEvent, isNextEvent } from './event-order.js';
import type { PlanEvent } from './events.js';
import { idempotencyKey } from './ids.js';
import { currentAttempt, getItem, MAX_REJECTIONS_KEPT, type AttemptState, type ItemState, type ItemStatus, type PlanState } from './state.js';

const hasOwn = (record: object, key: string): boolean => Object.prototype.hasOwnProperty.call(record, key);

/** `record[key] = value` that also makes an own `__proto__` key (ids may be any `[A-Za-z0-9._:-]` string). */
function put<T>(record: Record<string, T>, key: string, value: T): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

const SPEC_FIELDS = 7;

/** Fields of an item spec beyond the schema's (a producer's newer schema) are kept on the item, as a spread would. */
function copyExtraFields(spec: object, item: ItemState): void {
  const target = item as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(spec)) if (key !== 'secret' && key !== 'wait' && !hasOwn(target, key)) put(target, key, value);
}

/** How many items of a plan are in each status. */
export type StatusCounts = Record<ItemStatus, number>;

const ITEM_STATUSES = ['pending', 'in_progress', 'result_committed', 'completed', 'failed', 'cancelled'] as const satisfies readonly ItemStatus[];

function zeroCounts(): StatusCounts {
  return { pending: 0, in_progress: 0, result_committed: 0, completed: 0, failed: 0, cancelled: 0 };
}

/**
 * Items per status of the states folds made (derived data, not part of the state: a state read from a
 * snapshot is counted once when a fold starts from it). Lets `decide` settle a plan in O(1) at any size.
 */
const knownCounts = new WeakMap<PlanState, StatusCounts>();

function countStatuses(state: PlanState): StatusCounts {
  const out = zeroCounts();
  for (const id of state.itemOrder) {
    const it = getItem(state, id);
    if (it !== undefined) out[it.status] += 1;
  }
  return out;
}

/**
 * A plan being folded. The state and every object in `owned` were created by this fold and are changed in
 * place; everything else is shared with the state the fold started from and is copied before its first
 * change (the items map, one item, its attempts, one attempt, the lists). So the starting state is never
 * touched, one event costs O(what it changes), and many events cost one copy of each thing they change.
 * The plan digest is brought up to date in `result()`; nothing in the fold reads it.
 *
 * A branch (decide's throwaway fold, dropped with its decision) keeps no plan digest — `decide` reads the
 * digest of the state it was given — and keeps changed items aside until `result()`, so deciding on a
 * large plan does not copy its items map; read items of a branch with `item()`.
 */
export class Fold {
  private readonly state: PlanState;
  private readonly owned = new Set<object>();
  private digestStale = false;
  /** A branch's changed and added items, not yet in `state.items`. */
  private readonly aside: Map<string, ItemState> | null;
  /** Items per status: the start state's (when known) plus what the events changed. */
  private readonly base: StatusCounts;
  private readonly delta: StatusCounts = zeroCounts();

  /**
   * `adopt`: the fold takes `start` over and changes it in place — its items map, item order and lists are
   * treated as its own (items and attempts are still copied before they change). Only for a caller that
   * holds the only reference to `start` and replaces it with the result (see `evolveInPlace`).
   */
  constructor(start: PlanState, branch = false, adopt = false) {
    this.aside = branch ? new Map() : null;
    // Known for a state a fold made; counted once (O(items)) for one that came from elsewhere (a snapshot).
    this.base = knownCounts.get(start) ?? countStatuses(start);
    if (adopt && !branch) {
      this.state = start;
      for (const owned of [start.items, start.itemOrder, start.appliedCommandIds, start.approvals, start.rejections]) this.own(owned);
    } else {
      this.state = { ...start };
    }
  }

  /** The item with this id as the events applied so far left it. */
  item(id: string): ItemState | undefined {
    return this.aside?.get(id) ?? getItem(this.state, id);
  }

  /** The plan status and item order after the events applied so far (no copy). */
  get status(): PlanState['status'] {
    return this.state.status;
  }
  get itemOrder(): readonly string[] {
    return this.state.itemOrder;
  }

  /** Items per status after the events applied so far, in O(1). */
  counts(): StatusCounts {
    const out = zeroCounts();
    for (const k of ITEM_STATUSES) out[k] = this.base[k] + this.delta[k];
    return out;
  }

  private setStatus(it: ItemState, status: ItemStatus): void {
    if (it.status === status) return;
    this.delta[it.status] -= 1;
    this.delta[status] += 1;
    it.status = status;
  }

  /** The state after the events applied so far. It changes if more events are applied to this fold. */
  result(): PlanState {
    if (this.aside !== null && this.aside.size > 0) {
      const items = this.items();
      for (const [id, it] of this.aside) put(items, id, it);
      this.aside.clear();
    }
    if (this.digestStale) {
      this.state.digest = planDigest(this.state);
      this.digestStale = false;
    }
    knownCounts.set(this.state, this.counts());
    return this.state;
  }

  apply(event: PlanEvent): void {
    const s = this.state;
    if (!isNextEvent(s, event)) return;
    const record = event.causationId !== '' && !hasOwn(s.appliedCommandIds, event.causationId) && causedByClientCommand(event, (id) => this.item(id), s);

    switch (event.type) {
      case 'PlanCreated': {
        if (s.status !== 'none') invalidEvent(event, 'plan exists');
        s.goal = event.data.goal;
        s.mode = event.data.mode;
        s.status = event.data.mode === 'execute' ? 'running' : 'draft';
        s.labels = event.data.labels;
        s.parent = event.data.parent;
        s.items = this.own({});
        s.itemOrder = this.own([]);
        s.createdAt = event.occurredAt;
        if (event.data.policy != null) {
          s.createdBy = event.actor;
          s.policy = { ...event.data.policy, seq: event.seq };
        }
        if (event.data.forkedFrom != null) s.forkedFrom = { planId: event.data.forkedFrom.planId, seq: event.data.forkedFrom.seq, chainHead: event.data.forkedFrom.chainHead };
        this.digestStale = this.aside === null;
        break;
      }
      case 'ItemAdded': {
        const spec = event.data.item;
        if (this.item(spec.id) !== undefined) invalidEvent(event, `duplicate item ${spec.id}`);
        const added: ItemState = {
          // Listed rather than spread: `{ ...spec, status, ... }` takes V8's slow path (~7 µs).
          id: spec.id,
          title: spec.title,
          why: spec.why,
          dependsOn: spec.dependsOn,
          tool: spec.tool,
          inputJson: spec.inputJson,
          retry: spec.retry,
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
        // Secret paths are kept on the item only when there are some: an item without them has the state
        // (and state digest) it had before they existed.
        if (spec.secret != null && spec.secret.length > 0) added.secret = [...spec.secret];
        // Likewise a wait item's wait: a tool item has the state it had before waits existed.
        if (spec.wait != null) added.wait = { signal: spec.wait.signal, timeoutMs: spec.wait.timeoutMs ?? null, prompt: spec.wait.prompt ?? null };
        const specFields = Object.keys(spec).length - (hasOwn(spec, 'secret') ? 1 : 0) - (hasOwn(spec, 'wait') ? 1 : 0);
        if (specFields !== SPEC_FIELDS) copyExtraFields(spec, added);
        this.setItem(spec.id, this.own(added));
        this.delta.pending += 1;
        this.own(added.attempts);
        const previous = s.itemOrder;
        if (!this.owned.has(previous)) s.itemOrder = this.own([...previous]);
        s.itemOrder.push(spec.id);
        if (this.aside === null) {
          extendDigest(s, previous, spec);
          this.digestStale = true;
        }
        // A structural change sends a proposed plan back to draft: it must be proposed (and approved) again.
        if (s.status === 'proposed') s.status = 'draft';
        break;
      }
      case 'PlanProposed':
        s.status = 'proposed';
        // The review's requirements are the decision that opened it; a review without one needs one approval.
        if (event.data.policy != null) s.policy = { ...event.data.policy, seq: event.seq };
        else if (s.policy !== undefined) delete s.policy;
        break;
      case 'ApprovalRecorded':
        // One of several approvals the policy needs: recorded, the plan stays proposed.
        this.approvals().push({ decision: 'approved', digest: event.data.digest, by: event.data.by, at: event.occurredAt, seq: event.seq, note: event.data.comment });
        break;
      case 'PlanApproved':
        s.status = 'approved';
        s.approvedDigest = event.data.digest;
        this.approvals().push({ decision: 'approved', digest: event.data.digest, by: event.data.by, at: event.occurredAt, seq: event.seq, note: event.data.comment });
        break;
      case 'PlanRejected':
        s.status = 'draft';
        this.approvals().push({ decision: 'rejected', digest: event.data.digest, by: event.data.by, at: event.occurredAt, seq: event.seq, note: event.data.reason });
        break;
      case 'ItemDelegated': {
        const it = this.changeItem(event, event.data.itemId);
        this.attempt(event, it, event.data.attempt).childPlanId = event.data.childPlanId;
        break;
      }
      case 'IntentRecorded': {
        const found = this.item(event.data.itemId) ?? invalidEvent(event, `unknown item ${event.data.itemId}`);
        if (event.data.idempotencyKey !== idempotencyKey(s.planId, found.id, event.data.attempt)) invalidEvent(event, 'unexpected idempotency key');
        const it = this.changeItem(event, found.id);
        this.attempts(it).push(
          this.own<AttemptState>({
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
          }),
        );
        this.setStatus(it, 'in_progress');
        it.retryAt = null;
        if (s.status === 'approved') s.status = 'running';
        break;
      }
      case 'WaitStarted': {
        const found = this.item(event.data.itemId) ?? invalidEvent(event, `unknown item ${event.data.itemId}`);
        if (found.wait == null) invalidEvent(event, `item ${found.id} is not a wait item`);
        const it = this.changeItem(event, found.id);
        this.attempts(it).push(
          this.own<AttemptState>({
            attempt: event.data.attempt,
            idempotencyKey: idempotencyKey(s.planId, found.id, event.data.attempt),
            executorId: event.data.executorId,
            fencingToken: 0,
            startedAt: event.occurredAt,
            finishedAt: null,
            outcome: null,
            outputJson: null,
            error: null,
            durationMs: null,
            childPlanId: null,
            wait: { signal: event.data.signal, deadline: event.data.deadline },
          }),
        );
        this.setStatus(it, 'in_progress');
        it.retryAt = null;
        if (s.status === 'approved') s.status = 'running';
        break;
      }
      case 'ItemSignalled': {
        const it = this.changeItem(event, event.data.itemId);
        const a = this.attempt(event, it, event.data.attempt);
        if (a.wait === undefined || it.status !== 'in_progress') invalidEvent(event, `item ${it.id} is not waiting`);
        a.finishedAt = event.occurredAt;
        a.outcome = 'succeeded';
        a.outputJson = event.data.dataJson;
        a.error = null;
        a.durationMs = Math.max(0, event.occurredAt - a.startedAt);
        a.wait = { ...a.wait, signalId: event.data.signalId, signalledBy: event.actor };
        this.setStatus(it, 'result_committed');
        // One signal may reach several items waiting for the same name: its id is kept with its first event.
        const signals = this.signals();
        if (!hasOwn(signals, event.data.signalId)) put(signals, event.data.signalId, event.seq);
        break;
      }
      case 'ResultCommitted': {
        const it = this.changeItem(event, event.data.itemId);
        const a = this.attempt(event, it, event.data.attempt);
        a.finishedAt = event.occurredAt;
        a.outcome = event.data.outcome;
        a.outputJson = event.data.outputJson;
        a.error = event.data.error;
        a.durationMs = event.data.durationMs;
        this.setStatus(it, 'result_committed');
        break;
      }
      case 'ItemInherited': {
        const it = this.changeItem(event, event.data.itemId);
        if (s.forkedFrom === undefined || it.status !== 'pending' || it.attempts.length > 0) invalidEvent(event, `item ${it.id} cannot be inherited`);
        this.setStatus(it, 'completed');
        it.outputJson = event.data.outputJson;
        break;
      }
      case 'ItemCompleted': {
        const it = this.changeItem(event, event.data.itemId);
        this.setStatus(it, 'completed');
        it.outputJson = currentAttempt(it)?.outputJson ?? null;
        break;
      }
      case 'ItemRetryScheduled': {
        const it = this.changeItem(event, event.data.itemId);
        this.setStatus(it, 'pending');
        it.retryAt = event.data.retryAt;
        if (event.data.manual) {
          it.attemptBase = it.attempts.length;
          it.failure = null;
        }
        if (s.status === 'failed') s.status = 'running';
        break;
      }
      case 'ItemFailed': {
        const it = this.changeItem(event, event.data.itemId);
        this.setStatus(it, 'failed');
        it.failure = { reason: event.data.reason, error: event.data.error };
        break;
      }
      case 'ItemCheckpointed': {
        const it = this.changeItem(event, event.data.itemId);
        this.attempt(event, it, event.data.attempt);
        it.checkpoint = { attempt: event.data.attempt, checkpoint: event.data.checkpoint, stateJson: event.data.stateJson, at: event.occurredAt, seq: event.seq };
        break;
      }
      case 'EvidenceRecorded': {
        const it = this.changeItem(event, event.data.itemId);
        this.attempt(event, it, event.data.attempt);
        const entry = { attempt: event.data.attempt, name: event.data.name, valueJson: event.data.valueJson, at: event.occurredAt, seq: event.seq };
        it.evidence = it.evidence === undefined ? this.own([entry]) : this.owns(it.evidence) ? (it.evidence.push(entry), it.evidence) : this.own([...it.evidence, entry]);
        break;
      }
      case 'PlanCompleted':
        s.status = 'completed';
        break;
      case 'PlanFailed':
        s.status = 'failed';
        break;
      case 'PlanCancelled':
        for (const id of event.data.cancelledItemIds) this.setStatus(this.changeItem(event, id), 'cancelled');
        s.status = 'cancelled';
        break;
      case 'CommandRejected': {
        const kept = this.rejections();
        if (kept.length >= MAX_REJECTIONS_KEPT) {
          // The window is full: the oldest leaves, the total is kept from here on (see PlanState.rejectionCount).
          s.rejectionCount = (s.rejectionCount ?? kept.length) + 1;
          kept.splice(0, kept.length - MAX_REJECTIONS_KEPT + 1);
        }
        kept.push({
          seq: event.seq,
          at: event.occurredAt,
          commandId: event.data.commandId,
          commandType: event.data.commandType,
          code: event.data.code,
          message: event.data.message,
          field: event.data.field,
        });
        break;
      }
    }

    s.seq = event.seq;
    s.lastHash = event.hash;
    s.updatedAt = event.occurredAt;
    if (record) put(this.commandIds(), event.causationId, event.seq);
  }

  private own<T extends object>(value: T): T {
    this.owned.add(value);
    return value;
  }

  private owns(value: object): boolean {
    return this.owned.has(value);
  }

  private items(): Record<string, ItemState> {
    const s = this.state;
    if (!this.owns(s.items)) s.items = this.own({ ...s.items });
    return s.items;
  }

  private commandIds(): PlanState['appliedCommandIds'] {
    const s = this.state;
    if (!this.owns(s.appliedCommandIds)) s.appliedCommandIds = this.own({ ...s.appliedCommandIds });
    return s.appliedCommandIds;
  }

  private signals(): NonNullable<PlanState['signals']> {
    const s = this.state;
    if (s.signals === undefined || !this.owns(s.signals)) s.signals = this.own({ ...(s.signals ?? {}) });
    return s.signals;
  }

  private approvals(): PlanState['approvals'] {
    const s = this.state;
    if (!this.owns(s.approvals)) s.approvals = this.own([...s.approvals]);
    return s.approvals;
  }

  private rejections(): PlanState['rejections'] {
    const s = this.state;
    if (!this.owns(s.rejections)) s.rejections = this.own([...s.rejections]);
    return s.rejections;
  }

  private setItem(id: string, it: ItemState): void {
    if (this.aside !== null) this.aside.set(id, it);
    else put(this.items(), id, it);
  }

  /** The item, ready to change. */
  private changeItem(event: PlanEvent, id: string): ItemState {
    const found = this.item(id) ?? invalidEvent(event, `unknown item ${id}`);
    if (this.owns(found)) return found;
    const copy = this.own({ ...found });
    this.setItem(id, copy);
    return copy;
  }

  /** The attempts of an item that is ready to change, ready to change. */
  private attempts(it: ItemState): AttemptState[] {
    if (!this.owns(it.attempts)) it.attempts = this.own([...it.attempts]);
    return it.attempts;
  }

  /** The current attempt (which must be `attempt`) of an item that is ready to change, ready to change. */
  private attempt(event: PlanEvent, it: ItemState, attempt: number): AttemptState {
    const last = currentAttempt(it);
    if (last === undefined || last.attempt !== attempt) invalidEvent(event, `attempt ${attempt} is not the current attempt of ${it.id}`);
    if (this.owns(last)) return last;
    const copy = this.own({ ...last });
    this.attempts(it)[it.attempts.length - 1] = copy;
    return copy;
  }
}
