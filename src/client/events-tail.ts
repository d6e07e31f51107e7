// The client's tail of the events topic: one reader positioned at the end of every partition when the
// client connects, handing each plan's events (and tombstones) to whoever listens for that plan. A
// command's outcome, `waitFor` and erase all listen here, so the client never reads the log twice for them.
import type { LedgerCodec } from '../codec/index.js';
import { parseEventKey, type KafkaClient, type LedgerAdmin, type LogRecord, type PartitionTail, type ReadStats } from '../kafka/index.js';
import type { Logger } from '../logging.js';
import type { PlanEvent } from '../plan/index.js';

/** Where a record of the events tail sits. */
export interface TailPosition {
  readonly partition: number;
  readonly offset: string;
}

export type Listener = (e: PlanEvent, at: TailPosition) => void;
/** Called with the key of a tombstone (`planId:seq`) of a plan. */
export type TombstoneListener = (key: string) => void;

export class EventsTail {
  private tail: PartitionTail | undefined;
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly tombstoneListeners = new Map<string, Set<TombstoneListener>>();
  /** Next offset per partition: every record below it has reached the listeners. */
  private readonly next = new Map<number, bigint>();
  private waiters: Array<{ partition: number; offset: bigint; resolve: () => void }> = [];

  constructor(private readonly o: { kafka: KafkaClient; admin: LedgerAdmin; codec: LedgerCodec; topic: string; logger: Logger; stats?: ReadStats }) {}

  /** Positions the tail at the end of every partition as of now, so every event written after this is seen. */
  async start(): Promise<void> {
    const ends = await this.o.admin.fetchTopicOffsets(this.o.topic);
    for (const e of ends) this.next.set(e.partition, BigInt(e.high));
    const tail = await this.o.kafka.tail({
      topic: this.o.topic,
      onRecords: (partition, records) => this.onRecords(partition, records),
      // Past a batch (transaction markers included), every record below it reached the listeners.
      onPosition: (partition, next) => this.advanced(partition, next),
    });
    this.tail = tail;
    await Promise.all(ends.map((e) => tail.add(e.partition, e.high)));
  }

  /** Hands `l` every event of the plan from now on, with where it sits; returns how to stop. */
  listen(planId: string, l: Listener): () => void {
    return subscribe(this.listeners, planId, l);
  }

  /** Hands `l` the key of every tombstone of the plan from now on; returns how to stop. */
  listenTombstones(planId: string, l: TombstoneListener): () => void {
    return subscribe(this.tombstoneListeners, planId, l);
  }

  /** Resolves once the tail has handed every record below `offset` of `partition` to the listeners. */
  reached(partition: number, offset: bigint): Promise<void> {
    if ((this.next.get(partition) ?? 0n) >= offset) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ partition, offset, resolve }));
  }

  async close(): Promise<void> {
    await this.tail?.close();
  }

  private async onRecords(partition: number, records: LogRecord[]): Promise<void> {
    const counts = this.o.stats ? (this.o.stats.tail ??= { received: 0, decoded: 0 }) : undefined;
    if (counts) counts.received += records.length;
    for (const m of records) {
      const planId = parseEventKey(m.key)?.planId;
      if (planId === undefined) continue;
      const key = m.key!.toString();
      if (!m.value) {
        for (const l of [...(this.tombstoneListeners.get(planId) ?? [])]) l(key);
        continue;
      }
      const ls = this.listeners.get(planId);
      if (!ls?.size) continue; // nobody follows this plan: not even decoded
      try {
        if (counts) counts.decoded += 1;
        const e = await this.o.codec.decodeEvent(m.value);
        const at = { partition, offset: m.offset };
        for (const l of [...ls]) l(e, at);
      } catch (err) {
        this.o.logger.warn({ err, offset: m.offset }, 'undecodable event on the tail');
      }
    }
  }

  private advanced(partition: number, next: bigint): void {
    if (next <= (this.next.get(partition) ?? -1n)) return;
    this.next.set(partition, next);
    this.waiters = this.waiters.filter((w) => {
      if (w.partition !== partition || next < w.offset) return true;
      w.resolve();
      return false;
    });
  }
}

function subscribe<L>(by: Map<string, Set<L>>, planId: string, l: L): () => void {
  let set = by.get(planId);
  if (!set) by.set(planId, (set = new Set()));
  set.add(l);
  return () => {
    set.delete(l);
    if (!set.size) by.delete(planId);
  };
}
