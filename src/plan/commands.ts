// The client's commands (schemas/commands/, on the wire) and the executor's own (schemas/internal/, never
// on the wire) are both generated from schemas/ by scripts/gen-types.ts.
import { commandTypes, internalCommandSchemas, internalCommandTypes } from './generated/schemas.js';
import type { CommandMetadata, CommandPayloads, CommandType, InternalCommandPayloads, InternalCommandType } from './generated/types.js';

export type { CommitResult, DelegateItem, ExpireWait, RecordCheckpoint, RecordEvidence, RecordIntent, SettleItem } from './generated/types.js';

export type { CommandMetadata, CommandPayloads, CommandType };
export { commandTypes };

/** A client's request to change a plan (the `PlanCommand` Avro envelope, payload unwrapped into type/data). */
export type PlanCommand = { [K in CommandType]: CommandMetadata & { type: K; data: CommandPayloads[K] } }[CommandType];

export type { InternalCommandPayloads, InternalCommandType };
export { internalCommandSchemas, internalCommandTypes };

export type InternalCommand = {
  [K in InternalCommandType]: CommandMetadata & { type: K; data: InternalCommandPayloads[K] };
}[InternalCommandType];

/** Anything `decide` accepts. */
export type AnyCommand = PlanCommand | InternalCommand;
export type AnyCommandType = AnyCommand['type'];

export function isCommandType(value: unknown): value is CommandType {
  return typeof value === 'string' && (commandTypes as readonly string[]).includes(value);
}

export function isInternalCommandType(value: unknown): value is InternalCommandType {
  return typeof value === 'string' && (internalCommandTypes as readonly string[]).includes(value);
}
