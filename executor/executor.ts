import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Admin, Consumer, Kafka } from 'kafkajs';
import { loadConfig, topicNames, type LedgerConfig, type LedgerConfigInput } from '../src/config.js';
import { codecFromConfig, type LedgerCodec } from '../src/codec/index.js';
import { isLedgerError, LedgerError } from '../src/errors.js';
import { createKafka } from '../src/kafka/client.js';
import { ensurePlanTopics } from '../src/kafka/topics.js';
import { silentLogger, type Logger } from '../src/logging.js';
import type { PlanState } from '../src/plan/index.js';
import type { Tool } from '../src/tools.js';
import { PartitionOwner } from './partition-owner.js';
import { restoreOwnedPartition } from './restore.js';
import { Slots } from './slots.js';

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
}

export interface ExecutorHandle {
  readonly executorId: string;
  readonly config: LedgerConfig;
  /** Partitions this executor owns now. */
  ownedPartitions(): number[];
  /** The current state of a plan this executor owns (undefined when another executor owns it). */
  planState(planId: string): PlanState | undefined;
  /** Transactions committed and events appended by this executor's owners so far. */
  stats(): { transactions: number; events: number };
  /** Resolves once the executor owns partitions and has restored them. */
  readonly started: Promise<void>;
  /**
   * Stops gracefully: no new items, running items finish (up to shutdownGraceMs) or are aborted
   * through their signal, no transaction is left half-written, then the group is left.
   */
  stop(): Promise<void>;
}

function sum(owners: Map<number, PartitionOwner>, key: 'transactions' | 'events'): number {
  let n = 0;
  for (const o of owners.values()) n += o.stats[key];
  return n;
}

function envInt(name: string, fallback: number): number {
  const v = process.env[name];
  return v && Number.isInteger(Number(v)) ? Number(v) : fallback;
}

/**
 * Starts an executor: a member of the consumer group `<prefix>.executors` on the commands topic. It
 * owns the partitions the group assigns it — restores their plans, serves their commands, and runs
 * their ready items through the item protocol with the given tools.
 *
 * @example
 * const executor = await startExecutor({ tools: [charge, notify], concurrency: 8 });
 * process.once('SIGTERM', () => executor.stop());
 */
export async function startExecutor(opts: ExecutorOptions): Promise<ExecutorHandle> {
  const config = loadConfig(opts.config);
  const executorId = opts.executorId ?? `${hostname()}-${process.pid}-${randomBytes(2).toString('hex')}`;
  const logger = (opts.logger ?? silentLogger()).child({ component: 'executor', executorId });
  const tools = new Map<string, Tool>();
  for (const t of opts.tools) {
    if (tools.has(t.name)) throw new LedgerError('VALIDATION', `two tools are named "${t.name}"`, { field: 'tools' });
    tools.set(t.name, t);
  }
  const kafka = createKafka(config, logger, 'executor', 'service');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensurePlanTopics(admin, config);
  } catch (e) {
    await admin.disconnect();
    throw e;
  }
  const codec = await codecFromConfig(config, { logger });
  const exec = new Executor(kafka, admin, codec, config, tools, executorId, logger, opts);
  await exec.start();
  return exec.handle();
}

