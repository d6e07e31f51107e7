import type { LedgerCodec } from '../codec/index.js';
import { topicNames, type LedgerConfig } from '../config.js';
import type { KafkaClient, LogRecord, ReadStats } from '../kafka/index.js';
import type { Logger } from '../logging.js';
import type { PlanEvent, PlanState, PlanStatus } from '../plan/index.js';
import { PartitionProjection, type RecordOutcome } from './partition.js';
import { readDeadLetters } from './dlq-reader.js';
import { classifyFailure, parseEventKey, stallOf, type Stall } from './poison.js';
import { processEventBatch, withUnavailableRetry } from './records.js';
import {
  isWatermark,
  parseMaxFencingToken,
  PLAN_STATUS_HEADER,
  parseSnapshotChunkKey,
  snapshotExceptionsOf,
  SnapshotChunks,
  stateFromSnapshot,
  WATERMARK_KEY,
  type PlanSnapshot,
  type SnapshotExceptions,
} from './snapshot.js';
import type { SnapshotPolicyOptions } from './snapshot-policy.js';
import { TRACEPARENT_HEADER } from '../trace-header.js';

export interface RestorePartitionOptions {
  readonly kafka: KafkaClient;
  readonly codec: Pick<LedgerCodec, 'decodeEvent' | 'decodeKnownEvent' | 'decodeSnapshot'>;
  readonly config: LedgerConfig;
  readonly partition: number;
  readonly logger?: Logger;
  /** Snapshot policy of the returned projection (for a caller that keeps snapshotting, like the projector). */
  readonly snapshotPolicy?: Partial<SnapshotPolicyOptions>;
  /**
   * Re-establish stalled plans from the DLQ topic's partition (default true): a plan whose record was
   * dead-lettered stays stalled across restarts instead of silently resuming past the hole.
   */
  readonly readDeadLetters?: boolean;
  /** Called for each record of the replayed tail that cannot be decoded or applied (not yet dead-lettered). */
  readonly onPoison?: (outcome: Extract<RecordOutcome, { kind: 'poison' }>, record: LogRecord) => void | Promise<void>;
  /** Called for each event of the replayed tail that was applied (the projector counts them as activity). */
  readonly onApplied?: (event: PlanEvent) => void;
  /**
   * Plans whose latest snapshot record carries a `plan-status` header in this set (e.g. the executor's
   * `['completed', 'cancelled']`: nothing can change them but a rejection or an erasure) are not decoded:
   * their raw snapshot values come back in `dormant`, so restore cost does not grow with the number of
   * plans ever run. A tail event of a dormant plan decodes its snapshot on the spot. Only applies when the
   * watermark carries `max-fencing-token` (a writer that sets both headers); otherwise every snapshot is
   * decoded, as without this option. Default: none (every plan decoded).
   */
  readonly dormantStatuses?: readonly PlanStatus[];
  /**
   * Plans in the archive topic (finished: completed or cancelled; see `ARCHIVED_STATUSES`). `load`
   * (default): read the archive partition and seed every archived plan, as a reader that serves them all
   * (the projector, the CLI) needs. `defer`: read only the live snapshots now, so restore cost follows the
   * live plans and the tail, not the plans ever run; the archive is read when a tail event or a dead letter
   * needs an archived plan, or when the caller asks (`archived.load()`, e.g. the executor before it
   * decides a command for a plan it does not hold). Archived plans are never decoded in `defer` mode: their
   * raw values come back from `archived.load()`, and the watermark's `max-fencing-token` covers them.
   */
  readonly archive?: 'load' | 'defer';
  /** Per read (default 10 minutes). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Told which read the restore is in (e.g. `snapshots: offsets`, `events: records`): a slow one can say where it waits. */
  readonly onStep?: (step: string) => void;
}

