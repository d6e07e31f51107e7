import { canonicalJson, canonicalJsonWithout } from './canonical.js';
import { sha256Hex } from './digest.js';
import type { PlanEvent, UnsealedEvent } from './events.js';

/** prevHash of a plan's first event. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * Payload fields added to an event after its first schema, by event type. A reader on the newer schema fills
 * such a field with its default (null) when it decodes an older event, so an event whose added field is null
 * hashes as if the field did not exist: old chains verify, and an event with no policy hashes exactly as it
 * did before the field existed. Append here whenever a payload gains a field.
 */
export const ADDED_PAYLOAD_FIELDS: Readonly<Partial<Record<PlanEvent['type'], readonly string[]>>> = Object.freeze({
  PlanCreated: ['policy', 'forkedFrom'],
  PlanProposed: ['policy'],
});

/**
 * Fields added to a record nested in an event payload (`field.added`), by event type: left out of the
 * canonical content while null, like {@link ADDED_PAYLOAD_FIELDS}. `ItemSpec.secret` came after the first
 * ItemAdded was written.
 */
export const ADDED_NESTED_FIELDS: Readonly<Partial<Record<PlanEvent['type'], readonly (readonly [string, string])[]>>> = Object.freeze({
  ItemAdded: [
    ['item', 'secret'],
    ['item', 'wait'],
  ],
});

function hasNull(o: unknown, key: string): boolean {
  return typeof o === 'object' && o !== null && Object.prototype.hasOwnProperty.call(o, key) && (o as Record<string, unknown>)[key] === null;
}

function without(o: Record<string, unknown>, drop: (key: string) => boolean): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const key of Object.keys(o)) if (!drop(key)) kept[key] = o[key];
  return kept;
}

/** The event without its added payload fields that are null (or absent); the event itself when there are none. */
function withoutNullAddedFields(event: UnsealedEvent | PlanEvent): UnsealedEvent | PlanEvent {
  const added = ADDED_PAYLOAD_FIELDS[event.type];
  const nested = ADDED_NESTED_FIELDS[event.type];
  if (added === undefined && nested === undefined) return event;
  const data = event.data as unknown as Record<string, unknown>;
  if (typeof data !== 'object' || data === null) return event;
  const top = added !== undefined && added.some((f) => hasNull(data, f));
  const inner = nested !== undefined && nested.some(([outer, f]) => hasNull(data[outer], f));
  if (!top && !inner) return event;
  let kept = top ? without(data, (key) => added!.includes(key) && data[key] === null) : { ...data };
  if (inner) {
    for (const [outer, f] of nested!) {
      const o = kept[outer];
      if (hasNull(o, f)) kept = { ...kept, [outer]: without(o as Record<string, unknown>, (key) => key === f) };
    }
  }
  const { hash: _ignored, ...rest } = event as PlanEvent;
  return { ...rest, data: kept } as unknown as UnsealedEvent;
}

/**
 * `sha256hex(prevHash + '\n' + canonicalJson(event minus hash))`: the event alone, never the state. Payload
 * fields added after an event type's first schema ({@link ADDED_PAYLOAD_FIELDS}) are left out while null.
 */
export function eventHash(input: UnsealedEvent | PlanEvent): string {
  const event = withoutNullAddedFields(input);
  const proto: unknown = Object.getPrototypeOf(event);
  if (proto === Object.prototype || proto === null) return sha256Hex(`${event.prevHash}\n${canonicalJsonWithout(event, 'hash')}`);
  // Not a plain object (a decoder's record class): hash its own fields, as a copy would have them.
  const { hash: _ignored, ...rest } = event as PlanEvent;
  return sha256Hex(`${event.prevHash}\n${canonicalJson(rest)}`);
}

/** Adds the hash to an event whose prevHash is set. */
export function sealEvent(event: UnsealedEvent): PlanEvent {
  return { ...event, hash: eventHash(event) } as PlanEvent;
}

export type ChainBreak = 'hash_mismatch' | 'prev_mismatch' | 'seq_gap' | 'plan_mismatch';

export type ChainVerification =
  | { ok: true; head: string; seq: number }
  | { ok: false; index: number; seq: number; eventId: string; reason: ChainBreak };

/** Where a verified stretch of the chain starts: genesis, or a trusted event (e.g. a snapshot's head). */
export interface ChainAnchor {
  seq: number;
  hash: string;
  planId?: string;
}

/**
 * Verifies one plan's events in order and names the first broken one. An edited event breaks its own hash
 * (or, if the editor re-hashed it, the next event's prevHash); a removed, inserted or reordered event breaks
 * the seq sequence or the prevHash link. Removing events at the end can only be detected by comparing the
 * returned `head` with a head known from elsewhere.
 *
 * @example verifyChain(events) // { ok: true, head: '3f…', seq: 12 }
 */
export function verifyChain(events: readonly PlanEvent[], anchor: ChainAnchor = { seq: 0, hash: GENESIS_HASH }): ChainVerification {
  let prev = anchor.hash;
  let seq = anchor.seq;
  const plan = anchor.planId ?? events[0]?.planId;
  for (let index = 0; index < events.length; index++) {
    const e = events[index] as PlanEvent;
    const broken = (reason: ChainBreak): ChainVerification => ({ ok: false, index, seq: e.seq, eventId: e.eventId, reason });
    if (e.planId !== plan) return broken('plan_mismatch');
    if (e.seq !== seq + 1) return broken('seq_gap');
    if (e.prevHash !== prev) return broken('prev_mismatch');
    let actual: string;
    try {
      actual = eventHash(e);
    } catch {
      return broken('hash_mismatch');
    }
    if (actual !== e.hash) return broken('hash_mismatch');
    prev = e.hash;
    seq = e.seq;
  }
  return { ok: true, head: prev, seq };
}
