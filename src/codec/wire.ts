/**
 * The Confluent wire format: byte 0 is the magic byte 0, bytes 1-4 the schema id (big-endian int32),
 * then the Avro binary body.
 */
import { schemaError } from './errors.js';

export const MAGIC_BYTE = 0;
export const HEADER_SIZE = 5;

/**
 * The schema id of a Confluent-framed value. Throws `SCHEMA` `too_short` (no value, fewer than 5 bytes)
 * or `bad_magic`.
 *
 * @example readSchemaId(Buffer.from([0, 0, 0, 1, 7, 2])) === 263
 */
export function readSchemaId(buf: Buffer | null | undefined): number {
  if (buf === null || buf === undefined || !Buffer.isBuffer(buf)) {
    throw schemaError('too_short', 'no value to decode (a tombstone must be handled before decoding)', { length: 0 });
  }
  if (buf.length < HEADER_SIZE) {
    throw schemaError('too_short', `value of ${buf.length} bytes is shorter than the 5-byte Confluent header`, { length: buf.length });
  }
  if (buf[0] !== MAGIC_BYTE) {
    throw schemaError('bad_magic', `magic byte is ${String(buf[0])}, expected 0 (not a Confluent-framed Avro value)`, { magic: buf[0] });
  }
  return buf.readInt32BE(1);
}

/** Writes the 5-byte header for `schemaId` at the start of `buf`. */
export function writeHeader(buf: Buffer, schemaId: number): void {
  buf[0] = MAGIC_BYTE;
  buf.writeInt32BE(schemaId, 1);
}
