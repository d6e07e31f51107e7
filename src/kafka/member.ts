import { setTimeout as sleep } from 'node:timers/promises';
import type { LedgerConfig } from '../config.js';
import type { Logger } from '../logging.js';
import { setting } from '../settings.js';
import { settledWithin } from '../timeouts.js';
import { connectWatched, routeLogs, type RdConfig } from './connection.js';
import { confluent } from './native.js';
import { REVOCATION_WAIT_MS, type GroupMember, type GroupMemberOptions, type LogRecord } from './port.js';
import { consumeBatch, consumeOrPause, disconnectConsumer, toLogRecord, type NativeConsumer } from './reader.js';

/** librdkafka's _FATAL: the handle cannot go on (for a member: another joined under its instance id). */
const FATAL = -150;
const ASSIGN_PARTITIONS = -175;
const REVOKE_PARTITIONS = -174;
/** How long a leaving static member waits for the revocation its unsubscribe causes. */
const LEAVE_WAIT_MS = 3_000;
/** And then for librdkafka to send the LeaveGroup (from its own thread, once the revocation is done). */
const LEAVE_SEND_MS = 30;
/** Records handed to one `onRecords` call at most. */
const MAX_BATCH = 500;
/** Past this many records waiting for a busy partition, its fetching pauses until they are handled. */
const BACKLOG_PAUSE = 2000;

const natives = new WeakMap<GroupMember, NativeConsumer>();

/** The librdkafka consumer behind a member, for `sendOffsetsToTransaction` (its group metadata). */
export function nativeConsumerOf(member: GroupMember): NativeConsumer {
  const c = natives.get(member);
  if (!c) throw new Error(`sendOffsets needs a group member of this client (group ${member.groupId})`);
  return c;
}

interface PartitionRun {
  backlog: LogRecord[];
  busy: boolean;
  /** Bumped on every seek: records fetched before it are dropped. */
  epoch: number;
  /** Paused by the caller. */
  paused: boolean;
  /** Paused because the backlog is full. */
  flowPaused: boolean;
  /** Records below this offset are not to be handed over (the handler read on past them). */
  skipBelow: bigint;
  /** Where reading must go on from, for the consume loop to seek to before its next read; null when none is due. */
  seekTo: bigint | null;
  /** Seeks refused in a row (for the warning's rate). */
  seekFailures: number;
}

/**
 * Consumer-group membership on librdkafka: incremental assignment (a rebalance moves only the partitions
 * that change hands: cooperative-sticky under the classic protocol, the broker's assignor under
 * `consumer`), group heartbeats on librdkafka's own thread (a long `onRecords` never makes the member miss
 * one), per-partition in-order delivery with one `onRecords` at a time, and re-reading from an offset the
 * callback names.
 */
class NativeMember implements GroupMember {
  private readonly parts = new Map<number, PartitionRun>();
  private closing = false;
  private loop: Promise<void> | undefined;
  c!: NativeConsumer;

  constructor(
    private readonly o: GroupMemberOptions,
    private readonly logger: Logger,
  ) {}

  get groupId(): string {
    return this.o.groupId;
  }

  assigned(): number[] {
    return [...this.parts.keys()].sort((a, b) => a - b);
  }

  private tp(partition: number) {
    return { topic: this.o.topic, partition };
  }

  pause(partition: number): void {
    const run = this.parts.get(partition);
    if (!run || run.paused) return;
    run.paused = true;
    if (!run.flowPaused) this.c.pause([this.tp(partition)]);
  }

  resume(partition: number): void {
    const run = this.parts.get(partition);
    if (!run || !run.paused) return;
    run.paused = false;
    if (!run.flowPaused) this.c.resume([this.tp(partition)]);
  }

  commitOffsets(offsets: ReadonlyArray<{ partition: number; offset: string }>): Promise<void> {
    const list = offsets.map((o) => ({ topic: this.o.topic, partition: o.partition, offset: Number(o.offset) }));
    return new Promise<void>((resolve, reject) => this.c.commitCb(list, (err: unknown) => (err ? reject(err) : resolve())));
  }

