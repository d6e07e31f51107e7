import { codecWhenRegistryAnswers, type LedgerCodec } from '../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../src/config.js';
import {
  createKafka,
  ensurePlanTopics,
  isFencingError,
  parseEventKey,
  partitionFor,
  readPlanRecords,
  readRecordAt,
  type FencedWriter,
  isWriterGivenUp,
  type GroupMember,
  type KafkaClient,
  type LedgerAdmin,
  type LogRecord,
  type RecordWriter,
} from '../src/kafka/index.js';
import { LedgerError } from '../src/errors.js';
import type { Logger } from '../src/logging.js';
import { setting } from '../src/settings.js';
import { TRACEPARENT_HEADER } from '../src/trace-context.js';
import { evolveAll, type PlanEvent, type PlanState } from '../src/plan/index.js';
import {
  dlqHeaders,
  isArchivedStatus,
  processEventRecord,
  stateFromSnapshot,
  summarize,
  restorePartition,
  retryDelayMs,
  planSnapshotRecords,
  snapshotChunkKey,
  watermarkMessage,
  MAX_SNAPSHOT_EXCEPTIONS,
  type SnapshotTopicRecords,
  type PartitionProjection,
  type RecordOutcome,
  type SnapshotPolicyOptions,
} from '../src/projection/index.js';
import { createMetrics, type ProjectorMetrics } from './metrics.js';
import { ReadModel, type ColdPlan } from './read-model.js';

/** Default MiB of finished plans the projector holds in memory (PLAN_LEDGER_PROJECTOR_CACHE_MIB). */
export const DEFAULT_PROJECTOR_CACHE_MIB = 256;

/** MiB of finished plans held: the option, else PLAN_LEDGER_PROJECTOR_CACHE_MIB, else 256 (fractions allowed). */
export function projectorCacheMib(opt: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const [field, v] = opt !== undefined ? ['cacheMib', opt] : ['PLAN_LEDGER_PROJECTOR_CACHE_MIB', setting('PLAN_LEDGER_PROJECTOR_CACHE_MIB', env)];
  if (!Number.isFinite(v) || v <= 0) throw new LedgerError('VALIDATION', `${field} must be a positive number of MiB, got ${String(v)}`, { field });
  return v;
}

export interface ProjectionServiceOptions {
  readonly config: LedgerConfig;
  readonly logger: Logger;
  /** Snapshot a plan at least every this many events (default 100). */
  readonly snapshotEveryEvents?: number;
  /** How often a partition with new events gets its snapshots flushed and its watermark written (default 2000 ms). */
  readonly watermarkIntervalMs?: number;
  /** Events kept in memory for the events/audit routes (default 200 000); the rest is re-read from the topic. */
  readonly retainEvents?: number;
  /** Consumer group (default `<prefix>.projector`). */
  readonly groupId?: string;
  /**
   * Bytes per snapshot chunk: a plan snapshot whose encoded value is larger is written as chunk records
   * and a head (see `snapshotMessages`). Default 512 KiB; keep it well under the snapshots topic's
   * max.message.bytes (1 MiB by default).
   */
  readonly snapshotChunkBytes?: number;
  /**
   * Called before a plan's snapshot records are built; a throw means this plan's snapshot cannot be
   * written, exactly as when the broker refuses it: the plan is skipped (see `writeSnapshots`). For fault
   * injection in tests.
   */
  readonly beforeSnapshot?: (planId: string) => void;
  /** Collect Node's default process metrics (default true). */
  readonly defaultMetrics?: boolean;
  /**
   * MiB of finished, archived plans held in memory (default PLAN_LEDGER_PROJECTOR_CACHE_MIB or 256; a
   * fraction is fine). Past it the least recently used go cold: listed from a summary, read from their
   * archived snapshot on demand, loaded back when an event arrives for one.
   */
  readonly cacheMib?: number;
}

/** Bytes of keys and values per produce request of snapshots. */
const MAX_SEND_BYTES = 768 * 1024;

function* chunks<T extends { key: string; value: Buffer | null; headers?: Record<string, string> }>(records: T[], maxBytes: number): Generator<T[]> {
  let chunk: T[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = (r.value?.length ?? 0) + r.key.length + 64;
    if (chunk.length > 0 && bytes + size > maxBytes) {
      yield chunk;
      chunk = [];
      bytes = 0;
    }
    chunk.push(r);
    bytes += size;
  }
  if (chunk.length > 0) yield chunk;
}

