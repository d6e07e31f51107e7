// Checks and small derivations of what callers pass to the client's methods.
import { LedgerError } from '../errors.js';
import { evolveAll, isValidId, type PlanEvent } from '../plan/index.js';
import type { ItemInput } from '../plan-input.js';
import type { AllPlans } from './api.js';

export function isAll(target: unknown): target is AllPlans {
  return typeof target === 'object' && target !== null && (target as AllPlans).all === true;
}

export function digestAfter(events: PlanEvent[]): string | undefined {
  try {
    return evolveAll(undefined, events)?.digest;
  } catch {
    return undefined;
  }
}

/** A plan id the ledger can key its records with, or a VALIDATION error before anything is sent. */
export function checkPlanId(planId: unknown): asserts planId is string {
  if (!isValidId(planId)) throw new LedgerError('VALIDATION', `planId: must be 1..128 characters of [A-Za-z0-9._:-], got ${JSON.stringify(planId)?.slice(0, 80)}`, { field: 'planId' });
}

/** The items of a plan or an AddItems, checked to be a list. */
export function itemList(items: unknown): ItemInput[] {
  if (items === undefined || items === null) return [];
  if (!Array.isArray(items)) throw new LedgerError('VALIDATION', `items: expected an array, got ${typeof items}`, { field: 'items' });
  return items as ItemInput[];
}
