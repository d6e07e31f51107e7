/**
 * The codec: Avro serde of plan events, commands and snapshots through the Confluent Schema Registry API,
 * in the Confluent wire format, with schema ids cached (no registry call per message after warm-up).
 * See {@link codecFromConfig} (how components build it), {@link createCodec} and {@link LedgerCodec}.
 */
export { codecFromConfig, codecWhenRegistryAnswers, createCodec } from './codec.js';
export type { CodecOptions, CodecRecordKind, LedgerCodec, PlanSnapshot } from './types.js';
export { CodecErrorReasons, type CodecErrorReason } from './errors.js';
export { HEADER_SIZE, MAGIC_BYTE, readSchemaId } from './wire.js';
