import { createHash } from 'node:crypto';
import type { OutRecord } from '../kafka/index.js';
import { LedgerError } from '../errors.js';
import { setting } from '../settings.js';

/**
 * Large payloads by reference (claim check). A canonical-JSON payload (an item's input, a tool's output)
 * larger than the inline threshold is stored as content-addressed chunks in `<prefix>.plan-blobs`, on the
 * plan's partition, keyed `planId:sha256:index`; the event carries, in place of the payload, the canonical
 * JSON of a reference:
 *
 *     {"$blob":{"at":1733011200000,"bytes":312345,"chunks":1,"sha256":"9f2c…"}}
 *
 * The hash chain covers the reference, so it covers the content through its sha256. `at` is the chunks'
 * record timestamp: a reader finds them with a timestamp look-up (ListOffsets) instead of scanning the
 * partition. A payload that is exactly such an object is read as a reference: `$blob` is reserved.
 */
export interface BlobRef {
  readonly sha256: string;
  readonly bytes: number;
  readonly chunks: number;
  /** Record timestamp of the chunks (epoch ms). */
  readonly at: number;
}

/** Payloads above this many UTF-8 bytes go by reference (PLAN_LEDGER_INLINE_PAYLOAD_BYTES). */
export const DEFAULT_INLINE_BYTES = 64 * 1024;
/** No payload may be larger than this (PLAN_LEDGER_MAX_PAYLOAD_BYTES). */
export const DEFAULT_MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;
/** Chunk size: well under the default 1 MiB record limit. */
export const CHUNK_BYTES = 512 * 1024;

export interface PayloadLimits {
  readonly inlineBytes: number;
  readonly maxPayloadBytes: number;
}

export const DEFAULT_PAYLOAD_LIMITS: PayloadLimits = Object.freeze({ inlineBytes: DEFAULT_INLINE_BYTES, maxPayloadBytes: DEFAULT_MAX_PAYLOAD_BYTES });

/**
 * The payload limits from PLAN_LEDGER_INLINE_PAYLOAD_BYTES (at most 262144: the ledger keeps inline payloads
 * at most 256 KiB) / PLAN_LEDGER_MAX_PAYLOAD_BYTES, validated by src/settings.ts.
 */
export function payloadLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): PayloadLimits {
  return Object.freeze({ inlineBytes: setting('PLAN_LEDGER_INLINE_PAYLOAD_BYTES', env), maxPayloadBytes: setting('PLAN_LEDGER_MAX_PAYLOAD_BYTES', env) });
}

const REF_KEY = '$blob';

/** The reference's canonical JSON (keys sorted, as every payload in an event must be). */
export function refJson(ref: BlobRef): string {
  return `{"${REF_KEY}":{"at":${ref.at},"bytes":${ref.bytes},"chunks":${ref.chunks},"sha256":"${ref.sha256}"}}`;
}

/** The reference a payload text stands for, or undefined for an inline payload. Cheap for inline text. */
export function parseRef(json: string | null | undefined): BlobRef | undefined {
  if (json == null || !json.startsWith(`{"${REF_KEY}":`) || json.length > 256) return undefined;
  try {
    const v = (JSON.parse(json) as Record<string, unknown>)[REF_KEY] as Record<string, unknown> | undefined;
    if (!v || typeof v !== 'object') return undefined;
    const { at, bytes, chunks, sha256 } = v;
    if (typeof sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(sha256)) return undefined;
    if (![at, bytes, chunks].every((n) => Number.isSafeInteger(n) && (n as number) >= 0)) return undefined;
    const ref = { at: at as number, bytes: bytes as number, chunks: chunks as number, sha256 };
    return refJson(ref) === json ? ref : undefined;
  } catch {
    return undefined;
  }
}

export function sha256Hex(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The key of chunk `index` of a plan's blob. */
export function chunkKey(planId: string, sha256: string, index: number): string {
  return `${planId}:${sha256}:${index}`;
}

/**
 * Stores `json` by reference: its chunk records (for the plan's partition of the blobs topic) and the
 * reference to put in the event. `at` becomes the records' timestamp and the reference's.
 */
export function toBlob(planId: string, json: string, at: number, partition?: number): { ref: BlobRef; refJson: string; messages: OutRecord[] } {
  const data = Buffer.from(json, 'utf8');
  const chunks = Math.max(1, Math.ceil(data.length / CHUNK_BYTES));
  const ref: BlobRef = { sha256: sha256Hex(data), bytes: data.length, chunks, at };
  const messages: OutRecord[] = [];
  for (let i = 0; i < chunks; i++) {
    messages.push({
      key: chunkKey(planId, ref.sha256, i),
      value: data.subarray(i * CHUNK_BYTES, (i + 1) * CHUNK_BYTES),
      timestamp: String(at),
      ...(partition !== undefined ? { partition } : {}),
    });
  }
  return { ref, refJson: refJson(ref), messages };
}

/** Tombstones for every chunk of a plan's blob (erasure). */
export function blobTombstones(planId: string, ref: BlobRef, partition: number): OutRecord[] {
  return Array.from({ length: ref.chunks }, (_, i) => ({ key: chunkKey(planId, ref.sha256, i), value: null, partition }));
}

/**
 * Checks a payload against the limits: undefined when it stays inline, the byte count when it must go by
 * reference; past the ceiling a PAYLOAD_TOO_LARGE LedgerError naming the field and its size.
 */
export function payloadPlacement(json: string, field: string, limits: PayloadLimits): number | undefined {
  if (json.length <= limits.inlineBytes / 3) return undefined; // no UTF-8 code unit takes more than 3 bytes
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > limits.maxPayloadBytes) {
    throw new LedgerError('PAYLOAD_TOO_LARGE', `${field} is ${bytes} bytes; the ledger takes payloads up to ${limits.maxPayloadBytes} bytes (PLAN_LEDGER_MAX_PAYLOAD_BYTES)`, { field, bytes, limit: limits.maxPayloadBytes });
  }
  return bytes > limits.inlineBytes ? bytes : undefined;
}

/**
 * Where one payload goes: inline when it is within the inline threshold, else by reference — the blob's
 * chunks come back to be written before (or in the same transaction as) the record that carries its
 * reference. Past the ceiling it throws `PAYLOAD_TOO_LARGE` naming `field` ({@link payloadPlacement}).
 * The one placement step of the client (item inputs) and the executor (outputs, follow-ups, checkpoints,
 * evidence); sealing comes before it, resolving (`resolvePayloads`) undoes it on read.
 */
export function placePayload(planId: string, json: string, field: string, limits: PayloadLimits, at: number, partition: number): { json: string; blob?: ReturnType<typeof toBlob> } {
  if (payloadPlacement(json, field, limits) === undefined) return { json };
  const blob = toBlob(planId, json, at, partition);
  return { json: blob.refJson, blob };
}
