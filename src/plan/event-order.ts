/**
 * Where an event stands in its plan's order, judged from the state before it: whether it is the plan's
 * next step, a harmless re-send or invalid, and whether a client's command caused it. Shared by `Fold`
 * (src/plan/fold.ts) and `evolve`.
 */
import { isInternalCommandType } from './commands.js';
import { PlanError } from './errors.js';
import type { PlanEvent } from './events.js';
import { currentAttempt, type ItemState, type PlanState } from './state.js';

/** Throws `INVALID_EVENT` naming the event and what is wrong with it. */
export function invalidEvent(event: PlanEvent, message: string): never {
  throw new PlanError('INVALID_EVENT', `${event.eventId} (${event.type}): ${message}`, 'type');
}

/**
 * Whether `event` starts a new step of the plan (true) or was applied already (false: an exact re-send,
 * ignored so projections are identical before and after compaction). Throws `INVALID_EVENT` for an event
 * that cannot apply: another plan, a gap in seq, a broken prevHash, a conflicting re-send.
 */
export function isNextEvent(state: PlanState, event: PlanEvent): boolean {
  if (event.planId !== state.planId) invalidEvent(event, `belongs to another plan than ${state.planId}`);
  if (event.seq <= state.seq) {
    // Already applied. Only an exact re-send is harmless; a different event with a used seq is a fork.
    if (event.seq === state.seq && event.hash !== state.lastHash) invalidEvent(event, `conflicts with applied seq ${event.seq}`);
    return false;
  }
  if (event.seq !== state.seq + 1) invalidEvent(event, `seq gap: expected ${state.seq + 1}`);
  if (event.prevHash !== state.lastHash) invalidEvent(event, 'prevHash does not match the last applied hash');
  if (state.status === 'none' && event.type !== 'PlanCreated' && event.type !== 'CommandRejected') invalidEvent(event, 'plan does not exist');
  return true;
}

/**
 * Whether the command that caused `event` came from a client (the wire), judged from the event and the
 * state before it. Only those commandIds are kept in `appliedCommandIds`: a client command may be
 * redelivered and must then be a no-op. The executor's own commands (RecordIntent, CommitResult,
 * SettleItem, DelegateItem) never travel the wire; a repeated one is decided on the state (and refused).
 */
export function causedByClientCommand(event: PlanEvent, lookup: (id: string) => ItemState | undefined, state: PlanState): boolean {
  switch (event.type) {
    case 'PlanCreated':
    case 'PlanProposed':
      // A pause for new follow-up items follows them directly: it comes from the executor's CommitResult.
      return !pauseForFollowUps(event, lookup, state);
    case 'ApprovalRecorded':
    case 'PlanApproved':
    case 'PlanRejected':
    case 'PlanCancelled':
      return true;
    case 'ItemAdded':
      return event.data.followUpOf === null; // a follow-up comes from CommitResult
    case 'ItemRetryScheduled':
      return event.data.manual; // RetryItem; an automatic retry comes from SettleItem
    case 'ItemSignalled':
      return true; // SignalItem
    case 'WaitStarted':
      return false; // RecordIntent of a wait item
    case 'ItemInherited':
      return false; // follows its fork's PlanCreated
    case 'ResultCommitted': {
      // ChildPlanFinished commits the result of a delegated attempt; CommitResult is refused for those.
      const item = lookup(event.data.itemId);
      const last = item === undefined ? undefined : currentAttempt(item);
      return last !== undefined && last.childPlanId !== null;
    }
    case 'CommandRejected':
      return !isInternalCommandType(event.data.commandType);
    case 'IntentRecorded':
    case 'ItemDelegated':
    case 'ItemCheckpointed':
    case 'EvidenceRecorded':
    case 'ItemCompleted':
    case 'ItemFailed':
    case 'PlanCompleted':
    case 'PlanFailed':
      return false;
  }
}

/** A PlanProposed right after a follow-up ItemAdded: the pause `decide` emits for a tool's follow-ups. */
function pauseForFollowUps(event: PlanEvent, lookup: (id: string) => ItemState | undefined, state: PlanState): boolean {
  if (event.type !== 'PlanProposed' || event.data.policy === null) return false;
  const lastId = state.itemOrder[state.itemOrder.length - 1];
  const last = lastId === undefined ? undefined : lookup(lastId);
  return last !== undefined && last.addedSeq === event.seq - 1 && last.followUpOf !== null;
}
