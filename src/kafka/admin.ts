import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../backoff.js';
import type { LedgerConfig } from '../config.js';
import type { Logger } from '../logging.js';
import { connectWatched, isRetriableKafkaError, kafkaErrorName, routeLogs, type RdConfig } from './connection.js';
import { confluent } from './native.js';
import type { GroupDescription, LedgerAdmin, PartitionMetadata, PartitionOffsets, TopicSpec } from './port.js';

type NativeAdmin = ReturnType<ReturnType<typeof confluent>['AdminClient']['create']>;

const REQUEST_TIMEOUT_MS = 10_000;
/**
 * One ListOffsets attempt. librdkafka queues an admin request for its partition's leader until that broker
 * is up or the request times out, so an attempt at a leader that was just killed waits the whole timeout,
 * and only the retry (after a metadata refresh) asks the new leader. In a chaos run each such restore step
 * took 10.0 s (the old 10 s timeout), and three in a row held a take-over for 35 s. A ListOffsets answers
 * in milliseconds, so a short attempt costs nothing: a dead leader now costs about 3 s per attempt, until
 * the controller has moved its partitions (the broker session, 9 s by default).
 */
const LIST_OFFSETS_TIMEOUT_MS = 3_000;
/**
 * Past this, a ListOffsets attempt that has not answered is given up here, whatever librdkafka does with
 * its own timeout (a request queued for a broker that is down waits for the broker, not the timeout).
 */
const LIST_OFFSETS_BOUND_MS = LIST_OFFSETS_TIMEOUT_MS + 1_000;
/**
 * How long the admin handle trusts a partition's leader from its metadata cache. It has no partitions of its
 * own, so nothing else tells it a leader moved; an older entry is asked of the brokers again by the next
 * read (one Metadata request). librdkafka's default is three times the refresh interval (90 s here).
 */
const ADMIN_METADATA_MAX_AGE_MS = 3_000;
/** How long an admin read rides out a leader election or a broker restart before it gives up. */
const RETRY_WINDOW_MS = 60_000;
/** How long a topic's own "unknown" answer is asked again: the time a topic created a moment ago takes to reach every broker. */
const TOPIC_SETTLE_MS = 10_000;

const GROUP_STATES = ['Unknown', 'PreparingRebalance', 'CompletingRebalance', 'Stable', 'Dead', 'Empty', 'Assigning', 'Reconciling'];

function call<T>(fn: (cb: (err: unknown, v: T) => void) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => fn((err, v) => (err ? reject(err) : resolve(v))));
}

/** What the admin's metadata says of a topic created a moment ago, until every broker has heard of it. */
const SETTLING = new Set(['_NOENT', '_UNKNOWN_PARTITION', '_UNKNOWN_TOPIC', 'UNKNOWN_TOPIC_OR_PART']);

/** Retries a read while Kafka answers with an error a moment later may not bring (a leader moving, a broker restarting). */
async function retrying<T>(fn: () => Promise<T>, windowMs = RETRY_WINDOW_MS): Promise<T> {
  const deadline = Date.now() + windowMs;
  for (let attempt = 1; ; attempt++) {
    const delay = backoffMs(attempt, 50, 1000);
    try {
      return await fn();
    } catch (e) {
      if (!(isRetriableKafkaError(e) || SETTLING.has(kafkaErrorName(e) ?? '')) || Date.now() + delay > deadline) throw e;
      await sleep(delay);
    }
  }
}

/**
 * Topics, offsets and groups on librdkafka's admin client. A topic's partition count is looked up once
 * (the ledger never changes it under a running client), so an end-offset read is one ListOffsets round
 * trip per kind of offset.
 */
export class ConfluentAdmin implements LedgerAdmin {
  private admin: NativeAdmin | undefined;
  private readonly partitionCounts = new Map<string, number>();
  /** Calls in flight per native handle: a handle given up is closed once its count is back to 0. */
  private readonly inFlight = new Map<NativeAdmin, number>();
  /** Handles given up (see {@link renew}), closed when their last call ends. */
  private readonly retiring = new Set<NativeAdmin>();
  /** Handles given up so far (tests and logs). */
  renewals = 0;

  constructor(
    private readonly rd: RdConfig,
    private readonly logger: Logger,
    private readonly config: LedgerConfig,
  ) {}

  private get a(): NativeAdmin {
    if (!this.admin) throw new Error('the admin client is not connected');
    return this.admin;
  }