  onRebalance(err: { code: number; message?: string }, assignment: Array<{ topic: string; partition: number }>): void {
    const cooperative = this.c.rebalanceProtocol() === 'COOPERATIVE';
    const partitions = assignment.filter((a) => a.topic === this.o.topic).map((a) => a.partition);
    try {
      if (err.code === ASSIGN_PARTITIONS) {
        if (cooperative) this.c.incrementalAssign(assignment as never);
        else this.c.assign(assignment as never);
        for (const p of partitions) this.parts.set(p, { backlog: [], busy: false, epoch: 0, paused: false, flowPaused: false, skipBelow: -1n, seekTo: null, seekFailures: 0 });
        // Also when empty: a member with nothing to own has still joined (an executor's `started` waits for it).
        this.o.onAssigned(partitions);
      } else if (err.code === REVOKE_PARTITIONS) {
        const lost = this.c.assignmentLost();
        const mine = partitions.filter((p) => this.parts.delete(p));
        const handled = mine.length ? Promise.resolve(this.o.onRevoked(mine, lost)).catch((e: unknown) => this.logger.error({ err: e }, 'revocation handler failed')) : undefined;
        if (cooperative && !lost && handled !== undefined) void this.unassignOnceHandled(assignment, mine, handled);
        else if (cooperative) this.c.incrementalUnassign(assignment as never);
        else this.c.unassign();
      } else {
        this.logger.error({ code: err.code, message: err.message }, 'rebalance error; giving up every partition');
        const mine = [...this.parts.keys()];
        this.parts.clear();
        if (mine.length) void Promise.resolve(this.o.onRevoked(mine, true)).catch((e: unknown) => this.logger.error({ err: e }, 'revocation handler failed'));
        this.c.unassign();
      }
    } catch (e) {
      if (!this.closing) this.logger.warn({ err: e }, 'rebalance step failed');
    }
  }

  /**
   * Hands cooperatively revoked partitions back to the group once their handler has settled, within
   * {@link REVOCATION_WAIT_MS}. Until then the group's rebalance waits for this member (librdkafka holds it
   * until the unassign), so the next owner starts after this one let go. An owner that was still taking
   * the partition over would otherwise fence its transactional ids after the next owner did, and fence the
   * next owner (no revocation follows such a fence: the next owner finds out a session later).
   */
  private async unassignOnceHandled(assignment: Array<{ topic: string; partition: number }>, partitions: number[], handled: Promise<unknown>): Promise<void> {
    const waitMs = this.o.revocationWaitMs ?? REVOCATION_WAIT_MS;
    const t0 = Date.now();
    const inTime = await settledWithin(handled.then(() => true), waitMs, false);
    if (!inTime) this.logger.warn({ group: this.o.groupId, partitions, waitedMs: Date.now() - t0 }, 'revoked partitions handed back before their owner let go: its revocation handler has not finished');
    try {
      this.c.incrementalUnassign(assignment as never);
    } catch (e) {
      if (!this.closing) this.logger.warn({ err: e, partitions }, 'handing revoked partitions back failed');
    }
  }

