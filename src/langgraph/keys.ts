// What the LangGraph saver accepts as a key (a thread_id, checkpoint_ns, checkpoint id or task id) and the
// errors it answers bad ones with: used by the saver (saver.ts) and its fork (fork.ts).
import { isLedgerError, LedgerError } from '../errors.js';

/** Most UTF-8 bytes of a thread_id, a checkpoint_ns, a checkpoint id or a task id. */
export const MAX_KEY_BYTES = 1024;
/** Keys MemorySaver's layout refuses (they would reach Object.prototype). */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export function invalid(field: string, message: string): LedgerError {
  return new LedgerError('VALIDATION', `langgraph: ${field} ${message}`, { field });
}

/** A thread_id, checkpoint_ns, checkpoint id or task id: a string of at most MAX_KEY_BYTES (ns may be empty). */
export function key(field: string, value: unknown, opts: { allowEmpty?: boolean } = {}): string {
  if (typeof value !== 'string') throw invalid(field, `must be a string (got ${value === null ? 'null' : typeof value})`);
  if (value === '' && !opts.allowEmpty) throw invalid(field, 'must not be empty');
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > MAX_KEY_BYTES) throw invalid(field, `is ${bytes} bytes; at most ${MAX_KEY_BYTES}`);
  if (RESERVED_KEYS.has(value)) throw invalid(field, `must not be ${value}`);
  return value;
}

export function isRejected(e: unknown, code: string): boolean {
  return isLedgerError(e, 'REJECTED') && (e as LedgerError).details.rejection === code;
}