interface PartitionRun {
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
interface PlanSnapshotGroup {
  readonly id: string;
  readonly seq: number;
  readonly snapshots: SnapshotTopicRecords['messages'];
  readonly archive: SnapshotTopicRecords['messages'];
  readonly chunks: number;
}

/** Backoff before a plan whose snapshot failed is tried again (alone). */
function snapshotRetryDelayMs(failures: number): number {
  return Math.min(60_000, 1000 * 2 ** Math.min(failures - 1, 16));
}

/**
 * The projection service: a consumer group on the events topic (`read_committed`) that restores each
 * assigned partition from its snapshots and watermark, applies every event with the domain's `evolve`,
 * writes snapshots at the policy's boundaries and a watermark per partition, dead-letters poison records
 * (stalling their plan) and retries an unavailable registry. It holds no HTTP: see `startProjector`.
 */
export class ProjectionService {
  readonly names;
  readonly model: ReadModel;
  readonly metrics: ProjectorMetrics;
  private readonly log: Logger;
  private kafka!: KafkaClient;
  private admin!: LedgerAdmin;
  /** Writes dead letters (outside the snapshot writers' transactions). */
  private dlq!: RecordWriter;
  private member: GroupMember | undefined;
  codec!: LedgerCodec;
  private readonly runs = new Map<number, PartitionRun>();
  /**
   * The snapshot writer of each assigned partition: a transactional producer with the id
   * `<group>.p<N>`, initialised before the partition is restored, so a previous owner (a paused or
   * partitioned projector of the same group) is fenced and cannot land an older snapshot after ours.
   */
  private readonly writers = new Map<number, FencedWriter>();
  /** Partitions with an offset commit in flight. */
  private readonly committing = new Set<number>();
  /** The batch each partition is applying now (`stop` lets them end before the last watermark). */
  private readonly batches = new Map<number, Promise<unknown>>();
  /** Partitions whose writer was fenced: not restored or written again until the group assigns them anew. */
  private readonly fencedOut = new Set<number>();
  private readonly restoring = new Map<number, Promise<PartitionRun>>();
  private assigned = new Set<number>();
  private writes: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private stopped = false;
  private ticking = false;
  private readonly policy: Partial<SnapshotPolicyOptions>;
  /** End offsets last seen per partition, for lag. */
  private ends = new Map<number, bigint>();
  dlqWritten = 0;

  constructor(private readonly opts: ProjectionServiceOptions) {
    this.names = topicNames(opts.config.topicPrefix);
    this.log = opts.logger.child({ component: 'projector' });
    this.policy = opts.snapshotEveryEvents === undefined ? {} : { everyEvents: opts.snapshotEveryEvents };
    this.model = new ReadModel({
      retainEvents: opts.retainEvents ?? 200_000,
      loader: (id) => this.loadEvents(id),
      cache: {
        cacheBytes: Math.floor(projectorCacheMib(opts.cacheMib) * 1024 * 1024),
        release: (id) => this.release(id),
        loadCold: (id, cold) => this.readCold(id, cold),
      },
    });
    this.metrics = createMetrics({ plansByStatus: () => this.model.countByStatus(), defaultMetrics: opts.defaultMetrics });
  }

  /**
   * The service's own Kafka connections and codec, for the operator's read routes (DLQ, verify, consumer
   * groups). Valid between `start()` and `stop()`.
   */
  connections(): { readonly config: LedgerConfig; readonly kafka: KafkaClient; readonly admin: LedgerAdmin; readonly codec: LedgerCodec } {
    return { config: this.opts.config, kafka: this.kafka, admin: this.admin, codec: this.codec };
  }

  async start(): Promise<void> {
    const { config } = this.opts;
    this.kafka = createKafka(config, this.opts.logger, 'projector');
    this.admin = this.kafka.admin();
    await this.admin.connect();
    await ensurePlanTopics(this.admin, config);
    this.codec = await codecWhenRegistryAnswers(config, { logger: this.opts.logger });
    this.dlq = this.kafka.writer();
    await this.dlq.connect();
    this.member = await this.kafka.join({
      groupId: this.opts.groupId ?? this.names.projectorGroup,
      topic: this.names.events,
      sessionTimeoutMs: 30_000,
      heartbeatIntervalMs: 3_000,
      rebalanceTimeoutMs: 60_000,
      onAssigned: (partitions) => this.onAssigned(partitions),
      onRevoked: (partitions) => this.onRevoked(partitions),
      onRecords: (partition, records) => this.track(partition, this.onRecords(partition, records)),
    });
    const every = this.opts.watermarkIntervalMs ?? 2000;
    this.timer = setInterval(() => void this.tick(), every);
    this.timer.unref();
    this.log.info({ group: this.opts.groupId ?? this.names.projectorGroup, topic: this.names.events }, 'projector started');
  }

  /** Healthy until stopped (a poison record never makes it unhealthy). */
  health(): { ok: boolean; reason: string | null } {
    if (this.stopped) return { ok: false, reason: 'stopped' };
    return { ok: true, reason: null };
  }

  /** Partitions this instance projects, with their next offset. */
  partitions(): Array<{ partition: number; nextOffset: string; endOffset: string | null; watermark: string | null; plans: number }> {
    return [...this.runs].map(([p, r]) => ({
      partition: p,
      nextOffset: r.nextOffset.toString(),
      endOffset: this.ends.get(p)?.toString() ?? null,
      watermark: r.watermarkedAt,
      plans: r.projection.plans.size,
    }));
  }

  /** True when every partition of the events topic is projected up to its current end. */
  async caughtUp(): Promise<boolean> {
    const offsets = await this.admin.fetchTopicOffsets(this.names.events);
    for (const o of offsets) this.ends.set(o.partition, BigInt(o.high));
    return offsets.every((o) => {
      const r = this.runs.get(o.partition);
      return r !== undefined && r.nextOffset >= BigInt(o.high);
    });
  }

  private onAssigned(partitions: number[]): void {
    for (const p of partitions) {
      this.assigned.add(p);
      this.fencedOut.delete(p); // the group's word is the latest on who owns what
    }
    // Restore every new partition at once; its first batch waits for its restore.
    for (const p of partitions) this.restoreInBackground(p, 1);
  }

  private onRevoked(partitions: number[]): void {
    for (const p of partitions) {
      this.assigned.delete(p);
      if (this.stopped) continue; // stop() has written the last watermarks and retired the writers
      this.runs.delete(p);
      this.model.dropPartition(p);
      this.retireWriter(p);
    }
  }