class Executor {
  private readonly owners = new Map<number, PartitionOwner>();
  private readonly slots: Slots;
  private consumer!: Consumer;
  private stopping = false;
  private resolveStarted!: () => void;
  private readonly started = new Promise<void>((r) => (this.resolveStarted = r));
  private readonly topics;

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly codec: LedgerCodec,
    private readonly config: LedgerConfig,
    private readonly tools: Map<string, Tool>,
    private readonly executorId: string,
    private readonly logger: Logger,
    private readonly opts: ExecutorOptions,
  ) {
    this.slots = new Slots(opts.concurrency ?? 16);
    this.topics = topicNames(config.topicPrefix);
  }

  private newOwner(partition: number): PartitionOwner {
    const owner = new PartitionOwner(partition, {
      kafka: this.kafka,
      config: this.config,
      codec: this.codec,
      tools: this.tools,
      executorId: this.executorId,
      logger: this.logger,
      slots: this.slots,
      restore: (p) => restoreOwnedPartition({ kafka: this.kafka, admin: this.admin, codec: this.codec, config: this.config, partition: p, logger: this.logger }),
    });
    owner.onBroken = () => void this.reset(partition, owner);
    owner.ready.catch((e: unknown) => {
      this.logger.error({ err: e, partition }, 'taking ownership failed; retrying');
      void this.reset(partition, owner);
    });
    return owner;
  }

  /** Replaces a broken owner with a fresh one (re-fence, restore from the log) if we still own the partition. */
  private async reset(partition: number, broken: PartitionOwner): Promise<void> {
    await broken.stop('reset');
    if (this.stopping || this.owners.get(partition) !== broken) return;
    await new Promise((r) => setTimeout(r, 500));
    if (this.stopping || this.owners.get(partition) !== broken) return;
    this.retire(broken);
    this.owners.set(partition, this.newOwner(partition));
  }

  private memberId: string | undefined;

  private revokeAll(reason: string): void {
    for (const [p, owner] of this.owners) {
      this.retire(owner);
      this.owners.delete(p);
      void owner.stop(reason);
    }
  }

  /** Stats of owners that are gone. */
  private readonly retired = { transactions: 0, events: 0 };

  private retire(owner: PartitionOwner): void {
    this.retired.transactions += owner.stats.transactions;
    this.retired.events += owner.stats.events;
  }

  private reconcile(assigned: number[]): void {
    const keep = new Set(assigned);
    for (const [p, owner] of this.owners) {
      if (!keep.has(p)) {
        this.retire(owner);
        this.owners.delete(p);
        void owner.stop('revoked');
      }
    }
    for (const p of assigned) {
      const current = this.owners.get(p);
      if (!current || current.isStopping) this.owners.set(p, this.newOwner(p));
    }
    this.logger.info({ partitions: [...this.owners.keys()].sort((a, b) => a - b) }, 'assignment');
    void Promise.allSettled([...this.owners.values()].map((o) => o.ready)).then(() => this.resolveStarted());
  }

  async start(): Promise<void> {
    this.consumer = this.kafka.consumer({
      groupId: this.topics.executorsGroup,
      sessionTimeout: this.opts.sessionTimeoutMs ?? envInt('PLAN_LEDGER_SESSION_TIMEOUT_MS', 10_000),
      heartbeatInterval: this.opts.heartbeatIntervalMs ?? envInt('PLAN_LEDGER_HEARTBEAT_INTERVAL_MS', 1_000),
      rebalanceTimeout: 30_000,
      readUncommitted: false,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, (ev) => {
      // A new member id means the coordinator expired us (a pause, a long GC): whatever we owned may
      // have had another owner in between, who fenced our producers. Start every partition afresh.
      if (this.memberId !== undefined && this.memberId !== ev.payload.memberId) this.revokeAll('rejoined as a new member');
      this.memberId = ev.payload.memberId;
      this.reconcile(ev.payload.memberAssignment[this.topics.commands] ?? []);
    });
    this.consumer.on(this.consumer.events.CRASH, (ev) => {
      this.logger.error({ err: ev.payload.error, restart: ev.payload.restart }, 'consumer crashed');
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: this.topics.commands, fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, this.config.partitions),
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const owner = this.owners.get(batch.partition);
        if (!owner || owner.isStopping || this.stopping) return;
        // Restoring can outlast a session timeout on long logs: keep heartbeating while waiting. An owner
        // that is ready already is read synchronously, so a command batch never sleeps for nothing.
        if (!owner.isReadySettled) {
          let restored = false;
          void owner.ready.then(
            () => (restored = true),
            () => (restored = true),
          );
          while (!restored) {
            await Promise.race([owner.ready.catch(() => {}), new Promise((r) => setTimeout(r, 500))]);
            if (!isRunning() || isStale()) return;
            if (!restored) await heartbeat().catch(() => {});
          }
        }
        if (owner.isStopping || !isRunning() || isStale()) return;
        try {
          await owner.handleCommands(batch.messages);
        } catch (e) {
          if (isLedgerError(e, 'UNAVAILABLE')) {
            this.logger.warn({ err: e, partition: batch.partition }, 'registry unavailable; the batch will be retried');
            await new Promise((r) => setTimeout(r, 1000));
          } else if (!isLedgerError(e, 'FENCED')) {
            this.logger.error({ err: e, partition: batch.partition }, 'command batch failed; resetting the partition');
            void this.reset(batch.partition, owner);
          } else {
            void owner.stop('fenced');
          }
          return; // not resolved: the same commands are fetched again by the next owner
        }
        const last = batch.messages.at(-1);
        if (last) resolveOffset(last.offset);
        await heartbeat();
      },
    });
  }

  handle(): ExecutorHandle {
    return {
      executorId: this.executorId,
      config: this.config,
      started: this.started,
      ownedPartitions: () => [...this.owners.entries()].filter(([, o]) => !o.isStopping).map(([p]) => p).sort((a, b) => a - b),
      planState: (planId) => {
        for (const o of this.owners.values()) {
          const s = o.plans.get(planId);
          if (s) return s;
        }
        return undefined;
      },
      stats: () => ({ transactions: this.retired.transactions + sum(this.owners, 'transactions'), events: this.retired.events + sum(this.owners, 'events') }),
      stop: () => this.stop(),
    };
  }

  private stopPromise: Promise<void> | undefined;
  stop(): Promise<void> {
    this.stopPromise ??= (async () => {
      this.stopping = true;
      const grace = this.opts.shutdownGraceMs ?? 10_000;
      await Promise.allSettled([...this.owners.values()].map((o) => o.stop('shutdown', grace)));
      this.owners.clear();
      await this.consumer.disconnect().catch(() => {});
      await this.admin.disconnect().catch(() => {});
      this.logger.info('executor stopped');
    })();
    return this.stopPromise;
  }
}
