import type { LedgerCodec } from '../codec/index.js';
import type { Logger } from '../logging.js';
import type { PlanEvent } from '../plan/index.js';
import type { PartitionProjection, RecordOutcome } from './partition.js';
import { classifyFailure, retryDelayMs } from './poison.js';

export interface RetryOptions {
  readonly logger?: Logger;
  /** Stops retrying (the caller is shutting down): the last error is thrown. */
  readonly signal?: AbortSignal;
  /** Called before each wait; e.g. to heartbeat a consumer group while the registry is down. */
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
      const delay = retryDelayMs(attempt, opts.initialDelayMs, opts.maxDelayMs);
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

/** The record shape this module needs (kafkajs messages and log-reader records both fit). */
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
  let event: PlanEvent;
  try {
    event = await withUnavailableRetry(() => codec.decodeEvent(record.value as Buffer), retry);
  } catch (e) {
    const d = classifyFailure(e);
    if (d.action === 'retry') throw e; // aborted while the registry was down
    return projection.fail(record.offset, record.key, d);
  }
  return projection.applyEvent(record.offset, record.key, event, record.value);
}
