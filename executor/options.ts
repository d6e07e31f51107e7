// What an executor is started with (`startExecutor`), and the bounds derived from it and the settings.
import type { TracerProvider } from '@opentelemetry/api';
import type { LedgerConfigInput } from '../src/config.js';
import { payloadLimitsFromEnv } from '../src/blobs/index.js';
import { LedgerError } from '../src/errors.js';
import { MAX_RECORD_BYTES } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { DEFAULT_LIMITS, type ApprovalPolicy } from '../src/plan/index.js';
import { CLOCK_OFFSET_MAX_MS, setting } from '../src/settings.js';
import type { Tool } from '../src/tools.js';
import type { OwnerLimits } from './context.js';
import { DEFAULT_ABORT_GRACE_MS } from './item-runner.js';

export interface ExecutorOptions {
  /** The tools this executor can run, by name. */
  readonly tools: readonly Tool[];
  /** Connection and topic settings; defaults come from PLAN_LEDGER_* and the local stack. */
  readonly config?: LedgerConfigInput;
  /** Max tool calls running at once across the owned partitions (default 16); recording intents and results does not hold a slot. */
  readonly concurrency?: number;
  readonly logger?: Logger;
  /** Stable name in events (`actor`, attempt `executorId`); default host-pid-random. */
  readonly executorId?: string;
  /** Consumer group session timeout (default PLAN_LEDGER_SESSION_TIMEOUT_MS or 10 000 ms). */
  readonly sessionTimeoutMs?: number;
  /** Heartbeat interval (default PLAN_LEDGER_HEARTBEAT_INTERVAL_MS or 1 000 ms). */
  readonly heartbeatIntervalMs?: number;
  /** On stop, how long running items may take to finish before they are aborted (default 10 000 ms). */
  readonly shutdownGraceMs?: number;
  /**
   * Longest a tool call may run before its attempt fails with TIMEOUT (default PLAN_LEDGER_TOOL_TIMEOUT_MS
   * or 10 minutes); a tool's own `timeoutMs` wins.
   */
  readonly toolTimeoutMs?: number;
  /** Most items one plan may hold (default PLAN_LEDGER_MAX_ITEMS or 100 000). */
  readonly maxItems?: number;
  /** Closest two `ctx.checkpoint` writes of one attempt may follow each other (default PLAN_LEDGER_CHECKPOINT_INTERVAL_MS or 1 000 ms); calls in between coalesce. */
  readonly checkpointIntervalMs?: number;
  /**
   * MiB of finished plans the executor keeps in memory (default PLAN_LEDGER_EXECUTOR_CACHE_MIB or 64; a
   * fraction is fine); past it, the least recently used are read back from their events when a command needs one.
   */
  readonly cacheMib?: number;
  /**
   * The approval policy: a policy file (YAML or JSON) or a policy built in code; default the file named by
   * PLAN_LEDGER_POLICY, else none. Validated at start (a bad field fails `startExecutor` naming it); the
   * owners hand it to `decide`, which records the rule that decided in the events.
   */
  readonly policy?: ApprovalPolicy | string;
  /**
   * Where the executor's spans go (command decisions, item attempts, tool calls; see docs/guides/tracing.md).
   * Default: a provider built from the standard `OTEL_*` variables when they ask for traces (OTLP over HTTP,
   * shut down with the executor), else none — tracing off, at no cost.
   */
  readonly tracerProvider?: TracerProvider;
  /**
   * The master key (32 bytes) that wraps the plans' data keys; default PLAN_LEDGER_MASTER_KEY_FILE /
   * PLAN_LEDGER_MASTER_KEY. With one, the executor opens encrypted payloads for tools and seals what it
   * records (outputs, follow-up inputs, checkpoints, evidence) for plans that have a key.
   */
  readonly masterKey?: Buffer;
  /**
   * Shifts every wall-clock read of this executor by this many ms (tests only: a host whose clock is off;
   * see docs/concepts/item-protocol.md#clocks); default PLAN_LEDGER_CLOCK_OFFSET_MS or 0.
   */
  readonly clockOffsetMs?: number;
  /**
   * How often the executor re-publishes its heartbeat on `<prefix>.plan-executors` (ms, 100 to 60 000;
   * default PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS or 5 000). Readers count it stale after three intervals
   * without one (docs/guides/running-executors.md#who-runs).
   */
  readonly announceIntervalMs?: number;
  /**
   * Called before a partition's new owner fences the partition's transactional ids; a slow one stands
   * for a fence that takes long, as while a transaction coordinator loads. For fault injection in tests.
   */
  readonly beforeFence?: (partition: number) => void | Promise<void>;
}

