import { describePolicyDecision, evolveAll, stateDigest, type PlanEvent, type PlanState } from '../plan/index.js';
import { QueryError } from './query.js';

/** A point in a plan's history: after the event with this seq, or the last event at or before this time. */
export type AsOf = { seq: number } | { time: number };

/** A seq (digits) or an ISO-8601 time, or undefined when the text is neither. Callers raise their own error. */
export function parseAsOfText(value: string): AsOf | undefined {
  if (/^\d+$/.test(value)) {
    const seq = Number(value);
    return Number.isSafeInteger(seq) ? { seq } : undefined;
  }
  const time = Date.parse(value);
  return /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(time) ? { time } : undefined;
}

/** `asOf` as the API takes it: a seq (digits) or an ISO-8601 time. Throws {@link QueryError} on anything else. */
export function parseAsOf(value: string | undefined): AsOf | null {
  if (value === undefined || value === '') return null;
  const asOf = parseAsOfText(value);
  if (asOf === undefined) throw new QueryError('asOf', `asOf: expected a seq or an ISO-8601 time, got "${value}"`);
  return asOf;
}

/** True when the event is part of the plan as it was at `asOf` (null: now). */
export function atOrBefore(e: PlanEvent, asOf: AsOf | null): boolean {
  return asOf === null ? true : 'seq' in asOf ? e.seq <= asOf.seq : e.occurredAt <= asOf.time;
}

/** The events up to `asOf` and the plan they fold to, with the same fold as everywhere else. */
export function foldAsOf(events: readonly PlanEvent[], asOf: AsOf | null): { upTo: PlanEvent[]; state: PlanState | undefined } {
  const upTo = events.filter((e) => atOrBefore(e, asOf));
  return { upTo, state: evolveAll(undefined, upTo) };
}

/** One line of the audit timeline: who did what, when, why (causation), on which attempt. */
export interface TimelineEntry {
  seq: number;
  at: number;
  type: PlanEvent['type'];
  actor: string;
  causationId: string;
  correlationId: string;
  itemId: string | null;
  attempt: number | null;
  summary: string;
  hash: string;
}

/** The item an event is about (ItemAdded's new item included) and the attempt number it carries, if any. */
export function itemAttemptOf(e: PlanEvent): { itemId: string | null; attempt: number | null } {
  const d = e.data as Partial<Record<'itemId' | 'attempt', unknown>>;
  return {
    itemId: typeof d.itemId === 'string' ? d.itemId : e.type === 'ItemAdded' ? e.data.item.id : null,
    attempt: typeof d.attempt === 'number' ? d.attempt : null,
  };
}

export function timelineEntry(e: PlanEvent): TimelineEntry {
  const { itemId, attempt } = itemAttemptOf(e);
  return {
    seq: e.seq,
    at: e.occurredAt,
    type: e.type,
    actor: e.actor,
    causationId: e.causationId,
    correlationId: e.correlationId,
    itemId,
    attempt,
    summary: summarizeEvent(e),
    hash: e.hash,
  };
}

export function summarizeEvent(e: PlanEvent): string {
  switch (e.type) {
    case 'PlanCreated':
      return `plan created (${e.data.mode}): ${e.data.goal}${e.data.policy ? `; policy ${describePolicyDecision(e.data.policy)}` : ''}${e.data.forkedFrom ? `; forked from ${e.data.forkedFrom.planId} at seq ${e.data.forkedFrom.seq} (hash ${e.data.forkedFrom.chainHead.slice(0, 12)})` : ''}`;
    case 'ItemInherited':
      return `item ${e.data.itemId} inherited from the fork's source: ${e.data.outputJson === null ? 'no output' : preview(e.data.outputJson)}`;
    case 'ItemAdded':
      return `item ${e.data.item.id} added${e.data.followUpOf ? ` as a follow-up of ${e.data.followUpOf}` : ''}: ${e.data.item.title}`;
    case 'PlanProposed':
      return `proposed with ${e.data.itemCount} items, digest ${e.data.digest.slice(0, 12)}${e.data.policy ? `; policy ${describePolicyDecision(e.data.policy)}` : ''}`;
    case 'ApprovalRecorded':
      return `approval ${e.data.approvals} of ${e.data.required} by ${e.data.by} at digest ${e.data.digest.slice(0, 12)}${e.data.comment ? `: ${e.data.comment}` : ''}`;
    case 'PlanApproved':
      return `approved by ${e.data.by} at digest ${e.data.digest.slice(0, 12)}${e.data.comment ? `: ${e.data.comment}` : ''}`;
    case 'PlanRejected':
      return `rejected by ${e.data.by}: ${e.data.reason}`;
    case 'ItemDelegated':
      return `item ${e.data.itemId} attempt ${e.data.attempt} delegated to plan ${e.data.childPlanId}`;
    case 'IntentRecorded':
      return `intent: ${e.data.executorId} invokes ${e.data.itemId} attempt ${e.data.attempt} (key ${e.data.idempotencyKey})`;
    case 'ResultCommitted':
      return `result of ${e.data.itemId} attempt ${e.data.attempt}: ${e.data.outcome} in ${e.data.durationMs} ms${e.data.error ? ` (${e.data.error.code}: ${e.data.error.message})` : ''}`;
    case 'ItemCompleted':
      return `item ${e.data.itemId} completed`;
    case 'ItemRetryScheduled':
      return `item ${e.data.itemId} retry scheduled${e.data.manual ? ' by an operator' : ''}`;
    case 'ItemFailed':
      return `item ${e.data.itemId} failed (${e.data.reason})`;
    case 'PlanCompleted':
      return `plan completed (${e.data.itemCount} items)`;
    case 'PlanFailed':
      return `plan failed: ${e.data.reason}`;
    case 'PlanCancelled':
      return `plan cancelled: ${e.data.reason}`;
    case 'CommandRejected':
      return `command ${e.data.commandType} rejected: ${e.data.code} ${e.data.message}`;
    case 'ItemCheckpointed':
      return `item ${e.data.itemId} attempt ${e.data.attempt} checkpoint ${e.data.checkpoint}: ${preview(e.data.stateJson)}`;
    case 'EvidenceRecorded':
      return `item ${e.data.itemId} attempt ${e.data.attempt} evidence "${e.data.name}": ${preview(e.data.valueJson)}`;
    case 'WaitStarted':
      return `item ${e.data.itemId} attempt ${e.data.attempt} waits for signal ${e.data.signal} ${e.data.deadline === null ? 'no deadline' : `deadline ${new Date(e.data.deadline).toISOString()}`}, ${e.data.executorId}`;
    case 'ItemSignalled':
      return `item ${e.data.itemId} attempt ${e.data.attempt} signalled ${e.data.signal} by ${e.actor} (signal id ${e.data.signalId}): ${preview(e.data.dataJson)}`;
  }
}

