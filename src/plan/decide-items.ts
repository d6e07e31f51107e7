// The rules of `decide` for the executor's item protocol: record an intent, commit a result, settle, a
// checkpoint and evidence of a running attempt, a wait that expired, an item delegated to a child plan.
import {
  type CommitResult,
  type DelegateItem,
  type ExpireWait,
  type RecordCheckpoint,
  type RecordEvidence,
  type RecordIntent,
  type SettleItem,
} from './commands.js';
import { nextRetryAt, resolveRetryPolicy, retryDueAt, waitDueAt, type FirstSeen } from './execution.js';
import { idempotencyKey, isReservedPlanId, isValidId } from './ids.js';
import type { ApprovalPolicy } from './policy.js';
import { currentAttempt, getItem, isPlanFinished, type PlanState } from './state.js';

import type { DecideLimits, Emitter } from './decide-kit.js';
import { checkError, checkJson, nonEmpty, reject, requireItem, requireNotFinished, reviewAddedItems, settlePlan, validateItems, RESERVED_MESSAGE } from './decide-kit.js';

// ---------------------------------------------------------------------------------------------------------
// executor commands

export function recordIntent(out: Emitter, s: PlanState, data: RecordIntent, now: number, firstSeen: FirstSeen | undefined): void {
  requireNotFinished(s);
  if (s.status !== 'running' && s.status !== 'approved') reject('INVALID_STATE', `plan ${s.planId} is ${s.status}; nothing runs before approval`, null);
  const item = requireItem(s, data.itemId, 'data.itemId');
  if (item.status !== 'pending') reject('INVALID_STATE', `item ${item.id} is ${item.status}, not pending`, 'data.itemId');
  const waiting = item.dependsOn.filter((d) => getItem(s, d)?.status !== 'completed');
  if (waiting.length > 0) reject('INVALID_STATE', `item ${item.id} waits for ${waiting.join(', ')}`, 'data.itemId');
  const due = retryDueAt(s, item, firstSeen);
  if (due !== null && due > now) reject('INVALID_STATE', `item ${item.id} may not retry before ${due}`, 'data.itemId');
  nonEmpty(data.executorId, 'data.executorId');
  const attempt = item.attempts.length + 1;
  if (item.wait != null) {
    // A wait item runs no tool: its attempt waits for the signal, with its deadline on record.
    const t = item.wait.timeoutMs ?? null;
    out.emit({ type: 'WaitStarted', data: { itemId: item.id, attempt, signal: item.wait.signal, deadline: t === null ? null : now + t, executorId: data.executorId } });
    return;
  }
  out.emit({
    type: 'IntentRecorded',
    data: {
      itemId: item.id,
      attempt,
      idempotencyKey: idempotencyKey(s.planId, item.id, attempt),
      executorId: data.executorId,
      fencingToken: data.fencingToken,
    },
  });
}

export function commitResult(out: Emitter, s: PlanState, data: CommitResult, limits: DecideLimits, policy: ApprovalPolicy | undefined): void {
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not in_progress`, 'data.itemId');
  if (attempt.attempt !== data.attempt) reject('INVALID_STATE', `attempt ${data.attempt} is not the current attempt ${attempt.attempt} of ${item.id}`, 'data.attempt');
  if (attempt.childPlanId !== null) reject('INVALID_STATE', `item ${item.id} is delegated to ${attempt.childPlanId}; its result comes from ChildPlanFinished`, 'data.itemId');
  if (attempt.wait !== undefined) reject('INVALID_STATE', `item ${item.id} waits for signal ${attempt.wait.signal}; its result comes from SignalItem or its timeout`, 'data.itemId');
  if (data.durationMs < 0) reject('INVALID_FIELD', 'data.durationMs must be >= 0', 'data.durationMs');
  nonEmpty(data.executorId, 'data.executorId');
  checkJson(data.outputJson, 'data.outputJson', limits);
  checkError(data.error, 'data.error', limits);
  if (data.followUps.length > 0 && data.outcome !== 'succeeded') reject('INVALID_FIELD', 'follow-up items need outcome succeeded', 'data.followUps');
  // A cancelled plan takes no new work: the result is recorded, follow-ups are dropped.
  const followUps = isPlanFinished(s.status) ? [] : data.followUps;
  validateItems(s, followUps, 'data.followUps', limits);
  out.emit({
    type: 'ResultCommitted',
    data: {
      itemId: item.id,
      attempt: attempt.attempt,
      outcome: data.outcome,
      outputJson: data.outputJson,
      error: data.error,
      durationMs: data.durationMs,
      executorId: data.executorId,
      followUpIds: followUps.map((f) => f.id),
    },
  });
  for (const f of followUps) out.emit({ type: 'ItemAdded', data: { item: f, followUpOf: item.id } });
  reviewAddedItems(out, s, followUps, policy, true);
}

export function settleItem(out: Emitter, s: PlanState, data: SettleItem, now: number): void {
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'result_committed' || attempt === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not result_committed`, 'data.itemId');
  const base = { itemId: item.id, attempt: attempt.attempt };
  if (attempt.outcome === 'succeeded') {
    out.emit({ type: 'ItemCompleted', data: base });
  } else if (s.status === 'cancelled') {
    out.emit({ type: 'ItemFailed', data: { ...base, reason: 'plan_cancelled', error: attempt.error } });
  } else if (attempt.outcome === 'failed_terminal') {
    out.emit({ type: 'ItemFailed', data: { ...base, reason: 'terminal', error: attempt.error } });
  } else {
    const used = attempt.attempt - item.attemptBase;
    const policy = resolveRetryPolicy(item.retry);
    if (used >= policy.maxAttempts) out.emit({ type: 'ItemFailed', data: { ...base, reason: 'retries_exhausted', error: attempt.error } });
    else out.emit({ type: 'ItemRetryScheduled', data: { ...base, retryAt: nextRetryAt(policy, used, now), manual: false } });
  }
  settlePlan(out, s);
}

