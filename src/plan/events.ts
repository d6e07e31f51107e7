import { eventTypes } from './generated/schemas.js';
import type { EventMetadata, EventPayloads, EventType } from './generated/types.js';

export type { EventMetadata, EventPayloads, EventType };
export { eventTypes };

/**
 * One fact in a plan's ledger. `type` is the Avro record name of the payload, `data` the payload itself.
 * A discriminated union: `switch (event.type)` narrows `data`.
 */
export type PlanEvent = { [K in EventType]: EventMetadata & { type: K; data: EventPayloads[K] } }[EventType];

/** The event variant with the given type. */
export type PlanEventOf<K extends EventType> = Extract<PlanEvent, { type: K }>;

/** An event before its hash is computed (distributes over the union). */
export type UnsealedEvent = PlanEvent extends infer E ? (E extends PlanEvent ? Omit<E, 'hash'> : never) : never;

/** A payload with its type, before metadata is attached. */
export type EventBody = { [K in EventType]: { type: K; data: EventPayloads[K] } }[EventType];

export function isEventType(value: unknown): value is EventType {
  return typeof value === 'string' && (eventTypes as readonly string[]).includes(value);
}