  /** Remembers a partition's batch in flight until it ends. */
  private track<T>(p: number, batch: Promise<T>): Promise<T> {
    this.batches.set(p, batch);
    return batch.finally(() => {
      if (this.batches.get(p) === batch) this.batches.delete(p);
    });
  }

  /** A partition with no new events gets no batch to retry its restore, so a failed one is retried here. */
  private restoreInBackground(p: number, attempt: number): void {
    this.ensureRestored(p).catch((e: unknown) => {
      if (this.stopped || !this.assigned.has(p) || this.fencedOut.has(p)) return;
      const delay = retryDelayMs(attempt, 500, 30_000);
      this.log.error({ partition: p, attempt, delayMs: delay, err: e instanceof Error ? e.message : String(e) }, 'partition restore failed; retrying');
      setTimeout(() => this.restoreInBackground(p, attempt + 1), delay).unref();
    });
  }

  private ensureRestored(p: number): Promise<PartitionRun> {
    const run = this.runs.get(p);
    if (run) return Promise.resolve(run);
    if (this.fencedOut.has(p)) return Promise.reject(new Error(`partition ${p} was taken over by another projector; waiting for the group's next assignment`));
    let pending = this.restoring.get(p);
    if (pending === undefined) {
      pending = this.restore(p).finally(() => this.restoring.delete(p));
      this.restoring.set(p, pending);
    }
    return pending;
  }

  private async restore(p: number): Promise<PartitionRun> {
    const started = Date.now();
    // Fence first, then read: once InitProducerId returns, a previous owner can commit no snapshot
    // more, so what the restore reads is final.
    await this.writerFor(p);
    const r = await restorePartition({
      kafka: this.kafka,
      codec: this.codec,
      config: this.opts.config,
      partition: p,
      logger: this.opts.logger,
      snapshotPolicy: this.policy,
      signal: this.abort.signal,
      onPoison: (outcome, record) => this.deadLetter(p, record, outcome),
      onApplied: (e) => this.model.replayed(e),
    });
    const run: PartitionRun = {
      projection: r.projection,
      nextOffset: BigInt(r.nextOffset),
      seekedTo: null,
      watermarkedAt: r.watermark,
      deadLettered: new Set(r.deadLettered),
      failing: new Map(),
      exceptions: new Map(r.snapshotExceptions),
      chunkCounts: new Map(r.snapshotChunks),
      landedSeq: new Map(),
      traceparents: r.traceparents,
      archivedAt: new Map(),
      applying: null,
    };
    this.metrics.snapshotExceptions.set({ partition: String(p) }, run.exceptions.size);
    this.metrics.eventsApplied.inc({ partition: String(p) }, r.eventsReplayed);
    if (this.assigned.has(p) && !this.stopped) {
      this.runs.set(p, run);
      this.model.setPartition(p, r.projection);
      // Finished plans restored from their archive record with nothing after it may go cold right away.
      const archive = await r.archived.load();
      for (const [id, e] of r.projection.plans) {
        const offset = archive.offsets.get(id);
        if (offset === undefined || e.state === undefined || e.lastOffset !== null || e.stalled || !isArchivedStatus(e.state.status)) continue;
        run.archivedAt.set(id, { offset, seq: e.state.seq });
        this.model.archived(id, p, JSON.stringify(e.state).length);
      }
    }
    this.log.info({ partition: p, fromSnapshot: r.fromSnapshot, eventsReplayed: r.eventsReplayed, nextOffset: r.nextOffset, ms: Date.now() - started }, 'partition restored');
    return run;
  }

