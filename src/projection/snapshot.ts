import { createHash } from 'node:crypto';
import { canonicalJson, PlanStatus, sha256Hex, stateDigest, type PlanState } from '../plan/index.js';
import type { LedgerCodec, PlanSnapshot } from '../codec/index.js';
import { summarize, type PlanSummary } from './query.js';

export type { PlanSnapshot };

/**
 * Version of the PlanState shape in a snapshot's stateJson. A reader that does not know a snapshot's
 * version does not trust it and rebuilds the plan from its events.
 */
export const STATE_SCHEMA_VERSION = 1;

/** Key of the per-partition watermark record in the snapshots topic (a reserved plan id). */
export const WATERMARK_KEY = '__watermark';

/**
 * The snapshot of a plan after the event at `eventsOffset` of its events partition.
 * `stateJson` is `canonicalJson(state)` and `stateDigest` its sha256, so a reader can verify it cheaply.
 */
export function snapshotOf(state: PlanState, partition: number, eventsOffset: string, takenAt: number): PlanSnapshot {
  const stateJson = canonicalJson(state);
  return {
    planId: state.planId,
    partition,
    seq: state.seq,
    eventsOffset: Number(eventsOffset),
    stateDigest: sha256Hex(stateJson),
    stateJson,
    schemaVersion: STATE_SCHEMA_VERSION,
    takenAt,
  };
}

/**
 * The watermark of a partition: every plan with events at offsets ≤ `eventsOffset` has a snapshot covering
 * all of its events ≤ `eventsOffset`. Restore = latest snapshots + events from `eventsOffset + 1`.
 */
export function watermarkOf(partition: number, eventsOffset: string, takenAt: number): PlanSnapshot {
  return {
    planId: WATERMARK_KEY,
    partition,
    seq: 0,
    eventsOffset: Number(eventsOffset),
    stateDigest: '',
    stateJson: '{}',
    schemaVersion: STATE_SCHEMA_VERSION,
    takenAt,
  };
}

export function isWatermark(s: Pick<PlanSnapshot, 'planId'>): boolean {
  return s.planId === WATERMARK_KEY;
}

export type SnapshotCheck = { ok: true; state: PlanState } | { ok: false; reason: string };

/**
 * Parses and verifies a plan snapshot: the digest must match the JSON, the JSON must be canonical state of
 * the named plan at the named seq. A snapshot that fails is not trusted (restore falls back to the events).
 */
export function stateFromSnapshot(s: PlanSnapshot): SnapshotCheck {
  if (s.schemaVersion !== STATE_SCHEMA_VERSION) return { ok: false, reason: `unknown state schema version ${s.schemaVersion}` };
  if (sha256Hex(s.stateJson) !== s.stateDigest) return { ok: false, reason: 'stateDigest does not match stateJson' };
  let state: PlanState;
  try {
    state = JSON.parse(s.stateJson) as PlanState;
  } catch (e) {
    return { ok: false, reason: `stateJson is not JSON: ${(e as Error).message}` };
  }
  if (typeof state !== 'object' || state === null || state.planId !== s.planId) return { ok: false, reason: 'stateJson is for another plan' };
  if (state.seq !== s.seq) return { ok: false, reason: `stateJson seq ${String(state.seq)} differs from snapshot seq ${s.seq}` };
  return { ok: true, state };
}

/** stateDigest of a state, re-exported for callers that compare projections. */
export { stateDigest };

/**
 * Header of a plan's snapshot record: the plan's status at the snapshot. A reader can tell finished
 * (dormant) plans apart without decoding the record; the Avro value is the same with or without it.
 */
export const PLAN_STATUS_HEADER = 'plan-status';

/**
 * Header of a watermark record: the highest `attempts[].fencingToken` of any plan of the partition the
 * writer had seen when it wrote the watermark (0 when none). A new owner of the partition must fence
 * above it even for plans it does not decode (see `dormantStatuses` of `restorePartition`).
 */
export const MAX_FENCING_TOKEN_HEADER = 'max-fencing-token';

