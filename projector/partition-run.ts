// A projected partition's state between batches (the projection and what the snapshot writer and the cold
// cache keep of it), and one plan's snapshot records as captured for a write.
import { backoffMs } from '../src/backoff.js';
import type { PartitionProjection, SnapshotTopicRecords } from '../src/projection/index.js';

export interface PartitionRun {
  readonly projection: PartitionProjection;
  /** Next events offset to apply. */
  nextOffset: bigint;
  /** Where the first batch after the restore was sent to read on from (null until then). */
  seekedTo: bigint | null;
  /** lastOffset of the projection when the last watermark was written. */
  watermarkedAt: string | null;
  /** Source offsets already in the DLQ (from restore). */
  readonly deadLettered: Set<string>;
  /**
   * Each plan's trace context, from the `traceparent` header of its event records (the executor writes it):
   * carried on the plan's snapshot record, so an owner restoring from the snapshot continues the plan's trace.
   */
  readonly traceparents: Map<string, string>;
  /** Plans whose snapshot could not be written: tried again alone after a backoff. */
  readonly failing: Map<string, { failures: number; nextTryAt: number; reason: string }>;
  /**
   * Plans without a snapshot covering their events up to the watermark: planId → the events offset their
   * replay starts from. Written into each watermark as its exceptions (`SnapshotExceptions`).
   */
  readonly exceptions: Map<string, string>;
  /** Chunk keys each plan may hold in the snapshots and archive topics (tombstoned when it is erased). */
  readonly chunkCounts: Map<string, number>;
  /** Seq of each plan's latest snapshot that landed (for exceptions captured before it landed). */
  readonly landedSeq: Map<string, number>;
  /** Finished plans whose archive record holds their state at `seq` (at `offset` of the archive partition): they may go cold. */
  readonly archivedAt: Map<string, { offset: string; seq: number }>;
  /** The plan whose record the consumer is applying now (across its awaits): it does not go cold meanwhile. */
  applying: string | null;
}

/** One plan's snapshot records, captured at one moment. */
export interface PlanSnapshotGroup {
  readonly id: string;
  readonly seq: number;
  readonly snapshots: SnapshotTopicRecords['messages'];
  readonly archive: SnapshotTopicRecords['messages'];
  readonly chunks: number;
}

/** Backoff before a plan whose snapshot failed is tried again (alone). */
export function snapshotRetryDelayMs(failures: number): number {
  return backoffMs(failures, 1000, 60_000);
}

/**
 * Makes a plan an exception of the partition's next watermarks (if it is not one yet): readers replay its
 * events from the offset after the last watermark written, since everything of it up to there is in a
 * snapshot that landed.
 */
export function markException(run: PartitionRun, planId: string): void {
  if (!run.exceptions.has(planId)) run.exceptions.set(planId, run.watermarkedAt === null ? '0' : (BigInt(run.watermarkedAt) + 1n).toString());
}
