import { canonicalJson, sha256Hex, stateDigest, type PlanState } from '../plan/index.js';
import type { LedgerCodec, PlanSnapshot } from '../codec/index.js';

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

/** A record for the snapshots topic (kafkajs `Message` shape). */
export interface SnapshotMessage {
  readonly key: string;
  readonly value: Buffer;
  readonly partition: number;
  readonly headers: Record<string, string>;
}

/**
 * The snapshot record of a plan as every writer produces it: the Avro value of {@link snapshotOf}, keyed by
 * planId, with the {@link PLAN_STATUS_HEADER}. The projector and the restore benchmark both use this.
 */
export function snapshotMessage(codec: Pick<LedgerCodec, 'encodeSnapshot'>, state: PlanState, partition: number, eventsOffset: string, takenAt: number): SnapshotMessage {
  return {
    key: state.planId,
    value: codec.encodeSnapshot(snapshotOf(state, partition, eventsOffset, takenAt)),
    partition,
    headers: { [PLAN_STATUS_HEADER]: state.status },
  };
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

/** Records for one topic of the snapshot writer (kafkajs `TopicMessages` shape). */
export interface SnapshotTopicRecords {
  readonly topic: string;
  readonly messages: Array<{ key: string; value: Buffer | null; partition: number; headers?: Record<string, string> }>;
}

/**
 * Where a plan's snapshot goes, as every writer does it: a live plan's to the snapshots topic; a plan in
 * an {@link ARCHIVED_STATUSES} status to the archive topic, with a tombstone for its key in the snapshots
 * topic (both in the writer's one transaction).
 */
export function planSnapshotRecords(
  codec: Pick<LedgerCodec, 'encodeSnapshot'>,
  topics: { snapshots: string; archive: string },
  state: PlanState,
  partition: number,
  eventsOffset: string,
  takenAt: number,
): { snapshots: SnapshotTopicRecords['messages']; archive: SnapshotTopicRecords['messages'] } {
  const message = snapshotMessage(codec, state, partition, eventsOffset, takenAt);
  if (!isArchivedStatus(state.status)) return { snapshots: [message], archive: [] };
  return { snapshots: [{ key: state.planId, value: null, partition }], archive: [message] };
}

/** The watermark record of a partition ({@link watermarkOf}) with the {@link MAX_FENCING_TOKEN_HEADER}. */
export function watermarkMessage(codec: Pick<LedgerCodec, 'encodeSnapshot'>, partition: number, eventsOffset: string, maxFencingToken: number, takenAt: number): SnapshotMessage {
  return {
    key: WATERMARK_KEY,
    value: codec.encodeSnapshot(watermarkOf(partition, eventsOffset, takenAt)),
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