  start(): void {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closing) {
      // Seeks happen here, between reads, never while one is in flight: every record a read returns then
      // comes from one side of any seek, so dropping a read's records of a partition that asked for a seek
      // meanwhile drops only records the seek will fetch again (a seek during a read could return records
      // fetched after it, which that drop would lose for good).
      for (const [p, run] of this.parts) if (run.seekTo !== null) await this.seek(p, run);
      const before = new Map([...this.parts].map(([p, r]) => [p, { run: r, epoch: r.epoch }]));
      let messages: Awaited<ReturnType<typeof consumeBatch>>;
      try {
        messages = await consumeBatch(this.c);
      } catch (e) {
        if (this.closing) continue;
        if ((e as { code?: unknown }).code === FATAL) {
          // Fenced for good (another member joined under this member's instance id): it reads no more.
          this.fatal(e as { message?: string; code?: number });
          return;
        }
        this.logger.warn({ err: e, group: this.o.groupId }, 'group read failed; reading on');
        await sleep(200);
        continue;
      }
      for (const m of messages) {
        const run = this.parts.get(m.partition);
        // Revoked meanwhile, or read before a seek that is now due: not the records this member should see
        // now. A partition assigned during the read (the rebalance callback runs inside it) was read afresh.
        const was = before.get(m.partition);
        if (!run || run.seekTo !== null || (was !== undefined && was.run === run && was.epoch !== run.epoch) || BigInt(m.offset) < run.skipBelow) continue;
        run.backlog.push(toLogRecord(m));
      }
      for (const [p, run] of this.parts) {
        if (run.backlog.length && !run.busy) void this.work(p, run);
        if (run.backlog.length > BACKLOG_PAUSE && !run.flowPaused) {
          run.flowPaused = true;
          if (!run.paused) this.c.pause([this.tp(p)]);
        }
      }
    }
  }

  private async work(p: number, run: PartitionRun): Promise<void> {
    run.busy = true;
    try {
      while (run.backlog.length && this.parts.get(p) === run && !this.closing) {
        const batch = run.backlog.splice(0, MAX_BATCH);
        let again: string | undefined;
        try {
          again = await this.o.onRecords(p, batch);
        } catch (e) {
          this.logger.error({ err: e, partition: p, group: this.o.groupId }, 'records handler failed; reading the batch again in 1 s');
          await sleep(1000);
          again = batch[0]!.offset;
        }
        if (again !== undefined && this.parts.get(p) === run) await this.readOnFrom(p, run, batch, BigInt(again));
      }
    } finally {
      run.busy = false;
      if (run.flowPaused && run.backlog.length < BACKLOG_PAUSE / 2 && this.parts.get(p) === run) {
        run.flowPaused = false;
        if (!run.paused) this.c.resume([this.tp(p)]);
      }
    }
  }

  /**
   * Reading goes on from `from`. Records this member holds already are handed over again from memory (no
   * seek, so nothing fetched is lost between a seek and the next fetch); records below `from` that are still
   * on their way are dropped as they arrive. Only a start before what is held needs a seek, retried until
   * librdkafka takes it (it refuses one for a partition whose fetch has not started yet).
   */
  private async readOnFrom(p: number, run: PartitionRun, batch: LogRecord[], from: bigint): Promise<void> {
    run.skipBelow = from;
    const held = [...batch, ...run.backlog];
    run.backlog = held.filter((r) => BigInt(r.offset) >= from);
    // A long skip ahead is a seek too: not worth fetching what would be dropped.
    const farAhead = held.length > 0 && from > BigInt(held.at(-1)!.offset) + 1000n;
    if (held.length && from >= BigInt(held[0]!.offset) && !farAhead) {
      // Handing the same records straight back would spin: give the event loop (and the handler's timers) a turn.
      if (run.backlog.length) await sleep(10);
      return;
    }
    run.backlog = [];
    run.epoch++;
    run.seekTo = from;
  }

  /**
   * The seek a partition asked for, made by the consume loop between two reads. librdkafka refuses one for
   * a partition whose fetch has not started yet: it stays due (the partition's records are dropped until it
   * is taken) and is tried again before the next read.
   */
  private async seek(p: number, run: PartitionRun): Promise<void> {
    const from = run.seekTo!;
    const err = await new Promise<unknown>((resolve) => this.c.seek({ topic: this.o.topic, partition: p, offset: Number(from) }, 0, (e) => resolve(e ?? undefined)));
    if (!err) {
      if (run.seekTo === from) run.seekTo = null;
      run.seekFailures = 0;
      return;
    }
    run.seekFailures++;
    if (run.seekFailures % 20 === 1) this.logger.warn({ err, partition: p, offset: from.toString(), failures: run.seekFailures }, 'seek refused; trying again before the next read');
    await sleep(20);
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.loop?.catch(() => {});
    // Leaving revokes every partition through the rebalance callback, so the owners hear of it.
    const left = [...this.parts.keys()];
    this.parts.clear();
    if (left.length) await Promise.resolve(this.o.onRevoked(left, false)).catch(() => {});
    if (this.o.instanceId !== undefined) await this.leave();
    await disconnectConsumer(this.c);
  }

  /**
   * A static member leaves before it closes: librdkafka sends no LeaveGroup for one on close (KIP-345), and
   * the group would hold its partitions until its session ran out. Unsubscribing revokes them, and once
   * that is done librdkafka sends the LeaveGroup; the close after it waits for the answer.
   */
  private async leave(): Promise<void> {
    const assigned = (): number => {
      try {
        return (this.c.assignments() as unknown[]).length;
      } catch {
        return 0; // closed under us: nothing to wait for
      }
    };
    try {
      this.c.unsubscribe();
    } catch (e) {
      this.logger.debug({ err: e }, 'unsubscribe before leaving failed');
      return;
    }
    // The revocation is the application's to serve (the rebalance callback unassigns), and the binding serves
    // it from a read: read (and drop what comes) until nothing is assigned, within a bound.
    const until = Date.now() + LEAVE_WAIT_MS;
    while (assigned() > 0 && Date.now() < until) await consumeOrPause(this.c, this.logger, 'leave', { group: this.o.groupId }, () => true);
    // The LeaveGroup goes out from librdkafka's own thread once the revocation is done, a moment after.
    await sleep(LEAVE_SEND_MS);
  }

  /**
   * librdkafka's fatal error for a member: another member joined under this member's instance id and the
   * coordinator fenced this one. It reads nothing more, so its partitions are given up as lost.
   */
  private fatal(err: { message?: string; code?: number }): void {
    this.logger.error(
      { group: this.o.groupId, instanceId: this.o.instanceId, code: err.code },
      `group member fenced for good, reading no more and giving up its partitions: ${err.message ?? 'fatal error'}; another member joined group ${this.o.groupId} as instance ${this.o.instanceId ?? '(none)'} (two executors with one id, or this member's own rejoin after its session lapsed)`,
    );
    const mine = [...this.parts.keys()];
    this.parts.clear();
    const revoked = mine.length ? Promise.resolve(this.o.onRevoked(mine, true)).catch((e: unknown) => this.logger.error({ err: e }, 'revocation handler failed')) : Promise.resolve();
    void revoked.then(() => this.o.onFenced?.(err));
  }
}

