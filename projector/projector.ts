import { setTimeout as sleep } from 'node:timers/promises';
import { codecWhenRegistryAnswers, type LedgerCodec } from '../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../src/config.js';
import {
  createKafka,
  ensurePlanTopics,
  isFencingError,
  parseEventKey,
  type FencedWriter,
  type GroupMember,
  type KafkaClient,
  type LedgerAdmin,
  type LogRecord,
  type RecordWriter,
} from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { TRACEPARENT_HEADER } from '../src/trace-context.js';
import { backoffMs } from '../src/backoff.js';
import {
  isArchivedStatus,
  processEventRecord,
  restorePartition,
  type RecordOutcome,
  type SnapshotPolicyOptions,
} from '../src/projection/index.js';
import { ColdPlans } from './cold-plans.js';
import { sendDeadLetter } from './dead-letters.js';
import { createMetrics, type ProjectorMetrics } from './metrics.js';
import { HEARTBEAT_INTERVAL_MS, projectorCacheMib, SESSION_TIMEOUT_MS, type ProjectionServiceOptions } from './options.js';
import { markException, type PartitionRun } from './partition-run.js';
import { SnapshotWriter } from './snapshot-writer.js';
import { ReadModel } from './read-model.js';

export { DEFAULT_PROJECTOR_CACHE_MIB, projectorCacheMib, type ProjectionServiceOptions } from './options.js';

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
  /** Finished plans out of memory: released, read back and warmed again. */
  private readonly cold: ColdPlans;
  /** Snapshots, watermarks and erasure tombstones, through each partition's fenced writer (from `start`). */
  private snapshots!: SnapshotWriter;
  /** Partitions with an offset commit in flight. */
  private readonly committing = new Set<number>();
  /** The batch each partition is applying now (`stop` lets them end before the last watermark). */
  private readonly batches = new Map<number, Promise<unknown>>();
  /** Partitions whose writer was fenced: not restored or written again until the group assigns them anew, or still assigns them a session later. */
  private readonly fencedOut = new Set<number>();
  private readonly restoring = new Map<number, Promise<PartitionRun>>();
  private assigned = new Set<number>();
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
    this.cold = new ColdPlans({
      runs: this.runs,
      partitions: opts.config.partitions,
      model: () => this.model,
      names: this.names,
      log: this.log,
      kafka: () => this.kafka,
      codec: () => this.codec,
    });
    this.model = new ReadModel({
      retainEvents: opts.retainEvents ?? 200_000,
      loader: (id) => this.cold.loadEvents(id),
      cache: {
        cacheBytes: Math.floor(projectorCacheMib(opts.cacheMib) * 1024 * 1024),
        release: (id) => this.cold.release(id),
        loadCold: (id, cold) => this.cold.readCold(id, cold),
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
    this.snapshots = new SnapshotWriter({
      kafka: this.kafka,
      codec: this.codec,
      names: this.names,
      log: this.log,
      metrics: this.metrics,
      group: this.opts.groupId ?? this.names.projectorGroup,
      chunkBytes: this.opts.snapshotChunkBytes,
      beforeSnapshot: this.opts.beforeSnapshot,
      beforeFence: this.opts.beforeFence,
      owns: (p) => this.assigned.has(p) && !this.stopped,
      fenced: (p, writer, e) => this.fenced(p, writer, e),
      // The group's committed offset follows the watermark: a restart restores from there anyway.
      watermarked: (p, offset) => this.commitOffset(p, (BigInt(offset) + 1n).toString()),
      landedInArchive: (p, run, g, offsets) => this.cold.landedInArchive(p, run, g, offsets),
    });
    this.member = await this.kafka.join({
      groupId: this.opts.groupId ?? this.names.projectorGroup,
      topic: this.names.events,
      sessionTimeoutMs: SESSION_TIMEOUT_MS,
      heartbeatIntervalMs: HEARTBEAT_INTERVAL_MS,
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

  /**
   * Partitions taken from this projector. It stops projecting them at once; the returned promise settles
   * when no writer of theirs is still starting, and the group hands them on only then (up to the member's
   * revocation wait): a fence still in flight would land after the next owner's and fence it.
   */
  private onRevoked(partitions: number[]): Promise<void> {
    for (const p of partitions) {
      this.assigned.delete(p);
      if (this.stopped) continue; // stop() has written the last watermarks and retired the writers
      this.runs.delete(p);
      this.model.dropPartition(p);
      this.snapshots.retire(p);
    }
    return this.snapshots.startsSettled(partitions);
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
      const delay = backoffMs(attempt, 500, 30_000);
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
    await this.snapshots.writerFor(p);
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
        await sleep(1000);
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
        if (k !== null && !projection.plans.has(k.planId) && this.model.cold.has(k.planId)) await this.cold.warm(p, projection, k.planId);
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
    if (erased.size) await this.snapshots.erase(p, run, [...erased]);
    await this.flushDue(p, run);
    return unapplied;
  }

  /** Writes the snapshots of the plans the policy says are due (once per batch, coalesced per plan). */
  private async flushDue(p: number, run: PartitionRun): Promise<void> {
    const due = run.projection.policy.takeDue();
    if (due.length === 0) return;
    await this.snapshots.write(p, run, due, false);
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
   * A write failed because another writer of the partition's id initialised after ours. Mostly another
   * projector of the group owns the partition now (we were paused, or cut off, through a rebalance): stop
   * writing and projecting it, and the revocation follows. A fence can also come from no owner (a past
   * member's initialisation that ended late): then no revocation comes, so once a member that lost the
   * partition would have heard of it (a session timeout and a heartbeat), a partition the group still
   * assigns here is restored afresh (its writer fences again); so is one the group assigns anew.
   */
  private fenced(p: number, writer: FencedWriter, e: unknown): boolean {
    if (!isFencingError(e)) return false;
    this.metrics.fenced.inc({ partition: String(p) });
    this.log.warn({ partition: p, err: (e as Error).message }, 'snapshot writer fenced: another projector took the partition over; not writing it any more');
    if (this.snapshots.current(p) === writer) {
      this.fencedOut.add(p);
      this.runs.delete(p);
      this.model.dropPartition(p);
      this.snapshots.retire(p);
      setTimeout(() => {
        if (this.stopped || !this.assigned.has(p) || !this.fencedOut.has(p)) return;
        this.log.warn({ partition: p }, 'fenced, yet the group still assigns the partition here: restoring it again');
        this.fencedOut.delete(p);
        this.restoreInBackground(p, 1);
      }, SESSION_TIMEOUT_MS + HEARTBEAT_INTERVAL_MS).unref();
    }
    return true;
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
      for (const id of run.projection.policy.deferred()) markException(run, id);
      pending.push(this.snapshots.write(p, run, run.projection.policy.dirty(), true));
    }
    await Promise.all(pending);
  }

  /** Dead-letters a record with its cause (retrying the DLQ write until it lands: never skipped). */
  private async deadLetter(p: number, m: Pick<LogRecord, 'key' | 'value' | 'offset'>, outcome: Extract<RecordOutcome, { kind: 'poison' }>): Promise<void> {
    await sendDeadLetter({ dlq: this.dlq, names: this.names, log: this.log, stopped: () => this.stopped }, p, m, outcome);
    this.runs.get(p)?.deadLettered.add(m.offset);
    this.dlqWritten += 1;
    this.metrics.dlqRecords.inc({ code: outcome.decision.code, reason: outcome.decision.reason });
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
    await this.snapshots?.close();
    await this.member?.close().catch(() => {});
    await this.dlq?.disconnect().catch(() => {});
    await this.admin?.disconnect().catch(() => {});
    await this.kafka?.close().catch(() => {});
    this.model.close();
    this.log.info('projector stopped');
  }
}