function positive(name: string, v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isSafeInteger(v) || v <= 0) throw new LedgerError('VALIDATION', `${name} must be a positive integer, got ${v}`, { field: name });
  return v;
}

/** MiB of finished plans kept in memory: the option, else PLAN_LEDGER_EXECUTOR_CACHE_MIB, else 64 (fractions allowed). */
export function cacheMib(opts: ExecutorOptions): number {
  const [field, v] = opts.cacheMib !== undefined ? ['cacheMib', opts.cacheMib] : ['PLAN_LEDGER_EXECUTOR_CACHE_MIB', setting('PLAN_LEDGER_EXECUTOR_CACHE_MIB')];
  if (!Number.isFinite(v) || v <= 0) throw new LedgerError('VALIDATION', `${field} must be a positive number of MiB, got ${String(v)}`, { field });
  return v;
}

/** The heartbeat interval on <prefix>.plan-executors: the option, else PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS (100 to 60 000 ms). */
export function announceIntervalMs(opts: ExecutorOptions): number {
  if (opts.announceIntervalMs === undefined) return setting('PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS');
  const v = opts.announceIntervalMs;
  if (!Number.isSafeInteger(v) || v < 100 || v > 60_000) throw new LedgerError('VALIDATION', `announceIntervalMs must be an integer from 100 to 60000, got ${v}`, { field: 'announceIntervalMs' });
  return v;
}

/** The clock offset: the option, else PLAN_LEDGER_CLOCK_OFFSET_MS (both within ±{@link CLOCK_OFFSET_MAX_MS}). */
export function clockOffset(opts: ExecutorOptions): number {
  if (opts.clockOffsetMs === undefined) return setting('PLAN_LEDGER_CLOCK_OFFSET_MS');
  const v = opts.clockOffsetMs;
  if (!Number.isSafeInteger(v) || Math.abs(v) > CLOCK_OFFSET_MAX_MS) {
    throw new LedgerError('VALIDATION', `clockOffsetMs must be an integer from ${-CLOCK_OFFSET_MAX_MS} to ${CLOCK_OFFSET_MAX_MS}, got ${v}`, { field: 'clockOffsetMs' });
  }
  return v;
}

/** The bounds every owner keeps: the record limit is the plan topics' max.message.bytes, set when the ledger creates them. */
export function ownerLimits(opts: ExecutorOptions): OwnerLimits {
  return Object.freeze({
    maxRecordBytes: MAX_RECORD_BYTES,
    toolTimeoutMs: positive('toolTimeoutMs', opts.toolTimeoutMs) ?? setting('PLAN_LEDGER_TOOL_TIMEOUT_MS'),
    abortGraceMs: DEFAULT_ABORT_GRACE_MS,
    payload: payloadLimitsFromEnv(),
    checkpointIntervalMs:
      positive('checkpointIntervalMs', opts.checkpointIntervalMs) ?? setting('PLAN_LEDGER_CHECKPOINT_INTERVAL_MS'),
    decide: Object.freeze({ ...DEFAULT_LIMITS, maxItems: positive('maxItems', opts.maxItems) ?? setting('PLAN_LEDGER_MAX_ITEMS') }),
  });
}