  /**
   * Applies a batch of a partition's events. Returns where reading goes on when that is not after the
   * batch: the projection's next offset when the batch lies elsewhere, the first record not applied when
   * the service stops or the partition was taken away meanwhile.
   */
  private async onRecords(p: number, records: LogRecord[]): Promise<string | undefined> {
    // Taken over by another projector: nothing of it is ours until the group assigns it again (and the
    // restore then reads on from where its snapshots end, so skipping these records loses nothing).
    if (this.fencedOut.has(p) || records.length === 0) return undefined;
    if (this.stopped) return records[0]!.offset;
    let run = this.runs.get(p);
    if (run === undefined) {
      try {
        run = await this.ensureRestored(p);
      } catch {
        // restoreInBackground logs the failure and tries again; this batch is read again after a pause.
        await new Promise((r) => setTimeout(r, 1000));
        return this.fencedOut.has(p) || !this.assigned.has(p) ? undefined : records[0]!.offset;
      }
      if (!this.runs.has(p)) return undefined; // revoked while restoring
    }
    const first = BigInt(records[0]!.offset);
    const last = BigInt(records[records.length - 1]!.offset);
    if (this.log.isLevelEnabled('debug')) this.log.debug({ partition: p, first: first.toString(), last: last.toString(), records: records.length, nextOffset: run.nextOffset.toString() }, 'events batch');
    // The first batch after a restore starts where the group's committed offset is, which need not be
    // where the projection is (committed offsets follow the watermark): read on from the projection's
    // next offset, once. After that a gap before a batch is only transaction markers or compacted records:
    // the member delivers every record from where it reads.
    if (run.seekedTo === null) {
      run.seekedTo = run.nextOffset;
      if (first !== run.nextOffset) return run.nextOffset.toString();
    }
    if (last < run.nextOffset) return undefined;
    const projection = run.projection;
    const label = { partition: String(p) };
    let applied = 0;
    let unapplied: string | undefined;
    const erased = new Set<string>();
    for (const m of records) {
      if (this.stopped || this.runs.get(p) !== run) {
        unapplied = m.offset;
        break;
      }
      const offset = BigInt(m.offset);
      if (offset < run.nextOffset) continue;
      const tp = m.headers[TRACEPARENT_HEADER];
      if (m.value !== null) {
        const k = parseEventKey(m.key);
        if (k !== null && tp !== undefined) run.traceparents.set(k.planId, tp);
        run.applying = k?.planId ?? null;
        // An event for a cold plan (e.g. the rejection of a command sent to it): load it back first.
        if (k !== null && !projection.plans.has(k.planId) && this.model.cold.has(k.planId)) await this.warm(p, projection, k.planId);
      }
      let outcome: RecordOutcome;
      try {
        outcome = await processEventRecord(projection, this.codec, m, {
          logger: this.log,
          signal: this.abort.signal,
          onRetry: () => this.metrics.registryRetries.inc(),
        });
      } finally {
        run.applying = null;
      }
      switch (outcome.kind) {
        case 'applied':
          applied += 1 + outcome.drained.length;
          this.model.applied(outcome.event);
          for (const e of outcome.drained) this.model.applied(e);
          break;
        case 'deferred':
          break;
        case 'poison':
          if (!run.deadLettered.has(m.offset)) await this.deadLetter(p, m, outcome);
          if (outcome.planId !== null) this.model.touched(outcome.planId);
          break;
        case 'held':
          this.metrics.heldEvents.inc();
          this.model.touched(outcome.planId);
          break;
        case 'erased':
          this.model.forget(outcome.planId);
          run.archivedAt.delete(outcome.planId);
          this.model.touched(outcome.planId);
          erased.add(outcome.planId);
          run.traceparents.delete(outcome.planId);
          break;
        case 'duplicate':
          break;
      }
      run.nextOffset = offset + 1n;
    }
    if (applied) this.metrics.eventsApplied.inc(label, applied);
    if (erased.size) await this.eraseSnapshots(p, run, [...erased]);
    await this.flushDue(p, run);
    return unapplied;
  }

  /** Writes the snapshots of the plans the policy says are due (once per batch, coalesced per plan). */
  private async flushDue(p: number, run: PartitionRun): Promise<void> {
    const due = run.projection.policy.takeDue();
    if (due.length === 0) return;
    await this.writeSnapshots(p, run, due, false);
  }

