// The projector's snapshot writer: per assigned partition a transactional producer (`<group>.p<N>`,
// which fences a previous owner of the partition), one write queue for all of them so records land in the
// order their contents were captured, and the rules for a plan whose snapshot cannot be written (skipped,
// tried again alone, an exception of the watermark meanwhile). See `write`.
import type { LedgerCodec } from '../src/codec/index.js';
import type { topicNames } from '../src/config.js';
import { isWriterGivenUp, type FencedWriter, type KafkaClient } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { MAX_SNAPSHOT_EXCEPTIONS, planSnapshotRecords, snapshotChunkKey, watermarkMessage, type SnapshotTopicRecords } from '../src/projection/index.js';
import { TRACEPARENT_HEADER } from '../src/trace-context.js';
import type { ProjectorMetrics } from './metrics.js';
import { markException, snapshotRetryDelayMs, type PartitionRun, type PlanSnapshotGroup } from './partition-run.js';

/** What the writer needs of the projection service that owns it. */
export interface SnapshotWriterHost {
  readonly kafka: KafkaClient;
  readonly codec: LedgerCodec;
  readonly names: ReturnType<typeof topicNames>;
  readonly log: Logger;
  readonly metrics: ProjectorMetrics;
  /** The consumer group: a partition's writer has the transactional id `<group>.p<N>`. */
  readonly group: string;
  /** Bytes per snapshot chunk (`ProjectionServiceOptions.snapshotChunkBytes`). */
  readonly chunkBytes?: number;
  /** Fault injection (`ProjectionServiceOptions.beforeSnapshot`). */
  readonly beforeSnapshot?: (planId: string) => void;
  /** Fault injection (`ProjectionServiceOptions.beforeFence`). */
  readonly beforeFence?: (partition: number) => void | Promise<void>;
  /** The partition is still this projector's (assigned, not stopping). */
  owns(p: number): boolean;
  /**
   * A write of `writer` failed: true when it was fenced (another projector owns the partition now; the
   * host stops projecting it), false for any other failure.
   */
  fenced(p: number, writer: FencedWriter, e: unknown): boolean;
  /** The partition's watermark landed at `offset`. */
  watermarked(p: number, offset: string): void;
  /** A plan's snapshot landed; `offsets` holds where each archive record of it landed. */
  landedInArchive(p: number, run: PartitionRun, g: PlanSnapshotGroup, offsets: Map<object, string>): void;
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

export class SnapshotWriter {
  /**
   * The snapshot writer of each assigned partition: a transactional producer with the id
   * `<group>.p<N>`, initialised before the partition is restored, so a previous owner (a paused or
   * partitioned projector of the same group) is fenced and cannot land an older snapshot after ours.
   */
  private readonly writers = new Map<number, FencedWriter>();
  /** Writers being started (fencing the partition's previous owner), by partition: one at a time each. */
  private readonly starting = new Map<number, Promise<FencedWriter>>();
  private writes: Promise<void> = Promise.resolve();

  constructor(private readonly host: SnapshotWriterHost) {}

  /** The partition's current writer, if it has one. */
  current(p: number): FencedWriter | undefined {
    return this.writers.get(p);
  }

  /** Every write queued so far has ended (landed or failed). */
  drained(): Promise<void> {
    return this.writes.catch(() => {});
  }

  /** Retires every partition's writer after the writes queued before now, and waits for them. */
  async close(): Promise<void> {
    await this.drained();
    for (const p of [...this.writers.keys()]) this.retire(p);
    await this.drained();
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
  write(p: number, run: PartitionRun, planIds: string[], watermark: boolean): Promise<void> {
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
        this.host.beforeSnapshot?.(id);
        // A live plan's snapshot (with its status as a header); a finished one's to the archive, a tombstone here.
        r = planSnapshotRecords(this.host.codec, this.host.names, e.state, p, e.lastOffset, now, { chunkBytes: this.host.chunkBytes, staleChunks: run.chunkCounts.get(id) ?? 0 });
      } catch (err) {
        this.skip(p, run, id, err);
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
        ...[...chunks(archived, MAX_SEND_BYTES)].map((messages) => ({ topic: this.host.names.archive, messages })),
        ...[...chunks(live, MAX_SEND_BYTES)].map((messages) => ({ topic: this.host.names.snapshots, messages })),
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
      return { offset, record: watermarkMessage(this.host.codec, p, offset, run.projection.maxFencingToken, now, exceptions) };
    };
    const watermarked = async (offset: string) => {
      this.host.metrics.snapshotWrites.inc({ kind: 'watermark' });
      run.watermarkedAt = offset;
      this.host.watermarked(p, offset);
    };
    /** One plan in a transaction of its own: true when it landed, false when it did not, null when fenced. */
    const alone = async (g: PlanSnapshotGroup): Promise<boolean | null> => {
      try {
        const offsets = await this.transact(writer, records([g], null));
        ok(g);
        this.host.landedInArchive(p, run, g, offsets);
        this.host.metrics.snapshotWrites.inc({ kind: 'plan' });
        return true;
      } catch (e) {
        if (this.host.fenced(p, writer, e)) return null;
        this.skip(p, run, g.id, e);
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
        for (const g of groups) this.host.landedInArchive(p, run, g, offsets);
        this.host.metrics.snapshotWrites.inc({ kind: 'plan' }, groups.length);
        if (m !== null) await watermarked(m.offset);
      } catch (e) {
        if (this.host.fenced(p, writer, e)) return;
        this.host.metrics.snapshotFailures.inc();
        this.host.log.warn({ partition: p, err: (e as Error).message, plans: groups.length }, 'snapshot write failed; writing each plan alone to find the one at fault');
        for (const g of groups) if ((await alone(g)) === null) return;
        const again = mark([]);
        if (again === null) return;
        try {
          await this.transact(writer, records([], again.record));
          await watermarked(again.offset);
        } catch (e2) {
          if (this.host.fenced(p, writer, e2)) return;
          this.host.metrics.snapshotFailures.inc();
          this.host.log.warn({ partition: p, err: (e2 as Error).message }, 'watermark write failed; written again on the next tick');
        }
      } finally {
        this.host.metrics.snapshotExceptions.set({ partition: String(p) }, run.exceptions.size);
      }
    };
    return this.enqueue(send);
  }

