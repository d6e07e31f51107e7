// The ledger client's index of plans: where each plan's latest snapshot is, a summary of it for
// listPlans, and each partition's watermark. It is built from the projector's own topics — the compacted
// `<prefix>.plan-snapshots` (live plans, keyed by planId, and the `__watermark` record) and
// `<prefix>.plan-archive` (finished plans) — read on demand: each sync reads what was committed since the
// last one, up to the end offsets it took, so a read locates a plan's snapshot in memory and reads only the
// events after the watermark. Its size follows the number of plans (a summary each; the raw snapshot only
// for live plans), never the number of events. No reader stays open between syncs.
import type { LedgerCodec } from '../codec/index.js';
import { topicNames, type LedgerConfig } from '../config.js';
import type { KafkaClient, LedgerAdmin, LogRecord, ReadStats } from '../kafka/index.js';
import type { Logger } from '../logging.js';
import type { PlanState } from '../plan/index.js';
import { summarize, type PlanSummary } from '../projection/query.js';
import { causeFromHeaders, parseEventKey, type DeadLetterCause } from '../projection/poison.js';
import { withUnavailableRetry } from '../projection/records.js';
import { readArchiveRecord } from '../projection/restore.js';
import { isWatermark, SnapshotChunks, snapshotChunkCount, stateFromSnapshot, summaryOfHead, WATERMARK_KEY } from '../projection/snapshot.js';

/** A plan's latest snapshot as the index knows it. */
export interface IndexedPlan {
  readonly planId: string;
  readonly partition: number;
  /** The topic holding the snapshot record: the snapshots topic (live) or the archive (finished). */
  readonly topic: string;
  /** Offset of the snapshot record in that topic's partition. */
  readonly offset: string;
  /** The plan's seq at the snapshot. */
  readonly seq: number;
  /** Offset of the last event (on the plan's events partition) the snapshot covers. */
  readonly eventsOffset: string;
  /** The plan as a list shows it, at the snapshot. */
  readonly summary: PlanSummary;
  /** The record's raw value, kept for live plans only (an archived plan's is read at `offset` when needed). */
  readonly value: Buffer | null;
  /** Chunk records of a chunked snapshot (written right before its head, at `offset`); 0 for one record. */
  readonly chunks: number;
}

/** Sort key of a plan in lists: newest first, then planId (the projector's keyset order). */
type OrderKey = readonly [createdAt: number, planId: string];

export function compareOrder(a: OrderKey, b: OrderKey): number {
  if (a[0] !== b[0]) return b[0] - a[0];
  return a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0;
}

function orderKey(e: Pick<IndexedPlan, 'planId' | 'summary'>): OrderKey {
  return [e.summary.createdAt ?? 0, e.planId];
}

