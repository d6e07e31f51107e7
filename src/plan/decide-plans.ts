// The rules of `decide` for the client's commands: create (and fork), add items, propose, approve, reject,
// cancel, retry an item, a child plan finished, erase, signal a waiting item.
import { canProgress } from './execution.js';
import type {
  AddItems,
  ApprovePlan,
  CancelPlan,
  ChildPlanFinished,
  CreatePlan,
  ErasePlan,
  ForkOrigin,
  InheritedOutput,
  ProposePlan,
  RejectPlan,
  RetryItem,
  SignalItem,
} from './generated/types.js';
import { isReservedPlanId, isValidId } from './ids.js';
import { evaluatePolicy, type ApprovalPolicy } from './policy.js';
import { currentAttempt, getItem, planExists, type ItemState, type PlanState } from './state.js';

import type { DecideLimits, Emitter } from './decide-kit.js';
import { checkError, checkJson, nonEmpty, proposeForPolicy, reject, requireItem, requireNotFinished, reviewAddedItems, settlePlan, validateItems, RESERVED_MESSAGE } from './decide-kit.js';

/** The label a fork carries with its source's plan id: how a source's forks are found. */
export const FORK_LABEL = 'forkedFrom';

export function createPlan(out: Emitter, data: CreatePlan, limits: DecideLimits, policy: ApprovalPolicy | undefined): void {
  if (planExists(out.state)) reject('PLAN_EXISTS', `plan ${out.state.planId} exists`, 'planId');
  nonEmpty(data.goal, 'data.goal');
  if (data.parent !== null) {
    if (!isValidId(data.parent.planId)) reject('INVALID_FIELD', 'data.parent.planId is not a valid id', 'data.parent.planId');
    if (isReservedPlanId(data.parent.planId)) reject('INVALID_FIELD', `data.parent.planId ${RESERVED_MESSAGE}`, 'data.parent.planId');
    if (!isValidId(data.parent.itemId)) reject('INVALID_FIELD', 'data.parent.itemId is not a valid id', 'data.parent.itemId');
  }
  validateItems(undefined, data.items, 'data.items', limits);
  const forkedFrom = data.forkedFrom ?? null;
  const inherited = data.inherited ?? [];
  if (forkedFrom !== null) checkFork(forkedFrom, data, inherited, limits);
  else if (inherited.length > 0) reject('INVALID_FIELD', 'data.inherited needs data.forkedFrom', 'data.inherited');
  // The label lists a source's forks (show, the API, the dashboard): only a fork carries it, naming its source.
  const forkLabel = data.labels[FORK_LABEL];
  if (forkLabel !== undefined && forkLabel !== forkedFrom?.planId) {
    reject('INVALID_FIELD', `label ${FORK_LABEL} is a fork's own: it must name data.forkedFrom.planId`, `data.labels.${FORK_LABEL}`);
  }
  const decision = policy === undefined ? null : evaluatePolicy(policy, { labels: data.labels, items: data.items, itemCount: data.items.length });
  out.emit({ type: 'PlanCreated', data: { goal: data.goal, mode: data.mode, labels: data.labels, parent: data.parent, policy: decision, ...(forkedFrom !== null ? { forkedFrom } : {}) } });
  for (const item of data.items) out.emit({ type: 'ItemAdded', data: { item, followUpOf: null } });
  // A fork's items finished before its fork point: completed with the source's outputs, never run again.
  for (const i of inherited) out.emit({ type: 'ItemInherited', data: { itemId: i.itemId, outputJson: i.outputJson } });
  // An execute plan the policy covers does not run: it is proposed at once (the client's mode cannot bypass
  // the policy). A propose plan is proposed by its client, as always.
  if (decision?.required === true && data.mode === 'execute') proposeForPolicy(out, decision);
}

/**
 * A fork's origin and inherited items: the origin names a valid plan (not the new one), a seq and a sha256
 * hash; each inherited item is one of the fork's items, once, with every dependency inherited too (it
 * finished, so they had), and at least one item is left to run.
 */
