// What a partition's owner is given (OwnerDeps: the executor's settings, clock, logger, Kafka, tools) and
// the shapes its parts share (its limits, its restored partition). Types only, and no import of any part
// of the owner: the owner, its book, command handler, item scheduler and erasure import these from here,
// not from partition-owner.ts, and each part declares the fields of OwnerDeps it reads (BookDeps,
// CommandHandlerDeps, ItemSchedulerDeps, ErasureContext.d) instead of taking the whole bag.
import type { Tracer } from '@opentelemetry/api';
import type { BlobReader, PayloadLimits } from '../src/blobs/index.js';
import type { PlanKeyring } from '../src/crypto/index.js';
import type { LedgerConfig } from '../src/config.js';
import type { LedgerCodec } from '../src/codec/index.js';
import type { GroupMember, KafkaClient, LedgerAdmin } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import type { ApprovalPolicy, DecideLimits, PlanState } from '../src/plan/index.js';
import type { ArchiveLoader } from '../src/projection/restore.js';
import type { Tool } from '../src/tools.js';
import type { CacheBudget } from './dormant-cache.js';
import type { ExecutorMetrics } from './metrics.js';
import type { Slots } from './slots.js';
import type { StreamPublisher } from './streams.js';

/** What the executor gives each partition owner it starts. */
export interface OwnerDeps {
  readonly kafka: KafkaClient;
  /** The executor's membership of the executors group: the owner commits its commands offsets for it. */
  readonly member: GroupMember;
  readonly config: LedgerConfig;
  readonly codec: LedgerCodec;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly executorId: string;
  readonly logger: Logger;
  readonly slots: Slots;
  readonly restore: (partition: number, onStep?: (step: string) => void) => Promise<RestoredForOwner>;
  /** The writer of the attempts' live streams (`<prefix>.plan-streams`); none: `ctx.stream` writes nothing. */
  readonly streams?: StreamPublisher;
  /** The executor's admin client (the erasure's sweep of a plan's stream records asks it for offsets). */
  readonly admin?: LedgerAdmin;
  readonly now?: () => number;
  /** The approval policy `decide` applies to new plans and new items (see src/plan/policy.ts); none by default. */
  readonly policy?: ApprovalPolicy;
  readonly limits: OwnerLimits;
  readonly metrics: ExecutorMetrics;
  /** Resolves payloads stored by reference (inputs, dependencies' outputs). */
  readonly blobs: BlobReader;
  /** The plans' data keys when a master key is configured: payloads are opened for tools and sealed when recorded. */
  readonly keys?: PlanKeyring;
  /** Spans of command decisions, attempts and tool calls; none when tracing is off. */
  readonly tracer?: Tracer;
  /** The executor's byte budget for finished plans put aside (see DormantCache); the owner's own 64 MiB without. */
  readonly cacheBudget?: CacheBudget;
  /** Reads a finished plan evicted from the cache back from its events (see readPlanFromEvents). */
  readonly readPlan?: (partition: number, planId: string, since: number | null) => Promise<PlanState | undefined>;
  /** The fences of the partition's previous owner in this process: the new owner fences once they ended (see PartitionOwner.fencesEnded). */
  readonly after?: Promise<void>;
  /** Fault injection for tests: awaited before the owner fences (a slow one stands for a fence that takes long). */
  readonly beforeFence?: (partition: number) => void | Promise<void>;
}

/** The bounds an owner keeps every step within (see docs/reference/limits.md). */
export interface OwnerLimits {
  /** Largest record the events topic takes (its max.message.bytes); a bigger event is refused before it is appended. */
  readonly maxRecordBytes: number;
  /** Default tool timeout; a tool's own `timeoutMs` wins. */
  readonly toolTimeoutMs: number;
  /** How long a tool that ignores its aborted signal keeps its slot after the timeout. */
  readonly abortGraceMs: number;
  /** Limits `decide` enforces (inline payload bytes, items per plan). */
  readonly decide: DecideLimits;
  /** Payloads above `inlineBytes` go by reference to the blobs topic; none may pass `maxPayloadBytes`. */
  readonly payload: PayloadLimits;
  /** Closest two checkpoint writes of one attempt may follow each other; calls in between coalesce. */
  readonly checkpointIntervalMs: number;
}

/** What the owner needs from the restore of its partition (see restore.ts). */
export interface RestoredForOwner {
  /** Plans seeded from a snapshot and events replayed on top (for the log and the restore benchmark). */
  fromSnapshot?: number;
  eventsReplayed?: number;
  plans: Map<string, PlanState>;
  stalled: Map<string, string>;
  /** Plans whose keys were tombstoned last (erased); see {@link PartitionBook.erased}. */
  erased?: Set<string>;
  /** Highest seq among each plan's event keys (covers a stalled plan's records past its state). */
  lastKeySeq?: Map<string, number>;
  /** Finished plans left undecoded: planId → raw snapshot value (see {@link PartitionBook.dormant}). */
  dormant?: Map<string, Buffer>;
  /** Highest fencing token ever used on the partition, dormant plans included. */
  maxFencingToken?: number;
  /** The partition's archived plans, read on first need (see {@link PartitionBook.fromArchive}). */
  archived?: ArchiveLoader;
  /** Each plan's trace context, from the `traceparent` header of its last replayed event record or its snapshot record. */
  traceparents?: Map<string, string>;
}