export interface RestoredPartition {
  /** Every plan of the partition that has a state. */
  readonly plans: Map<string, PlanState>;
  /** The next events offset to read: the end of the partition when the restore read it. */
  readonly nextOffset: string;
  /** Plans seeded from a snapshot. */
  readonly fromSnapshot: number;
  /** Events applied on top of the snapshots (the tail's cost). */
  readonly eventsReplayed: number;
  /** Offset W of the partition's watermark the replay started after; null when it replayed from the start. */
  readonly watermark: string | null;
  /** Plans that do not advance: their record was dead-lettered (now or before). */
  readonly stalled: Map<string, Stall>;
  /** Source offsets (events partition) already in the DLQ, so a caller does not dead-letter them twice. */
  readonly deadLettered: ReadonlySet<string>;
  /** The projection itself, for a caller that keeps consuming from `nextOffset`. */
  readonly projection: PartitionProjection;
  /** Why snapshots were (partly) not trusted, if so. */
  readonly warnings: readonly string[];
  /** Plan ids whose last record (snapshot or event) is a tombstone: erased, and not created again since. */
  readonly erased: ReadonlySet<string>;
  /** Highest seq among each plan's event keys in the replayed tail (a stalled plan's records go past its state). */
  readonly lastKeySeq: ReadonlyMap<string, number>;
  /**
   * Plans left undecoded (see `dormantStatuses`): planId → the raw value of its latest snapshot record, to
   * decode with `codec.decodeSnapshot` + `stateFromSnapshot` when the plan is needed. Not in `plans`.
   */
  readonly dormant: Map<string, Buffer>;
  /**
   * Highest `attempts[].fencingToken` of any plan of the partition: the watermark's `max-fencing-token`
   * header max'd with every plan restored here (0 when none). A new owner fences with this + 1.
   */
  readonly maxFencingToken: number;
  /** The partition's archived plans (read already with `archive: 'load'`; on first `load()` with `defer`). */
  readonly archived: ArchiveLoader;
  /**
   * The watermark's snapshot exceptions (plans whose snapshot its writer could not write, with the offset
   * their replay starts from; see `SnapshotExceptions`). The tail was read from the lowest of them.
   */
  readonly snapshotExceptions: SnapshotExceptions;
  /** Chunk records each plan holds in the snapshots topic (a chunked snapshot's count), for a writer that tombstones them. */
  readonly snapshotChunks: ReadonlyMap<string, number>;
  /**
   * Each plan's trace context (record metadata, outside the event and its hash): the `traceparent` header
   * of its last event record in the replayed tail that has one, else that of its snapshot record.
   */
  readonly traceparents: Map<string, string>;
}

/** The archive partition as last read: where each archived plan's latest record is, and the erased ids. */
export interface ArchivedPlans {
  /** planId → offset of its latest archive record (its raw value: {@link ArchiveLoader.value}). */
  readonly offsets: ReadonlyMap<string, string>;
  /** Plan ids whose latest archive record is a tombstone: erased (until the cleaner removes the tombstone). */
  readonly erased: ReadonlySet<string>;
}

export interface ArchiveLoader {
  /** Reads the archive partition's index once (a failed read is tried again on the next call). */
  load(): Promise<ArchivedPlans>;
  /**
   * The raw value of a plan's latest archive record (decode with `codec.decodeSnapshot` +
   * `stateFromSnapshot`), undefined when the plan is not archived. Reads the one record at its offset;
   * a record the cleaner has moved on (the plan was archived again since the index was read) makes it
   * read the index again.
   */
  value(planId: string): Promise<Buffer | undefined>;
  /** Whether the archive partition has been read (restore cost in `defer` mode leaves it out). */
  readonly read: boolean;
}

type ArchiveReadOptions = Pick<RestorePartitionOptions, 'kafka' | 'config' | 'partition' | 'timeoutMs'>;

/**
 * Reads one archive partition to its end: the latest record per key. Keeps the values only when asked
 * (a reader that decodes every archived plan); an index of offsets is a few bytes per plan.
 */
