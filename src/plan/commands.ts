import { commandTypes } from './generated/schemas.js';
import type { CommandMetadata, CommandPayloads, CommandType, ItemError, ItemSpec, Outcome } from './generated/types.js';
import type { SchemaNode } from './avro-schema.js';

export type { CommandMetadata, CommandPayloads, CommandType };
export { commandTypes };

/** A client's request to change a plan (the `PlanCommand` Avro envelope, payload unwrapped into type/data). */
export type PlanCommand = { [K in CommandType]: CommandMetadata & { type: K; data: CommandPayloads[K] } }[CommandType];

/**
 * The executor is about to invoke an item's tool. Decides `IntentRecorded` with attempt = previous
 * attempts + 1 and idempotencyKey = `${planId}/${itemId}/${attempt}`.
 */
export interface RecordIntent {
  itemId: string;
  executorId: string;
  /** The fencing token of the writer (e.g. its producer epoch); recorded for audit. */
  fencingToken: number;
}

/**
 * The tool returned (or threw). Decides `ResultCommitted`, then one `ItemAdded` per follow-up item.
 * Follow-ups are only allowed with outcome `succeeded`; they are validated like `AddItems`, and allowed
 * in an approved propose-mode plan because the approved tool asked for them.
 */
export interface CommitResult {
  itemId: string;
  attempt: number;
  outcome: Outcome;
  outputJson: string | null;
  error: ItemError | null;
  durationMs: number;
  executorId: string;
  followUps: ItemSpec[];
}

/**
 * Finish an item whose result is committed: `ItemCompleted`, `ItemRetryScheduled` (retryAt = now +
 * backoff) or `ItemFailed`, followed by `PlanCompleted` / `PlanFailed` when that settles the plan.
 */
export interface SettleItem {
  itemId: string;
}

/** Hand the current attempt of an in-progress item to a child plan. Decides `ItemDelegated`. */
export interface DelegateItem {
  itemId: string;
  attempt: number;
  childPlanId: string;
}

/** A running tool's progress within its attempt (`ctx.checkpoint`). Decides `ItemCheckpointed`. */
export interface RecordCheckpoint {
  itemId: string;
  attempt: number;
  stateJson: string;
}

/** Intermediate evidence a running tool attaches to its item (`ctx.evidence`). Decides `EvidenceRecorded`. */
export interface RecordEvidence {
  itemId: string;
  attempt: number;
  name: string;
  valueJson: string;
}

/**
 * A waiting item's deadline passed (the executor's timer, on whichever executor owns the plan now): the
 * recorded deadline, or first seen + the wait's timeout when that is sooner on an owner whose clock is
 * behind the one that started the wait (see `waitDueAt`).
 * Decides `ResultCommitted` with outcome `failed_retryable` and error code `WAIT_TIMEOUT`; `SettleItem`
 * then applies the item's retry policy as for any failure.
 */
export interface ExpireWait {
  itemId: string;
  attempt: number;
  executorId: string;
}

/** Commands the executor gives itself. TypeScript only, never on the wire. */
export interface InternalCommandPayloads {
  RecordIntent: RecordIntent;
  CommitResult: CommitResult;
  SettleItem: SettleItem;
  DelegateItem: DelegateItem;
  RecordCheckpoint: RecordCheckpoint;
  RecordEvidence: RecordEvidence;
  ExpireWait: ExpireWait;
}
export type InternalCommandType = keyof InternalCommandPayloads;
export type InternalCommand = {
  [K in InternalCommandType]: CommandMetadata & { type: K; data: InternalCommandPayloads[K] };
}[InternalCommandType];

/** Anything `decide` accepts. */
export type AnyCommand = PlanCommand | InternalCommand;
export type AnyCommandType = AnyCommand['type'];

export const internalCommandTypes = ['RecordIntent', 'CommitResult', 'SettleItem', 'DelegateItem', 'RecordCheckpoint', 'RecordEvidence', 'ExpireWait'] as const satisfies readonly InternalCommandType[];

/** Avro-style schemas of the internal commands, so `decide` validates them like client commands. */
export const internalCommandSchemas: Record<InternalCommandType, SchemaNode> = {
  RecordIntent: {
    type: 'record',
    name: 'RecordIntent',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'executorId', type: 'string' },
      { name: 'fencingToken', type: 'long' },
    ],
  },
  CommitResult: {
    type: 'record',
    name: 'CommitResult',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'attempt', type: 'int' },
      { name: 'outcome', type: 'planledger.Outcome' },
      { name: 'outputJson', type: ['null', 'string'], default: null },
      { name: 'error', type: ['null', 'planledger.ItemError'], default: null },
      { name: 'durationMs', type: 'long' },
      { name: 'executorId', type: 'string' },
      { name: 'followUps', type: { type: 'array', items: 'planledger.ItemSpec' }, default: [] },
    ],
  },
  SettleItem: { type: 'record', name: 'SettleItem', fields: [{ name: 'itemId', type: 'string' }] },
  RecordCheckpoint: {
    type: 'record',
    name: 'RecordCheckpoint',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'attempt', type: 'int' },
      { name: 'stateJson', type: 'string' },
    ],
  },
  RecordEvidence: {
    type: 'record',
    name: 'RecordEvidence',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'attempt', type: 'int' },
      { name: 'name', type: 'string' },
      { name: 'valueJson', type: 'string' },
    ],
  },
  ExpireWait: {
    type: 'record',
    name: 'ExpireWait',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'attempt', type: 'int' },
      { name: 'executorId', type: 'string' },
    ],
  },
  DelegateItem: {
    type: 'record',
    name: 'DelegateItem',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'attempt', type: 'int' },
      { name: 'childPlanId', type: 'string' },
    ],
  },
};

export function isCommandType(value: unknown): value is CommandType {
  return typeof value === 'string' && (commandTypes as readonly string[]).includes(value);
}

export function isInternalCommandType(value: unknown): value is InternalCommandType {
  return typeof value === 'string' && (internalCommandTypes as readonly string[]).includes(value);
}