  /**
   * A plan's snapshot cannot be written: skip it (tried again alone after a backoff) and make it an
   * exception of the partition's watermarks, replayed from the offset after the last watermark written
   * (everything of it up to there is covered by a snapshot that landed; see `write`).
   */
  skip(p: number, run: PartitionRun, planId: string, e: unknown): void {
    run.projection.policy.unwritten(planId);
    const failures = (run.failing.get(planId)?.failures ?? 0) + 1;
    const retryInMs = snapshotRetryDelayMs(failures);
    const reason = e instanceof Error ? e.message : String(e);
    run.failing.set(planId, { failures, nextTryAt: Date.now() + retryInMs, reason });
    markException(run, planId);
    this.host.metrics.snapshotSkipped.inc();
    this.host.metrics.snapshotExceptions.set({ partition: String(p) }, run.exceptions.size);
    this.host.log.warn(
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
  erase(p: number, run: PartitionRun, planIds: string[]): Promise<void> {
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
          { topic: this.host.names.snapshots, messages: tombstones },
          { topic: this.host.names.archive, messages: tombstones },
        ]);
      } catch (e) {
        if (this.host.fenced(p, writer, e)) return;
        this.host.metrics.snapshotFailures.inc();
        this.host.log.warn({ partition: p, err: (e as Error).message, plans: planIds.length }, 'snapshot tombstones of erased plans failed');
      }
    };
    return this.enqueue(send);
  }

  /** Runs `job` on the one write queue, after every write queued before it (records land in capture order). */
  enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.writes.then(job);
    this.writes = next;
    return next;
  }

  /**
   * The partition's snapshot writer, created (and the previous owner fenced) on first use. Callers at the
   * same time share one start: two writers of one id would fence each other.
   */
  writerFor(p: number): Promise<FencedWriter> {
    const known = this.writers.get(p);
    if (known) return Promise.resolve(known);
    let started = this.starting.get(p);
    if (started === undefined) {
      started = this.start(p).finally(() => this.starting.delete(p));
      this.starting.set(p, started);
    }
    return started;
  }

  /**
   * Settles once none of `partitions` has a writer starting. A start in flight ends in a fence
   * (`initTransactions`), which, landing after the next owner's own, would fence that owner: a revocation
   * waits for it before the partitions go back to the group.
   */
  async startsSettled(partitions: readonly number[]): Promise<void> {
    await Promise.allSettled(partitions.map((p) => this.starting.get(p)).filter((s) => s !== undefined));
  }

  private async start(p: number): Promise<FencedWriter> {
    await this.host.beforeFence?.(p);
    const writer = this.host.kafka.fencedWriter(`${this.host.group}.p${p}`);
    await writer.connect();
    if (!this.host.owns(p)) {
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
        if (topic !== this.host.names.archive) continue;
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
    this.host.log.warn({ partition: p, transactionalId: writer.transactionalId }, 'snapshot writer given up; a new one takes its place');
    this.writers.delete(p);
    void writer.disconnect().catch(() => {});
    this.writerFor(p).catch((e: unknown) => this.host.log.warn({ partition: p, err: (e as Error).message }, 'a new snapshot writer could not start; the next restore of the partition starts one'));
  }

  /** Disconnects a partition's writer after the writes queued before now. */
  retire(p: number): void {
    const writer = this.writers.get(p);
    if (writer === undefined) return;
    this.writers.delete(p);
    void this.enqueue(() => writer.disconnect().catch(() => {}));
  }
}
