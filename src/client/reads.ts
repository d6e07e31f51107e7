// A plan read from its latest snapshot plus the events after it, located by offset: the cost follows the
// tail after the partition's watermark (and, for every event of a plan, the history since the plan was
// created), not the history of the topic.
import type { LedgerCodec } from '../codec/index.js';
import { topicNames, type LedgerConfig } from '../config.js';
import { partitionFor, readPlanRecords, type KafkaClient, type LedgerAdmin, type LogRecord, type ReadStats } from '../kafka/index.js';
import { evolveAll, type PlanEvent, type PlanState } from '../plan/index.js';
import type { PlanStartOffsets } from '../audit/log.js';
import type { PlanIndex } from './plan-index.js';

/**
 * How far before a plan's `createdAt` its first event may sit by record timestamp. The owner writes each
 * event record with `timestamp = occurredAt`, and `createdAt` is the first event's occurredAt, so the
 * lookup asks for a time the record it looks for carries itself: Kafka answers the first offset stamped at
 * or after it, so the plan's first event is never skipped, however far ahead or behind the clocks of the
 * owners that wrote its later events are (docs/concepts/item-protocol.md#clocks). No margin is needed in
 * principle; this one covers a broker that stamps records itself (`LogAppendTime`) with a clock up to a
 * minute behind the owner's.
 */
export const PLAN_START_MARGIN_MS = 60_000;

export interface PlanReads {
  readonly kafka: KafkaClient;
  readonly admin: LedgerAdmin;
  readonly codec: Pick<LedgerCodec, 'decodeEvent' | 'decodeSnapshot'>;
  readonly config: LedgerConfig;
  readonly index: PlanIndex;
  readonly stats?: ReadStats;
}

/** What a read of a plan's tail read: the plan and the events partition's offset it read up to. */
export interface PlanRead {
  readonly state: PlanState | undefined;
  /** Events the read applied on top of the snapshot. */
  readonly tailEvents: number;
  /** Whether it started from a snapshot. */
  readonly fromSnapshot: boolean;
}

/**
 * The plan now: its latest snapshot (live or archived, found in the index) plus its events after
 * max(watermark, the snapshot's events offset). A plan without a snapshot has no events at or before the
 * watermark, so its events are read from there too. Without a watermark (no projector has run) or with a
 * snapshot that does not verify, the partition is read from its start: slower, never wrong.
 */
export async function readPlanState(r: PlanReads, planId: string): Promise<PlanRead> {
  const partition = partitionFor(planId, r.config.partitions);
  await r.index.sync([partition]);
  const w = r.index.watermark(partition);
  const entry = r.index.get(planId);
  // Archived a moment ago, its archive record not read yet: its events from its creation on.
  if (entry === undefined && w !== null && r.index.departedAt(planId) !== undefined) return fold(r, planId, undefined, await planRecords(r, planId, partition, await startOffset(r, planId, partition, w)));
  let from: bigint | null = w === null || r.index.isUntrusted(partition, planId) ? null : BigInt(w) + 1n;
  if (from !== null && entry && BigInt(entry.eventsOffset) + 1n > from) from = BigInt(entry.eventsOffset) + 1n;
  const [state, records] = await Promise.all([
    from !== null && entry ? r.index.stateOf(entry) : Promise.resolve(undefined),
    planRecords(r, planId, partition, from === null ? undefined : from.toString()),
  ]);
  if (from !== null && entry && state === undefined) {
    // The archived record moved on (archived again) or does not verify: read the plan from the start.
    return readFromStart(r, planId, partition);
  }
  return fold(r, planId, state, records);
}

async function readFromStart(r: PlanReads, planId: string, partition: number): Promise<PlanRead> {
  return fold(r, planId, undefined, await planRecords(r, planId, partition));
}

/** The plan's live event records on its partition, from `from` (default: the partition's start). */
function planRecords(r: PlanReads, planId: string, partition: number, from?: string) {
  return readPlanRecords({
    kafka: r.kafka,
    topic: topicNames(r.config.topicPrefix).events,
    partition,
    planId,
    ...(from !== undefined ? { from } : {}),
    ...(r.stats ? { stats: r.stats } : {}),
  });
}

async function fold(r: PlanReads, planId: string, snapshot: PlanState | undefined, records: ReadonlyArray<LogRecord & { seq: number; value: Buffer }>): Promise<PlanRead> {
  const bySeq = [...records].sort((a, b) => a.seq - b.seq);
  const events: PlanEvent[] = [];
  for (const rec of bySeq) {
    if (snapshot && rec.seq <= snapshot.seq) continue;
    const event = await r.codec.decodeEvent(rec.value);
    if (event.planId !== planId) continue;
    events.push(event);
  }
  // One fold of the whole tail: one copy of what it changes, not one copy of the items map per event.
  const state = evolveAll(snapshot, events);
  return { state, tailEvents: events.filter((e) => !snapshot || e.seq > snapshot.seq).length, fromSnapshot: snapshot !== undefined };
}

/**
 * Where a plan's events start on its partition: found by the record timestamp of its creation
 * (`createdAt` from its snapshot, less {@link PLAN_START_MARGIN_MS}), or the watermark for a plan the
 * snapshots do not hold yet (all its events come after it). A plan with a snapshot also gets the offset of
 * its exact creation time to try first: on a busy partition the margin is a minute of other plans' records,
 * and the read checks that it found the plan's events from seq 1 on (else it reads from `from`). A plan
 * whose live snapshot is tombstoned while its archive record is not read yet is located by the creation
 * time its last live snapshot had (or read from the start).
 */
export async function planStartOffset(r: PlanReads, planId: string): Promise<PlanStartOffsets> {
  const partition = partitionFor(planId, r.config.partitions);
  await r.index.sync([partition]);
  const w = r.index.watermark(partition);
  return w === null ? {} : startOffsets(r, planId, partition, w);
}

async function startOffset(r: PlanReads, planId: string, partition: number, w: string): Promise<string | undefined> {
  return (await startOffsets(r, planId, partition, w)).from;
}

async function startOffsets(r: PlanReads, planId: string, partition: number, w: string): Promise<PlanStartOffsets> {
  if (r.index.isUntrusted(partition, planId)) return {};
  const entry = r.index.get(planId);
  const departed = r.index.departedAt(planId);
  // A plan the snapshots do not hold has all its events after the watermark, unless it was archived a
  // moment ago (its archive record not read yet): then it is found by its creation time like any other.
  if (!entry && departed === undefined) return { from: (BigInt(w) + 1n).toString() };
  const createdAt = entry ? entry.summary.createdAt : departed!;
  if (createdAt === null) return {};
  const events = topicNames(r.config.topicPrefix).events;
  const at = async (ts: number) => (await r.admin.fetchTopicOffsetsByTimestamp(events, ts)).find((o) => o.partition === partition)?.offset;
  const [margin, exact, ends] = await Promise.all([
    at(Math.max(0, createdAt - PLAN_START_MARGIN_MS)),
    entry ? at(createdAt) : Promise.resolve(undefined),
    r.admin.fetchTopicOffsets(events, [partition]),
  ]);
  const low = ends.find((o) => o.partition === partition)?.low;
  const clamp = (o: string | undefined) => (o === undefined || BigInt(o) < 0n ? undefined : low !== undefined && BigInt(low) > BigInt(o) ? low : o);
  const from = clamp(margin);
  const tryFrom = clamp(exact);
  if (from === undefined) return {};
  return entry && tryFrom !== undefined && BigInt(tryFrom) > BigInt(from) ? { from, start: { tryFrom, seq: entry.seq } } : { from };
}
