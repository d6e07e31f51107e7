import { LedgerError } from '../src/errors.js';
import type { LedgerConfig } from '../src/config.js';
import type { Logger } from '../src/logging.js';
import { setting } from '../src/settings.js';

/** Default MiB of finished plans the projector holds in memory (PLAN_LEDGER_PROJECTOR_CACHE_MIB). */
export const DEFAULT_PROJECTOR_CACHE_MIB = 256;

/** MiB of finished plans held: the option, else PLAN_LEDGER_PROJECTOR_CACHE_MIB, else 256 (fractions allowed). */
export function projectorCacheMib(opt: number | undefined, env: NodeJS.ProcessEnv = process.env): number {
  const [field, v] = opt !== undefined ? ['cacheMib', opt] : ['PLAN_LEDGER_PROJECTOR_CACHE_MIB', setting('PLAN_LEDGER_PROJECTOR_CACHE_MIB', env)];
  if (!Number.isFinite(v) || v <= 0) throw new LedgerError('VALIDATION', `${field} must be a positive number of MiB, got ${String(v)}`, { field });
  return v;
}

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
  /**
   * Bytes per snapshot chunk: a plan snapshot whose encoded value is larger is written as chunk records
   * and a head (see `snapshotMessages`). Default 512 KiB; keep it well under the snapshots topic's
   * max.message.bytes (1 MiB by default).
   */
  readonly snapshotChunkBytes?: number;
  /**
   * Called before a plan's snapshot records are built; a throw means this plan's snapshot cannot be
   * written, exactly as when the broker refuses it: the plan is skipped (see `SnapshotWriter.write`). For fault
   * injection in tests.
   */
  readonly beforeSnapshot?: (planId: string) => void;
  /**
   * Called before a partition's snapshot writer fences the partition's previous owner (its
   * `initTransactions`); a slow one stands for a fence that takes long, as while a transaction
   * coordinator loads. For fault injection in tests.
   */
  readonly beforeFence?: (partition: number) => void | Promise<void>;
  /** Collect Node's default process metrics (default true). */
  readonly defaultMetrics?: boolean;
  /**
   * MiB of finished, archived plans held in memory (default PLAN_LEDGER_PROJECTOR_CACHE_MIB or 256; a
   * fraction is fine). Past it the least recently used go cold: listed from a summary, read from their
   * archived snapshot on demand, loaded back when an event arrives for one.
   */
  readonly cacheMib?: number;
}

/** The projector group's session timeout and heartbeat interval. */
export const SESSION_TIMEOUT_MS = 30_000;
export const HEARTBEAT_INTERVAL_MS = 3_000;