function checkFork(origin: ForkOrigin, data: CreatePlan, inherited: readonly InheritedOutput[], limits: DecideLimits): void {
  if (!isValidId(origin.planId) || isReservedPlanId(origin.planId)) reject('INVALID_FIELD', 'data.forkedFrom.planId is not a valid plan id', 'data.forkedFrom.planId');
  if (!Number.isSafeInteger(origin.seq) || origin.seq < 1) reject('INVALID_FIELD', 'data.forkedFrom.seq must be a seq (>= 1)', 'data.forkedFrom.seq');
  if (!/^[0-9a-f]{64}$/.test(origin.chainHead)) reject('INVALID_FIELD', 'data.forkedFrom.chainHead must be a sha256 hash (64 hex digits)', 'data.forkedFrom.chainHead');
  if (data.parent !== null) reject('INVALID_FIELD', 'a fork is not a child plan', 'data.parent');
  const specs = new Map(data.items.map((it) => [it.id, it]));
  const kept = new Set<string>();
  inherited.forEach((i, n) => {
    const f = `data.inherited[${n}]`;
    if (!specs.has(i.itemId)) reject('ITEM_NOT_FOUND', `inherited item ${i.itemId} is not an item of the fork`, `${f}.itemId`);
    if (kept.has(i.itemId)) reject('INVALID_FIELD', `${f} repeats ${i.itemId}`, `${f}.itemId`);
    kept.add(i.itemId);
    checkJson(i.outputJson, `${f}.outputJson`, limits);
  });
  inherited.forEach((i, n) => {
    const open = specs.get(i.itemId)!.dependsOn.filter((d) => !kept.has(d));
    if (open.length > 0) reject('INVALID_FIELD', `inherited item ${i.itemId} depends on ${open.join(', ')}, which the fork runs again`, `data.inherited[${n}].itemId`);
  });
  if (data.items.length > 0 && kept.size === data.items.length) reject('INVALID_FIELD', 'every item is inherited: the fork has nothing to run', 'data.inherited');
}

export function addItems(out: Emitter, s: PlanState, data: AddItems, limits: DecideLimits, policy: ApprovalPolicy | undefined): void {
  requireNotFinished(s);
  if (s.mode === 'propose' && (s.status === 'approved' || s.status === 'running')) {
    reject('REAPPROVAL_REQUIRED', `plan ${s.planId} was approved at digest ${s.approvedDigest ?? ''}; a structural change needs a new approval`, 'data.items');
  }
  if (data.items.length === 0) reject('INVALID_FIELD', 'data.items must not be empty', 'data.items');
  validateItems(s, data.items, 'data.items', limits);
  for (const item of data.items) out.emit({ type: 'ItemAdded', data: { item, followUpOf: null } });
  reviewAddedItems(out, s, data.items, policy, false);
}

/**
 * Propose-mode plans are reviewed; so is an execute plan a policy paused (proposed, or draft after a rejection).
 * An execute plan is never draft or proposed otherwise.
 */
function requireReviewable(s: PlanState): void {
  if (s.mode !== 'propose' && s.status !== 'proposed' && s.status !== 'draft') {
    reject('INVALID_STATE', `plan ${s.planId} is in ${s.mode ?? 'no'} mode; only propose-mode plans and plans a policy paused are reviewed`, null);
  }
}

export function proposePlan(out: Emitter, s: PlanState, _data: ProposePlan, policy: ApprovalPolicy | undefined): void {
  requireNotFinished(s);
  requireReviewable(s);
  if (s.status !== 'draft') reject('INVALID_STATE', `plan ${s.planId} is ${s.status}, not draft`, null);
  const items = s.itemOrder.map((id) => getItem(s, id) as ItemState);
  const decision = policy === undefined ? null : evaluatePolicy(policy, { labels: s.labels, items, itemCount: items.length });
  out.emit({ type: 'PlanProposed', data: { digest: s.digest, itemCount: s.itemOrder.length, policy: decision } });
}

function checkReview(s: PlanState, digest: string, by: string): void {
  requireNotFinished(s);
  requireReviewable(s);
  if ((s.status === 'draft' || s.status === 'proposed') && digest !== s.digest) {
    reject('STALE_DIGEST', `digest ${digest} is not the current digest ${s.digest}`, 'data.digest');
  }
  if (s.status !== 'proposed') reject('INVALID_STATE', `plan ${s.planId} is ${s.status}, not proposed`, null);
  nonEmpty(by, 'data.by');
}

