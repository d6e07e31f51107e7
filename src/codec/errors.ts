/**
 * How the codec fails. A record that can never be decoded is a poison record: `SCHEMA` with a
 * `details.reason`, and the caller dead-letters it with that cause. A registry that cannot be reached is
 * not the record's fault: `UNAVAILABLE`, and the caller retries the same record later.
 */
import { LedgerError } from '../errors.js';

/** Why a value could not be decoded (or encoded). `details.reason` of a `SCHEMA` {@link LedgerError}. */
export const CodecErrorReasons = {
  /** Byte 0 is not the Confluent magic byte 0. */
  bad_magic: 'bad_magic',
  /** Fewer than the 5 header bytes (or no value at all, e.g. a tombstone). */
  too_short: 'too_short',
  /** The registry answered that the schema id does not exist. */
  unknown_schema_id: 'unknown_schema_id',
  /** Avro decoding failed: truncated body, trailing bytes, invalid union index or length. */
  corrupt: 'corrupt',
  /** The schema id belongs to a different record (e.g. a command on the events topic). */
  wrong_schema: 'wrong_schema',
  /** A newer writer's payload type this reader does not know; dead-letter it, never skip it. */
  unknown_branch: 'unknown_branch',
  /** The registry refused a schema: not compatible with the subject's latest version. */
  incompatible: 'incompatible',
  /** The registry or avsc refused a schema as invalid, or the contract uses a shape the codec cannot map. */
  invalid_schema: 'invalid_schema',
  /** A value given to `encode*` does not fit the schema. */
  invalid_value: 'invalid_value',
} as const;
export type CodecErrorReason = (typeof CodecErrorReasons)[keyof typeof CodecErrorReasons];

/** A `SCHEMA` error with a reason; `details` carries the schema id, subject, type name etc. when known. */
export function schemaError(reason: CodecErrorReason, message: string, details: Record<string, unknown> = {}, cause?: unknown): LedgerError {
  return new LedgerError('SCHEMA', message, { reason, ...details }, cause === undefined ? undefined : { cause });
}

/** The registry could not be reached (connection refused, 5xx, timeout, auth): retry, do not dead-letter. */
export function unavailableError(message: string, details: Record<string, unknown> = {}, cause?: unknown): LedgerError {
  return new LedgerError('UNAVAILABLE', message, details, cause === undefined ? undefined : { cause });
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