/** A payload as a timeline shows it: at most 120 characters. */
function preview(json: string): string {
  return json.length > 120 ? `${json.slice(0, 117)}...` : json;
}

/** One attempt of an item through the protocol: intent → result → settled, with durations. */
export interface AttemptTimeline {
  itemId: string;
  attempt: number;
  executorId: string;
  intentAt: number;
  intentSeq: number;
  resultAt: number | null;
  outcome: string | null;
  /** The tool's own duration as recorded in ResultCommitted. */
  toolMs: number | null;
  settledAt: number | null;
  /** completed | failed | retry | null while open */
  settlement: 'completed' | 'failed' | 'retry' | null;
  childPlanId: string | null;
  /** intent → settled (or → result while unsettled). */
  totalMs: number | null;
}

/** Attempts in the order their intents were recorded, built from the events (the state keeps no settle times). */
export function attemptsOf(events: readonly PlanEvent[]): AttemptTimeline[] {
  const out: AttemptTimeline[] = [];
  const open = new Map<string, AttemptTimeline>();
  const k = (item: string, attempt: number) => `${item}\u0000${attempt}`;
  for (const e of events) {
    switch (e.type) {
      case 'IntentRecorded': {
        const a: AttemptTimeline = {
          itemId: e.data.itemId,
          attempt: e.data.attempt,
          executorId: e.data.executorId,
          intentAt: e.occurredAt,
          intentSeq: e.seq,
          resultAt: null,
          outcome: null,
          toolMs: null,
          settledAt: null,
          settlement: null,
          childPlanId: null,
          totalMs: null,
        };
        out.push(a);
        open.set(k(a.itemId, a.attempt), a);
        break;
      }
      case 'ItemDelegated': {
        const a = open.get(k(e.data.itemId, e.data.attempt));
        if (a) a.childPlanId = e.data.childPlanId;
        break;
      }
      case 'ResultCommitted': {
        const a = open.get(k(e.data.itemId, e.data.attempt));
        if (a) {
          a.resultAt = e.occurredAt;
          a.outcome = e.data.outcome;
          a.toolMs = e.data.durationMs;
          a.totalMs = e.occurredAt - a.intentAt;
        }
        break;
      }
      case 'ItemCompleted':
      case 'ItemFailed':
      case 'ItemRetryScheduled': {
        const a = open.get(k(e.data.itemId, e.data.attempt));
        if (a && a.settledAt === null) {
          a.settledAt = e.occurredAt;
          a.settlement = e.type === 'ItemCompleted' ? 'completed' : e.type === 'ItemFailed' ? 'failed' : 'retry';
          a.totalMs = e.occurredAt - a.intentAt;
        }
        break;
      }
      default:
        break;
    }
  }
  return out;
}

export interface AuditView {
  planId: string;
  asOf: { seq: number; at: number | null };
  state: PlanState | null;
  stateDigest: string | null;
  timeline: TimelineEntry[];
  attempts: AttemptTimeline[];
}

/**
 * The plan as it was at `asOf` (default: now): the state folded from the events up to that point with the
 * same `evolve` as everywhere else, the timeline of those events and the attempts they record.
 */
export function auditAsOf(planId: string, events: readonly PlanEvent[], asOf: AsOf | null): AuditView {
  const { upTo, state } = foldAsOf(events, asOf);
  const last = upTo[upTo.length - 1];
  return {
    planId,
    asOf: { seq: last?.seq ?? 0, at: last?.occurredAt ?? null },
    state: state ?? null,
    stateDigest: state ? stateDigest(state) : null,
    timeline: upTo.map(timelineEntry),
    attempts: attemptsOf(upTo),
  };
}