async function readArchive(opts: ArchiveReadOptions, keepValues: boolean): Promise<ArchiveIndex> {
  const names = topicNames(opts.config.topicPrefix);
  const latest = new Map<string, { offset: string; value: Buffer | null; tombstone: boolean; headers: Readonly<Record<string, string>> }>();
  const chunks = new SnapshotChunks();
  const chunkOffsets = new Map<string, string>(); // planId -> lowest offset of its latest chunks
  await opts.kafka.readToEnd({
    topic: names.archive,
    partitions: [opts.partition],
    timeoutMs: opts.timeoutMs ?? 600_000,
    onRecords: (records) => {
      for (const r of records) {
        if (r.key === null) continue;
        const key = r.key.toString('utf8');
        const chunk = parseSnapshotChunkKey(key);
        if (chunk !== null) {
          if (keepValues) chunks.offer(key, r);
          if (r.value !== null && chunk.index === 0) chunkOffsets.set(chunk.planId, r.offset);
          continue;
        }
        latest.set(key, { offset: r.offset, value: keepValues ? r.value : null, tombstone: r.value === null, headers: r.headers });
      }
    },
  });
  const offsets = new Map<string, string>();
  const values = new Map<string, Buffer>();
  const erased = new Set<string>();
  for (const [key, { offset, value, tombstone, headers }] of latest) {
    if (tombstone) {
      erased.add(key);
      continue;
    }
    offsets.set(key, offset);
    if (value === null) continue;
    // A chunked head that does not assemble is left as the head: its snapshot does not verify, so the
    // plan is replayed (or, for the executor, stalled with the reason) rather than trusted.
    const whole = chunks.assemble(key, { value, headers });
    values.set(key, whole.ok ? whole.value : value);
  }
  return { offsets, erased, values, chunkOffsets };
}

interface ArchiveIndex extends ArchivedPlans {
  readonly values: Map<string, Buffer>;
  /** planId → offset of chunk 0 of its latest chunked archive snapshot. */
  readonly chunkOffsets: ReadonlyMap<string, string>;
}

/**
 * The record at `offset` of an archive partition, if it is still there and still `planId`'s; a chunked
 * head comes back assembled, its chunks read from `chunksFrom` (they precede it in the same transaction).
 * Restore and the ledger client's plan index both read archived plans with it.
 */
export async function readArchiveRecord(
  opts: ArchiveReadOptions & { readonly stats?: ReadStats },
  planId: string,
  offset: string,
  chunksFrom: string | undefined,
): Promise<Buffer | undefined> {
  const names = topicNames(opts.config.topicPrefix);
  let found: LogRecord | undefined;
  const chunks = new SnapshotChunks();
  const from = chunksFrom !== undefined && BigInt(chunksFrom) < BigInt(offset) ? chunksFrom : offset;
  await opts.kafka.readToEnd({
    topic: names.archive,
    partitions: [opts.partition],
    from: new Map([[opts.partition, from]]),
    until: new Map([[opts.partition, (BigInt(offset) + 1n).toString()]]),
    timeoutMs: opts.timeoutMs ?? 600_000,
    ...(opts.stats ? { stats: opts.stats } : {}),
    onRecords: (records) => {
      for (const r of records) {
        const key = r.key?.toString('utf8');
        if (key === undefined) continue;
        if (chunks.offer(key, r)) continue;
        if (r.offset === offset && key === planId && r.value !== null) found = r;
      }
    },
  });
  if (found?.value == null) return undefined;
  const whole = chunks.assemble(planId, { value: found.value, headers: found.headers });
  return whole.ok ? whole.value : found.value; // one that does not assemble does not verify (see readArchive)
}

/**
 * The archive of one partition, read on first need. With `keepValues` (a reader that decodes every
 * archived plan) the values come with the one read; without, an index of offsets, and each value is read
 * when asked for.
 */
function archiveLoader(opts: ArchiveReadOptions, keepValues: boolean): ArchiveLoader {
  let pending: Promise<ArchiveIndex> | undefined;
  let read = false;
  const load = () => {
    pending ??= readArchive(opts, keepValues).then(
      (a) => {
        read = true;
        return a;
      },
      (e: unknown) => {
        pending = undefined;
        throw e;
      },
    );
    return pending;
  };
  return {
    load,
    async value(planId) {
      for (let attempt = 0; attempt < 2; attempt++) {
        const a = await load();
        const cached = a.values.get(planId);
        if (cached !== undefined) return cached;
        const offset = a.offsets.get(planId);
        if (offset === undefined) return undefined;
        const value = await readArchiveRecord(opts, planId, offset, a.chunkOffsets.get(planId));
        if (value !== undefined) return value;
        pending = undefined; // archived again since the index was read: read the index again
      }
      return undefined;
    },
    get read() {
      return read;
    },
  };
}

