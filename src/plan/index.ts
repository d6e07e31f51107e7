/**
 * The pure plan domain: events, commands, `decide`, `evolve`, digest, hash chain, canonical JSON.
 * No I/O, no clock, no randomness: time and ids arrive as data.
 */
export * from './generated/types.js';
export { planEventSchema, planCommandSchema, eventTypes, commandTypes, eventSchemaVersion } from './generated/schemas.js';
export * from './ids.js';
export * from './errors.js';
export * from './canonical.js';
export * from './events.js';
export * from './commands.js';
export * from './state.js';
export * from './digest.js';
export * from './hash-chain.js';
export * from './evolve.js';
export * from './decide.js';
export * from './execution.js';
export * from './avro-mapping.js';
export * from './policy.js';