  /**
   * Queues snapshot records (and, with `watermark`, the partition's watermark after them) on the one
   * write queue, so records reach the partition in the order their contents were captured.
   *
   * One plan's snapshot that cannot be written (the broker refuses it, `beforeSnapshot` throws) must not
   * hold back the others nor the watermark. Such a plan is skipped (metric
   * `plan_ledger_projector_snapshot_skipped_total`, a warning) and tried again alone after a backoff; in
   * the meantime each watermark lists it as an exception with the offset its replay starts from: the
   * offset after the last watermark that covered it, since everything of it up to there is in a snapshot
   * that did land. Readers (`restorePartition`) read the tail from the lowest exception, so its events are
   * replayed and nobody trusts a snapshot it does not have. The cost is bounded by that read: the other
   * plans' events there are covered by their snapshots and skipped. Past {@link MAX_SNAPSHOT_EXCEPTIONS}
   * the watermark is held back before the lowest exception instead (the same promise, kept the old way).
   *
   * When the transaction of several plans fails, each plan is written alone to find the one(s) at fault,
   * then the watermark alone with them as exceptions.
   */
  private writeSnapshots(p: number, run: PartitionRun, planIds: string[], watermark: boolean): Promise<void> {
    const now = Date.now();
    const groups: PlanSnapshotGroup[] = [];
    const retries: PlanSnapshotGroup[] = [];
    for (const id of planIds) {
      const e = run.projection.get(id);
      if (!e?.state || e.lastOffset === null) continue;
      const failing = run.failing.get(id);
      if (failing !== undefined && now < failing.nextTryAt) continue; // an exception of the watermark until then
      let r: ReturnType<typeof planSnapshotRecords>;
      try {
        this.opts.beforeSnapshot?.(id);
        // A live plan's snapshot (with its status as a header); a finished one's to the archive, a tombstone here.
        r = planSnapshotRecords(this.codec, this.names, e.state, p, e.lastOffset, now, { chunkBytes: this.opts.snapshotChunkBytes, staleChunks: run.chunkCounts.get(id) ?? 0 });
      } catch (err) {
        this.skipSnapshot(p, run, id, err);
        continue;
      }
      // The plan's trace context rides on its snapshot records, for an owner that restores from them.
      const tp = run.traceparents.get(id);
      const snapshots = tp === undefined ? r.snapshots : r.snapshots.map((m) => (m.value === null ? m : { ...m, headers: { ...m.headers, [TRACEPARENT_HEADER]: tp } }));
      (failing === undefined ? groups : retries).push({ id, seq: e.state.seq, snapshots, archive: r.archive, chunks: r.chunks });
      run.projection.policy.written(id, e.state.seq);
    }
    const w = watermark ? run.projection.watermarkOffset(run.nextOffset) : null;
    // The plans without a covering snapshot as of this capture (a plan skipped above stays one), with
    // their seq now: one whose snapshot at that seq or later lands before the watermark is covered.
    const captured = new Map(run.exceptions);
    const capturedSeq = new Map([...captured.keys()].map((id) => [id, run.projection.get(id)?.state?.seq ?? 0]));
    if (groups.length === 0 && retries.length === 0 && w === null) return Promise.resolve();
    const writer = this.writers.get(p);
    if (writer === undefined) {
      for (const g of [...groups, ...retries]) run.projection.policy.unwritten(g.id);
      return Promise.resolve();
    }
    const succeeded = new Set<string>();
    const ok = (g: PlanSnapshotGroup) => {
      succeeded.add(g.id);
      run.failing.delete(g.id);
      run.exceptions.delete(g.id);
      if (g.seq > (run.landedSeq.get(g.id) ?? 0)) run.landedSeq.set(g.id, g.seq);
      if (g.chunks > 0) run.chunkCounts.set(g.id, Math.max(run.chunkCounts.get(g.id) ?? 0, g.chunks));
    };
    const records = (list: PlanSnapshotGroup[], mark: SnapshotTopicRecords['messages'][number] | null): SnapshotTopicRecords[] => {
      const archived = list.flatMap((g) => g.archive);
      const live = [...list.flatMap((g) => g.snapshots), ...(mark === null ? [] : [mark])];
      // In chunks under the broker's default batch limit (message.max.bytes, 1 MiB); the watermark is in
      // the last chunk, so it never lands without every snapshot it vouches for.
      return [
        ...[...chunks(archived, MAX_SEND_BYTES)].map((messages) => ({ topic: this.names.archive, messages })),
        ...[...chunks(live, MAX_SEND_BYTES)].map((messages) => ({ topic: this.names.snapshots, messages })),
      ];
    };
    /** The watermark record as of now: null when it cannot be written (see MAX_SNAPSHOT_EXCEPTIONS). */
    const mark = (assumeWritten: readonly PlanSnapshotGroup[]): { offset: string; record: SnapshotTopicRecords['messages'][number] } | null => {
      if (w === null) return null;
      const written = new Set([...succeeded, ...assumeWritten.map((g) => g.id)]);
      const exceptions = new Map<string, string>();
      for (const id of new Set([...captured.keys(), ...run.exceptions.keys()])) {
        const from = run.exceptions.get(id) ?? captured.get(id);
        const covered = written.has(id) || (!run.exceptions.has(id) && (run.landedSeq.get(id) ?? -1) >= (capturedSeq.get(id) ?? Infinity));
        if (from !== undefined && !covered) exceptions.set(id, from);
      }
      let offset = w;
      if (exceptions.size > MAX_SNAPSHOT_EXCEPTIONS) {
        // Too many to list: hold the watermark before the lowest; every plan is covered up to there.
        const lowest = [...exceptions.values()].reduce((a, b) => (BigInt(b) < BigInt(a) ? b : a));
        if (BigInt(lowest) === 0n) return null;
        offset = (BigInt(lowest) - 1n < BigInt(w) ? BigInt(lowest) - 1n : BigInt(w)).toString();
        exceptions.clear();
      }
      return { offset, record: watermarkMessage(this.codec, p, offset, run.projection.maxFencingToken, now, exceptions) };
    };
    const watermarked = async (offset: string) => {
      this.metrics.snapshotWrites.inc({ kind: 'watermark' });
      run.watermarkedAt = offset;
      // The group's committed offset follows the watermark: a restart restores from there anyway.
      this.commitOffset(p, (BigInt(offset) + 1n).toString());
    };
    /** One plan in a transaction of its own: true when it landed, false when it did not, null when fenced. */
    const alone = async (g: PlanSnapshotGroup): Promise<boolean | null> => {
      try {
        const offsets = await this.transact(writer, records([g], null));
        ok(g);
        this.landedInArchive(p, run, g, offsets);
        this.metrics.snapshotWrites.inc({ kind: 'plan' });
        return true;
      } catch (e) {
        if (this.fenced(p, writer, e)) return null;
        this.skipSnapshot(p, run, g.id, e);
        return false;
      }
    };
    const send = async () => {
      // Plans that failed before go alone first: one that still fails takes nothing else down.
      for (const g of retries) if ((await alone(g)) === null) return;
      const m = mark(groups);
      if (groups.length === 0 && m === null) return;
      try {
        const offsets = await this.transact(writer, records(groups, m?.record ?? null));
        for (const g of groups) ok(g);
        for (const g of groups) this.landedInArchive(p, run, g, offsets);
        this.metrics.snapshotWrites.inc({ kind: 'plan' }, groups.length);
        if (m !== null) await watermarked(m.offset);
      } catch (e) {
        if (this.fenced(p, writer, e)) return;
        this.metrics.snapshotFailures.inc();
        this.log.warn({ partition: p, err: (e as Error).message, plans: groups.length }, 'snapshot write failed; writing each plan alone to find the one at fault');
        for (const g of groups) if ((await alone(g)) === null) return;
        const again = mark([]);
        if (again === null) return;
        try {
          await this.transact(writer, records([], again.record));
          await watermarked(again.offset);
        } catch (e2) {
          if (this.fenced(p, writer, e2)) return;
          this.metrics.snapshotFailures.inc();
          this.log.warn({ partition: p, err: (e2 as Error).message }, 'watermark write failed; written again on the next tick');
        }
      } finally {
        this.metrics.snapshotExceptions.set({ partition: String(p) }, run.exceptions.size);
      }
    };
    return this.enqueue(send);
  }