/**
 * The group protocol's part of a member's librdkafka config. `classic`: the member asks for its session
 * timeout and heartbeat interval and the members assign (cooperative-sticky). `consumer`: the broker assigns
 * (incrementally, as cooperative-sticky does) and owns the session timeout and heartbeat interval (its
 * `group.consumer.session.timeout.ms` and `group.consumer.heartbeat.interval.ms`, or the group's own config),
 * so librdkafka refuses the three client-side settings and they are left out.
 */
export function groupProtocolConfig(protocol: string, o: Pick<GroupMemberOptions, 'sessionTimeoutMs' | 'heartbeatIntervalMs'>): Record<string, string | number> {
  if (protocol === 'consumer') return { 'group.protocol': 'consumer' };
  return { 'group.protocol': 'classic', 'session.timeout.ms': o.sessionTimeoutMs, 'heartbeat.interval.ms': o.heartbeatIntervalMs, 'partition.assignment.strategy': 'cooperative-sticky' };
}

export async function joinGroup(ctx: { rd: RdConfig; logger: Logger; config: LedgerConfig }, o: GroupMemberOptions): Promise<GroupMember> {
  const { KafkaConsumer } = confluent();
  const member = new NativeMember(o, ctx.logger);
  const c = new KafkaConsumer(
    {
      ...ctx.rd,
      'group.id': o.groupId,
      'enable.auto.commit': false,
      'enable.auto.offset.store': false,
      'isolation.level': 'read_committed',
      ...groupProtocolConfig(setting('PLAN_LEDGER_GROUP_PROTOCOL'), o),
      ...(o.instanceId === undefined ? {} : { 'group.instance.id': o.instanceId }),
      'max.poll.interval.ms': Math.max(o.rebalanceTimeoutMs, o.sessionTimeoutMs),
      'fetch.wait.max.ms': 100,
      'fetch.error.backoff.ms': 50,
      rebalance_cb: (err: { code: number; message?: string }, assignment: Array<{ topic: string; partition: number }>) => member.onRebalance(err, assignment),
    } as never,
    { 'auto.offset.reset': 'earliest' } as never,
  ) as NativeConsumer;
  member.c = c;
  const errors = routeLogs(c as never, ctx.logger, ctx.config.sasl?.password);
  const connecting = new Promise<void>((resolve, reject) => c.connect({ timeout: 30_000 } as never, (err) => (err ? reject(err) : resolve())));
  try {
    await connectWatched(errors, connecting, ctx.config);
  } catch (e) {
    // Closing a handle waits for its connect in flight: close it once that has given up, not now.
    void connecting.then(() => disconnectConsumer(c), () => {});
    throw e;
  }
  c.subscribe([o.topic]);
  natives.set(member, c);
  member.start();
  return member;
}
