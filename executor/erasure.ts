import { erasureRecord } from '../src/audit/erasure-record.js';
import { blobTombstones, parseRef } from '../src/blobs/index.js';
import { auditTopic, eventKey, PLAN_KEYS_SEGMENT_MS, type OutRecord } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { getItem, hasAppliedCommand, isPlanFinished, type PlanCommand } from '../src/plan/index.js';
import type { OwnerDeps } from './context.js';
import type { PartitionBook } from './partition-book.js';
import type { PlanWriter } from './plan-writer.js';
import { childErasedCommand, commandMessage } from './records.js';
import { DEFAULT_SNAPSHOT_CHUNK_BYTES, snapshotChunkKey } from '../src/projection/snapshot.js';
import { canonicalJson, type PlanState } from '../src/plan/index.js';

/**
 * Tombstones for the chunks a large plan's snapshot may have been cut into (the projector cuts a snapshot
 * over 512 KiB; its Avro value is a little larger than the state's JSON, hence the one spare). A small plan
 * has none. The projector tombstones the chunks it wrote as well, when it sees the erasure.
 */
function snapshotChunkTombstones(state: PlanState, partition: number): Array<{ key: string; value: null; partition: number }> {
  const bytes = Buffer.byteLength(canonicalJson(state), 'utf8');
  if (bytes < DEFAULT_SNAPSHOT_CHUNK_BYTES / 2) return [];
  const chunks = Math.ceil(bytes / DEFAULT_SNAPSHOT_CHUNK_BYTES) + 1;
  return Array.from({ length: chunks }, (_, i) => ({ key: snapshotChunkKey(state.planId, i), value: null, partition }));
}

export interface ErasureContext {
  readonly partition: number;
  readonly book: PartitionBook;
  readonly writer: PlanWriter;
  /** What the erasure reads of the owner's dependencies. */
  readonly d: Pick<OwnerDeps, 'admin' | 'codec' | 'config' | 'executorId' | 'keys' | 'now' | 'streams'>;
  readonly log: Logger;
  readonly topics: { commands: string; snapshots: string; archive: string; blobs: string; planKeys: string };
}

/**
 * ErasePlan: decided like any command (refused while approved or running without `force`), and when
 * accepted the erasure itself, in ONE transaction with the command's offset: a tombstone for every
 * event key `planId:1..seq` on the events partition, a tombstone for the plan's snapshot and its archive record, and a
 * `PlanErased` record on `<prefix>.ledger-audit`. Then the owner forgets the plan; its items still in
 * flight find no plan when they return and record nothing.
 *
 * A child plan erased before it finished (only possible with `force`) would leave its parent item
 * waiting forever, so the same transaction tells the parent: a `ChildPlanFinished` with status `failed`
 * and error `CHILD_ERASED`, under the commandId a finishing child uses (`child-finished:<childPlanId>`).
 * A child that finished already told its parent and sends nothing; should both commands ever reach the
 * parent (a stalled child whose state lags its log), the parent applies the first and ignores the other.
 */