  /**
   * A plan's snapshot cannot be written: skip it (tried again alone after a backoff) and make it an
   * exception of the partition's watermarks, replayed from the offset after the last watermark written
   * (everything of it up to there is covered by a snapshot that landed; see `writeSnapshots`).
   */
  private skipSnapshot(p: number, run: PartitionRun, planId: string, e: unknown): void {
    run.projection.policy.unwritten(planId);
    const failures = (run.failing.get(planId)?.failures ?? 0) + 1;
    const retryInMs = snapshotRetryDelayMs(failures);
    const reason = e instanceof Error ? e.message : String(e);
    run.failing.set(planId, { failures, nextTryAt: Date.now() + retryInMs, reason });
    if (!run.exceptions.has(planId)) run.exceptions.set(planId, run.watermarkedAt === null ? '0' : (BigInt(run.watermarkedAt) + 1n).toString());
    this.metrics.snapshotSkipped.inc();
    this.metrics.snapshotExceptions.set({ partition: String(p) }, run.exceptions.size);
    this.log.warn(
      { partition: p, planId, failures, retryInMs, replayFrom: run.exceptions.get(planId), err: reason },
      'plan snapshot cannot be written; skipped: the watermark moves on with the plan as an exception, readers replay its events',
    );
  }

  /**
   * Tombstones the snapshots and archive records of erased plans (and their snapshot chunks). The executor
   * already did in the erasure's transaction, but a snapshot this projector queued before it reached the
   * event tombstones may have landed after that one; this tombstone, on the same write queue and after any
   * such snapshot, makes the erasure stick.
   */
  private eraseSnapshots(p: number, run: PartitionRun, planIds: string[]): Promise<void> {
    const writer = this.writers.get(p);
    const tombstones: SnapshotTopicRecords['messages'] = [];
    for (const id of planIds) {
      for (let i = 0; i < (run.chunkCounts.get(id) ?? 0); i++) tombstones.push({ key: snapshotChunkKey(id, i), value: null, partition: p });
      tombstones.push({ key: id, value: null, partition: p });
      run.chunkCounts.delete(id);
      run.landedSeq.delete(id);
      run.failing.delete(id);
      run.exceptions.delete(id);
    }
    if (writer === undefined) return Promise.resolve(); // not ours any more: the new owner restores without them
    const send = async () => {
      try {
        await this.transact(writer, [
          { topic: this.names.snapshots, messages: tombstones },
          { topic: this.names.archive, messages: tombstones },
        ]);
      } catch (e) {
        if (this.fenced(p, writer, e)) return;
        this.metrics.snapshotFailures.inc();
        this.log.warn({ partition: p, err: (e as Error).message, plans: planIds.length }, 'snapshot tombstones of erased plans failed');
      }
    };
    return this.enqueue(send);
  }

  /** Runs `job` on the one write queue, after every write queued before it (records land in capture order). */
  private enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.writes.then(job);
    this.writes = next;
    return next;
  }

  /** The partition's snapshot writer, created (and the previous owner fenced) on first use. */
  private async writerFor(p: number): Promise<FencedWriter> {
    const known = this.writers.get(p);
    if (known) return known;
    const writer = this.kafka.fencedWriter(`${this.opts.groupId ?? this.names.projectorGroup}.p${p}`);
    await writer.connect();
    if (!this.assigned.has(p) || this.stopped) {
      await writer.disconnect().catch(() => {});
      throw new Error(`partition ${p} was revoked while its writer started`);
    }
    this.writers.set(p, writer);
    return writer;
  }

  /**
   * Sends the batches, in order, in one transaction of `writer`, aborted on failure. Returns the offset of
   * each archive record sent (by message), as the writer reports where each landed.
   */
  private async transact(writer: FencedWriter, batches: SnapshotTopicRecords[]): Promise<Map<object, string>> {
    const tx = await writer.transaction();
    const offsets = new Map<object, string>();
    try {
      for (const { topic, messages } of batches) {
        const delivered = await tx.send(topic, messages);
        if (topic !== this.names.archive) continue;
        messages.forEach((m, i) => {
          const at = delivered[i]?.offset;
          if (at !== undefined && BigInt(at) >= 0n) offsets.set(m, at);
        });
      }
      await tx.commit();
    } catch (e) {
      await tx.abort().catch(() => {}); // a fenced producer cannot abort either; the coordinator already did
      if (isWriterGivenUp(e)) this.replaceWriter(writer);
      throw e;
    }
    return offsets;
  }

  /**
   * A writer whose Kafka call never answered was given up: its partition gets a new writer (which fences
   * it) for the writes after this one, if the partition is still ours.
   */
  private replaceWriter(writer: FencedWriter): void {
    const p = [...this.writers].find(([, w]) => w === writer)?.[0];
    if (p === undefined) return;
    this.log.warn({ partition: p, transactionalId: writer.transactionalId }, 'snapshot writer given up; a new one takes its place');
    this.writers.delete(p);
    void writer.disconnect().catch(() => {});
    this.writerFor(p).catch((e: unknown) => this.log.warn({ partition: p, err: (e as Error).message }, 'a new snapshot writer could not start; the next restore of the partition starts one'));
  }