/**
 * Restores every plan of one partition: the latest snapshot per plan (compacted snapshots topic, read to
 * its end), then the events after the partition's watermark W, skipping events a snapshot already covers.
 * The cost follows the tail after W, not the history. Without a watermark (or with a snapshot that does not
 * verify) it replays the partition from its start — slower, never wrong.
 *
 * Undecodable or inapplicable records in the tail stall their plan and are reported through `onPoison`;
 * an unreachable registry is retried with backoff until `signal` aborts.
 *
 * @example
 * const r = await restorePartition({ kafka, codec, config, partition: 2, logger });
 * // r.plans.get('plan-7')?.status, r.eventsReplayed (events after the watermark), r.nextOffset (consume from here)
 */
export async function restorePartition(opts: RestorePartitionOptions): Promise<RestoredPartition> {
  const names = topicNames(opts.config.topicPrefix);
  const p = opts.partition;
  const log = opts.logger?.child({ component: 'restore', partition: p });
  const retry = { logger: log, signal: opts.signal };
  const timeoutMs = opts.timeoutMs ?? 600_000;
  const projection = new PartitionProjection(p, opts.snapshotPolicy);
  const warnings: string[] = [];

  // 1. Latest snapshot per key.
  const latest = new Map<string, { value: Buffer | null; status: string | undefined; maxFencingToken: number | null; headers?: Readonly<Record<string, string>>; traceparent?: string }>();
  const chunks = new SnapshotChunks();
  await opts.kafka.readToEnd({
    topic: names.snapshots,
    partitions: [p],
    timeoutMs,
    onPhase: (phase) => opts.onStep?.(`snapshots: ${phase}`),
    onRecords: (records) => {
      for (const r of records) {
        if (r.key === null) continue;
        const key = r.key.toString('utf8');
        if (chunks.offer(key, r)) continue;
        latest.set(key, { value: r.value, status: r.headers[PLAN_STATUS_HEADER], maxFencingToken: key === WATERMARK_KEY ? parseMaxFencingToken(r.headers) : null, headers: r.headers, traceparent: r.headers[TRACEPARENT_HEADER] });
      }
    },
  });
  // Chunked snapshots: their heads become the whole value (a head that does not assemble is not trusted).
  for (const [key, entry] of latest) {
    if (entry.value === null || key === WATERMARK_KEY) continue;
    const whole = chunks.assemble(key, { value: entry.value, headers: entry.headers });
    if (whole.ok) entry.value = whole.value;
    else warnings.push(`snapshot ${key}: ${whole.reason}`);
  }
  let watermark: string | null = null;
  let exceptions: SnapshotExceptions = new Map();
  let fromSnapshot = 0;
  const erased = new Set<string>();
  const lastKeySeq = new Map<string, number>();
  const dormant = new Map<string, Buffer>();
  const traceparents = new Map<string, string>();
  const deferArchive = opts.archive === 'defer';
  const archived = archiveLoader({ ...opts, timeoutMs }, !deferArchive);
  // Dormancy needs the watermark to vouch for the fencing tokens of the plans it leaves undecoded.
  const watermarkToken = latest.get(WATERMARK_KEY)?.maxFencingToken ?? null;
  const dormantStatuses = watermarkToken === null ? new Set<string>() : new Set<string>(opts.dormantStatuses ?? []);
  if (watermarkToken !== null) projection.noteFencingToken(watermarkToken);
  // Archived plans: their latest snapshot is in the archive (the snapshots topic holds a tombstone, until
  // the cleaner removes it). Read now only in `load` mode; a plan in both (a read between the archive
  // write and the cleaner) is taken from the record with the higher seq.
  if (!deferArchive) {
    const archive = await archived.load();
    for (const key of archive.offsets.keys()) {
      const value = await archived.value(key); // read with the index (keepValues)
      if (value === undefined) continue;
      const live = latest.get(key);
      if (live?.value) {
        const seqOf = (v: Buffer) => withUnavailableRetry(() => opts.codec.decodeSnapshot(v), retry).then((x) => x.seq, () => -1);
        if ((await seqOf(live.value)) >= (await seqOf(value))) continue;
      }
      latest.set(key, { value, status: undefined, maxFencingToken: null });
    }
    for (const key of archive.erased) if (latest.get(key)?.value == null) latest.set(key, { value: null, status: undefined, maxFencingToken: null });
  }
  for (const [key, { value, status, traceparent }] of latest) {
    if (value === null) {
      // Erased; or, deferring the archive, maybe archived: the archive tells (`archived.load()`).
      if (!deferArchive) erased.add(key);
      continue;
    }
    if (status !== undefined && dormantStatuses.has(status) && key !== WATERMARK_KEY) {
      dormant.set(key, value);
      continue;
    }
    let snap: PlanSnapshot;
    try {
      snap = await withUnavailableRetry(() => opts.codec.decodeSnapshot(value), retry);
    } catch (e) {
      warnings.push(`snapshot ${key}: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    if (isWatermark(snap)) {
      watermark = String(snap.eventsOffset);
      exceptions = snapshotExceptionsOf(snap);
      continue;
    }
    const check = stateFromSnapshot(snap);
    if (!check.ok || snap.planId !== key) {
      warnings.push(`snapshot ${key}: ${check.ok ? 'key does not match planId' : check.reason}`);
      continue;
    }
    projection.seed(check.state);
    fromSnapshot += 1;
    if (traceparent !== undefined) traceparents.set(key, traceparent);
  }
  /**
   * A dormant plan is needed after all (a tail event or a dead letter of it): decode and verify its snapshot
   * and seed the projection with it. False when it does not verify.
   */
  /** A record of a plan that is neither held nor new (past its first seq): archived, unless it was erased. */
  const mayBeArchived = (planId: string, seq: number): boolean => deferArchive && seq > 1 && !dormant.has(planId) && projection.get(planId)?.state === undefined;
  const wake = async (planId: string, seq: number): Promise<boolean> => {
    if (mayBeArchived(planId, seq)) {
      const value = await archived.value(planId);
      if (value !== undefined) dormant.set(planId, value);
    }
    const value = dormant.get(planId);
    if (value === undefined) return true;
    dormant.delete(planId);
    try {
      const snap = await withUnavailableRetry(() => opts.codec.decodeSnapshot(value), retry);
      const check = stateFromSnapshot(snap);
      if (!check.ok || snap.planId !== planId) {
        warnings.push(`snapshot ${planId}: ${check.ok ? 'key does not match planId' : check.reason}`);
        return false;
      }
      projection.seed(check.state);
      fromSnapshot += 1;
      return true;
    } catch (e) {
      if (classifyFailure(e).action === 'retry') throw e; // aborted while the registry was down
      warnings.push(`snapshot ${planId}: ${e instanceof Error ? e.message : String(e)}`);
      return false;
    }
  };
  /** A dormant snapshot that does not verify: the watermark's promise does not hold; restore without dormancy. */
  const untrusted = () => {
    log?.warn({ warnings }, 'a dormant snapshot is not trusted; restoring again with every snapshot decoded');
    return restorePartition({ ...opts, dormantStatuses: [], archive: 'load' });
  };
  // A snapshot that cannot be trusted means the watermark's promise does not hold for that plan.
  // The watermark's exceptions (plans whose snapshot could not be written) are replayed from their offset:
  // the tail starts at the lowest of them; the other plans' events there are covered and skipped.
  let replayFrom = warnings.length === 0 && watermark !== null ? BigInt(watermark) + 1n : null;
  for (const from of exceptions.values()) if (replayFrom !== null && BigInt(from) < replayFrom) replayFrom = BigInt(from);
  if (warnings.length) log?.warn({ warnings }, 'snapshots not trusted; replaying the partition from its start');

  // 2. Stalls already dead-lettered.
  const deadLettered = new Set<string>();
  if (opts.readDeadLetters ?? true) {
    const letters = await readDeadLetters({ kafka: opts.kafka, topic: names.dlq, partition: p, timeoutMs, onPhase: (phase) => opts.onStep?.(`dead letters: ${phase}`) });
    for (const d of letters) {
      if (d.cause === null || d.cause.sourceTopic !== names.events || d.cause.sourcePartition !== p) continue;
      deadLettered.add(d.cause.sourceOffset);
      const k = parseEventKey(d.key);
      if (k === null) continue;
      if (!(await wake(k.planId, k.seq))) return untrusted();
      projection.stall(k.planId, stallOf(d.cause, d.cause.sourceOffset, k.seq));
    }
  }

  // 3. The tail.
  let eventsReplayed = 0;
  let distrusted = false;
  const inTail = new Set<string>();
  const next = await opts.kafka.readToEnd({
    topic: names.events,
    partitions: [p],
    ...(replayFrom === null ? {} : { from: new Map([[p, replayFrom.toString()]]) }),
    timeoutMs,
    onPhase: (phase) => opts.onStep?.(`events: ${phase}`),
    onRecords: async (records) => {
      if (distrusted) return;
      const keys = records.map((r) => parseEventKey(r.key));
      for (let i = 0; i < records.length; i++) {
        const r = records[i]!;
        const k = keys[i];
        if (k == null) continue;
        if (r.value === null) {
          dormant.delete(k.planId); // erased: nothing left to wake
          erased.add(k.planId);
          lastKeySeq.delete(k.planId);
        } else {
          // e.g. a CommandRejected appended to a completed plan: the plan continues from its snapshot.
          // The first tail record of a plan the snapshots do not hold, past its seq 1: an archived plan.
          const first = !inTail.has(k.planId);
          inTail.add(k.planId);
          if ((dormant.has(k.planId) || (first && mayBeArchived(k.planId, k.seq))) && !(await wake(k.planId, k.seq))) {
            distrusted = true;
            return;
          }
          erased.delete(k.planId);
          if (k.seq > (lastKeySeq.get(k.planId) ?? 0)) lastKeySeq.set(k.planId, k.seq);
          const tp = r.headers[TRACEPARENT_HEADER];
          if (tp !== undefined) traceparents.set(k.planId, tp);
        }
      }
      const batch = await processEventBatch(projection, opts.codec, records, retry, keys, opts.onApplied);
      eventsReplayed += batch.applied;
      for (const { outcome, record } of batch.poison) if (!deadLettered.has(record.offset)) await opts.onPoison?.(outcome, record);
    },
  });
  if (distrusted) return untrusted();
  // Read to the end: a seq still missing is not in the log.
  for (const gap of projection.settleGaps()) {
    if (!deadLettered.has(gap.outcome.offset)) {
      await opts.onPoison?.(gap.outcome, { topic: names.events, partition: p, offset: gap.outcome.offset, key: gap.key, value: gap.value, timestamp: '', headers: {} });
    }
  }
  const nextOffset = next.get(p) ?? replayFrom?.toString() ?? '0';
  const plans = projection.states();
  const maxFencingToken = projection.maxFencingToken; // the watermark's header, seeds and every applied intent
  log?.info({ fromSnapshot, dormant: dormant.size, eventsReplayed, watermark: replayFrom === null ? null : watermark, snapshotExceptions: exceptions.size, nextOffset }, 'partition restored');
  return {
    plans,
    nextOffset,
    fromSnapshot,
    eventsReplayed,
    watermark: replayFrom === null ? null : watermark,
    stalled: projection.stalled(),
    deadLettered,
    projection,
    warnings,
    erased,
    lastKeySeq,
    dormant,
    maxFencingToken,
    archived,
    snapshotExceptions: replayFrom === null ? new Map() : exceptions,
    snapshotChunks: chunks.counts(),
    traceparents,
  };
}
