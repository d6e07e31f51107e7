/**
 * The ledger's view of Kafka: the handful of jobs the ledger gives it, named for what the ledger does with
 * them. Only `src/kafka/` knows which client library stands behind these interfaces; everything else
 * speaks them.
 *
 * - {@link RecordWriter}: an idempotent producer (acks all) for records outside a transaction: commands,
 *   blobs, plan keys, the DLQ.
 * - {@link FencedWriter}: a transactional producer with a fixed `transactionalId`. Connecting it fences
 *   every older producer of that id (their open transaction aborts, their later commits fail FENCED).
 * - {@link KafkaClient.readToEnd}: a ranged read of partitions, `read_committed`, from a start offset to
 *   the end offset the read began with (or on, as a live tail, until a signal aborts it). No consumer group.
 * - {@link PartitionTail}: a long-lived `read_committed` reader of chosen partitions that can add and drop
 *   partitions while it runs. No consumer group.
 * - {@link GroupMember}: membership in a consumer group with assignment and revocation callbacks and
 *   per-partition, in-order delivery; its offsets are committed inside a {@link FencedTransaction}.
 * - {@link LedgerAdmin}: topics, offsets and groups.
 */

export type RecordHeaders = Readonly<Record<string, string | Buffer>>;

/** A record to write. */
export interface OutRecord {
  readonly key?: Buffer | string | null;
  readonly value: Buffer | string | null;
  /** The partition to write to; the ledger always chooses it (see partitioner.ts). */
  readonly partition?: number;
  readonly headers?: RecordHeaders;
  /** Milliseconds since the epoch, as a string; default: now. */
  readonly timestamp?: string;
}