  /**
   * Commits the group's offset of a partition after its watermark landed, outside the snapshot writer's
   * transactions and off its write queue: the offset is bookkeeping (lag, the consumer groups view), since
   * a restore starts from the snapshots and watermarks, not from it. One commit in flight per partition; a
   * later watermark commits a later offset.
   */
  private commitOffset(p: number, offset: string): void {
    const member = this.member;
    if (member === undefined || this.committing.has(p)) return;
    this.committing.add(p);
    member
      .commitOffsets([{ partition: p, offset }])
      .catch((e: unknown) => {
        if (this.assigned.has(p) && !this.stopped) this.log.warn({ partition: p, offset, err: (e as Error).message }, 'offset commit failed; the next watermark commits again');
      })
      .finally(() => this.committing.delete(p));
  }

  /**
   * A finished plan's snapshot landed in the archive: if it holds the plan's state as the projection has
   * it now (one record, same seq, nothing waiting), the plan may go cold when the cache is over budget.
   */
  private landedInArchive(p: number, run: PartitionRun, g: PlanSnapshotGroup, offsets: Map<object, string>): void {
    if (g.archive.length !== 1) return; // a chunked snapshot stays hot: reading it back takes its chunks
    const offset = offsets.get(g.archive[0]!);
    const e = run.projection.get(g.id);
    if (offset === undefined || e?.state === undefined || e.state.seq !== g.seq || e.stalled || !isArchivedStatus(e.state.status)) return;
    run.archivedAt.set(g.id, { offset, seq: g.seq });
    this.model.archived(g.id, p, g.archive[0]!.value?.length ?? 0);
  }

  /**
   * Takes a finished plan out of its projection (the read model keeps its summary): only if its archive
   * record still holds its state, nothing of it waits, and no snapshot of it is owed.
   */
  private release(planId: string): ColdPlan | undefined {
    const p = partitionFor(planId, this.opts.config.partitions);
    const run = this.runs.get(p);
    const at = run?.archivedAt.get(planId);
    const e = run?.projection.get(planId);
    if (run === undefined || at === undefined || e?.state === undefined || run.applying === planId) return undefined;
    const ok = e.state.seq === at.seq && isArchivedStatus(e.state.status) && run.projection.canApplyRun(planId, e.state.seq + 1) && !run.exceptions.has(planId) && !run.failing.has(planId);
    if (!ok) {
      run.archivedAt.delete(planId);
      return undefined;
    }
    const summary = summarize(e);
    run.projection.plans.delete(planId);
    run.projection.policy.forget(planId);
    run.archivedAt.delete(planId);
    run.landedSeq.delete(planId);
    run.traceparents.delete(planId);
    return { partition: p, offset: at.offset, summary };
  }

  /**
   * A cold plan's state: its archived snapshot, read at its offset and verified; if that record is gone or
   * does not verify, its events from the partition's start, folded up to the seq it went cold at.
   */
  private async readCold(planId: string, cold: ColdPlan): Promise<PlanState> {
    const record = await readRecordAt({ kafka: this.kafka, topic: this.names.archive, partition: cold.partition, offset: cold.offset });
    if (record?.value != null && record.key?.toString('utf8') === planId) {
      const check = stateFromSnapshot(await this.codec.decodeSnapshot(record.value));
      if (check.ok && check.state.planId === planId && check.state.seq === cold.summary.seq) return check.state;
    }
    this.log.warn({ planId, offset: cold.offset }, 'cold plan: its archive record is gone or does not verify; reading its events');
    const state = evolveAll(undefined, (await this.loadEvents(planId)).filter((e) => e.seq <= cold.summary.seq));
    if (state === undefined || state.seq !== cold.summary.seq) throw new LedgerError('UNAVAILABLE', `plan ${planId} could not be read back (seq ${state?.seq ?? 0} of ${cold.summary.seq})`);
    return state;
  }

  /** Loads a cold plan back into its projection before an event of it is applied. */
  private async warm(p: number, projection: PartitionProjection, planId: string): Promise<void> {
    const cold = this.model.cold.get(planId);
    if (cold === undefined) return;
    const state = await this.readCold(planId, cold);
    if (projection.plans.has(planId) || !this.model.cold.has(planId)) return;
    projection.seed(state);
    this.model.warmed(planId);
    this.log.debug({ partition: p, planId, seq: state.seq }, 'cold plan loaded back for an event');
  }

  /**
   * A write failed because another projector of the group initialised the partition's writer after us:
   * it owns the partition now (we were paused, or cut off, through a rebalance). Stop writing and
   * projecting it; if the group still assigns it to us, the next assignment restores it afresh.
   */
  private fenced(p: number, writer: FencedWriter, e: unknown): boolean {
    if (!isFencingError(e)) return false;
    this.metrics.fenced.inc({ partition: String(p) });
    this.log.warn({ partition: p, err: (e as Error).message }, 'snapshot writer fenced: another projector took the partition over; not writing it any more');
    if (this.writers.get(p) === writer) {
      this.fencedOut.add(p);
      this.runs.delete(p);
      this.model.dropPartition(p);
      this.retireWriter(p);
    }
    return true;
  }

  /** Disconnects a partition's writer after the writes queued before now. */
  private retireWriter(p: number): void {
    const writer = this.writers.get(p);
    if (writer === undefined) return;
    this.writers.delete(p);
    void this.enqueue(() => writer.disconnect().catch(() => {}));
  }

