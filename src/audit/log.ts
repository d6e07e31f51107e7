import { connect } from 'node:net';
import { codecFromConfig, readSchemaId, type LedgerCodec, type PlanSnapshot } from '../codec/index.js';
import { topicNames, type LedgerConfig } from '../config.js';
import { isLedgerError, LedgerError } from '../errors.js';
import { createKafka, parseEventKey, partitionFor, readPlanRecords, CopyCounter, type DuplicateRecord, type KafkaClient, type LedgerAdmin, type LogRecord, type ReadStats, type ReadToEndOptions } from '../kafka/index.js';
import type { Logger } from '../logging.js';
import type { PositionedEvent } from './timeline.js';
import type { SnapshotAt } from './verify.js';
import { parseSnapshotChunkKey, SnapshotChunks } from '../projection/snapshot.js';

/** An event as read from the log, with the id of the schema it was written with. */
export interface LoggedEvent extends PositionedEvent {
  readonly schemaId: number;
}

/**
 * Fails fast, with one line, when none of the brokers accepts a TCP connection: the client would otherwise
 * retry for many seconds before giving up.
 */
export async function assertBrokersReachable(config: LedgerConfig, timeoutMs = 3000): Promise<void> {
  const tries = config.brokers.map(
    (b) =>
      new Promise<string | null>((resolve) => {
        const i = b.lastIndexOf(':');
        const socket = connect({ host: b.slice(0, i), port: Number(b.slice(i + 1)) });
        const done = (err: string | null) => {
          socket.destroy();
          resolve(err);
        };
        socket.setTimeout(timeoutMs, () => done(`no answer within ${timeoutMs} ms`));
        socket.once('connect', () => done(null));
        socket.once('error', (e: NodeJS.ErrnoException) => done(e.code ?? e.message));
      }),
  );
  const results = await Promise.all(tries);
  if (results.some((r) => r === null)) return;
  throw new LedgerError('UNAVAILABLE', `cannot reach Kafka at ${config.brokers.join(',')} (${results[0]})`, { brokers: config.brokers });
}

/** Where a plan's events are read from (see `from` and `start` of `readPlanRecords`). */
export interface PlanStartOffsets {
  readonly from?: string;
  readonly start?: { readonly tryFrom: string; readonly seq: number };
}

/**
 * Read access to the ledger's topics for audit, replay, verify and export: reads the log itself (no
 * projector, no executor), `read_committed`, to the end offset as of the read.
 */
export class LedgerLog {
  readonly names;
  private constructor(
    readonly config: LedgerConfig,
    readonly kafka: KafkaClient,
    readonly admin: LedgerAdmin,
    readonly codec: LedgerCodec,
    /** What {@link close} releases: the connections it opened (none when they belong to someone else). */
    private readonly release: (() => Promise<void>) | null,
    /** Where a plan's events start on its partition (no `from`: read it from the start). */
    private readonly planStart?: (planId: string) => Promise<PlanStartOffsets>,
    private readonly stats?: ReadStats,
  ) {
    this.names = topicNames(config.topicPrefix);
  }

  /**
   * Opens its own connections (the CLI's); {@link close} releases them. Kafka and the registry are reached
   * at once; when both fail, the broker's error is the one reported.
   */
  static async open(config: LedgerConfig, logger: Logger): Promise<LedgerLog> {
    await assertBrokersReachable(config);
    const kafka = createKafka(config, logger, 'cli');
    const admin = kafka.admin();
    const release = async () => {
      await admin.disconnect().catch(() => {});
      await kafka.close();
    };
    const [connected, codec] = await Promise.allSettled([admin.connect(), codecFromConfig(config, { logger, registryTimeoutMs: 5000 })]);
    if (connected.status === 'rejected') {
      await release();
      const e = connected.reason as unknown;
      if (isLedgerError(e)) throw e; // refused credentials: already one line naming mechanism and user
      throw new LedgerError('UNAVAILABLE', `cannot reach Kafka at ${config.brokers.join(',')}: ${(e as Error).message}`, {}, { cause: e });
    }
    if (codec.status === 'rejected') {
      await release();
      throw codec.reason;
    }
    return new LedgerLog(config, kafka, admin, codec.value, release);
  }

  /** A log over connections the caller owns (the ledger client's): {@link close} leaves them open. */
  static over(opts: {
    config: LedgerConfig;
    kafka: KafkaClient;
    admin: LedgerAdmin;
    codec: LedgerCodec;
    /** Where a plan's events start (the client's index knows); without it a plan is read from its partition's start. */
    planStart?: (planId: string) => Promise<PlanStartOffsets>;
    stats?: ReadStats;
  }): LedgerLog {
    return new LedgerLog(opts.config, opts.kafka, opts.admin, opts.codec, null, opts.planStart, opts.stats);
  }

