import type { Admin, Consumer, EachBatchPayload, Kafka, KafkaMessage, Producer } from 'kafkajs';
import { codecFromConfig, type LedgerCodec } from '../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../src/config.js';
import { connectFenced, createKafka, isFencingError, transactionalProducer } from '../src/kafka/client.js';
import { readPlanRecords } from '../src/kafka/log-reader.js';
import { parseEventKey, partitionFor } from '../src/kafka/partitioner.js';
import { ensurePlanTopics } from '../src/kafka/topics.js';
import type { Logger } from '../src/logging.js';
import { headerString, TRACEPARENT_HEADER } from '../src/trace-context.js';
import type { PlanEvent } from '../src/plan/index.js';
import {
  dlqHeaders,
  processEventRecord,
  restorePartition,
  retryDelayMs,
  planSnapshotRecords,
  watermarkMessage,
  type SnapshotTopicRecords,
  type PartitionProjection,
  type RecordOutcome,
  type SnapshotPolicyOptions,
} from '../src/projection/index.js';
import { createMetrics, type ProjectorMetrics } from './metrics.js';
import { ReadModel } from './read-model.js';

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
  /** Collect Node's default process metrics (default true). */
  readonly defaultMetrics?: boolean;
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
  /** The offset we asked the consumer to seek to, so a gap after it (markers, compaction) is not sought again. */
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
  private kafka!: Kafka;
  private admin!: Admin;
  private producer!: Producer;
  private consumer!: Consumer;
  codec!: LedgerCodec;
  private readonly runs = new Map<number, PartitionRun>();
  /**
   * The snapshot writer of each assigned partition: a transactional producer with the id
   * `<group>.p<N>`, initialised before the partition is restored, so a previous owner (a paused or
   * partitioned projector of the same group) is fenced and cannot land an older snapshot after ours.
   */
  private readonly writers = new Map<number, Producer>();
  /** Partitions whose writer was fenced: not restored or written again until the group assigns them anew. */
  private readonly fencedOut = new Set<number>();
  private readonly restoring = new Map<number, Promise<PartitionRun>>();
  private assigned = new Set<number>();
  private writes: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private readonly abort = new AbortController();
  private crashed: Error | null = null;
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
    this.model = new ReadModel({ retainEvents: opts.retainEvents ?? 200_000, loader: (id) => this.loadEvents(id) });
    this.metrics = createMetrics({ plansByStatus: () => this.model.countByStatus(), defaultMetrics: opts.defaultMetrics });
  }

  /**
   * The service's own Kafka connections and codec, for the operator's read routes (DLQ, verify, consumer
   * groups). Valid between `start()` and `stop()`.
   */
  connections(): { readonly config: LedgerConfig; readonly kafka: Kafka; readonly admin: Admin; readonly codec: LedgerCodec } {
    return { config: this.opts.config, kafka: this.kafka, admin: this.admin, codec: this.codec };
  }

  async start(): Promise<void> {
    const { config } = this.opts;
    this.kafka = createKafka(config, this.opts.logger, 'projector');
    this.admin = this.kafka.admin();
    await this.admin.connect();
    await ensurePlanTopics(this.admin, config);
    this.codec = await codecFromConfig(config, { logger: this.opts.logger });
    this.producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await this.producer.connect();
    this.consumer = this.kafka.consumer({
      groupId: this.opts.groupId ?? this.names.projectorGroup,
      readUncommitted: false,
      maxWaitTimeInMs: 200,
      maxBytesPerPartition: 4 * 1024 * 1024,
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (e) => this.onAssignment(e.payload.memberAssignment[this.names.events] ?? []));
    this.consumer.on(this.consumer.events.CRASH, (e) => {
      if (!e.payload.restart) {
        this.crashed = e.payload.error;
        this.log.error({ err: e.payload.error.message }, 'projector consumer crashed and will not restart');
      }
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.names.events, fromBeginning: true });
    await this.consumer.run({ autoCommit: false, eachBatch: (payload) => this.eachBatch(payload) });
    const every = this.opts.watermarkIntervalMs ?? 2000;
    this.timer = setInterval(() => void this.tick(), every);
    this.timer.unref();
    this.log.info({ group: this.opts.groupId ?? this.names.projectorGroup, topic: this.names.events }, 'projector started');
  }

  /** Healthy while the consumer runs (a poison record never makes it unhealthy). */
  health(): { ok: boolean; reason: string | null } {
    if (this.crashed) return { ok: false, reason: `consumer crashed: ${this.crashed.message}` };
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

  private onAssignment(partitions: number[]): void {
    this.assigned = new Set(partitions);
    this.fencedOut.clear(); // the group's word is the latest on who owns what
    for (const p of [...this.runs.keys()]) {
      if (!this.assigned.has(p)) {
        this.runs.delete(p);
        this.model.dropPartition(p);
      }
    }
    for (const p of [...this.writers.keys()]) if (!this.assigned.has(p)) this.retireWriter(p);
    // Restore every assigned partition at once; eachBatch waits for its partition's restore.
    for (const p of partitions) this.restoreInBackground(p, 1);
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
      admin: this.admin,
      codec: this.codec,
      config: this.opts.config,
      partition: p,
      logger: this.opts.logger,
      snapshotPolicy: this.policy,
      signal: this.abort.signal,
      onPoison: (outcome, record) => this.deadLetter(p, record, outcome),
    });
    const run: PartitionRun = {
      projection: r.projection,
      nextOffset: BigInt(r.nextOffset),
      seekedTo: null,
      watermarkedAt: r.watermark,
      deadLettered: new Set(r.deadLettered),
      traceparents: r.traceparents,
    };
    this.metrics.eventsApplied.inc({ partition: String(p) }, r.eventsReplayed);
    if (this.assigned.has(p) && !this.stopped) {
      this.runs.set(p, run);
      this.model.setPartition(p, r.projection);
    }
    this.log.info({ partition: p, fromSnapshot: r.fromSnapshot, eventsReplayed: r.eventsReplayed, nextOffset: r.nextOffset, ms: Date.now() - started }, 'partition restored');
    return run;
  }

  private async eachBatch({ batch, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const p = batch.partition;
    // Taken over by another projector: nothing of it is ours until the group assigns it again (and the
    // restore then seeks back to where its snapshots end, so skipping these records loses nothing).
    if (this.fencedOut.has(p)) return;
    let run = this.runs.get(p);
    if (run === undefined) {
      const beat = setInterval(() => void heartbeat().catch(() => {}), 1000);
      try {
        run = await this.ensureRestored(p);
      } finally {
        clearInterval(beat);
      }
      if (!this.runs.has(p)) return; // revoked while restoring
    }
    if (batch.isEmpty()) return;
    const first = BigInt(batch.firstOffset() ?? batch.lastOffset());
    const last = BigInt(batch.lastOffset());
    if (last < run.nextOffset || (first > run.nextOffset && run.seekedTo !== run.nextOffset)) {
      // Committed offsets trail the restore (they follow the watermark): jump to where the projection is.
      if (run.seekedTo !== run.nextOffset) {
        run.seekedTo = run.nextOffset;
        this.consumer.seek({ topic: batch.topic, partition: p, offset: run.nextOffset.toString() });
        return;
      }
      if (last < run.nextOffset) return;
    }
    const projection = run.projection;
    const label = { partition: String(p) };
    let applied = 0;
    const erased = new Set<string>();
    for (const m of batch.messages) {
      if (!isRunning() || isStale()) break;
      const offset = BigInt(m.offset);
      if (offset < run.nextOffset) continue;
      const tp = m.headers?.[TRACEPARENT_HEADER];
      if (tp !== undefined && m.value !== null) {
        const k = parseEventKey(m.key);
        if (k !== null) run.traceparents.set(k.planId, headerString(tp)!);
      }
      const outcome = await processEventRecord(projection, this.codec, m, {
        logger: this.log,
        signal: this.abort.signal,
        onRetry: async () => {
          this.metrics.registryRetries.inc();
          await heartbeat().catch(() => {});
        },
      });
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
          this.model.evict(outcome.planId);
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
    if (erased.size) await this.eraseSnapshots(p, [...erased]);
    await this.flushDue(p, run);
    await heartbeat();
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
   */
  private writeSnapshots(p: number, run: PartitionRun, planIds: string[], watermark: boolean): Promise<void> {
    const now = Date.now();
    const records: SnapshotTopicRecords['messages'] = [];
    const archived: SnapshotTopicRecords['messages'] = [];
    const written: Array<[string, number]> = [];
    for (const id of planIds) {
      const e = run.projection.get(id);
      if (!e?.state || e.lastOffset === null) continue;
      // A live plan's snapshot (with its status as a header); a finished one's to the archive, a tombstone here.
      const r = planSnapshotRecords(this.codec, this.names, e.state, p, e.lastOffset, now);
      const tp = run.traceparents.get(id);
      records.push(...(tp === undefined ? r.snapshots : r.snapshots.map((m) => (m.value === null ? m : { ...m, headers: { ...m.headers, [TRACEPARENT_HEADER]: tp } }))));
      archived.push(...r.archive);
      written.push([id, e.state.seq]);
      run.projection.policy.written(id, e.state.seq);
    }
    const w = watermark ? run.projection.watermarkOffset() : null;
    // The watermark carries the highest fencing token seen on the partition, including plans a new owner will not decode.
    if (w !== null) records.push(watermarkMessage(this.codec, p, w, run.projection.maxFencingToken, now));
    if (records.length === 0) return Promise.resolve();
    const writer = this.writers.get(p);
    if (writer === undefined) {
      for (const [id] of written) run.projection.policy.unwritten(id);
      return Promise.resolve();
    }
    const send = async () => {
      try {
        // One transaction, in chunks under the broker's default batch limit (message.max.bytes, 1 MiB);
        // the watermark is in the last chunk, so it never lands without every snapshot it vouches for.
        await this.transact(writer, [
          ...[...chunks(archived, MAX_SEND_BYTES)].map((messages) => ({ topic: this.names.archive, messages })),
          ...[...chunks(records, MAX_SEND_BYTES)].map((messages) => ({ topic: this.names.snapshots, messages })),
        ]);
        this.metrics.snapshotWrites.inc({ kind: 'plan' }, written.length);
        if (w !== null) {
          this.metrics.snapshotWrites.inc({ kind: 'watermark' });
          run.watermarkedAt = w;
          // The group's committed offset follows the watermark: a restart restores from there anyway.
          await this.consumer
            .commitOffsets([{ topic: this.names.events, partition: p, offset: (BigInt(w) + 1n).toString() }])
            .catch((e: unknown) => this.log.warn({ partition: p, err: (e as Error).message }, 'offset commit failed'));
        }
      } catch (e) {
        for (const [id] of written) run.projection.policy.unwritten(id);
        if (this.fenced(p, writer, e)) return;
        this.metrics.snapshotFailures.inc();
        this.log.warn({ partition: p, err: (e as Error).message, plans: written.length }, 'snapshot write failed; the plans are snapshotted again');
      }
    };
    return this.enqueue(send);
  }

  /**
   * Tombstones the snapshots and archive records of erased plans. The executor already did in the
   * erasure's transaction, but a snapshot this projector queued before it reached the event tombstones may
   * have landed after that one; this tombstone, on the same write queue and after any such snapshot, makes
   * the erasure stick.
   */
  private eraseSnapshots(p: number, planIds: string[]): Promise<void> {
    const writer = this.writers.get(p);
    if (writer === undefined) return Promise.resolve(); // not ours any more: the new owner restores without them
    const send = async () => {
      try {
        const tombstones = planIds.map((key) => ({ key, value: null, partition: p }));
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
  private async writerFor(p: number): Promise<Producer> {
    const known = this.writers.get(p);
    if (known) return known;
    const producer = transactionalProducer(this.kafka, `${this.opts.groupId ?? this.names.projectorGroup}.p${p}`);
    await connectFenced(producer);
    if (!this.assigned.has(p) || this.stopped) {
      await producer.disconnect().catch(() => {});
      throw new Error(`partition ${p} was revoked while its writer started`);
    }
    this.writers.set(p, producer);
    return producer;
  }

  /** Sends the batches, in order, in one transaction of `writer`, aborted on failure. */
  private async transact(writer: Producer, batches: SnapshotTopicRecords[]): Promise<void> {
    const tx = await writer.transaction();
    try {
      for (const { topic, messages } of batches) await tx.send({ topic, acks: -1, messages });
      await tx.commit();
    } catch (e) {
      await tx.abort().catch(() => {}); // a fenced producer cannot abort either; the coordinator already did
      throw e;
    }
  }

  /**
   * A write failed because another projector of the group initialised the partition's writer after us:
   * it owns the partition now (we were paused, or cut off, through a rebalance). Stop writing and
   * projecting it; if the group still assigns it to us, the next assignment restores it afresh.
   */
  private fenced(p: number, writer: Producer, e: unknown): boolean {
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
      const last = run.projection.watermarkOffset();
      if (last === null || last === run.watermarkedAt) continue;
      pending.push(this.writeSnapshots(p, run, run.projection.policy.dirty(), true));
    }
    await Promise.all(pending);
  }

  /** Dead-letters a record with its cause (retrying the DLQ write until it lands: never skipped). */
  private async deadLetter(p: number, m: Pick<KafkaMessage, 'key' | 'value' | 'offset'>, outcome: Extract<RecordOutcome, { kind: 'poison' }>): Promise<void> {
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
        await this.producer.send({ topic: this.names.dlq, acks: -1, messages: [{ partition: p, key: m.key, value: m.value, headers }] });
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
    const records = await readPlanRecords({ kafka: this.kafka, admin: this.admin, topic: this.names.events, partition: p, planId, groupPrefix: `${this.names.projectorGroup}.history` });
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
    await this.consumer?.stop().catch(() => {});
    try {
      // Leave a watermark behind so the next start replays as little as possible.
      if (!this.crashed && this.producer) await this.writeWatermarks();
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'final watermark failed');
    }
    await this.writes.catch(() => {});
    for (const p of [...this.writers.keys()]) this.retireWriter(p);
    await this.writes.catch(() => {});
    await this.consumer?.disconnect().catch(() => {});
    await this.producer?.disconnect().catch(() => {});
    await this.admin?.disconnect().catch(() => {});
    this.model.close();
    this.log.info('projector stopped');
  }
}
