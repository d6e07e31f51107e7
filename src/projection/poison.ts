import { isLedgerError } from '../errors.js';
import { isPlanError } from '../plan/index.js';

export { parseEventKey, type EventKey } from '../kafka/index.js';

/** What to do with a record that failed to decode or apply. */
export type FailureDecision =
  /** The registry (or broker) is unreachable: wait and try the same record again. Never DLQ'd. */
  | { action: 'retry'; code: string; message: string }
  /** The record itself is bad: dead-letter it with the cause and stall its plan. */
  | { action: 'dlq'; code: string; reason: string; message: string };

/**
 * Sorts a failure into "retry the same record" (registry unavailable) or "dead-letter it" (a codec
 * `SCHEMA` error, an event `evolve` refuses, anything unexpected). Nothing is skipped silently and
 * nothing crash-loops: an unexpected error is dead-lettered as `INTERNAL` with its message.
 */
export function classifyFailure(e: unknown): FailureDecision {
  const message = e instanceof Error ? e.message : String(e);
  if (isLedgerError(e, 'UNAVAILABLE') || isLedgerError(e, 'TIMEOUT')) return { action: 'retry', code: e.code, message };
  if (isLedgerError(e, 'SCHEMA')) {
    const reason = typeof e.details['reason'] === 'string' ? e.details['reason'] : 'schema';
    return { action: 'dlq', code: 'SCHEMA', reason, message };
  }
  if (isLedgerError(e)) return { action: 'dlq', code: e.code, reason: String(e.details['reason'] ?? e.code.toLowerCase()), message };
  if (isPlanError(e)) return { action: 'dlq', code: e.code, reason: reasonOfPlanError(e.message), message };
  return { action: 'dlq', code: 'INTERNAL', reason: 'unexpected_error', message };
}

/** A short machine-readable reason from evolve's message (`seq gap`, `unknown item` ...). */
function reasonOfPlanError(message: string): string {
  const known: Array<[RegExp, string]> = [
    [/seq gap/, 'seq_gap'],
    [/prevHash/, 'prev_hash_mismatch'],
    [/conflicts with applied seq/, 'fork'],
    [/another plan/, 'plan_mismatch'],
    [/plan does not exist/, 'plan_not_found'],
    [/unknown item/, 'unknown_item'],
    [/duplicate item/, 'duplicate_item'],
    [/plan exists/, 'plan_exists'],
    [/attempt .* is not the current attempt/, 'wrong_attempt'],
    [/idempotency key/, 'bad_idempotency_key'],
  ];
  for (const [re, reason] of known) if (re.test(message)) return reason;
  return 'invalid_event';
}

/** Where a dead-lettered record came from, and why. */
export interface DeadLetterCause {
  readonly sourceTopic: string;
  readonly sourcePartition: number;
  readonly sourceOffset: string;
  readonly code: string;
  readonly reason: string;
  readonly message: string;
}

/** DLQ record headers: the original key and value stay, the cause goes in headers (docs/design.md#topics-and-ownership). */
export function dlqHeaders(c: DeadLetterCause): Record<string, string> {
  return {
    'source-topic': c.sourceTopic,
    'source-partition': String(c.sourcePartition),
    'source-offset': c.sourceOffset,
    'error-code': c.code,
    'error-reason': c.reason,
    // Headers are bytes, but keep them readable and bounded.
    'error-message': c.message.slice(0, 2000),
  };
}

/** Reads the cause back from DLQ headers (strings as read from the log; Buffer values are taken too). */
export function causeFromHeaders(headers: Record<string, unknown> | undefined): DeadLetterCause | null {
  if (!headers) return null;
  const get = (k: string): string | undefined => {
    const v = headers[k];
    if (v === undefined || v === null) return undefined;
    if (Array.isArray(v)) return v.length ? String(v[0]) : undefined;
    return Buffer.isBuffer(v) ? v.toString('utf8') : String(v);
  };
  const sourceTopic = get('source-topic');
  const sourcePartition = get('source-partition');
  const sourceOffset = get('source-offset');
  if (sourceTopic === undefined || sourcePartition === undefined || sourceOffset === undefined) return null;
  return {
    sourceTopic,
    sourcePartition: Number(sourcePartition),
    sourceOffset,
    code: get('error-code') ?? '',
    reason: get('error-reason') ?? '',
    message: get('error-message') ?? '',
  };
}

/** Why a plan stopped advancing in a projection. */
export interface Stall {
  readonly code: string;
  readonly reason: string;
  readonly message: string;
  /** Offset (in the plan's events partition) of the record that stalled it. */
  readonly offset: string;
  /** Seq the record claimed (from its key), if readable. */
  readonly seq: number | null;
  /** Records of this plan seen after the stall and held back (not applied), with the last one's offset. */
  heldEvents: number;
  lastHeldOffset: string | null;
}

export function stallOf(decision: { code: string; reason: string; message: string }, offset: string, seq: number | null): Stall {
  return { code: decision.code, reason: decision.reason, message: decision.message, offset, seq, heldEvents: 0, lastHeldOffset: null };
}