/** The in-progress, undelegated current attempt `attempt` of an item, or a coded rejection. */
function runningAttempt(s: PlanState, itemId: string, attempt: number) {
  const item = requireItem(s, itemId, 'data.itemId');
  const current = currentAttempt(item);
  if (item.status !== 'in_progress' || current === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not in_progress`, 'data.itemId');
  if (current.attempt !== attempt) reject('INVALID_STATE', `attempt ${attempt} is not the current attempt ${current.attempt} of ${item.id}`, 'data.attempt');
  if (current.childPlanId !== null) reject('INVALID_STATE', `item ${item.id} is delegated to ${current.childPlanId}`, 'data.itemId');
  if (current.wait !== undefined) reject('INVALID_STATE', `item ${item.id} waits for signal ${current.wait.signal}; no tool runs`, 'data.itemId');
  return item;
}

export function recordCheckpoint(out: Emitter, s: PlanState, data: RecordCheckpoint, limits: DecideLimits): void {
  requireNotFinished(s, true);
  const item = runningAttempt(s, data.itemId, data.attempt);
  checkJson(data.stateJson, 'data.stateJson', limits);
  out.emit({ type: 'ItemCheckpointed', data: { itemId: item.id, attempt: data.attempt, checkpoint: (item.checkpoint?.checkpoint ?? 0) + 1, stateJson: data.stateJson } });
}

/** Most evidence records one attempt may attach. */
export const MAX_EVIDENCE_PER_ATTEMPT = 1000;

export function recordEvidence(out: Emitter, s: PlanState, data: RecordEvidence, limits: DecideLimits): void {
  requireNotFinished(s, true);
  const item = runningAttempt(s, data.itemId, data.attempt);
  if (data.name.trim() === '' || data.name.length > 128) reject('INVALID_FIELD', 'data.name must be 1..128 characters', 'data.name');
  checkJson(data.valueJson, 'data.valueJson', limits);
  const count = (item.evidence ?? []).filter((e) => e.attempt === data.attempt).length;
  if (count >= MAX_EVIDENCE_PER_ATTEMPT) reject('PAYLOAD_TOO_LARGE', `an attempt may attach at most ${MAX_EVIDENCE_PER_ATTEMPT} evidence records`, 'data.name');
  out.emit({ type: 'EvidenceRecorded', data: { itemId: item.id, attempt: data.attempt, name: data.name, valueJson: data.valueJson } });
}

/** A waiting attempt's deadline passed: it fails, retryably, with WAIT_TIMEOUT (SettleItem applies the retry policy). */
export function expireWait(out: Emitter, s: PlanState, data: ExpireWait, now: number, firstSeen: FirstSeen | undefined): void {
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt?.wait === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not waiting`, 'data.itemId');
  if (attempt.attempt !== data.attempt) reject('INVALID_STATE', `attempt ${data.attempt} is not the current attempt ${attempt.attempt} of ${item.id}`, 'data.attempt');
  const deadline = attempt.wait.deadline;
  const due = waitDueAt(s, item, firstSeen);
  if (deadline === null || due === null || due > now) reject('INVALID_STATE', `the wait of ${item.id} has ${deadline === null ? 'no deadline' : `its deadline at ${due ?? deadline}`}`, 'data.itemId');
  nonEmpty(data.executorId, 'data.executorId');
  out.emit({
    type: 'ResultCommitted',
    data: {
      itemId: item.id,
      attempt: attempt.attempt,
      outcome: 'failed_retryable',
      outputJson: null,
      error: { code: 'WAIT_TIMEOUT', message: `no signal ${attempt.wait.signal} arrived before the deadline ${new Date(deadline).toISOString()}`, detailsJson: null },
      durationMs: Math.max(0, now - attempt.startedAt),
      executorId: data.executorId,
      followUpIds: [],
    },
  });
}

export function delegateItem(out: Emitter, s: PlanState, data: DelegateItem): void {
  requireNotFinished(s);
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not in_progress`, 'data.itemId');
  if (attempt.attempt !== data.attempt) reject('INVALID_STATE', `attempt ${data.attempt} is not the current attempt ${attempt.attempt} of ${item.id}`, 'data.attempt');
  if (attempt.childPlanId !== null) reject('INVALID_STATE', `item ${item.id} is already delegated to ${attempt.childPlanId}`, 'data.itemId');
  if (!isValidId(data.childPlanId)) reject('INVALID_FIELD', 'data.childPlanId is not a valid id', 'data.childPlanId');
  if (isReservedPlanId(data.childPlanId)) reject('INVALID_FIELD', `data.childPlanId ${RESERVED_MESSAGE}`, 'data.childPlanId');
  if (data.childPlanId === s.planId) reject('INVALID_FIELD', 'a plan cannot delegate to itself', 'data.childPlanId');
  out.emit({ type: 'ItemDelegated', data: { itemId: item.id, attempt: attempt.attempt, childPlanId: data.childPlanId } });
}