export function erasePlan(ctx: ErasureContext, command: Extract<PlanCommand, { type: 'ErasePlan' }>, commitOffset: string): Promise<void> {
const { book, writer, d, log, topics, partition } = ctx;
  const { planId } = command;
  const state = book.plans.get(planId);
  // A commandId that already caused events (its own rejection, redelivered) is decided already.
  if (state && hasAppliedCommand(state, command.commandId)) return writer.appendEvents(planId, [], commitOffset);
  const rejected = book.decideAndApply(command, true);
  if (rejected.events.length || !state) return writer.append(planId, rejected, commitOffset);

  const lastSeq = Math.max(state.seq, book.stalledKeySeq.get(planId) ?? 0);
  const tombstones: OutRecord[] = Array.from({ length: lastSeq }, (_, i) => ({ key: eventKey(planId, i + 1), value: null }));
  const toParent = state.parent && !isPlanFinished(state.status) ? childErasedCommand(state, command, { executorId: d.executorId, now: (d.now?.() ?? Date.now()) }) : undefined;
  const record = erasureRecord(state, {
    commandId: command.commandId,
    by: command.data.by,
    reason: command.data.reason,
    force: command.data.force,
    partition: partition,
    now: (d.now?.() ?? Date.now()),
    executorId: d.executorId,
    lastSeq,
    ...(toParent ? { parentNotified: { planId: toParent.planId, itemId: toParent.data.parentItemId, commandId: toParent.commandId } } : {}),
  });
  book.forget(planId);
  // Every payload the plan stored by reference: inputs, outputs of every attempt, checkpoint, evidence.
  const blobs = new Map<string, OutRecord[]>();
  for (const id of state.itemOrder) {
    const item = getItem(state, id);
    for (const json of [item?.inputJson, item?.outputJson, ...(item?.attempts ?? []).map((a) => a.outputJson), item?.checkpoint?.stateJson, ...(item?.evidence ?? []).map((e) => e.valueJson)]) {
      const ref = parseRef(json);
      if (ref && !blobs.has(ref.sha256)) blobs.set(ref.sha256, blobTombstones(planId, ref, partition));
    }
  }
  // Crypto-shredding: the plan's data key is destroyed (a tombstone on plan-keys, in the same
  // transaction) and dropped from memory, so every copy of its encrypted payloads — commands, DLQ,
  // events not yet compacted, backups — can no longer be opened. Written also without a master key here:
  // a client may have given the plan a key.
  const keyTombstone = { key: planId, value: null, partition };
  d.keys?.forget(planId);
  log.info({ planId, status: state.status, events: lastSeq, blobs: blobs.size, forced: record.forced, by: record.by, parentNotified: record.parentNotified }, 'plan erased');
  const erased = writer.appender.append({
    events: tombstones,
    extra: [
      { topic: topics.snapshots, messages: [{ key: planId, value: null, partition: partition }, ...snapshotChunkTombstones(state, partition)] },
      { topic: topics.archive, messages: [{ key: planId, value: null, partition: partition }] },
      ...(blobs.size ? [{ topic: topics.blobs, messages: [...blobs.values()].flat() }] : []),
      { topic: topics.planKeys, messages: [keyTombstone] },
      { topic: auditTopic(d.config.topicPrefix), messages: [{ key: planId, value: JSON.stringify(record) }] },
      ...(toParent ? [{ topic: topics.commands, messages: [commandMessage(d.codec, d.config.partitions, toParent)] }] : []),
    ],
    commitOffset,
  });
  void erased.then(
    () => {
      rollKeyLog(ctx, planId);
      sweepStreams(ctx, planId, state.createdAt);
    },
    () => {},
  );
  return erased;
}

/** The key of the record that rolls a plan-keys segment (the reserved `__` prefix: never a plan id). */
export const KEY_LOG_ROLL = '__roll';

/**
 * After the erasure commits, the plan's old key record is still physically in the plan-keys partition:
 * the cleaner only compacts closed segments, and Kafka closes one only at a write made `segment.ms` after
 * it opened. So the owner writes one more record (a tombstone of {@link KEY_LOG_ROLL}) just past
 * `segment.ms`: the segment holding the old key and its tombstone closes, and the cleaner removes the key.
 * Best effort: an owner that lost the partition meanwhile leaves it to the next write there.
 */
function rollKeyLog(ctx: ErasureContext, planId: string): void {
  const timer = setTimeout(() => {
    ctx.writer.appender
      .append({ events: [], extra: [{ topic: ctx.topics.planKeys, messages: [{ key: KEY_LOG_ROLL, value: null, partition: ctx.partition }] }] })
      .catch((e: unknown) => ctx.log.debug({ err: e, planId }, 'could not roll the plan-keys segment after an erasure; the next write there rolls it'));
  }, PLAN_KEYS_SEGMENT_MS + 200);
  timer.unref();
}

/** How long after an erasure its stream sweep starts: the plan's attempts still in flight have stopped writing by then. */
const STREAM_SWEEP_DELAY_MS = 1_000;

/**
 * After the erasure commits: tombstones for the plan's stream records (`<prefix>.plan-streams`), found by
 * reading its partition from the plan's creation on. Not in the erasure's transaction: the keys are known
 * only by reading, and an attempt of the plan still running writes nothing more once the plan is forgotten
 * (AttemptStream checks), so the sweep runs a moment later. Best effort: an owner that stops meanwhile
 * leaves the records to the topic's retention; readers refuse an erased plan's stream either way.
 */
function sweepStreams(ctx: ErasureContext, planId: string, createdAt: number | null): void {
  const { streams, admin } = ctx.d;
  if (streams === undefined || admin === undefined) return;
  const since = createdAt ?? 0;
  const timer = setTimeout(() => {
    streams
      .erase(admin, planId, ctx.partition, since)
      .then((n) => ctx.log.info({ planId, records: n }, 'stream records of the erased plan tombstoned'))
      .catch((e: unknown) => ctx.log.warn({ err: e, planId }, 'the stream records of an erased plan could not be tombstoned; retention removes them'));
  }, STREAM_SWEEP_DELAY_MS);
  timer.unref();
}
