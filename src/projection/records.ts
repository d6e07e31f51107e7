import type { LedgerCodec } from '../codec/index.js';
import type { Logger } from '../logging.js';
import type { PlanEvent } from '../plan/index.js';
import type { PartitionProjection, RecordOutcome } from './partition.js';
import { backoffMs } from '../backoff.js';
import { classifyFailure, parseEventKey, type EventKey } from './poison.js';

export interface RetryOptions {
  readonly logger?: Logger;
  /** Stops retrying (the caller is shutting down): the last error is thrown. */
  readonly signal?: AbortSignal;
  /** Called before each wait; e.g. to count the retries while the registry is down. */
  readonly onRetry?: (attempt: number, error: unknown) => void | Promise<void>;
  readonly initialDelayMs?: number;
  readonly maxDelayMs?: number;
}

/**
 * Runs `fn` until it succeeds or fails with an error that is not "unavailable": an unreachable registry
 * is retried with capped exponential backoff for as long as it takes (the record is fine; dead-lettering
 * it would lose it), every other error is returned to the caller.
 */
export async function withUnavailableRetry<T>(fn: () => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (classifyFailure(e).action !== 'retry' || opts.signal?.aborted) throw e;
      const delay = backoffMs(attempt, opts.initialDelayMs ?? 200, opts.maxDelayMs ?? 10_000);
      opts.logger?.warn({ attempt, delayMs: delay, err: e instanceof Error ? e.message : String(e) }, 'schema registry unavailable; retrying');
      await opts.onRetry?.(attempt, e);
      await sleep(delay, opts.signal);
    }
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The record shape this module needs (a `LogRecord` fits). */
export interface EventRecord {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
}

/**
 * Decodes one events-topic record and applies it to the partition's projection. Registry outages are
 * retried (see {@link withUnavailableRetry}); a record that cannot be decoded or applied comes back as a
 * `poison` outcome with its cause, and its plan is stalled.
 */
export async function processEventRecord(
  projection: PartitionProjection,
  codec: Pick<LedgerCodec, 'decodeEvent'>,
  record: EventRecord,
  retry: RetryOptions = {},
): Promise<RecordOutcome> {
  const early = projection.precheck(record.offset, record.key, record.value);
  if (early !== null) return early;
  return settle(projection, record, await decodeAwaited(codec, record.value as Buffer, retry));
}

/** What {@link processEventBatch} did with a batch. */
export interface BatchOutcome<R extends EventRecord = EventRecord> {
  /** Events applied (each record's event, and any that waited for it). */
  readonly applied: number;
  /** Records that could not be decoded or applied, in the order they were met: their plans are stalled. */
  readonly poison: Array<{ outcome: Extract<RecordOutcome, { kind: 'poison' }>; record: R }>;
}

/** A record that did not decode: the error, kept to stall its plan at the right record. */
class DecodeFailure {
  constructor(readonly error: unknown) {}
}

/**
 * Replays a batch of one events partition's records into its projection: the same result, record for
 * record, as {@link processEventRecord} on each in order, at a fraction of the cost. Events decode without
 * a promise once their writer schema is known, and each plan's run of events in the batch is folded at
 * once (`PartitionProjection.applyRun`). A plan whose records in the batch are anything but a clean run —
 * a tombstone, a re-send, a gap, a record that does not decode or match its key, a stalled plan — takes
 * the record-by-record path for all of its records, so stalls and dead letters are exactly those of the
 * one-by-one replay. Plans are independent, so only the order within a plan matters.
 *
 * `keys`, when given, are the records' keys parsed already (`parseEventKey`), index for index.
 */