  private create(): NativeAdmin {
    const { AdminClient } = confluent();
    const a = AdminClient.create({ ...this.rd, 'metadata.max.age.ms': ADMIN_METADATA_MAX_AGE_MS } as never);
    // The factory connects at once, but its events come on later turns of the loop: routed from here.
    routeLogs(a as never, this.logger, this.config.sasl?.password);
    return a;
  }

  async connect(): Promise<void> {
    if (this.admin) return;
    const { AdminClient } = confluent();
    const a = AdminClient.create({ ...this.rd, 'metadata.max.age.ms': ADMIN_METADATA_MAX_AGE_MS } as never);
    const errors = routeLogs(a as never, this.logger, this.config.sasl?.password);
    this.admin = a;
    // The admin connects lazily; one metadata round trip proves the brokers answer (and the login works).
    const connecting = retrying(() => call<string[]>((cb) => a.listTopics({ timeout: REQUEST_TIMEOUT_MS }, cb as never)), 30_000);
    try {
      await connectWatched(errors, connecting, this.config);
    } catch (e) {
      this.admin = undefined;
      // Closing a handle waits for its requests in flight: close it once the connect has given up, not now.
      void connecting.catch(() => {}).finally(() => a.disconnect());
      throw e;
    }
  }

  async disconnect(): Promise<void> {
    const a = this.admin;
    this.admin = undefined;
    if (a) this.retire(a);
  }

