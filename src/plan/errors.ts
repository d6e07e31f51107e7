import { RejectionCode } from './generated/types.js';

/** Why a command was rejected. Values equal the Avro `RejectionCode` symbols. */
export { RejectionCode };

/** A coded rejection; `field` is the path of the offending field (`data.items[2].dependsOn[0]`), if any. */
export interface Rejection {
  code: RejectionCode;
  message: string;
  field: string | null;
}

/** Codes of errors the pure domain throws at its boundaries (never from `decide`). */
export const PlanErrorCode = {
  /** A value cannot be written as canonical JSON (undefined, NaN, Infinity, functions, cycles, class instances). */
  NOT_CANONICAL: 'NOT_CANONICAL',
  /** An event cannot be applied to the state (wrong plan, gap in seq, unknown item, impossible transition). */
  INVALID_EVENT: 'INVALID_EVENT',
  /** A string is not a valid plan or item id. */
  INVALID_ID: 'INVALID_ID',
  /** An Avro record does not match the envelope schema (unknown union branch, wrong shape). */
  INVALID_RECORD: 'INVALID_RECORD',
} as const;
export type PlanErrorCode = (typeof PlanErrorCode)[keyof typeof PlanErrorCode];

/** The one error type thrown by `src/plan`. Test for it with {@link isPlanError}, not `instanceof`. */
export class PlanError extends Error {
  override readonly name = 'PlanError';
  readonly code: PlanErrorCode;
  readonly field: string | null;

  constructor(code: PlanErrorCode, message: string, field: string | null = null) {
    super(message);
    this.code = code;
    this.field = field;
  }
}

/** True when `e` is a PlanError (optionally with the given code), also across module copies. */
export function isPlanError(e: unknown, code?: PlanErrorCode): e is PlanError {
  if (typeof e !== 'object' || e === null) return false;
  const candidate = e as { name?: unknown; code?: unknown };
  if (candidate.name !== 'PlanError' || typeof candidate.code !== 'string') return false;
  return code === undefined || candidate.code === code;
}