/** Highest fencing token among a plan's attempts (0 when it has none). */
export function maxFencingTokenOf(state: PlanState): number {
  let max = 0;
  for (const item of Object.values(state.items)) for (const a of item.attempts) if (a.fencingToken > max) max = a.fencingToken;
  return max;
}

/** A record for the snapshots topic (an `OutRecord`). */
export interface SnapshotMessage {
  readonly key: string;
  readonly value: Buffer;
  readonly partition: number;
  readonly headers: Record<string, string>;
}

/**
 * The snapshot record of a plan as every writer produces it: the Avro value of {@link snapshotOf}, keyed by
 * planId, with the {@link PLAN_STATUS_HEADER}. A value over the chunk size is not one record: see
 * {@link snapshotMessages}.
 */
export function snapshotMessage(codec: Pick<LedgerCodec, 'encodeSnapshot'>, state: PlanState, partition: number, eventsOffset: string, takenAt: number): SnapshotMessage {
  return {
    key: state.planId,
    value: codec.encodeSnapshot(snapshotOf(state, partition, eventsOffset, takenAt)),
    partition,
    headers: { [PLAN_STATUS_HEADER]: state.status },
  };
}

// ---- Chunked snapshots -------------------------------------------------------------------------------
//
// A plan's snapshot can outgrow a record (the snapshots topic's max.message.bytes, 1 MiB by default): a
// plan of thousands of items with long `why` texts. Its encoded value is then cut into byte chunks, each a
// record keyed `__chunk:<planId>/<i>` (`__` is reserved, `/` is not an id character), followed in the same
// transaction by a small head record under the plan's key: a PlanSnapshot whose stateJson is empty, with
// headers naming the chunk count and the sha256 of the whole value. Readers put the chunks back together
// (the latest record of each chunk key, checked against the head's sha256) and get the very bytes a
// one-record snapshot would have had, so everything downstream (decodeSnapshot, stateFromSnapshot, the
// dormant and archived raw values the executor decodes) is unchanged. A reader that does not know chunks
// decodes the head, finds stateJson does not match stateDigest, and replays the plan from its events:
// slower, never wrong. Chunk keys of a plan are overwritten by its next snapshot and tombstoned with it.
// The head also carries the plan's summary (what a list shows) in a header, so a reader that only lists
// or locates plans (the ledger client's index) need not put megabytes together and parse them for it.

/** Header of a chunked snapshot's head record: how many chunk records hold its value. */
export const SNAPSHOT_CHUNKS_HEADER = 'snapshot-chunks';
/** Header of a chunked snapshot's head and chunks: sha256 (hex) of the whole value. */
export const SNAPSHOT_SHA256_HEADER = 'snapshot-sha256';
/** Header of a chunk record: its index. */
export const SNAPSHOT_CHUNK_HEADER = 'snapshot-chunk';
/**
 * Header of a chunked snapshot's head: the plan's summary at the snapshot (JSON of a {@link PlanSummary},
 * `stalled` null). Its planId and seq are those of the head; see {@link summaryOfHead}.
 */
export const SNAPSHOT_SUMMARY_HEADER = 'plan-summary';
/** Bytes per chunk (and the size above which a snapshot is chunked) unless the writer says otherwise. */
export const DEFAULT_SNAPSHOT_CHUNK_BYTES = 512 * 1024;

const CHUNK_KEY_PREFIX = '__chunk:';

/** Key of chunk `index` of a plan's snapshot. */
export function snapshotChunkKey(planId: string, index: number): string {
  return `${CHUNK_KEY_PREFIX}${planId}/${index}`;
}

/** The plan and index a chunk key names; null for any other key. */
export function parseSnapshotChunkKey(key: string): { planId: string; index: number } | null {
  if (!key.startsWith(CHUNK_KEY_PREFIX)) return null;
  const slash = key.lastIndexOf('/');
  const index = Number(key.slice(slash + 1));
  if (slash <= CHUNK_KEY_PREFIX.length || !Number.isSafeInteger(index) || index < 0) return null;
  return { planId: key.slice(CHUNK_KEY_PREFIX.length, slash), index };
}