export async function processEventBatch<R extends EventRecord>(
  projection: PartitionProjection,
  codec: Pick<LedgerCodec, 'decodeEvent' | 'decodeKnownEvent'>,
  records: readonly R[],
  retry: RetryOptions = {},
  keys: ReadonlyArray<EventKey | null> = records.map((r) => parseEventKey(r.key)),
  onApplied?: (event: PlanEvent) => void,
): Promise<BatchOutcome<R>> {
  const n = records.length;
  if (n === 0) return { applied: 0, poison: [] };
  const decoded: Array<PlanEvent | DecodeFailure | undefined> = new Array(n);
  const runs = new Map<string, Run>();
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    if (k == null) continue; // record by record (poison)
    let run = runs.get(k.planId);
    if (run === undefined) {
      run = { first: i, last: i, events: [], clean: projection.canApplyRun(k.planId, k.seq), nextSeq: k.seq };
      runs.set(k.planId, run);
    }
    run.last = i;
    if (!run.clean) continue;
    const value = records[i]!.value;
    if (value === null || k.seq !== run.nextSeq) {
      run.clean = false;
      continue;
    }
    run.nextSeq += 1;
    let d: PlanEvent | DecodeFailure | undefined;
    try {
      d = codec.decodeKnownEvent(value); // no promise per record once the writer schema is known
    } catch (e) {
      d = decodeFailure(e);
    }
    d ??= await decodeAwaited(codec, value, retry);
    decoded[i] = d;
    if (d instanceof DecodeFailure || d.planId !== k.planId || d.seq !== k.seq) run.clean = false;
    else run.events.push(d);
  }

  let applied = 0;
  const poison: BatchOutcome<R>['poison'] = [];
  const oneByOne = async (i: number) => {
    const r = records[i]!;
    const d = decoded[i];
    const outcome = d === undefined ? await processEventRecord(projection, codec, r, retry) : applyDecoded(projection, r, d);
    if (outcome.kind === 'applied') {
      applied += 1 + outcome.drained.length;
      if (onApplied) for (const e of [outcome.event, ...outcome.drained]) onApplied(e);
    } else if (outcome.kind === 'poison') poison.push({ outcome, record: r });
  };
  for (let i = 0; i < n; i++) {
    const k = keys[i];
    const run = k == null ? undefined : runs.get(k.planId);
    if (run === undefined || !run.clean) await oneByOne(i);
  }
  for (const [planId, run] of runs) {
    if (!run.clean) continue;
    if (projection.applyRun(planId, run.events, records[run.last]!.offset)) {
      applied += run.events.length;
      if (onApplied) for (const e of run.events) onApplied(e);
      continue;
    }
    // The domain refused one of them: find it record by record.
    for (let i = run.first; i <= run.last; i++) if (keys[i]?.planId === planId) await oneByOne(i);
  }
  projection.lastOffset = records[n - 1]!.offset;
  return { applied, poison };
}

interface Run {
  /** Indexes of the plan's first and last record in the batch. */
  first: number;
  last: number;
  /** Its events in log order while the run is clean. */
  readonly events: PlanEvent[];
  clean: boolean;
  nextSeq: number;
}

/** A decode error as a failure to stall the plan with; an unavailable registry is not one (thrown). */
function decodeFailure(e: unknown): DecodeFailure {
  if (classifyFailure(e).action === 'retry') throw e; // aborted while the registry was down
  return new DecodeFailure(e);
}

/** Decodes through the registry when needed (a writer schema not seen yet), waiting out its outages. */
async function decodeAwaited(codec: Pick<LedgerCodec, 'decodeEvent'>, value: Buffer, retry: RetryOptions): Promise<PlanEvent | DecodeFailure> {
  try {
    return await withUnavailableRetry(() => codec.decodeEvent(value), retry);
  } catch (e) {
    return decodeFailure(e);
  }
}

/** {@link processEventRecord} for a record decoded already. */
function applyDecoded(projection: PartitionProjection, record: EventRecord, d: PlanEvent | DecodeFailure): RecordOutcome {
  const early = projection.precheck(record.offset, record.key, record.value);
  return early ?? settle(projection, record, d);
}

/** A record past its precheck: its event applied, or its decode failure stalling the plan. */
function settle(projection: PartitionProjection, record: EventRecord, d: PlanEvent | DecodeFailure): RecordOutcome {
  if (!(d instanceof DecodeFailure)) return projection.applyEvent(record.offset, record.key, d, record.value);
  const decision = classifyFailure(d.error);
  if (decision.action === 'retry') throw d.error; // not reached: decodeFailure throws these
  return projection.fail(record.offset, record.key, decision);
}