/** First index of `sorted` whose key sorts after `key` (binary search). */
export function firstAfter(sorted: readonly OrderKey[], key: OrderKey): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareOrder(sorted[mid]!, key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class PlanIndex {
  private readonly names;
  /**
   * The catch-up in progress or last done. Catch-ups take turns, so records are applied in offset order
   * per partition, and a sync waits for one that began after it was called.
   */
  private catching: Promise<void> = Promise.resolve();
  private closed = false;
  /** Latest snapshot record per plan in the snapshots topic (live plans). */
  private readonly live = new Map<string, IndexedPlan>();
  /** Latest archive record per plan (finished plans). */
  private readonly archived = new Map<string, IndexedPlan>();
  /**
   * Plans whose live snapshot was tombstoned and whose archive record the index has not read yet, with
   * their creation time (null: unknown). The projector writes both in one transaction, but the index
   * reads the two topics apart: in between, such a plan has no entry while the watermark is already past
   * its events, and a read from the watermark would miss them. Cleared by the plan's archive record (or
   * its archive tombstone, for an erased plan).
   */
  private readonly departed = new Map<string, number | null>();
  /** The plan's current entry: the live or archived record with the higher seq. */
  private readonly current = new Map<string, IndexedPlan>();
  /** Order keys of `current`, sorted newest first. */
  private readonly sorted: OrderKey[] = [];
  /** Plans per status among `current` (a status filter's total without a scan). */
  private readonly byStatus = new Map<string, number>();
  /** Plans per label `key:value` among `current` (a one-label filter's total without a scan). */
  private readonly byLabel = new Map<string, number>();
  /** Plans whose latest snapshot does not verify: readers rebuild them from their events. */
  private readonly untrusted = new Map<number, Set<string>>();
  private readonly watermarks = new Map<number, string>();
  /** Dead letters of events records, per events partition: the plans they stall. */
  private readonly deadLetters = new Map<number, Array<{ planId: string; seq: number; cause: DeadLetterCause }>>();
  /**
   * Next offset to read, per `topic/partition`, for the partitions a sync has asked for: the index reads
   * only these, so a one-shot caller's first getPlan reads one partition of the snapshots, archive and DLQ
   * topics, not all of them.
   */
  private readonly positions = new Map<string, bigint>();

  constructor(
    private readonly kafka: KafkaClient,
    private readonly admin: LedgerAdmin,
    private readonly codec: Pick<LedgerCodec, 'decodeSnapshot'>,
    private readonly config: LedgerConfig,
    private readonly logger: Logger,
    /** Counts the records the index reads, per `topic/partition` (in `indexed`). */
    private readonly stats?: ReadStats,
  ) {
    this.names = topicNames(config.topicPrefix);
  }

  private get topics(): string[] {
    return [this.names.snapshots, this.names.archive, this.names.dlq];
  }

  /**
   * Takes a batch of one partition's records. Dead letters are applied at once. Of the snapshots and
   * archive records only the latest per key is kept (in `pending`, applied when the read is done: a plan
   * snapshotted a hundred times since the last sync costs one decode, not a hundred) and chunks go to the
   * partition's `chunks`; a tombstone is applied at once.
   */
  private async read(topic: string, records: LogRecord[], pending: Map<string, LogRecord>, chunks: (partition: number) => SnapshotChunks): Promise<void> {
    if (this.stats) {
      const indexed = (this.stats.indexed ??= {});
      const key = `${topic}/${records[0]!.partition}`;
      indexed[key] = (indexed[key] ?? 0) + records.length;
    }
    for (const r of records) {
      if (topic === this.names.dlq) {
        this.deadLetter(r.key, r.headers);
        continue;
      }
      if (r.key === null) continue;
      const key = r.key.toString('utf8');
      const partitionChunks = chunks(r.partition);
      if (partitionChunks.offer(key, r)) continue;
      const at = `${r.partition}/${key}`;
      if (r.value !== null) {
        pending.set(at, r);
        continue;
      }
      // The record a tombstone replaces is decoded only for the creation time a departed plan keeps, and
      // only when that is cheap: a chunked one (megabytes) leaves it unknown (such a plan is then read from
      // its partition's start until its archive record is read, which this same sync usually does).
      const before = pending.get(at);
      pending.delete(at);
      if (before && snapshotChunkCount(before.headers) === null) await this.apply(before, partitionChunks);
      await this.apply(r, partitionChunks);
    }
  }

  /** A DLQ record whose source is an events record stalls that record's plan (see `restorePartition`). */
  private deadLetter(key: Buffer | null, headers: Readonly<Record<string, string>>): void {
    const cause = causeFromHeaders(headers);
    if (cause === null || cause.sourceTopic !== this.names.events) return;
    const k = parseEventKey(key);
    if (k === null) return;
    let list = this.deadLetters.get(cause.sourcePartition);
    if (!list) this.deadLetters.set(cause.sourcePartition, (list = []));
    list.push({ planId: k.planId, seq: k.seq, cause });
  }

  /** Dead-lettered events records of an events partition, in DLQ order. */
  deadLettersOf(partition: number): ReadonlyArray<{ planId: string; seq: number; cause: DeadLetterCause }> {
    return this.deadLetters.get(partition) ?? [];
  }

  private async apply(r: LogRecord, chunks: SnapshotChunks): Promise<void> {
    if (r.key === null) return;
    const planId = r.key.toString('utf8');
    const archive = r.topic === this.names.archive;
    const book = archive ? this.archived : this.live;
    if (archive) this.departed.delete(planId);
    // A live tombstone marks the plan departed until its archive record is read (unless that record came
    // first: the two topics are read side by side).
    else if (r.value === null && planId !== WATERMARK_KEY && !this.archived.has(planId)) this.departed.set(planId, this.live.get(planId)?.summary.createdAt ?? this.departed.get(planId) ?? null);
    if (r.value === null) {
      // Snapshots topic: archived or erased; archive topic: erased.
      book.delete(planId);
      this.untrustedIn(r.partition).delete(planId);
      this.resolve(planId);
      return;
    }
    const distrust = (fields: object, why: string): void => this.distrust(book, { planId, topic: r.topic, partition: r.partition, offset: r.offset }, fields, why);
    // A chunked snapshot's head: its value is its chunks put together (read before it, same transaction).
    const chunkCount = snapshotChunkCount(r.headers);
    let value: Buffer = r.value;
    if (chunkCount !== null) {
      // Its summary rides in a header: the plan is listed and located without parsing megabytes of state
      // (an archived one is not even put together); its state is verified when a read takes it (`stateOf`).
      const entry = await this.fromHead({ ...r, value: r.value }, planId, chunkCount, chunks);
      if (entry !== null && 'reason' in entry) return distrust({ reason: entry.reason }, 'chunked snapshot does not assemble');
      if (entry !== null) {
        this.untrustedIn(r.partition).delete(planId);
        book.set(planId, entry);
        this.resolve(planId);
        return;
      }
      const whole = chunks.assemble(planId, { value: r.value, headers: r.headers });
      if (!whole.ok) return distrust({ reason: whole.reason }, 'chunked snapshot does not assemble');
      value = whole.value;
    }
    if (this.stats) this.stats.snapshotsDecoded = (this.stats.snapshotsDecoded ?? 0) + 1;
    let snap;
    try {
      snap = await withUnavailableRetry(() => this.codec.decodeSnapshot(value), { logger: this.logger });
    } catch (err) {
      return distrust({ err }, 'undecodable snapshot');
    }
    if (isWatermark(snap)) {
      if (!archive && planId === WATERMARK_KEY) this.watermarks.set(r.partition, String(snap.eventsOffset));
      return;
    }
    const check = stateFromSnapshot(snap);
    if (!check.ok || snap.planId !== planId) return distrust({ reason: check.ok ? 'key does not match planId' : check.reason }, 'snapshot does not verify');
    this.untrustedIn(r.partition).delete(planId);
    book.set(planId, {
      planId,
      partition: r.partition,
      topic: r.topic,
      offset: r.offset,
      seq: snap.seq,
      eventsOffset: String(snap.eventsOffset),
      summary: summarize({ planId, state: check.state, stalled: null }),
      value: archive ? null : value,
      chunks: chunkCount ?? 0,
    });
    this.resolve(planId);
  }

  /**
   * The entry of a chunked snapshot from its head alone: seq and events offset from the head's own record,
   * the summary from its header. An archived one's value is read at its offset when needed; a live one is
   * put together now (its value is kept, as for any live plan). Null when the head has no usable summary
   * (an older writer's): the caller decodes the whole snapshot. A reason when a live one's chunks do not
   * assemble.
   */
  private async fromHead(r: LogRecord & { value: Buffer }, planId: string, chunkCount: number, chunks: SnapshotChunks): Promise<IndexedPlan | { reason: string } | null> {
    let head;
    try {
      head = await withUnavailableRetry(() => this.codec.decodeSnapshot(r.value), { logger: this.logger });
    } catch {
      return null; // the whole-snapshot path decodes it again and distrusts it
    }
    if (isWatermark(head) || head.planId !== planId) return null;
    const summary = summaryOfHead(r.headers, head);
    if (summary === null) return null;
    const archive = r.topic === this.names.archive;
    let value: Buffer | null = null;
    if (!archive) {
      const whole = chunks.assemble(planId, { value: r.value, headers: r.headers });
      if (!whole.ok) return { reason: whole.reason };
      value = whole.value;
    }
    if (this.stats) {
      this.stats.snapshotsDecoded = (this.stats.snapshotsDecoded ?? 0) + 1;
      this.stats.snapshotsSummarized = (this.stats.snapshotsSummarized ?? 0) + 1;
    }
    return { planId, partition: r.partition, topic: r.topic, offset: r.offset, seq: head.seq, eventsOffset: String(head.eventsOffset), summary, value, chunks: chunkCount };
  }

  private untrustedIn(partition: number): Set<string> {
    let s = this.untrusted.get(partition);
    if (!s) this.untrusted.set(partition, (s = new Set()));
    return s;
  }

  /** Recomputes a plan's current entry from its live and archived records; keeps order and counts. */
  private resolve(planId: string): void {
    const l = this.live.get(planId);
    const a = this.archived.get(planId);
    const next = l && a ? (a.seq > l.seq ? a : l) : (l ?? a);
    const before = this.current.get(planId);
    if (before) {
      const i = firstAfter(this.sorted, orderKey(before)) - 1;
      if (i >= 0 && compareOrder(this.sorted[i]!, orderKey(before)) === 0) this.sorted.splice(i, 1);
      this.byStatus.set(before.summary.status, (this.byStatus.get(before.summary.status) ?? 1) - 1);
      for (const [k, v] of Object.entries(before.summary.labels)) this.byLabel.set(`${k}:${v}`, (this.byLabel.get(`${k}:${v}`) ?? 1) - 1);
      this.current.delete(planId);
    }
    if (next) {
      this.current.set(planId, next);
      const k = orderKey(next);
      this.sorted.splice(firstAfter(this.sorted, k), 0, k);
      this.byStatus.set(next.summary.status, (this.byStatus.get(next.summary.status) ?? 0) + 1);
      for (const [k, v] of Object.entries(next.summary.labels)) this.byLabel.set(`${k}:${v}`, (this.byLabel.get(`${k}:${v}`) ?? 0) + 1);
    }
  }

  /**
   * Reads the snapshots, archive and DLQ topics up to their last stable offsets as of now (the given
   * partitions, or all): then every snapshot and watermark committed before the call is in. The end
   * offsets are taken once, for all three topics at a time, and each topic is read up to them and no
   * further (a read never waits at a partition's end); a partition asked for the first time is read from
   * its log start.
   */
  async sync(partitions?: readonly number[]): Promise<void> {
    const asked = partitions ?? Array.from({ length: this.config.partitions }, (_, p) => p);
    const run = this.catching.then(() => this.catchUp(asked));
    this.catching = run.catch(() => {});
    await run;
  }

  private async catchUp(asked: readonly number[]): Promise<void> {
    if (this.closed) throw new Error('the plan index is closed');
    const topics = this.topics;
    const offsets = await Promise.all(topics.map((topic) => this.admin.fetchTopicOffsets(topic, asked)));
    await Promise.all(
      topics.map(async (topic, i) => {
        const pending = new Map<string, LogRecord>();
        const chunks = new Map<number, SnapshotChunks>();
        const chunksOf = (p: number) => chunks.get(p) ?? chunks.set(p, new SnapshotChunks()).get(p)!;
        // Positions move when what was read is applied: a read that fails leaves them where they were (a
        // tombstone applied already is applied again, to the same effect).
        const reached = new Map<number, bigint>();
        const from = new Map<number, string>();
        const ends = new Map<number, string>();
        for (const o of offsets[i]!) {
          if (!asked.includes(o.partition)) continue;
          const key = `${topic}/${o.partition}`;
          // Nothing left to read below the log start (a partition emptied by retention or deletion).
          const at = this.positions.get(key);
          const start = at === undefined || at < BigInt(o.low) ? BigInt(o.low) : at;
          this.positions.set(key, start);
          if (start < BigInt(o.high)) {
            from.set(o.partition, start.toString());
            ends.set(o.partition, o.high);
          }
        }
        if (ends.size === 0) return;
        const next = await this.kafka.readToEnd({
          topic,
          partitions: [...ends.keys()],
          from,
          ends,
          onRecords: async (records) => {
            await this.read(topic, records, pending, chunksOf);
            const at = BigInt(records.at(-1)!.offset) + 1n;
            // Dead letters are applied as they are read (and must not be read twice).
            if (topic === this.names.dlq) this.positions.set(`${topic}/${records[0]!.partition}`, at);
            else reached.set(records[0]!.partition, at);
          },
        });
        for (const r of [...pending.values()].sort((a, b) => (BigInt(a.offset) < BigInt(b.offset) ? -1 : 1))) await this.apply(r, chunksOf(r.partition));
        for (const [p, o] of reached) this.positions.set(`${topic}/${p}`, o);
        // Past the transaction markers and compaction gaps after the last record too.
        for (const [p, o] of next) if (BigInt(o) > (this.positions.get(`${topic}/${p}`) ?? 0n)) this.positions.set(`${topic}/${p}`, BigInt(o));
      }),
    );
  }

  /** The plan's latest snapshot, if the index has one it trusts. */
  get(planId: string): IndexedPlan | undefined {
    return this.current.get(planId);
  }

  /**
   * Set for a plan whose live snapshot is gone while its archive record is not read yet: its creation time
   * (null when unknown). Undefined for any other plan. Its events are then located from its creation, not
   * from the watermark.
   */
  departedAt(planId: string): number | null | undefined {
    return this.departed.get(planId);
  }

  /** Whether the plan's latest snapshot record did not verify (then it is read from its events). */
  isUntrusted(partition: number, planId: string): boolean {
    return this.untrusted.get(partition)?.has(planId) ?? false;
  }

  /** Whether any plan of the partition has a snapshot the index does not trust. */
  hasUntrusted(partition: number): boolean {
    return (this.untrusted.get(partition)?.size ?? 0) > 0;
  }

  /**
   * Offset W of the partition's watermark: every plan with events at offsets ≤ W has a snapshot (in the
   * index) covering all of them. Null when no projector has written one: readers read from the start.
   */
  watermark(partition: number): string | null {
    return this.watermarks.get(partition) ?? null;
  }

  /**
   * The plan's state at its snapshot: from the kept value (live) or the archive record at its offset, with
   * the chunks right before it for a chunked one. Undefined when that record moved on (the plan archived
   * again or erased) or does not verify: the caller reads the plan from its events.
   */
  async stateOf(entry: IndexedPlan): Promise<PlanState | undefined> {
    const value =
      entry.value ??
      (await readArchiveRecord(
        { kafka: this.kafka, config: this.config, partition: entry.partition, ...(this.stats ? { stats: this.stats } : {}) },
        entry.planId,
        entry.offset,
        entry.chunks > 0 ? (BigInt(entry.offset) - BigInt(entry.chunks)).toString() : undefined,
      ));
    if (value === undefined) return undefined;
    let snap;
    try {
      snap = await withUnavailableRetry(() => this.codec.decodeSnapshot(value), { logger: this.logger });
    } catch (err) {
      this.distrustEntry(entry, { err }, 'undecodable snapshot');
      return undefined;
    }
    const check = stateFromSnapshot(snap);
    if (check.ok && snap.planId === entry.planId && snap.seq === entry.seq && String(snap.eventsOffset) === entry.eventsOffset) return check.state;
    this.distrustEntry(entry, { reason: check.ok ? 'planId, seq or events offset differ from its entry' : check.reason }, 'snapshot does not verify');
    return undefined;
  }

  /**
   * A snapshot found not to verify when a read took it (a chunked one is verified then, not when indexed):
   * if it is still the plan's entry, the plan is read from its events from now on, as one found at indexing.
   */
  private distrustEntry(entry: IndexedPlan, fields: object, why: string): void {
    const book = entry.topic === this.names.archive ? this.archived : this.live;
    if (book.get(entry.planId) === entry) this.distrust(book, entry, fields, why);
  }

  /** A snapshot the index cannot use: the plan is read from its events (until a newer snapshot of it verifies). */
  private distrust(book: Map<string, IndexedPlan>, at: Pick<IndexedPlan, 'planId' | 'topic' | 'partition' | 'offset'>, fields: object, why: string): void {
    this.logger.warn({ planId: at.planId, topic: at.topic, partition: at.partition, offset: at.offset, ...fields }, `${why}: the plan is read from its events`);
    this.untrustedIn(at.partition).add(at.planId);
    book.delete(at.planId);
    this.resolve(at.planId);
  }

  /** Plans of the index in list order (newest first), from the first one after `after`. */
  *inOrder(after: OrderKey | null): Generator<IndexedPlan> {
    for (let i = after === null ? 0 : firstAfter(this.sorted, after); i < this.sorted.length; i++) {
      const e = this.current.get(this.sorted[i]![1]);
      if (e) yield e;
    }
  }

  /** Number of plans per status (summaries at their snapshots). */
  statusCounts(): ReadonlyMap<string, number> {
    return this.byStatus;
  }

  /** Number of plans with the label `key:value` (summaries at their snapshots). */
  labelCount(key: string, value: string): number {
    return this.byLabel.get(`${key}:${value}`) ?? 0;
  }

  get size(): number {
    return this.current.size;
  }

  /** Stops syncing; a sync in progress ends first. The reads' consumers are the Kafka client's (pooled). */
  async close(): Promise<void> {
    this.closed = true;
    await this.catching;
  }
}