/** A record as read from the log. */
export interface LogRecord {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly timestamp: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** Where a written record landed. */
export interface Delivered {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

export interface TopicRecords {
  readonly topic: string;
  readonly messages: readonly OutRecord[];
}

/** An idempotent producer with acks=all. */
export interface RecordWriter {
  connect(): Promise<void>;
  /** Writes the records and resolves once every one is acknowledged by the in-sync replicas. */
  send(topic: string, records: readonly OutRecord[]): Promise<Delivered[]>;
  disconnect(): Promise<void>;
}

/**
 * How long a {@link FencedWriter}'s calls may take before the writer is given up (its owner replaces it
 * with a fresh one, which fences it). Tests use less.
 */
export interface FencedWriterBounds {
  /** The first bound of a transaction's offset commit (default 5 s; doubles per consecutive miss of the id, as below). */
  readonly sendOffsetsMs?: number;
  /**
   * The first bound of a fence (`connect`) and of a commit (default 5 s each). It doubles with each
   * consecutive miss of the same transactional id, up to 60 s, so a cluster that is only slow gets the
   * time it needs.
   */
  readonly fenceMs?: number;
  readonly commitMs?: number;
}

/** One open transaction of a {@link FencedWriter}. */
export interface FencedTransaction {
  /** Writes records in the transaction; resolves once they are acknowledged (visible only after commit). */
  send(topic: string, records: readonly OutRecord[]): Promise<Delivered[]>;
  /**
   * Commits a group member's offsets in this transaction (KIP-447: with the member's group metadata, so a
   * member that lost its partitions can commit nothing for them).
   */
  sendOffsets(member: GroupMember, offsets: ReadonlyArray<{ topic: string; partition: number; offset: string }>): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** A transactional producer with a fixed transactional id. */
export interface FencedWriter {
  readonly transactionalId: string;
  /**
   * Connects and initialises the transactional id: every older producer of the id is fenced before this
   * returns (its open transaction is aborted; anything it sends later fails with a fencing error).
   */
  connect(): Promise<void>;
  /** Starts a transaction; one at a time. */
  transaction(): Promise<FencedTransaction>;
  disconnect(): Promise<void>;
}

export interface ReadStats {
  /** Reads that started a reader (a read with nothing to read starts none). */
  reads: number;
  /** Records handed to `onRecords`, per topic. */
  records: Record<string, number>;
  /** Records fetched below the start offset and dropped. */
  skipped?: number;
  /** Consumers a ranged read had to open (the rest reused one a client keeps for its reads). */
  opened?: number;
  /**
   * The ledger client's live tail of the events topic: records it was handed (every plan's) and the
   * ones it decoded (records of plans a caller is waiting on).
   */
  tail?: { received: number; decoded: number };
  /** Records the ledger client's plan index read, per `topic/partition`. */
  indexed?: Record<string, number>;
  /** Snapshot records the plan index decoded (the latest per plan of each sync; watermarks included). */
  snapshotsDecoded?: number;
  /** Of those, chunked snapshots' heads taken on the summary they carry (their state neither put together nor parsed when archived, not parsed when live). */
  snapshotsSummarized?: number;
}

export interface ReadToEndOptions {
  readonly topic: string;
  /** Partitions to read (default: all). */
  readonly partitions?: readonly number[];
  /** Offset to start at per partition (default: the earliest retained offset). */
  readonly from?: ReadonlyMap<number, string>;
  /** Offset to stop before per partition, when earlier than the partition's end (default: the end). */
  readonly until?: ReadonlyMap<number, string>;
  /**
   * The end offsets the caller already took, one per partition to read (from `fetchTopicOffsets`, say):
   * the read stops there and asks the brokers for no offsets of its own (`until` and `follow` aside).
   * A partition's start is then `from`, or else its earliest retained offset as the consumer finds it.
   */
  readonly ends?: ReadonlyMap<number, string>;
  /** Called for each fetched batch, in offset order per partition. A throw ends the read with that error. */
  readonly onRecords: (records: LogRecord[]) => void | Promise<void>;
  readonly timeoutMs?: number;
  /**
   * Read on past the end (`until` and `timeoutMs` are ignored) until this signal aborts: a live tail of
   * the partitions. The read then ends normally, returning the next offsets.
   */
  readonly follow?: AbortSignal;
  /** Stops the read early once this says so (checked after each batch). */
  readonly isComplete?: () => boolean;
  /** Counts what the read fetched. */
  readonly stats?: ReadStats;
  /**
   * A bound on what the client library fetches ahead of `onRecords` (KiB; default librdkafka's 64 MiB):
   * with `onRecords` waiting, fetching stops there, so a reader that does not read holds at most this
   * much. Given, the read has a consumer of its own (not one of the pooled readers).
   */
  readonly prefetchKiB?: number;
  /** Told when the read moves from asking for the end offsets (`offsets`) to fetching records (`records`). */
  readonly onPhase?: (phase: 'offsets' | 'records') => void;
}

export interface PartitionTailOptions {
  readonly topic: string;
  /** Records of one partition, in offset order. Batches of one partition never overlap in time. */
  readonly onRecords: (partition: number, records: LogRecord[]) => void | Promise<void>;
  /**
   * Where a partition's reading has reached (the next offset), also across transaction markers and
   * compaction gaps that hold no record; called after each batch and at the partition's end.
   */
  readonly onPosition?: (partition: number, next: bigint) => void;
}

/** A `read_committed` reader of chosen partitions of one topic, without a consumer group. */
export interface PartitionTail {
  /** Starts (or restarts) reading a partition at an offset. */
  add(partition: number, offset: string): Promise<void>;
  /** Stops reading a partition. */
  drop(partition: number): Promise<void>;
  readonly partitions: readonly number[];
  close(): Promise<void>;
}

/**
 * The most a cooperative revocation waits for the member's `onRevoked` before the partitions go back to
 * the group: long enough for an owner's fence in flight (up to 2.3 s while a coordinator loads, in the
 * chaos runs) and its stop; short against the rebalance timeout, so a stuck handler delays the next owner
 * by this much at most.
 */
export const REVOCATION_WAIT_MS = 8_000;

export interface GroupMemberOptions {
  readonly groupId: string;
  readonly topic: string;
  readonly sessionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /** How long a member may take to hand a partition back in a rebalance (max.poll.interval.ms too). */
  readonly rebalanceTimeoutMs: number;
  /**
   * Static membership under this id (Kafka's `group.instance.id`): a member whose session lapsed while
   * the group could not move on (its coordinator's broker died and another took the group over) rejoins
   * as itself, and the group settles at once instead of waiting out the lapsed member's session. One live
   * member per id: a second one fences the first (its partitions are then revoked as lost and it logs why).
   * Closing the member leaves the group, as a dynamic member does.
   */
  readonly instanceId?: string;
  /** Partitions given to this member (incremental: only the new ones). */
  readonly onAssigned: (partitions: number[]) => void;
  /**
   * Partitions taken from this member (incremental: only those). `lost` when the member was expelled
   * (session timeout) rather than asked: another member may have owned them meanwhile. When it was asked
   * (a cooperative revocation), the member hands the partitions back to the group once the promise this
   * returns has settled, or after {@link revocationWaitMs}: the next owner gets them after this one has
   * let go (a fence of this owner's still in flight cannot land after the next owner's).
   */
  readonly onRevoked: (partitions: number[], lost: boolean) => void | Promise<void>;
  /** The most a cooperative revocation waits for `onRevoked` before the partitions go back to the group. Default {@link REVOCATION_WAIT_MS}. */
  readonly revocationWaitMs?: number;
  /**
   * Called once when the member is fenced for good (another member joined under its instance id; librdkafka
   * makes that fatal): it reads nothing more and its partitions were revoked as lost. Its owner may close it
   * and join again under the same id.
   */
  readonly onFenced?: (cause: { message?: string; code?: number }) => void;
  /**
   * Records of one partition, in offset order; one call per partition at a time. The result says where
   * reading goes on: `undefined` after the last record, or the offset to read on from — at or before the
   * batch's records to read (part of) it again, past them to skip ahead.
   */
  readonly onRecords: (partition: number, records: LogRecord[]) => Promise<string | undefined>;
}

/** A member of a consumer group on one topic. */
export interface GroupMember {
  readonly groupId: string;
  /** Partitions assigned now. */
  assigned(): number[];
  /** Stops fetching a partition until {@link resume} (its records stay unread). */
  pause(partition: number): void;
  resume(partition: number): void;
  /**
   * Commits the group's offsets of assigned partitions outside any transaction (the next offset to read
   * each); resolves once the coordinator took them. For a member whose offsets are bookkeeping only (the
   * projector's restores start from its snapshots); an executor commits its offsets in its transactions.
   */
  commitOffsets(offsets: ReadonlyArray<{ partition: number; offset: string }>): Promise<void>;
  /** Leaves the group (revoking every partition first). */
  close(): Promise<void>;
}

export interface TopicSpec {
  readonly topic: string;
  readonly numPartitions: number;
  readonly replicationFactor: number;
  readonly configEntries?: ReadonlyArray<{ name: string; value: string }>;
}

export interface PartitionOffsets {
  readonly partition: number;
  /** The earliest retained offset. */
  readonly low: string;
  /** The last stable offset: what a `read_committed` reader can read up to. */
  readonly high: string;
}

export interface PartitionMetadata {
  readonly partitionId: number;
  readonly leader: number;
  readonly replicas: number[];
  readonly isr: number[];
}

export interface GroupDescription {
  readonly groupId: string;
  readonly state: string;
  /** The node id of the broker coordinating the group (null when none is known). */
  readonly coordinator: number | null;
  readonly members: ReadonlyArray<{ memberId: string; clientId: string; clientHost: string; assignment: Array<{ topic: string; partitions: number[] }> }>;
}

/** Topics, offsets and groups. */
export interface LedgerAdmin {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  listTopics(): Promise<string[]>;
  /** Creates topics; resolves once every partition of each answers (leaders elected and serving). */
  createTopics(specs: readonly TopicSpec[]): Promise<void>;
  deleteTopics(topics: readonly string[]): Promise<void>;
  /**
   * Earliest and last stable offsets of every partition of a topic, or of `partitions` only (a partition
   * whose leader is away holds up only the reads that ask for it), retried through leader moves.
   */
  fetchTopicOffsets(topic: string, partitions?: readonly number[]): Promise<PartitionOffsets[]>;
  /** The last stable offset of each of `partitions` (one ListOffsets; {@link fetchTopicOffsets} asks the earliest too). */
  fetchLastStableOffsets(topic: string, partitions: readonly number[]): Promise<Array<{ partition: number; offset: string }>>;
  /** Per partition, the first offset whose timestamp is at or after `timestamp` (the end when none is). */
  fetchTopicOffsetsByTimestamp(topic: string, timestamp: number): Promise<Array<{ partition: number; offset: string }>>;
  fetchTopicMetadata(topics: readonly string[]): Promise<Array<{ name: string; partitions: PartitionMetadata[] }>>;
  /** A group's committed offsets on a topic ("-1" where none is committed). */
  fetchOffsets(groupId: string, topic: string): Promise<Array<{ partition: number; offset: string }>>;
  listGroups(): Promise<Array<{ groupId: string; protocolType: string }>>;
  describeGroups(groupIds: readonly string[]): Promise<GroupDescription[]>;
  deleteGroups(groupIds: readonly string[]): Promise<void>;
  /** The brokers the cluster's metadata lists now. */
  describeCluster(): Promise<{ brokers: Array<{ nodeId: number; host: string; port: number }> }>;
}

/** A connection to one Kafka cluster with the ledger's settings (brokers, TLS, SASL, client id, logging). */
export interface KafkaClient {
  readonly clientId: string;
  admin(): LedgerAdmin;
  /** An idempotent producer (acks=all). */
  writer(): RecordWriter;
  /** A transactional producer; see {@link FencedWriter.connect} and, for its calls' bounds, {@link FencedWriterBounds}. */
  fencedWriter(transactionalId: string, bounds?: FencedWriterBounds): FencedWriter;
  /**
   * Reads partitions from a start offset up to their end offset as it was when the read began (`read_committed`:
   * the last stable offset), and stops; returns the next offset of every partition read.
   */
  readToEnd(opts: ReadToEndOptions): Promise<Map<number, string>>;
  tail(opts: PartitionTailOptions): Promise<PartitionTail>;
  /** Joins a consumer group; resolves once the member is subscribed (assignment follows by callback). */
  join(opts: GroupMemberOptions): Promise<GroupMember>;
  /** Closes what the client holds for its own reads; handles it gave out are closed by their holders. */
  close(): Promise<void>;
}

/**
 * The largest record the plan topics take (their `max.message.bytes`, set when the ledger creates them):
 * writers split transactions and refuse commands by it.
 */
export const MAX_RECORD_BYTES = 1024 * 1024;