/**
 * One approval. Without a policy review it approves the plan (PlanApproved). A policy review counts distinct
 * approvers of the current digest since the proposal: fewer than `approvers` so far gives ApprovalRecorded
 * (the plan stays proposed), the last one PlanApproved. The same approver twice is DUPLICATE_APPROVER; the
 * plan's creator, when the policy forbids self-approval, SELF_APPROVAL_FORBIDDEN.
 */
export function approvePlan(out: Emitter, s: PlanState, data: ApprovePlan, actor: string): void {
  checkReview(s, data.digest, data.by);
  const review = s.policy;
  if (review === undefined) {
    out.emit({ type: 'PlanApproved', data: { digest: data.digest, by: data.by, comment: data.comment } });
    return;
  }
  if (review.forbidSelfApproval && s.createdBy !== undefined && (data.by === s.createdBy || actor === s.createdBy)) {
    reject('SELF_APPROVAL_FORBIDDEN', `policy ${review.policyId} forbids self-approval: ${s.createdBy} created plan ${s.planId}`, 'data.by');
  }
  const approvers = new Set<string>();
  for (const a of s.approvals) if (a.decision === 'approved' && a.seq > review.seq && a.digest === s.digest) approvers.add(a.by);
  if (approvers.has(data.by)) reject('DUPLICATE_APPROVER', `${data.by} already approved digest ${s.digest}; policy ${review.policyId} needs ${review.approvers} distinct approvers`, 'data.by');
  const count = approvers.size + 1;
  const required = Math.max(1, review.approvers);
  if (count < required) {
    out.emit({ type: 'ApprovalRecorded', data: { digest: data.digest, by: data.by, comment: data.comment, approvals: count, required } });
    return;
  }
  out.emit({ type: 'PlanApproved', data: { digest: data.digest, by: data.by, comment: data.comment } });
  // An item that was in flight when a policy paused the plan may have failed meanwhile (a plan settles only
  // while running): if that blocks every remaining item, the approval must not leave the plan approved forever.
  const failed = s.itemOrder.filter((id) => getItem(s, id)?.status === 'failed');
  if (failed.length > 0 && !canProgress(out.state as PlanState)) {
    out.emit({ type: 'PlanFailed', data: { failedItemIds: failed, reason: `item${failed.length > 1 ? 's' : ''} ${failed.join(', ')} failed while the plan waited for approval; nothing else can progress` } });
  }
}

export function rejectPlan(out: Emitter, s: PlanState, data: RejectPlan): void {
  checkReview(s, data.digest, data.by);
  out.emit({ type: 'PlanRejected', data: { digest: data.digest, by: data.by, reason: data.reason } });
}

export function cancelPlan(out: Emitter, s: PlanState, data: CancelPlan): void {
  requireNotFinished(s, true);
  // A waiting item has nothing running that could still report: it is cancelled with the pending ones.
  const cancelledItemIds = s.itemOrder.filter((id) => {
    const it = getItem(s, id);
    return it?.status === 'pending' || (it?.status === 'in_progress' && currentAttempt(it)?.wait !== undefined);
  });
  out.emit({ type: 'PlanCancelled', data: { reason: data.reason, cancelledItemIds } });
}

export function retryItem(out: Emitter, s: PlanState, data: RetryItem, now: number): void {
  requireNotFinished(s, true);
  const item = requireItem(s, data.itemId, 'data.itemId');
  if (item.status !== 'failed') reject('INVALID_STATE', `item ${item.id} is ${item.status}, not failed`, 'data.itemId');
  out.emit({ type: 'ItemRetryScheduled', data: { itemId: item.id, attempt: item.attempts.length, retryAt: now, manual: true } });
}