/** Chunk count of a head record (from its headers); null for a one-record snapshot. */
export function snapshotChunkCount(headers: Readonly<Record<string, string>> | undefined): number | null {
  const v = headers?.[SNAPSHOT_CHUNKS_HEADER];
  if (v === undefined || !/^\d+$/.test(v)) return null;
  return Number(v);
}

function sha256OfBytes(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/**
 * The records of a plan's snapshot: one record when its value fits in `chunkBytes`, else its chunks
 * followed by the head (see the section comment above). Chunks come first: a reader that meets the head
 * has met its chunks (same transaction, same partition).
 */
export function snapshotMessages(
  codec: Pick<LedgerCodec, 'encodeSnapshot'>,
  state: PlanState,
  partition: number,
  eventsOffset: string,
  takenAt: number,
  chunkBytes: number = DEFAULT_SNAPSHOT_CHUNK_BYTES,
): SnapshotMessage[] {
  const snapshot = snapshotOf(state, partition, eventsOffset, takenAt);
  const value = codec.encodeSnapshot(snapshot);
  const status = { [PLAN_STATUS_HEADER]: state.status };
  if (value.length <= chunkBytes) return [{ key: state.planId, value, partition, headers: status }];
  const sha = sha256OfBytes(value);
  const out: SnapshotMessage[] = [];
  for (let i = 0, at = 0; at < value.length; i++, at += chunkBytes) {
    out.push({ key: snapshotChunkKey(state.planId, i), value: value.subarray(at, at + chunkBytes), partition, headers: { [SNAPSHOT_SHA256_HEADER]: sha, [SNAPSHOT_CHUNK_HEADER]: String(i) } });
  }
  const head = codec.encodeSnapshot({ ...snapshot, stateJson: '' });
  const summary = JSON.stringify(summarize({ planId: state.planId, state, stalled: null }));
  out.push({ key: state.planId, value: head, partition, headers: { ...status, [SNAPSHOT_CHUNKS_HEADER]: String(out.length), [SNAPSHOT_SHA256_HEADER]: sha, [SNAPSHOT_SUMMARY_HEADER]: summary } });
  return out;
}

const STATUSES = new Set<string>(Object.values(PlanStatus));
const PROGRESS_KEYS = ['total', 'pending', 'running', 'completed', 'failed', 'cancelled'] as const;
const count = (v: unknown): boolean => Number.isSafeInteger(v) && (v as number) >= 0;

/**
 * The summary a chunked snapshot's head carries ({@link SNAPSHOT_SUMMARY_HEADER}), if it is well formed
 * and names the head's own plan and seq; null otherwise (an older writer's head has none:
 * the reader then puts the snapshot together and summarizes its state).
 */
export function summaryOfHead(headers: Readonly<Record<string, string>> | undefined, head: Pick<PlanSnapshot, 'planId' | 'seq'>): PlanSummary | null {
  const raw = headers?.[SNAPSHOT_SUMMARY_HEADER];
  if (raw === undefined) return null;
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (o.planId !== head.planId || o.seq !== head.seq) return null;
  if (typeof o.digest !== 'string' || typeof o.goal !== 'string' || typeof o.status !== 'string' || !STATUSES.has(o.status)) return null;
  if (o.mode !== null && typeof o.mode !== 'string') return null;
  if (o.createdAt !== null && !count(o.createdAt)) return null;
  if (!count(o.updatedAt)) return null;
  const labels = o.labels;
  if (typeof labels !== 'object' || labels === null || Array.isArray(labels) || Object.values(labels).some((x) => typeof x !== 'string')) return null;
  const progress = o.progress;
  if (typeof progress !== 'object' || progress === null || PROGRESS_KEYS.some((k) => !count((progress as Record<string, unknown>)[k]))) return null;
  const parent = o.parent;
  if (parent !== null && (typeof parent !== 'object' || Array.isArray(parent))) return null;
  const n = progress as Record<(typeof PROGRESS_KEYS)[number], number>;
  // Only the summary's own fields (a later writer's extra ones are not passed on).
  return {
    planId: head.planId,
    goal: o.goal,
    mode: o.mode as PlanSummary['mode'],
    status: o.status as PlanSummary['status'],
    labels: { ...(labels as Record<string, string>) },
    parent: parent as PlanSummary['parent'],
    seq: head.seq,
    digest: o.digest,
    createdAt: o.createdAt as number | null,
    updatedAt: o.updatedAt as number,
    progress: { total: n.total, pending: n.pending, running: n.running, completed: n.completed, failed: n.failed, cancelled: n.cancelled },
    stalled: null,
  };
}

/** A record of the snapshots or archive topic, as readers see it. */
export interface SnapshotRecordLike {
  readonly value: Buffer | null;
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * The whole value of a snapshot record: the value itself for a one-record snapshot; for a head, its chunks
 * put back together (`chunk(i)` is the latest record of chunk key i), checked against the head's sha256.
 */
export function assembleSnapshotValue(
  head: SnapshotRecordLike & { readonly value: Buffer },
  chunk: (index: number) => SnapshotRecordLike | undefined,
): { ok: true; value: Buffer } | { ok: false; reason: string } {
  const n = snapshotChunkCount(head.headers);
  if (n === null) return { ok: true, value: head.value };
  const sha = head.headers?.[SNAPSHOT_SHA256_HEADER];
  const parts: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const c = chunk(i);
    if (c?.value == null) return { ok: false, reason: `chunk ${i} of ${n} is missing` };
    if (c.headers?.[SNAPSHOT_SHA256_HEADER] !== sha) return { ok: false, reason: `chunk ${i} of ${n} belongs to another snapshot` };
    parts.push(c.value);
  }
  const value = Buffer.concat(parts);
  if (sha256OfBytes(value) !== sha) return { ok: false, reason: 'chunks do not match the head\'s sha256' };
  return { ok: true, value };
}

/**
 * Collects the chunk records of one partition's snapshots (or archive) as they are read, latest per key,
 * and assembles heads from them. Tombstones remove a chunk.
 */
export class SnapshotChunks {
  private readonly chunks = new Map<string, SnapshotRecordLike>();

  /** Takes the record if it is a chunk (returns true); false for any other key. */
  offer(key: string, record: SnapshotRecordLike): boolean {
    if (parseSnapshotChunkKey(key) === null) return false;
    if (record.value === null) this.chunks.delete(key);
    else this.chunks.set(key, { value: record.value, headers: record.headers });
    return true;
  }

  /** See {@link assembleSnapshotValue}. */
  assemble(planId: string, head: SnapshotRecordLike & { readonly value: Buffer }): { ok: true; value: Buffer } | { ok: false; reason: string } {
    return assembleSnapshotValue(head, (i) => this.chunks.get(snapshotChunkKey(planId, i)));
  }

  /** Chunk keys held per plan (a writer tombstones them with the plan). */
  counts(): Map<string, number> {
    const out = new Map<string, number>();
    for (const key of this.chunks.keys()) {
      const k = parseSnapshotChunkKey(key)!;
      out.set(k.planId, Math.max(out.get(k.planId) ?? 0, k.index + 1));
    }
    return out;
  }
}

/**
 * Statuses a plan never leaves (a command on such a plan is only ever rejected; erasure removes it): its
 * snapshot moves to the archive topic and leaves a tombstone in the snapshots topic, so a new owner of the
 * partition reads only live plans' snapshots and loads an archived plan when something needs it.
 * (`failed` is not among them: RetryItem takes a failed plan back to running.)
 */
export const ARCHIVED_STATUSES: readonly PlanState['status'][] = ['completed', 'cancelled'];

export function isArchivedStatus(status: string | undefined): boolean {
  return status !== undefined && (ARCHIVED_STATUSES as readonly string[]).includes(status);
}

/** Records for one topic of the snapshot writer (a `TopicRecords`). */
export interface SnapshotTopicRecords {
  readonly topic: string;
  readonly messages: Array<{ key: string; value: Buffer | null; partition: number; headers?: Record<string, string> }>;
}

/** Options of {@link planSnapshotRecords}. */
export interface PlanSnapshotRecordOptions {
  /** Chunk size (default {@link DEFAULT_SNAPSHOT_CHUNK_BYTES}); keep it well under the topic's max.message.bytes. */
  readonly chunkBytes?: number;
  /** Chunk keys the plan may hold already in the snapshots topic (its last chunked snapshot's count): tombstoned when not overwritten. */
  readonly staleChunks?: number;
}

/**
 * Where a plan's snapshot goes, as every writer does it: a live plan's to the snapshots topic; a plan in
 * an {@link ARCHIVED_STATUSES} status to the archive topic, with a tombstone for its key (and its chunk
 * keys) in the snapshots topic (both in the writer's one transaction). `chunks` is the number of chunk
 * records written (0: one record).
 */
export function planSnapshotRecords(
  codec: Pick<LedgerCodec, 'encodeSnapshot'>,
  topics: { snapshots: string; archive: string },
  state: PlanState,
  partition: number,
  eventsOffset: string,
  takenAt: number,
  opts: PlanSnapshotRecordOptions = {},
): { snapshots: SnapshotTopicRecords['messages']; archive: SnapshotTopicRecords['messages']; chunks: number } {
  const messages = snapshotMessages(codec, state, partition, eventsOffset, takenAt, opts.chunkBytes);
  const chunks = messages.length - 1;
  const stale = (from: number) => {
    const out: SnapshotTopicRecords['messages'] = [];
    for (let i = from; i < (opts.staleChunks ?? 0); i++) out.push({ key: snapshotChunkKey(state.planId, i), value: null, partition });
    return out;
  };
  if (!isArchivedStatus(state.status)) return { snapshots: [...messages, ...stale(chunks)], archive: [], chunks };
  return { snapshots: [...stale(0), { key: state.planId, value: null, partition }], archive: messages, chunks };
}

/**
 * Plans of a partition whose snapshot could not be written (see the projector's snapshot writer): planId →
 * the events offset from which a reader must replay that plan's events. Carried in the watermark record's
 * stateJson as `{"snapshotExceptions":{...}}`; restore then reads the tail from the lowest of them (events
 * of the other plans there are covered by their snapshots and skipped).
 */
export type SnapshotExceptions = ReadonlyMap<string, string>;

/** Most exceptions one watermark carries; past it the writer holds the watermark back instead. */
export const MAX_SNAPSHOT_EXCEPTIONS = 1000;

/** The exceptions of a decoded watermark (empty when it has none, or when its stateJson is not the expected shape). */
export function snapshotExceptionsOf(watermark: Pick<PlanSnapshot, 'stateJson'>): Map<string, string> {
  const out = new Map<string, string>();
  try {
    const parsed = JSON.parse(watermark.stateJson) as { snapshotExceptions?: Record<string, unknown> };
    for (const [id, offset] of Object.entries(parsed.snapshotExceptions ?? {})) if (typeof offset === 'string' && /^\d+$/.test(offset)) out.set(id, offset);
  } catch {
    // not ours to judge: a watermark without exceptions
  }
  return out;
}

/**
 * The watermark record of a partition ({@link watermarkOf}) with the {@link MAX_FENCING_TOKEN_HEADER}, and
 * the partition's {@link SnapshotExceptions} when there are any.
 */
export function watermarkMessage(
  codec: Pick<LedgerCodec, 'encodeSnapshot'>,
  partition: number,
  eventsOffset: string,
  maxFencingToken: number,
  takenAt: number,
  exceptions: SnapshotExceptions = new Map(),
): SnapshotMessage {
  const w = watermarkOf(partition, eventsOffset, takenAt);
  const stateJson = exceptions.size === 0 ? w.stateJson : canonicalJson({ snapshotExceptions: Object.fromEntries(exceptions) });
  return {
    key: WATERMARK_KEY,
    value: codec.encodeSnapshot({ ...w, stateJson }),
    partition,
    headers: { [MAX_FENCING_TOKEN_HEADER]: String(maxFencingToken) },
  };
}

/** The max-fencing-token header's value; null when absent or not a non-negative integer. */
export function parseMaxFencingToken(headers: Readonly<Record<string, string>> | undefined): number | null {
  const v = headers?.[MAX_FENCING_TOKEN_HEADER];
  if (v === undefined || !/^\d+$/.test(v)) return null;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : null;
}
