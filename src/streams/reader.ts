// The reader of a plan's live stream (`ledger.stream(planId, { from })`): an async iterator over its
// partition of `<prefix>.plan-streams`, from the plan's first record, from a cursor it handed out, or live.
// Memory stays bounded whatever the consumer does: the Kafka read waits for the consumer to take each
// batch (at most one batch is held here) and fetches ahead at most `prefetchKiB`.
import { LedgerError } from '../errors.js';
import { partitionFor, type KafkaClient, type LedgerAdmin, type LogRecord } from '../kafka/index.js';
import { STREAM_PREFETCH_KIB, decodeStreamRecord, encodeCursor, isStreamKeyOf, parseCursor, type StreamChunk } from './records.js';

/** How far before a plan's creation a read from its beginning starts (clock skew between writers). */
const START_SKEW_MS = 60_000;

export interface StreamOptions {
  /**
   * Where to start: `'beginning'` (default: the plan's first stream record still retained), `'live'` (only
   * what is written from now on), or the `cursor` of a chunk this reader (or another) handed out: the
   * chunks after it, none missed and none twice.
   */
  from?: 'beginning' | 'live' | string;
  /** Ends the iteration (it returns normally). */
  signal?: AbortSignal;
  /**
   * Whether to wait for what is written next (default true). `false` reads up to the end of what the
   * partition holds when the read starts, then returns: a replay, or the rest of a plan that has ended.
   */
  follow?: boolean;
}

export interface StreamReaderDeps {
  readonly kafka: KafkaClient;
  readonly admin: LedgerAdmin;
  readonly topic: string;
  readonly partitions: number;
  /** The plan's creation time, or undefined when the ledger does not hold it (unknown or erased). */
  readonly planCreatedAt: (planId: string) => Promise<number | null | undefined>;
}

/**
 * The chunks of a plan's stream, in the order they were written. Chunks of a run that a `superseded`
 * marker ended are dropped if a paused former owner still writes them after it. Throws `VALIDATION` for a
 * bad `from`, `NOT_FOUND` for a plan the ledger does not hold (unknown or erased) — also when the plan
 * is erased while being read — and for a cursor whose records retention has removed.
 */
export async function* readPlanStream(d: StreamReaderDeps, planId: string, opts: StreamOptions = {}): AsyncGenerator<StreamChunk, void, undefined> {
  const partition = partitionFor(planId, d.partitions);
  const from = opts.from ?? 'beginning';
  const cursor = from === 'beginning' || from === 'live' ? undefined : parseCursor(from, planId, partition);
  const createdAt = await d.planCreatedAt(planId);
  if (createdAt === undefined) throw new LedgerError('NOT_FOUND', `plan ${planId} not found (unknown or erased): it has no stream`, { planId });
  const offsets = (await d.admin.fetchTopicOffsets(d.topic, [partition])).find((o) => o.partition === partition);
  const low = BigInt(offsets?.low ?? '0');
  let start: bigint;
  if (cursor !== undefined) {
    if (cursor < low) throw new LedgerError('NOT_FOUND', `the stream records after this cursor of plan ${planId} are past the topic's retention; read the recorded results instead`, { planId, field: 'from' });
    start = cursor;
  } else if (from === 'live') {
    start = BigInt(offsets?.high ?? '0');
  } else {
    const at = (await d.admin.fetchTopicOffsetsByTimestamp(d.topic, Math.max(0, (createdAt ?? 0) - START_SKEW_MS))).find((o) => o.partition === partition)?.offset;
    start = at !== undefined && BigInt(at) > low ? BigInt(at) : low;
  }

  // One batch at a time between the Kafka read and the consumer: the read waits in onRecords until taken.
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  if (opts.signal?.aborted) stop.abort();
  let slot: { records: LogRecord[]; taken: () => void } | undefined;
  let wake: (() => void) | undefined;
  let failure: { error: unknown } | undefined;
  let finished = false;
  const reading = d.kafka
    .readToEnd({
      topic: d.topic,
      partitions: [partition],
      from: new Map([[partition, start.toString()]]),
      ...(opts.follow === false ? { isComplete: () => stop.signal.aborted } : { follow: stop.signal }),
      prefetchKiB: STREAM_PREFETCH_KIB,
      onRecords: (records) =>
        new Promise<void>((taken) => {
          const mine = records.filter((r) => isStreamKeyOf(r.key, planId));
          if (mine.length === 0 || stop.signal.aborted) return taken();
          slot = { records: mine, taken };
          wake?.();
        }),
    })
    .catch((e: unknown) => {
      failure = { error: e };
    })
    .finally(() => {
      finished = true;
      wake?.();
    });
  stop.signal.addEventListener('abort', () => wake?.(), { once: true });
  const superseded = new Map<string, number>();
  let current: (() => void) | undefined;
  try {
    for (;;) {
      while (slot === undefined && !finished && !stop.signal.aborted) {
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
      if (slot === undefined) break;
      const { records, taken } = slot;
      current = taken;
      slot = undefined;
      for (const r of records) {
        if (r.value === null) throw new LedgerError('NOT_FOUND', `plan ${planId} was erased: its stream is gone`, { planId });
        const rec = decodeStreamRecord(r.value);
        if (rec === undefined || rec.planId !== planId) continue;
        const attemptKey = `${rec.itemId}/${rec.attempt}`;
        if (rec.kind === 'end' && rec.end === 'superseded') superseded.set(attemptKey, Math.max(superseded.get(attemptKey) ?? 0, rec.run));
        else if (rec.run < (superseded.get(attemptKey) ?? 0)) continue;
        yield { ...rec, cursor: encodeCursor(planId, partition, BigInt(r.offset) + 1n) };
        if (stop.signal.aborted) break;
      }
      current = undefined;
      taken();
      if (stop.signal.aborted) break;
    }
    if (failure !== undefined) throw (failure as { error: unknown }).error;
  } finally {
    opts.signal?.removeEventListener('abort', onAbort);
    stop.abort();
    current?.();
    slot?.taken();
    await reading;
  }
}
