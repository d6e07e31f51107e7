import { canonicalJson, sha256Hex, stateDigest, type PlanState } from '../plan/index.js';
import type { PlanSnapshot } from '../codec/index.js';

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
