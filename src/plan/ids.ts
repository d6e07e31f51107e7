import { PlanError } from './errors.js';

declare const brand: unique symbol;
/** A string that the type system keeps apart from other strings. */
export type Brand<T, B extends string> = T & { readonly [brand]: B };

/** Id of a plan (one per agent session). */
export type PlanId = Brand<string, 'PlanId'>;
/** Id of an item, given by the planner and unique in its plan. */
export type ItemId = Brand<string, 'ItemId'>;

/** Plan and item ids: 1..128 characters of `[A-Za-z0-9._:-]`. */
export const ID_PATTERN = /^[A-Za-z0-9._:-]{1,128}$/;

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

/** Plan ids starting with this are reserved for the ledger's own keys (the projector's `__watermark` snapshot). */
export const RESERVED_PLAN_ID_PREFIX = '__';

/** True for a plan id `decide` refuses because it is reserved (starts with `__`). */
export function isReservedPlanId(value: string): boolean {
  return value.startsWith(RESERVED_PLAN_ID_PREFIX);
}

/** Brands a plan id; throws a `PlanError` with code `INVALID_ID` when the string is not a valid id. */
export function planId(value: string): PlanId {
  if (!isValidId(value)) throw new PlanError('INVALID_ID', `invalid plan id ${JSON.stringify(value)}`, 'planId');
  return value as PlanId;
}

/** Brands an item id; throws a `PlanError` with code `INVALID_ID` when the string is not a valid id. */
export function itemId(value: string): ItemId {
  if (!isValidId(value)) throw new PlanError('INVALID_ID', `invalid item id ${JSON.stringify(value)}`, 'itemId');
  return value as ItemId;
}

/**
 * The idempotency key a tool receives for one attempt. Stable across crashes and rebalances: an executor
 * that re-invokes an attempt after recovery passes the same key, so an idempotent service performs the
 * effect once.
 *
 * @example idempotencyKey('p1', 'fetch', 2) === 'p1/fetch/2'
 */
export function idempotencyKey(plan: string, item: string, attempt: number): string {
  return `${plan}/${item}/${attempt}`;
}

/** Event ids are `planId:seq`; they are also the event topic's record keys. */
export function eventId(plan: string, seq: number): string {
  return `${plan}:${seq}`;
}
