import type { FailureReason, ForkOrigin, ItemError, ItemSpec, Outcome, ParentRef, PlanMode, PolicyDecision, RejectionCode } from './generated/types.js';

/**
 * Plan status. `none` is a plan that does not exist yet but already has rejected commands in its chain
 * (a `CommandRejected` for e.g. an `AddItems` sent before `CreatePlan`).
 */
export const PlanStatus = {
  none: 'none',
  draft: 'draft',
  proposed: 'proposed',
  approved: 'approved',
  running: 'running',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type PlanStatus = (typeof PlanStatus)[keyof typeof PlanStatus];

export const ItemStatus = {
  pending: 'pending',
  in_progress: 'in_progress',
  result_committed: 'result_committed',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type ItemStatus = (typeof ItemStatus)[keyof typeof ItemStatus];

/** One attempt of an item: intent, then result. */
export interface AttemptState {
  attempt: number;
  idempotencyKey: string;
  executorId: string;
  fencingToken: number;
  startedAt: number;
  finishedAt: number | null;
  outcome: Outcome | null;
  outputJson: string | null;
  error: ItemError | null;
  durationMs: number | null;
  /** Set when the attempt was delegated to a child plan. */
  childPlanId: string | null;
  /**
   * Set for an attempt of a wait item (WaitStarted): the signal it waits for and its deadline (epoch ms on
   * the clock of the owner that started it, null = none; see `waitDueAt`); once signalled, the signal's id
   * and who sent it. Absent for tool attempts.
   */
  wait?: WaitState;
}

export interface WaitState {
  signal: string;
  deadline: number | null;
  signalId?: string;
  signalledBy?: string;
}

export interface ItemState extends ItemSpec {
  status: ItemStatus;
  addedSeq: number;
  addedAt: number;
  /** The item whose tool returned this item as a follow-up. */
  followUpOf: string | null;
  attempts: AttemptState[];
  /**
   * A pending item may not start before this time (set by a scheduled retry), on the clock of the owner
   * that scheduled it; another owner may start it at first seen + its backoff when that is sooner (see
   * `retryDueAt`), so a clock behind is not held back by the difference.
   */
  retryAt: number | null;
  /** Attempts made before the last manual retry; the retry budget counts attempts after it. */
  attemptBase: number;
  /** Output of the completed attempt, readable by dependants. */
  outputJson: string | null;
  failure: { reason: FailureReason; error: ItemError | null } | null;
  /**
   * The latest progress a tool recorded with `ctx.checkpoint` (any attempt). Absent until the first one,
   * so the state (and digest) of an item that never checkpointed is what it always was.
   */
  checkpoint?: CheckpointState;
  /** Intermediate evidence tools attached with `ctx.evidence`, in order. Absent until the first. */
  evidence?: EvidenceState[];
}

export interface CheckpointState {
  attempt: number;
  /** 1, 2, 3 ... per item. */
  checkpoint: number;
  stateJson: string;
  at: number;
  seq: number;
}

export interface EvidenceState {
  attempt: number;
  name: string;
  valueJson: string;
  at: number;
  seq: number;
}

export interface ApprovalRecord {
  decision: 'approved' | 'rejected';
  digest: string;
  by: string;
  at: number;
  seq: number;
  /** The approval comment or the rejection reason. */
  note: string | null;
}

export interface RejectionRecord {
  seq: number;
  at: number;
  commandId: string;
  commandType: string;
  code: RejectionCode;
  message: string;
  field: string | null;
}

/** The current plan: plain JSON data, so a snapshot is `canonicalJson(state)`. */
export interface PlanState {
  planId: string;
  goal: string;
  /** null only while status is `none`. */
  mode: PlanMode | null;
  status: PlanStatus;
  labels: Record<string, string>;
  parent: ParentRef | null;
  items: Record<string, ItemState>;
  /** Item ids in the order they were added. */
  itemOrder: string[];
  /** Digest of what an operator reviews, for the current items. */
  digest: string;
  approvedDigest: string | null;
  approvals: ApprovalRecord[];
  /** Number of events applied (= seq of the last one). */
  seq: number;
  lastHash: string;
  /**
   * The latest {@link MAX_REJECTIONS_KEPT} rejected commands, oldest first. The events stay in the log
   * (audit shows every one); the state keeps a bounded window, so a plan does not grow with bad commands.
   */
  rejections: RejectionRecord[];
  /**
   * Every rejection the plan has recorded, set only once more than {@link MAX_REJECTIONS_KEPT} were: absent,
   * the total is `rejections.length` — a plan under the bound has exactly the state (and digest) it had
   * before the bound existed. Read it with {@link rejectionTotal}.
   */
  rejectionCount?: number;
  /**
   * Client (wire) commandId -> seq of the first event it caused; a client command seen again is a no-op.
   * The executor's internal commands (RecordIntent, CommitResult, SettleItem, DelegateItem) are not kept:
   * they never travel the wire, and one entry per item step would make every plan's state grow with its log.
   */
  appliedCommandIds: Record<string, number>;
  /**
   * Signal id -> seq of its first ItemSignalled: a signal delivered again is DUPLICATE_SIGNAL. Absent until
   * the plan's first signal, so a plan without waits has the state (and digest) it had before waits existed.
   */
  signals?: Record<string, number>;
  /** Set for a fork: the source plan, the fork point and the source's hash there (PlanCreated.forkedFrom). */
  forkedFrom?: ForkOrigin;
  createdAt: number | null;
  updatedAt: number;
  /**
   * The CreatePlan actor, kept only when a policy decided the plan's creation (so self-approval can be
   * refused). Absent otherwise: a plan decided without a policy has exactly the state (and state digest) it
   * had before policies existed.
   */
  createdBy?: string;
  /**
   * The latest policy decision recorded on the plan (PlanCreated or PlanProposed) and the seq of that event;
   * the current review needs `approvers` distinct approvals after `seq`. Absent when no policy decided.
   */
  policy?: PolicyReview;
}

/** A {@link PolicyDecision} as the plan keeps it: with the seq of the event that recorded it. */
export interface PolicyReview extends PolicyDecision {
  seq: number;
}

/**
 * Rejections a plan's state keeps (the latest). Part of the fold, so of every state digest: changing it
 * changes the digest of any plan with more rejections than the old bound.
 */
export const MAX_REJECTIONS_KEPT = 100;

/** How many commands the plan has rejected in all (the state keeps the latest {@link MAX_REJECTIONS_KEPT}). */
export function rejectionTotal(state: Pick<PlanState, 'rejections' | 'rejectionCount'>): number {
  return state.rejectionCount ?? state.rejections.length;
}

const FINISHED: ReadonlySet<PlanStatus> = new Set<PlanStatus>(['completed', 'failed', 'cancelled']);

/** completed, failed or cancelled. A failed plan may still run again through RetryItem. */
export function isPlanFinished(status: PlanStatus): boolean {
  return FINISHED.has(status);
}

/** The plan exists (PlanCreated applied). */
export function planExists(state: PlanState | undefined): state is PlanState {
  return state !== undefined && state.status !== 'none';
}

/** The item with this id, or undefined (safe for ids such as `__proto__`). */
export function getItem(state: PlanState, id: string): ItemState | undefined {
  return Object.prototype.hasOwnProperty.call(state.items, id) ? state.items[id] : undefined;
}

/** The latest attempt of an item, if any. */
export function currentAttempt(item: ItemState): AttemptState | undefined {
  return item.attempts[item.attempts.length - 1];
}

/** Whether a client command with this id already caused events (or its rejection) in this plan. */
export function hasAppliedCommand(state: PlanState | undefined, commandId: string): boolean {
  return state !== undefined && Object.prototype.hasOwnProperty.call(state.appliedCommandIds, commandId);
}
