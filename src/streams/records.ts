// Stream records: the live view of a running attempt (an agent turn's text, a tool's progress) on
// `<prefix>.plan-streams`. Pure: the record shapes, their keys and values, and the reader's cursor.
// The recorded `ResultCommitted` stays the truth; a stream record is never read back by the ledger itself.
import { createHash } from 'node:crypto';
import { LedgerError } from '../errors.js';

/** How long `<prefix>.plan-streams` keeps a stream record: one day. */
export const STREAM_RETENTION_MS = 24 * 60 * 60 * 1000;
/** Bytes of stream records `<prefix>.plan-streams` keeps per partition (the oldest segments go first). */
export const STREAM_RETENTION_BYTES = 256 * 1024 * 1024;
/** Bytes of stream records one attempt's run may write; past it records are dropped and counted on the end marker. */
export const STREAM_BYTES_PER_ATTEMPT = 8 * 1024 * 1024;
/** What the Kafka client fetches ahead of a stream reader that does not read (KiB). */
export const STREAM_PREFETCH_KIB = 1024;
/** MCP `plan_wait` progress: the least time between two notifications of one wait (ms). */
export const PROGRESS_INTERVAL_MS = 250;
/** MCP `plan_wait` progress: the most characters of streamed text one notification carries. */
export const PROGRESS_TEXT_CHARS = 2048;

/** What a stream record carries. */
export type StreamKind = 'text' | 'tool-call' | 'usage' | 'progress' | 'end';

/**
 * How an attempt's stream ended:
 * - `final`: its result is recorded as succeeded; the text chunks of this run are the recorded text;
 * - `superseded`: a new owner re-runs the attempt after a takeover; every earlier run of it stops here;
 * - `abandoned`: the attempt ended without a success (failed, timed out); `reason` says how.
 */
export type StreamEnd = 'final' | 'superseded' | 'abandoned';

/** One stream record as written (JSON value of a `<prefix>.plan-streams` record). */
export interface StreamRecord {
  /** Format version. */
  v: 1;
  planId: string;
  itemId: string;
  attempt: number;
  /** The run of the attempt: the fencing token of the owner that ran it (a takeover runs it again, higher). */
  run: number;
  /** 1-based, contiguous within a run; an end marker written by another writer is 0. */
  seq: number;
  kind: StreamKind;
  /** `text`: the delta (coalesced: one record holds many of the model's deltas). */
  text?: string;
  /** `tool-call`: the call the model started. */
  toolCallId?: string;
  toolName?: string;
  /** `usage`: the tokens of the attempt. */
  usage?: { inputTokens: number; outputTokens: number; totalTokens: number };
  /** `progress`: what the tool wrote with `ctx.stream.write(...)`. */
  data?: unknown;
  /** `end`: how the attempt's stream ended (see {@link StreamEnd}). */
  end?: StreamEnd;
  reason?: string;
  /** Records dropped past the attempt's stream bound (on an `end` marker). */
  dropped?: number;
  /** Milliseconds since the epoch, the writer's clock. */
  at: number;
}

/** A stream record as a reader hands it out: the record and the cursor to resume after it. */
export interface StreamChunk extends StreamRecord {
  /** Pass it as `from` to {@link Ledger.stream} to go on after this chunk. */
  cursor: string;
}

/** The key of a stream record: unique per record (`/` is never part of an id), on the plan's partition. */
export function streamKey(r: Pick<StreamRecord, 'planId' | 'itemId' | 'attempt' | 'run' | 'seq' | 'kind'>): string {
  return `${r.planId}/${r.itemId}/${r.attempt}/${r.run}/${r.kind === 'end' ? `end-${r.seq}` : r.seq}`;
}

/** Whether a record key belongs to the plan (a stream record's or its erasure tombstone's). */
export function isStreamKeyOf(key: Buffer | string | null, planId: string): boolean {
  if (key === null) return false;
  const s = typeof key === 'string' ? key : key.toString('utf8');
  return s.length > planId.length && s.startsWith(planId) && s[planId.length] === '/';
}

export function encodeStreamRecord(r: StreamRecord): string {
  return JSON.stringify(r);
}

const KINDS: ReadonlySet<string> = new Set(['text', 'tool-call', 'usage', 'progress', 'end']);

/** A record's value as a {@link StreamRecord}; undefined when it is not one (a reader skips it). */
export function decodeStreamRecord(value: Buffer | string | null): StreamRecord | undefined {
  if (value === null) return undefined;
  let r: unknown;
  try {
    r = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return undefined;
  }
  if (typeof r !== 'object' || r === null) return undefined;
  const o = r as Record<string, unknown>;
  const int = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (o.v !== 1 || typeof o.planId !== 'string' || typeof o.itemId !== 'string' || !int(o.attempt) || !int(o.run) || !int(o.seq) || typeof o.kind !== 'string' || !KINDS.has(o.kind)) return undefined;
  return o as unknown as StreamRecord;
}

/** A short tag of a plan id in a cursor, so a cursor of another plan is refused instead of misread. */
function planTag(planId: string): string {
  return createHash('sha256').update(planId).digest('hex').slice(0, 8);
}

/** The cursor after a record: where a reader resumes (the next offset of the plan's stream partition). */
export function encodeCursor(planId: string, partition: number, nextOffset: bigint | string): string {
  return `s1.${partition}.${nextOffset.toString()}.${planTag(planId)}`;
}

/**
 * The next offset a cursor stands for. VALIDATION, naming the field `from`, for anything that is not a
 * cursor this plan's reader handed out: garbage, another plan's, another partition count's (checked when
 * `partition` is given).
 */
export function parseCursor(cursor: string, planId: string, partition?: number): bigint {
  const m = typeof cursor === 'string' ? /^s1\.(\d{1,5})\.(\d{1,19})\.([0-9a-f]{8})$/.exec(cursor) : null;
  if (!m) throw new LedgerError('VALIDATION', `from: ${JSON.stringify(String(cursor).slice(0, 80))} is not a stream cursor (expected 'beginning', 'live' or a cursor a chunk carried)`, { field: 'from' });
  if (m[3] !== planTag(planId)) throw new LedgerError('VALIDATION', `from: the cursor belongs to another plan's stream, not ${planId}'s`, { field: 'from' });
  if (partition !== undefined && Number(m[1]) !== partition) throw new LedgerError('VALIDATION', `from: the cursor names partition ${m[1]}, but plan ${planId}'s stream is on partition ${partition} (another partition count?)`, { field: 'from' });
  return BigInt(m[2]!);
}
