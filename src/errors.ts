/**
 * One error taxonomy for the whole library. Every error that crosses a public boundary is a
 * {@link LedgerError} with a code from {@link ErrorCodes}; test for it with {@link isLedgerError}, not
 * `instanceof` (two copies of the package in one process must still agree).
 */
export const ErrorCodes = {
  /** Invalid input: a config value, a plan file, a command field. */
  VALIDATION: 'VALIDATION',
  /** The ledger refused a command (the rejection code is in `details.rejection`). */
  REJECTED: 'REJECTED',
  CONFLICT: 'CONFLICT',
  NOT_FOUND: 'NOT_FOUND',
  /** A record could not be encoded or decoded against the registry's schemas. */
  SCHEMA: 'SCHEMA',
  /** A newer owner took over: this writer may no longer append. */
  FENCED: 'FENCED',
  /** Kafka refused the configured credentials (SASL): the message names the mechanism and the user. */
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  /** Kafka's ACLs refused an operation to the configured principal. */
  FORBIDDEN: 'FORBIDDEN',
  /** The broker or the registry could not be reached. */
  UNAVAILABLE: 'UNAVAILABLE',
  TIMEOUT: 'TIMEOUT',
  /** The machine lacks something (Java, Maven, a free port). */
  ENVIRONMENT: 'ENVIRONMENT',
  /** The hash chain, seq or a digest does not verify. */
  INTEGRITY: 'INTEGRITY',
  /** A payload is larger than the ledger takes (`details.field` names it, `details.bytes` its size). */
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  /**
   * A plan names a tool that no live executor serves, refused because the caller asked for a strict check
   * (`createPlan(…, { strictTools: true })`, `plan-ledger run --strict-tools`); `details.tools` lists them.
   */
  UNSERVED_TOOL: 'UNSERVED_TOOL',
  INTERNAL: 'INTERNAL',
} as const;
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const LEDGER_ERROR = Symbol.for('plan-ledger.error');

export class LedgerError extends Error {
  readonly [LEDGER_ERROR] = true;
  override readonly name = 'LedgerError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True when `e` is a plan-ledger error, optionally of the given code. */
export function isLedgerError(e: unknown, code?: ErrorCode): e is LedgerError {
  if (typeof e !== 'object' || e === null || !(LEDGER_ERROR in e)) return false;
  return code === undefined || (e as LedgerError).code === code;
}
