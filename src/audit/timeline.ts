import { LedgerError } from '../errors.js';
import { idempotencyKey, stateDigest, type PlanEvent, type PlanState } from '../plan/index.js';
import { atOrBefore, foldAsOf, itemAttemptOf, parseAsOfText, summarizeEvent, type AsOf } from '../projection/audit.js';

/** An event with where it sits in the log (the shape `Ledger.planEvents` returns). */
export interface PositionedEvent {
  readonly event: PlanEvent;
  readonly partition: number;
  readonly offset: string;
}

/**
 * One line of the audit timeline: who did what, when, why (causation), on which attempt, with which
 * idempotency key, with what outcome, and how long after the attempt's intent.
 */
export interface AuditRow {
  kind: 'event';
  seq: number;
  /** ISO-8601 time the event occurred (`occurredAt`). */
  at: string;
  partition: number;
  offset: string;
  type: PlanEvent['type'];
  actor: string;
  causationId: string;
  correlationId: string;
  itemId: string | null;
  attempt: number | null;
  /** The attempt's idempotency key, on every event of an attempt (intent, result, settlement). */
  idempotencyKey: string | null;
  /** succeeded | failed_retryable | failed_terminal (results), completed | failed:<reason> | retry (settlements), the rejection code, ... */
  outcome: string | null;
  /** ms from the attempt's IntentRecorded to this event (results and settlements). */
  sinceIntentMs: number | null;
  /** The tool's own duration as ResultCommitted records it. */
  toolMs: number | null;
  summary: string;
  hash: string;
}

export type { AsOf };

/** `--as-of` / `--until`: digits are a seq, anything else must be an ISO-8601 time. */
export function parseAsOf(value: string, flag = '--as-of'): AsOf {
  const asOf = parseAsOfText(value);
  if (asOf === undefined) {
    throw new LedgerError('VALIDATION', `${flag}: expected a seq (e.g. 7) or an ISO-8601 time (e.g. 2026-01-31T12:00:00Z), got "${value}"`, { field: flag });
  }
  return asOf;
}

/**
 * A point in a plan's history as the library takes it: a seq (a number, or a string of digits), an
 * ISO-8601 time string, or a `Date`.
 */
export type AsOfInput = number | string | Date;

/** {@link AsOfInput} → {@link AsOf}; a value that is none of those is a `VALIDATION` error naming `field`. */
export function toAsOf(value: AsOfInput, field: string): AsOf {
  if (typeof value === 'string') return parseAsOf(value, field);
  if (value instanceof Date) {
    const time = value.getTime();
    if (Number.isNaN(time)) throw new LedgerError('VALIDATION', `${field}: invalid Date`, { field });
    return { time };
  }
  if (!Number.isSafeInteger(value) || value < 0) throw new LedgerError('VALIDATION', `${field}: expected a seq (a non-negative integer), got ${value}`, { field });
  return { seq: value };
}

/** How a point was asked for, for messages: the text as given, a seq, or a Date's ISO form. */
export function asOfText(value: AsOfInput): string {
  return value instanceof Date ? value.toISOString() : String(value);
}

export { atOrBefore as isBefore };