  /** Periodic: per partition with new records, snapshot every dirty plan, then write the watermark. Also refreshes lag. */
  private async tick(): Promise<void> {
    if (this.stopped || this.ticking) return;
    this.ticking = true;
    try {
      await this.writeWatermarks();
      const offsets = await this.admin.fetchTopicOffsets(this.names.events);
      for (const o of offsets) {
        this.ends.set(o.partition, BigInt(o.high));
        const r = this.runs.get(o.partition);
        if (!r) continue;
        this.metrics.lag.set({ partition: String(o.partition) }, Number(BigInt(o.high) - r.nextOffset > 0n ? BigInt(o.high) - r.nextOffset : 0n));
        if (r.projection.hasGaps() && r.nextOffset >= BigInt(o.high)) await this.settleGaps(o.partition, r);
      }
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'watermark tick failed');
    } finally {
      this.ticking = false;
    }
  }

  /** Caught up and some plans still miss a seq: it is not in the log. Stall them and dead-letter the first waiting record. */
  private async settleGaps(p: number, run: PartitionRun): Promise<void> {
    for (const gap of run.projection.settleGaps()) {
      this.model.touched(gap.outcome.planId ?? '');
      if (!run.deadLettered.has(gap.outcome.offset)) await this.deadLetter(p, { offset: gap.outcome.offset, key: gap.key, value: gap.value }, gap.outcome);
    }
  }

  async writeWatermarks(): Promise<void> {
    const pending: Promise<void>[] = [];
    for (const [p, run] of this.runs) {
      // Up to where the partition has been read: a partition with no events gets a watermark too (-1),
      // or readers (listPlans, show's forks) would take it for one no projector has covered.
      const last = run.projection.watermarkOffset(run.nextOffset);
      const retryDue = [...run.failing.values()].some((f) => f.nextTryAt <= Date.now());
      if (last === null || (last === run.watermarkedAt && !retryDue)) continue;
      // A large plan not due for a snapshot yet is an exception of this watermark, as a skipped one is:
      // readers replay its events from after the last watermark that covered it.
      for (const id of run.projection.policy.deferred()) {
        if (!run.exceptions.has(id)) run.exceptions.set(id, run.watermarkedAt === null ? '0' : (BigInt(run.watermarkedAt) + 1n).toString());
      }
      pending.push(this.writeSnapshots(p, run, run.projection.policy.dirty(), true));
    }
    await Promise.all(pending);
  }

  /** Dead-letters a record with its cause (retrying the DLQ write until it lands: never skipped). */
  private async deadLetter(p: number, m: Pick<LogRecord, 'key' | 'value' | 'offset'>, outcome: Extract<RecordOutcome, { kind: 'poison' }>): Promise<void> {
    const headers = dlqHeaders({
      sourceTopic: this.names.events,
      sourcePartition: p,
      sourceOffset: m.offset,
      code: outcome.decision.code,
      reason: outcome.decision.reason,
      message: outcome.decision.message,
    });
    this.log.error({ partition: p, offset: m.offset, planId: outcome.planId, code: outcome.decision.code, reason: outcome.decision.reason }, `record dead-lettered: ${outcome.decision.message}`);
    for (let attempt = 1; ; attempt++) {
      try {
        await this.dlq.send(this.names.dlq, [{ partition: p, key: m.key, value: m.value, headers }]);
        break;
      } catch (e) {
        if (this.stopped) throw e;
        this.log.warn({ attempt, err: (e as Error).message }, 'DLQ write failed; retrying');
        await new Promise((r) => setTimeout(r, retryDelayMs(attempt)));
      }
    }
    this.runs.get(p)?.deadLettered.add(m.offset);
    this.dlqWritten += 1;
    this.metrics.dlqRecords.inc({ code: outcome.decision.code, reason: outcome.decision.reason });
  }

  /** A plan's history from the events topic (its partition, from the start), for plans memory does not hold. */
  private async loadEvents(planId: string): Promise<PlanEvent[]> {
    const p = partitionFor(planId, this.opts.config.partitions);
    const records = await readPlanRecords({ kafka: this.kafka, topic: this.names.events, partition: p, planId });
    const byKey = new Map<number, PlanEvent>();
    for (const r of records) {
      try {
        const e = await this.codec.decodeEvent(r.value);
        if (e.planId === planId) byKey.set(e.seq, e);
      } catch {
        // a poison record of this plan: it is in the DLQ and the plan is stalled; the history stops before it
      }
    }
    const events = [...byKey.values()].sort((a, b) => a.seq - b.seq);
    const out: PlanEvent[] = [];
    for (const e of events) {
      if (e.seq !== out.length + 1) break;
      out.push(e);
    }
    return out;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    this.abort.abort(); // ends registry retries
    // Fetch nothing more but stay in the group (the last watermarks commit its offsets); let the batches
    // being applied end.
    for (const p of this.member?.assigned() ?? []) this.member?.pause(p);
    await Promise.allSettled([...this.batches.values()]);
    try {
      // Leave a watermark behind so the next start replays as little as possible.
      if (this.member) await this.writeWatermarks();
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'final watermark failed');
    }
    await this.writes.catch(() => {});
    for (const p of [...this.writers.keys()]) this.retireWriter(p);
    await this.writes.catch(() => {});
    await this.member?.close().catch(() => {});
    await this.dlq?.disconnect().catch(() => {});
    await this.admin?.disconnect().catch(() => {});
    await this.kafka?.close().catch(() => {});
    this.model.close();
    this.log.info('projector stopped');
  }
}