  partitionOf(planId: string): number {
    return partitionFor(planId, this.config.partitions);
  }

  async topicExists(topic: string): Promise<boolean> {
    return (await this.admin.listTopics()).includes(topic);
  }

  /**
   * Every event of one plan, in seq order: the order `evolve` and the hash chain take them in (the latest
   * copy of a re-sent key sits after later seqs in the log, as compaction keeps it). An event whose key was tombstoned
   * later (an erasure not yet compacted) is left out, exactly as compaction will leave it out.
   */
  async readPlan(planId: string, copies?: CopyCounter): Promise<LoggedEvent[]> {
    if (!(await this.topicExists(this.names.events))) return [];
    const partition = this.partitionOf(planId);
    const { from, start } = (await this.planStart?.(planId)) ?? {};
    const records = await readPlanRecords({
      kafka: this.kafka,
      topic: this.names.events,
      partition,
      planId,
      ...(from !== undefined ? { from } : {}),
      ...(start !== undefined ? { start } : {}),
      ...(this.stats ? { stats: this.stats } : {}),
      ...(copies ? { copies } : {}),
    });
    const out: LoggedEvent[] = [];
    for (const r of records) {
      const event = await this.decode(r.value, partition, r.offset);
      if (event.planId === planId) out.push({ event, partition, offset: r.offset, schemaId: readSchemaId(r.value) });
    }
    return out.sort(bySeq);
  }

  /**
   * Every plan's events, one plan at a time, without holding the topic: each partition is read twice —
   * first the keys only, to learn the offset of each plan's last record; then the records, each plan's
   * kept only until its last record has passed, when `onPlan` gets them (in seq order, as {@link readPlan}:
   * the latest copy of each key, tombstoned keys left out). Memory follows the plans whose records
   * interleave at one point of the log, not the history. Plans come in the order of their last record.
   * `onProgress(done, total)` counts offsets read over both passes.
   */
  async streamPlans(
    onPlan: (planId: string, records: LoggedEvent[], poison?: LedgerError, duplicates?: DuplicateRecord[]) => void | Promise<void>,
    onProgress?: (done: number, total: number) => void,
  ): Promise<void> {
    if (!(await this.topicExists(this.names.events))) return;
    const offsets = await this.admin.fetchTopicOffsets(this.names.events);
    const total = 2 * offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
    let done = 0;
    onProgress?.(0, total);
    for (const o of offsets) {
      const partition = o.partition;
      const until = new Map([[partition, o.high]]);
      const span = Number(o.high) - Number(o.low);
      let read = 0;
      const progress = (records: LogRecord[]) => {
        const last = Number(records[records.length - 1]!.offset) + 1 - Number(o.low);
        done += last - read;
        read = last;
        onProgress?.(done, total);
      };
      // Both passes read the same span of the partition.
      const pass = (onRecords: ReadToEndOptions['onRecords']) =>
        this.kafka.readToEnd({ topic: this.names.events, partitions: [partition], until, timeoutMs: 600_000, ...(this.stats ? { stats: this.stats } : {}), onRecords });
      // 1. The offset of each plan's last record (key only, nothing decoded).
      const lastOf = new Map<string, string>();
      await pass((records) => {
        for (const r of records) lastOf.set(streamKey(r.key), r.offset);
        progress(records);
      });
      done += span - read;
      read = 0;
      // 2. The records, each plan handed over once its last record has passed.
      const open = new Map<string, Map<string, LoggedEvent>>();
      const copies = new Map<string, Map<string, CopyCounter>>(); // stream key -> plan id -> its copies
      // A record that does not decode is the plan's (its key names it): reported with it, never skipped.
      const poisoned = new Map<string, LedgerError>();
      await pass(async (records) => {
        for (const r of records) {
          const plan = streamKey(r.key);
          let keys = open.get(plan);
          if (!keys) open.set(plan, (keys = new Map()));
          const key = r.key?.toString() ?? '';
          const k = parseEventKey(r.key);
          if (k !== null) {
            let byPlan = copies.get(plan);
            if (!byPlan) copies.set(plan, (byPlan = new Map()));
            let c = byPlan.get(k.planId);
            if (!c) byPlan.set(k.planId, (c = new CopyCounter()));
            c.seen(k.seq, r.offset, r.value);
          }
          keys.delete(key); // a later record of a key replaces the earlier one, as compaction will
          if (r.value) {
            try {
              keys.set(key, { event: await this.decode(r.value, partition, r.offset), partition, offset: r.offset, schemaId: readSchemaId(r.value) });
            } catch (e) {
              if (!(e instanceof LedgerError) || e.code !== 'SCHEMA') throw e;
              if (!poisoned.has(plan)) poisoned.set(plan, e);
            }
          }
          if (lastOf.get(plan) !== r.offset) continue;
          open.delete(plan);
          const poison = poisoned.get(plan);
          poisoned.delete(plan);
          const counted = copies.get(plan);
          copies.delete(plan);
          const byPlan = byEventPlan(keys.values());
          if (poison && byPlan.size === 0) await onPlan(plan, [], poison);
          for (const [planId, list] of byPlan) await onPlan(planId, list.sort(bySeq), planId === plan ? poison : undefined, counted?.get(planId)?.duplicates());
        }
        progress(records);
      });
      done += span - read;
      onProgress?.(done, total);
      // Records whose plan's last offset was not reached (cannot happen when both passes read the same range).
      for (const [plan, keys] of open) for (const [planId, list] of byEventPlan(keys.values())) await onPlan(planId, list.sort(bySeq), undefined, copies.get(plan)?.get(planId)?.duplicates());
    }
    onProgress?.(total, total);
  }