export function childPlanFinished(out: Emitter, s: PlanState, data: ChildPlanFinished, now: number, limits: DecideLimits): void {
  const item = requireItem(s, data.parentItemId, 'data.parentItemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt === undefined || attempt.childPlanId !== data.childPlanId) {
    reject('INVALID_STATE', `item ${item.id} is not waiting for child plan ${data.childPlanId}`, 'data.childPlanId');
  }
  checkJson(data.outputJson, 'data.outputJson', limits);
  checkError(data.error, 'data.error', limits);
  const succeeded = data.status === 'completed';
  out.emit({
    type: 'ResultCommitted',
    data: {
      itemId: item.id,
      attempt: attempt.attempt,
      outcome: succeeded ? 'succeeded' : 'failed_terminal',
      outputJson: succeeded ? data.outputJson : null,
      error: succeeded
        ? null
        : (data.error ?? { code: `CHILD_PLAN_${data.status.toUpperCase()}`, message: `child plan ${data.childPlanId} ${data.status}`, detailsJson: null }),
      durationMs: Math.max(0, now - attempt.startedAt),
      executorId: attempt.executorId,
      followUpIds: [],
    },
  });
}

/**
 * ErasePlan decides no events: it is accepted (the owning executor then tombstones the plan's events and
 * snapshot and records the erasure on the ledger-audit topic) or refused. A plan whose items may be
 * running (approved or running) is only erased with `force`.
 */
export function erasePlan(s: PlanState, data: ErasePlan): void {
  nonEmpty(data.by, 'data.by');
  if ((s.status === 'running' || s.status === 'approved') && !data.force) {
    reject('INVALID_STATE', `plan ${s.planId} is ${s.status}; erase --force to erase it anyway`, null);
  }
}


/** The items waiting for a signal (in progress, their current attempt a wait for it), in item order. */
function waitingFor(s: PlanState, signal: string): ItemState[] {
  const out: ItemState[] = [];
  for (const id of s.itemOrder) {
    const it = getItem(s, id);
    if (it?.status === 'in_progress' && currentAttempt(it)?.wait?.signal === signal) out.push(it);
  }
  return out;
}

/**
 * A signal for the items waiting for it: each gets `ItemSignalled` (its attempt succeeded, the data its
 * output) and `ItemCompleted`, then the plan settles as after any completion. Idempotent by `signalId`
 * (DUPLICATE_SIGNAL names the first delivery, also once the plan finished); NOT_WAITING when no item waits for the name now (pending,
 * already signalled, timed out, or no such wait) — a signal is never dropped silently.
 */
export function signalItem(out: Emitter, s: PlanState, data: SignalItem, limits: DecideLimits): void {
  if (!isValidId(data.signal)) reject('INVALID_FIELD', 'data.signal must be 1..128 chars of [A-Za-z0-9._:-]', 'data.signal');
  if (data.signalId.trim() === '' || data.signalId.length > 256) reject('INVALID_FIELD', 'data.signalId must be 1..256 characters', 'data.signalId');
  // Before PLAN_FINISHED: a redelivered signal is told it was delivered, even once the plan it finished is over.
  const first = s.signals !== undefined && Object.prototype.hasOwnProperty.call(s.signals, data.signalId) ? s.signals[data.signalId] : undefined;
  if (first !== undefined) reject('DUPLICATE_SIGNAL', `signal ${data.signalId} was delivered to plan ${s.planId} at seq ${first}`, 'data.signalId');
  requireNotFinished(s, true);
  checkJson(data.dataJson, 'data.dataJson', limits);
  const items = waitingFor(s, data.signal);
  if (items.length === 0) {
    const names = [...new Set(s.itemOrder.flatMap((id) => {
      const it = getItem(s, id);
      const w = it?.status === 'in_progress' ? currentAttempt(it)?.wait : undefined;
      return w === undefined ? [] : [w.signal];
    }))];
    reject('NOT_WAITING', `no item of plan ${s.planId} waits for signal ${data.signal}${names.length ? ` (waiting: ${names.join(', ')})` : ''}`, 'data.signal');
  }
  for (const it of items) {
    const attempt = (currentAttempt(it) as { attempt: number }).attempt;
    out.emit({ type: 'ItemSignalled', data: { itemId: it.id, attempt, signal: data.signal, signalId: data.signalId, dataJson: data.dataJson } });
    out.emit({ type: 'ItemCompleted', data: { itemId: it.id, attempt } });
  }
  settlePlan(out, s);
}