function outcomeOf(e: PlanEvent): string | null {
  switch (e.type) {
    case 'ResultCommitted':
      return e.data.outcome;
    case 'ItemCompleted':
      return 'completed';
    case 'ItemFailed':
      return `failed:${e.data.reason}`;
    case 'ItemRetryScheduled':
      return e.data.manual ? 'retry:manual' : 'retry';
    case 'ItemDelegated':
      return 'delegated';
    case 'CommandRejected':
      return e.data.code;
    case 'PlanApproved':
      return 'approved';
    case 'ApprovalRecorded':
      return `approval ${e.data.approvals}/${e.data.required}`;
    case 'PlanRejected':
      return 'rejected';
    case 'PlanCompleted':
      return 'completed';
    case 'PlanFailed':
      return 'failed';
    case 'PlanCancelled':
      return 'cancelled';
    case 'PlanCreated':
      if (e.data.forkedFrom != null) return `forked:${e.data.forkedFrom.planId}@${e.data.forkedFrom.seq}`;
      return e.data.policy?.required === true ? 'policy:review' : null;
    case 'PlanProposed':
      return e.data.policy ? `policy:${e.data.policy.rule ?? 'none'}` : null;
    case 'ItemCheckpointed':
      return `checkpoint ${e.data.checkpoint}`;
    case 'EvidenceRecorded':
      return `evidence:${e.data.name}`;
    case 'WaitStarted':
      return `waiting:${e.data.signal}`;
    case 'ItemSignalled':
      return `signalled:${e.data.signal}`;
    case 'ItemInherited':
      return 'inherited';
    case 'ItemAdded':
    case 'IntentRecorded':
      return null;
  }
}

/**
 * The audit timeline of one plan's events (in seq order). Results and settlements carry the key of the
 * attempt they belong to and the time since its intent: after a crash that time includes the take-over.
 */
export function auditRows(records: readonly PositionedEvent[]): AuditRow[] {
  return records.map(auditRowBuilder());
}

/**
 * {@link auditRows} one event at a time, for a stream (`plan-ledger tail`): feed it one plan's events in
 * seq order. An attempt whose intent it was not fed has no key and no time since intent.
 */
export function auditRowBuilder(): (record: PositionedEvent) => AuditRow {
  const intents = new Map<string, { key: string; at: number }>();
  const k = (item: string, attempt: number) => `${item}\u0000${attempt}`;
  return ({ event: e, partition, offset }) => {
    const { itemId, attempt: carried } = itemAttemptOf(e);
    const attempt = carried !== null && carried > 0 ? carried : null; // a manual retry's attempt 0 is "none"
    if (e.type === 'IntentRecorded') intents.set(k(e.data.itemId, e.data.attempt), { key: e.data.idempotencyKey, at: e.occurredAt });
    // A wait's attempt starts with WaitStarted: its signal or timeout shows the time waited (across a takeover too).
    if (e.type === 'WaitStarted') intents.set(k(e.data.itemId, e.data.attempt), { key: idempotencyKey(e.planId, e.data.itemId, e.data.attempt), at: e.occurredAt });
    const intent = itemId !== null && attempt !== null ? intents.get(k(itemId, attempt)) : undefined;
    return {
      kind: 'event',
      seq: e.seq,
      at: new Date(e.occurredAt).toISOString(),
      partition,
      offset,
      type: e.type,
      actor: e.actor,
      causationId: e.causationId,
      correlationId: e.correlationId,
      itemId,
      attempt,
      idempotencyKey: intent?.key ?? null,
      outcome: outcomeOf(e),
      sinceIntentMs: intent && e.type !== 'IntentRecorded' && e.type !== 'WaitStarted' ? e.occurredAt - intent.at : null,
      toolMs: e.type === 'ResultCommitted' ? e.data.durationMs : null,
      summary: summarizeEvent(e),
      hash: e.hash,
    };
  };
}

/** The plan as it was at a point of its history, folded with the same `evolve` as everywhere else. */
export interface PlanAsOf {
  kind: 'state';
  planId: string;
  /** seq and time of the last event applied. */
  seq: number;
  at: string | null;
  state: PlanState | null;
  stateDigest: string | null;
}

export function planAsOf(planId: string, events: readonly PlanEvent[], asOf: AsOf | null): PlanAsOf {
  const { upTo, state } = foldAsOf(events, asOf);
  const last = upTo.at(-1);
  return {
    kind: 'state',
    planId,
    seq: last?.seq ?? 0,
    at: last ? new Date(last.occurredAt).toISOString() : null,
    state: state ?? null,
    stateDigest: state ? stateDigest(state) : null,
  };
}