  /** `fn` on the current handle, counted in flight on it; `bound` ms without an answer fails it as timed out. */
  private tracked<T>(fn: (a: NativeAdmin) => Promise<T>, bound?: number): { handle: NativeAdmin; result: Promise<T> } {
    const a = this.a;
    this.inFlight.set(a, (this.inFlight.get(a) ?? 0) + 1);
    const running = fn(a).finally(() => {
      const n = (this.inFlight.get(a) ?? 1) - 1;
      if (n > 0) this.inFlight.set(a, n);
      else {
        this.inFlight.delete(a);
        if (this.retiring.delete(a)) a.disconnect();
      }
    });
    if (bound === undefined) return { handle: a, result: running };
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error(`no answer in ${bound} ms (given up)`), { code: -185, isRetriable: true, givenUp: true })), bound);
    });
    running.catch(() => {}); // answered after the bound: nobody waits for it
    return { handle: a, result: Promise.race([running, timedOut]).finally(() => clearTimeout(timer)) };
  }

  /** Closes `a` now when nothing runs on it, else once its last call ends. */
  private retire(a: NativeAdmin): void {
    if ((this.inFlight.get(a) ?? 0) === 0) a.disconnect();
    else this.retiring.add(a);
  }

  /**
   * Gives the handle `failed` up for a fresh one, unless that happened already. An admin handle learns
   * partition leaders from its metadata cache, and nothing refreshes it when a leader dies: it has no
   * partitions of its own to notice the move, and the refresh we ask for (a topic describe) goes to the
   * cluster's "controller" as its last metadata named it, which may be the broker that died. Measured
   * with a broker of three killed -9 and started 5 s later: every end-offset read of the topic waited
   * 12–22 s, until the broker had started again, while a producer's writes moved on after the broker
   * session (9 s). A new handle asks the brokers that answer for its metadata.
   */
  private renew(failed: NativeAdmin, cause: unknown): void {
    if (this.admin !== failed) return;
    this.renewals++;
    this.logger.warn({ err: (cause as Error | undefined)?.message, renewals: this.renewals }, 'an admin read did not answer in time; asking again on a fresh admin handle');
    this.admin = this.create();
    this.retire(failed);
  }

  listTopics(): Promise<string[]> {
    return retrying(() => call<string[]>((cb) => this.a.listTopics({ timeout: REQUEST_TIMEOUT_MS }, cb as never)));
  }

  async createTopics(specs: readonly TopicSpec[]): Promise<void> {
    for (const s of specs) {
      const config = Object.fromEntries((s.configEntries ?? []).map((c) => [c.name, c.value]));
      try {
        await call<void>((cb) => this.a.createTopic({ topic: s.topic, num_partitions: s.numPartitions, replication_factor: s.replicationFactor, config } as never, 30_000, cb as never));
      } catch (e) {
        if (kafkaErrorName(e) !== 'TOPIC_ALREADY_EXISTS') throw Object.assign(e as object, { topic: s.topic });
      }
    }
    // Created does not mean served: under load a first read or write right after creation can meet
    // UNKNOWN_TOPIC_OR_PARTITION or a leader not yet elected. Wait until each partition answers.
    for (const s of specs) {
      await retrying(async () => {
        const offsets = await this.listOffsetsOnce(s.topic, confluent().OffsetSpec.LATEST, s.numPartitions);
        if (offsets.length !== s.numPartitions) throw Object.assign(new Error(`${s.topic}: ${offsets.length} of ${s.numPartitions} partitions answer`), { isRetriable: true });
      });
      this.partitionCounts.set(s.topic, s.numPartitions);
    }
  }

  async deleteTopics(topics: readonly string[]): Promise<void> {
    for (const t of topics) {
      await call<void>((cb) => this.a.deleteTopic(t, 30_000, cb as never)).catch((e: unknown) => {
        if (kafkaErrorName(e) !== 'UNKNOWN_TOPIC_OR_PART') throw e;
      });
      this.partitionCounts.delete(t);
    }
  }

  async fetchTopicMetadata(topics: readonly string[]): Promise<Array<{ name: string; partitions: PartitionMetadata[] }>> {
    type Described = { name: string; error?: unknown; partitions: Array<{ partition: number; leader?: { id: number } | null; replicas: Array<{ id: number }>; isr: Array<{ id: number }> }> };
    // A topic's own error comes back inside the answer, not as a failed call: a broker that has not yet
    // heard of a topic created a moment ago answers UNKNOWN_TOPIC_OR_PART for it, and a later ask may
    // not. Such an answer is asked again for a few seconds (a topic that really is missing fails then).
    const settleUntil = Date.now() + TOPIC_SETTLE_MS;
    let missing: unknown;
    const described = await retrying(async () => {
      const answer = await call<Described[]>((cb) => this.a.describeTopics([...topics], { timeout: REQUEST_TIMEOUT_MS }, cb as never));
      const failed = answer.find((t) => t.error);
      if (!failed) return answer;
      const error = Object.assign(failed.error as object, { topic: failed.name });
      if (Date.now() < settleUntil && (isRetriableKafkaError(error) || SETTLING.has(kafkaErrorName(error) ?? ''))) throw error;
      missing = error;
      return [];
    });
    if (missing) throw missing;
    return described.map((t) => ({
      name: t.name,
      partitions: t.partitions.map((p) => ({ partitionId: p.partition, leader: p.leader ? p.leader.id : -1, replicas: p.replicas.map((r) => r.id), isr: p.isr.map((r) => r.id) })),
    }));
  }

  private async partitionCount(topic: string): Promise<number> {
    const known = this.partitionCounts.get(topic);
    if (known !== undefined) return known;
    const [meta] = await this.fetchTopicMetadata([topic]);
    const n = meta?.partitions.length ?? 0;
    if (n > 0) this.partitionCounts.set(topic, n);
    return n;
  }

  /**
   * One ListOffsets of `topic`'s partitions (`only` of them when given: a partition whose leader is away
   * then holds up only the reads that need it).
   */
  private async listOffsetsOnce(topic: string, spec: unknown, partitions: number, committed = true, only?: readonly number[]): Promise<Array<{ partition: number; offset: number }>> {
    const { IsolationLevel } = confluent();
    const ids = only !== undefined ? only.filter((p) => p >= 0 && p < partitions) : Array.from({ length: partitions }, (_, p) => p);
    if (ids.length === 0) return [];
    const req = ids.map((partition) => ({ topic, partition, offset: spec }));
    type Listed = { topic: string; partition: number; offset: number; error?: unknown };
    // ListOffsets finds leaders in the client's metadata cache and does not refresh it on an error: a topic
    // created a moment ago stays unknown (_NOENT), and a partition whose leader moved is asked of its old
    // leader (NOT_LEADER_OR_FOLLOWER) until the periodic refresh, 30 s on. A describe of the topic updates
    // the cache, so the caller's retry asks the right broker. An attempt that did not answer at all (its
    // leader is down, or the handle waits on one) is retried on a fresh handle (see renew).
    const refreshed = async (e: unknown): Promise<never> => {
      await this.tracked((a) => call<unknown>((cb) => a.describeTopics([topic], { timeout: LIST_OFFSETS_TIMEOUT_MS }, cb as never)), LIST_OFFSETS_BOUND_MS).result.catch(() => {});
      throw e;
    };
    const attempt = this.tracked((a) => call<Listed[]>((cb) => a.listOffsets(req as never, { timeout: LIST_OFFSETS_TIMEOUT_MS, isolationLevel: committed ? IsolationLevel.READ_COMMITTED : IsolationLevel.READ_UNCOMMITTED } as never, cb as never)), LIST_OFFSETS_BOUND_MS);
    let out: Listed[];
    try {
      out = await attempt.result;
    } catch (e) {
      if (kafkaErrorName(e) === '_TIMED_OUT' || (e as { givenUp?: boolean }).givenUp === true) {
        this.renew(attempt.handle, e);
        throw e;
      }
      return refreshed(e);
    }
    const failed = out.find((o) => o.error);
    if (failed) return refreshed(failed.error);
    // A fresh handle asked while a partition has no leader it knows of answers -1001 (no offset) for it,
    // with no error: for the earliest and latest offsets that is no answer, asked again.
    const { OffsetSpec } = confluent();
    const missing = spec === OffsetSpec.LATEST || spec === OffsetSpec.EARLIEST ? out.find((o) => !(Number(o.offset) >= 0)) : undefined;
    if (missing) return refreshed(Object.assign(new Error(`${topic} [${missing.partition}]: no offset in the answer (${String(missing.offset)})`), { isRetriable: true }));
    return out.map((o) => ({ partition: o.partition, offset: Number(o.offset) }));
  }

  fetchTopicOffsets(topic: string, partitions?: readonly number[]): Promise<PartitionOffsets[]> {
    return retrying(async () => {
      const n = await this.partitionCount(topic);
      if (n === 0) throw Object.assign(new Error(`topic ${topic} does not exist`), { code: 3 });
      const { OffsetSpec } = confluent();
      const [high, low] = await Promise.all([this.listOffsetsOnce(topic, OffsetSpec.LATEST, n, true, partitions), this.listOffsetsOnce(topic, OffsetSpec.EARLIEST, n, true, partitions)]);
      return high
        .map((h) => ({ partition: h.partition, high: String(h.offset), low: String(low.find((l) => l.partition === h.partition)?.offset ?? 0) }))
        .sort((a, b) => a.partition - b.partition);
    });
  }

  /**
   * The last stable offset of each of `partitions` (what a `read_committed` reader can read up to now): one
   * ListOffsets, where {@link fetchTopicOffsets} asks two (the earliest too).
   */
  fetchLastStableOffsets(topic: string, partitions: readonly number[]): Promise<Array<{ partition: number; offset: string }>> {
    return retrying(async () => {
      const n = await this.partitionCount(topic);
      if (n === 0) throw Object.assign(new Error(`topic ${topic} does not exist`), { code: 3 });
      const high = await this.listOffsetsOnce(topic, confluent().OffsetSpec.LATEST, n, true, partitions);
      return high.map((h) => ({ partition: h.partition, offset: String(h.offset) })).sort((a, b) => a.partition - b.partition);
    });
  }

  /**
   * End offsets for a read that must see what was committed before it started. A transaction that has just
   * committed has its records below the high watermark but its commit marker still on the way (the
   * coordinator writes markers after it answers EndTxn), so the last stable offset trails for a few
   * milliseconds: while it is below the high watermark, ask again briefly. A transaction that stays open
   * (another writer's) holds it back for good; after about 150 ms the read goes on with what is stable.
   */
  async fetchStableEnds(topic: string, partitions?: readonly number[]): Promise<PartitionOffsets[]> {
    const n = await retrying(() => this.partitionCount(topic));
    const { OffsetSpec } = confluent();
    const hw = await retrying(() => this.listOffsetsOnce(topic, OffsetSpec.LATEST, n, false, partitions));
    const wanted = (p: number) => partitions === undefined || partitions.includes(p);
    let offsets = await this.fetchTopicOffsets(topic, partitions);
    for (let attempt = 1; attempt <= 4; attempt++) {
      const behind = offsets.some((o) => wanted(o.partition) && BigInt(o.high) < BigInt(hw.find((h) => h.partition === o.partition)?.offset ?? 0));
      if (!behind) break;
      await sleep(backoffMs(attempt, 10, 80));
      offsets = await this.fetchTopicOffsets(topic, partitions);
    }
    return offsets;
  }

  fetchTopicOffsetsByTimestamp(topic: string, timestamp: number): Promise<Array<{ partition: number; offset: string }>> {
    return retrying(async () => {
      const n = await this.partitionCount(topic);
      const { OffsetSpec } = confluent();
      const [at, high] = await Promise.all([this.listOffsetsOnce(topic, new OffsetSpec(timestamp), n), this.listOffsetsOnce(topic, OffsetSpec.LATEST, n)]);
      return at
        .map((o) => ({ partition: o.partition, offset: String(o.offset >= 0 ? o.offset : (high.find((h) => h.partition === o.partition)?.offset ?? 0)) }))
        .sort((a, b) => a.partition - b.partition);
    });
  }

  async fetchOffsets(groupId: string, topic: string): Promise<Array<{ partition: number; offset: string }>> {
    const n = await this.partitionCount(topic);
    const partitions = Array.from({ length: n }, (_, partition) => ({ topic, partition }));
    type Result = { groupId: string; error?: unknown; partitions: Array<{ topic: string; partition: number; offset: number; error?: unknown }> };
    // With requireStableOffsets a partition whose transactional offset commit is still being completed
    // (the coordinator writes the commit's markers after it answers) answers UNSTABLE_OFFSET_COMMIT, inside
    // the answer: asked again, not read as "no offset".
    const res = await retrying(async () => {
      const answer = await call<Result[]>((cb) => this.a.listConsumerGroupOffsets([{ groupId, partitions }], { timeout: REQUEST_TIMEOUT_MS, requireStableOffsets: true }, cb as never));
      const failed = answer[0]?.partitions.find((p) => p.error);
      if (failed) throw failed.error;
      return answer;
    });
    const r = res[0];
    if (r?.error) throw r.error;
    return (r?.partitions ?? []).map((p) => ({ partition: p.partition, offset: String(p.offset !== undefined && p.offset >= 0 ? p.offset : -1) })).sort((a, b) => a.partition - b.partition);
  }

  async listGroups(): Promise<Array<{ groupId: string; protocolType: string }>> {
    type Listed = { groups: Array<{ groupId: string; protocolType: string }> };
    const r = await retrying(() => call<Listed>((cb) => this.a.listGroups({ timeout: REQUEST_TIMEOUT_MS }, cb as never)));
    return r.groups.map((g) => ({ groupId: g.groupId, protocolType: g.protocolType ?? '' }));
  }

  async describeGroups(groupIds: readonly string[]): Promise<GroupDescription[]> {
    if (groupIds.length === 0) return [];
    type Described = {
      groups: Array<{
        groupId: string;
        state: number;
        coordinator?: { id: number } | null;
        members: Array<{ memberId: string; clientId: string; host: string; assignment?: { topicPartitions?: Array<{ topic: string; partition: number }> } }>;
      }>;
    };
    const r = await retrying(() => call<Described>((cb) => this.a.describeGroups([...groupIds], { timeout: REQUEST_TIMEOUT_MS }, cb as never)));
    return r.groups.map((g) => ({
      groupId: g.groupId,
      state: GROUP_STATES[g.state] ?? String(g.state),
      coordinator: typeof g.coordinator?.id === 'number' && g.coordinator.id >= 0 ? g.coordinator.id : null,
      members: g.members.map((m) => {
        const byTopic = new Map<string, number[]>();
        for (const tp of m.assignment?.topicPartitions ?? []) byTopic.set(tp.topic, [...(byTopic.get(tp.topic) ?? []), tp.partition]);
        return { memberId: m.memberId, clientId: m.clientId, clientHost: m.host, assignment: [...byTopic].map(([topic, partitions]) => ({ topic, partitions: partitions.sort((a, b) => a - b) })) };
      }),
    }));
  }

  async deleteGroups(groupIds: readonly string[]): Promise<void> {
    if (groupIds.length === 0) return;
    await call<unknown>((cb) => this.a.deleteGroups([...groupIds], { timeout: REQUEST_TIMEOUT_MS }, cb as never));
  }

  async describeCluster(): Promise<{ brokers: Array<{ nodeId: number; host: string; port: number }> }> {
    // The binding's admin client has no DescribeCluster; a producer handle's metadata request lists the brokers.
    const { Producer } = confluent();
    const p = new Producer({ ...this.rd } as never);
    try {
      await call<unknown>((cb) => p.connect({ timeout: REQUEST_TIMEOUT_MS } as never, cb as never));
      type Meta = { brokers: Array<{ id: number; host: string; port: number }> };
      const meta = await call<Meta>((cb) => p.getMetadata({ timeout: REQUEST_TIMEOUT_MS } as never, cb as never));
      return { brokers: meta.brokers.map((b) => ({ nodeId: b.id, host: b.host, port: b.port })) };
    } finally {
      await new Promise<void>((resolve) => p.disconnect(2_000, () => resolve()));
    }
  }
}