  /**
   * Every snapshot record of a plan still in the (compacted) snapshots topic, oldest first, then its
   * records in the archive topic (a finished plan's snapshots move there).
   */
  /**
   * The plan's snapshots still on the snapshots and archive topics. With `since` (a time no snapshot of the
   * plan can be older than: its creation, less a margin for clocks), each partition is read from the first
   * record at or after it, found by record timestamp, so verifying one plan costs the same however many
   * plans the partition holds; without it, from the start.
   */
  async readSnapshots(planId: string, opts: { since?: number } = {}): Promise<SnapshotAt[]> {
    return [...(await this.readSnapshotsIn(this.names.snapshots, planId, opts.since)), ...(await this.readSnapshotsIn(this.names.archive, planId, opts.since))];
  }

  private async readSnapshotsIn(topic: string, planId: string, since: number | undefined): Promise<SnapshotAt[]> {
    if (!(await this.topicExists(topic))) return [];
    const partition = this.partitionOf(planId);
    let from: string | undefined;
    if (since !== undefined) {
      const at = (await this.admin.fetchTopicOffsetsByTimestamp(topic, Math.max(0, since))).find((o) => o.partition === partition)?.offset;
      if (at !== undefined && BigInt(at) < 0n) return []; // no record that recent: none of the plan
      from = at;
    }
    const out: SnapshotAt[] = [];
    const chunks = new SnapshotChunks();
    await this.kafka.readToEnd({
      topic,
      partitions: [partition],
      ...(from !== undefined ? { from: new Map([[partition, from]]) } : {}),
      ...(this.stats ? { stats: this.stats } : {}),
      onRecords: async (records) => {
        for (const r of records) {
          const key = r.key?.toString();
          if (key !== undefined && key !== planId && parseSnapshotChunkKey(key)?.planId === planId) chunks.offer(key, r);
          if (key !== planId) continue;
          if (!r.value) {
            out.length = 0; // a tombstone: earlier snapshots were erased (or, here, moved to the archive)
            continue;
          }
          // A chunked snapshot's head: its chunks came just before it (same transaction).
          const whole = chunks.assemble(planId, { value: r.value, headers: r.headers });
          const snapshot: PlanSnapshot = await this.codec.decodeSnapshot(whole.ok ? whole.value : r.value);
          out.push({ snapshot, offset: r.offset });
        }
      },
    });
    return out;
  }

  private async decode(value: Buffer, partition: number, offset: string) {
    try {
      return await this.codec.decodeEvent(value);
    } catch (e) {
      throw new LedgerError('SCHEMA', `cannot decode the event at ${this.names.events} ${partition}/${offset}: ${(e as Error).message}`, { partition, offset }, { cause: e });
    }
  }

  async close(): Promise<void> {
    await this.release?.();
  }
}

/** The plan a record belongs to by its key (`planId:seq`); a key that does not parse is its own group. */
function streamKey(key: Buffer | null): string {
  return parseEventKey(key)?.planId ?? `\u0000${key?.toString('hex') ?? 'null'}`;
}

/** Records grouped by the plan their event names, in log order (a forged record may name another plan). */
function byEventPlan(records: Iterable<LoggedEvent>): Map<string, LoggedEvent[]> {
  const out = new Map<string, LoggedEvent[]>();
  for (const r of [...records].sort((a, b) => Number(BigInt(a.offset) - BigInt(b.offset)))) {
    let list = out.get(r.event.planId);
    if (!list) out.set(r.event.planId, (list = []));
    list.push(r);
  }
  return out;
}

function bySeq(a: LoggedEvent, b: LoggedEvent): number {
  return a.event.seq - b.event.seq;
}
