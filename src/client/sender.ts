import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { backoffMs } from '../backoff.js';
import type { LedgerCodec } from '../codec/index.js';
import { topicNames, type LedgerConfig } from '../config.js';
import { isLedgerError, LedgerError } from '../errors.js';
import { kafkaFailure, lastStableOffset, MAX_RECORD_BYTES, partitionFor, type KafkaClient, type LedgerAdmin, type OutRecord, type RecordWriter } from '../kafka/index.js';
import type { Logger } from '../logging.js';
import type { CommandPayloads, CommandType, PlanCommand, PlanEvent } from '../plan/index.js';
import { traceHeaders } from '../trace-context.js';
import type { CommandOptions, CommandOutcome } from './api.js';
import { assertCommandFits, illFormedField } from './command-size.js';
import type { EventsTail, TailPosition } from './events-tail.js';
import { checkPlanId } from './inputs.js';

/** A command that takes this long from the call to its outcome logs where it waited (a warning). */
const SLOW_DECISION_MS = 5_000;

/** An events partition's asks for its last stable offset waiting for the next read, and whether one is in flight. */
interface StableReads {
  waiting: Array<{ resolve: (o: bigint) => void; reject: (e: unknown) => void }>;
  reading: boolean;
}

export interface CommandSenderDeps {
  readonly kafka: KafkaClient;
  readonly admin: LedgerAdmin;
  readonly codec: LedgerCodec;
  readonly config: LedgerConfig;
  readonly logger: Logger;
  /** The client's events tail: a decision's events come back on it. */
  readonly events: EventsTail;
  /** The actor of commands sent without `by`. */
  readonly clientId: string;
}

/**
 * A client's way out: writes commands (again while Kafka cannot take them and the caller's time lasts,
 * under the same commandId) and the records they need (blob chunks, plan keys), and waits for a
 * command's decision on the events tail.
 */
export class CommandSender {
  private writer: RecordWriter | undefined;
  private readonly topics: ReturnType<typeof topicNames>;
  /** Per events partition: its stable-offset reads. */
  private readonly stableReads = new Map<number, StableReads>();

  constructor(private readonly d: CommandSenderDeps) {
    this.topics = topicNames(d.config.topicPrefix);
  }

  /** Connects the writer, and starts the events tail meanwhile. */
  async start(events: { start(): Promise<void> }): Promise<void> {
    this.writer = this.d.kafka.writer();
    const connecting = this.writer.connect();
    try {
      await events.start(); // set up while the writer connects
    } catch (e) {
      await connecting.catch(() => {}); // so that close() finds the writer and closes it
      throw e;
    }
    await connecting;
  }

  async close(): Promise<void> {
    await this.writer?.disconnect();
  }

  command<K extends CommandType>(planId: string, type: K, data: CommandPayloads[K], by: string | undefined): PlanCommand {
    const commandId = `${type}-${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
    return { type, planId, commandId, issuedAt: Date.now(), actor: by ?? this.d.clientId, correlationId: commandId, data } as PlanCommand;
  }

  /** Sends a command; inside an active span, its `traceparent` goes along as a record header (the executor's span continues it). */
  private async produce(command: PlanCommand): Promise<void> {
    const value = this.d.codec.encodeCommand(command);
    assertCommandFits(command, command.planId, value, MAX_RECORD_BYTES);
    await this.connected().send(this.topics.commands, [{ key: command.planId, value, partition: partitionFor(command.planId, this.d.config.partitions), ...traceHeaders() }]);
  }

  /** Writes one record outside a command (a blob chunk, a plan key); a Kafka error reaches the caller as a LedgerError. */
  async write(topic: string, record: OutRecord, what: string): Promise<void> {
    await this.connected().send(topic, [record]).catch((e) => {
      throw kafkaFailure(e, `writing ${what}`);
    });
  }

  /**
   * Writes a command, and writes it again while Kafka cannot take it and the caller's time lasts. A
   * broker killed mid-send makes librdkafka fail the record once its `message.timeout.ms` (30 s) is up,
   * though the cluster may already serve again. A second copy under the same commandId changes nothing:
   * the owner decides a commandId once (a copy it has decided is a no-op, see `decide`). The error that
   * reaches the caller is a LedgerError: UNAVAILABLE when the deadline came first, FORBIDDEN for ACLs.
   */
  async produceBy(command: PlanCommand, deadline: number): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.produce(command);
        return;
      } catch (e) {
        const failure = kafkaFailure(e, `writing ${command.type} for plan ${command.planId}`);
        const wait = backoffMs(attempt, 100, 2_000);
        if (!isLedgerError(failure, 'UNAVAILABLE') || Date.now() + wait >= deadline) throw failure;
        this.d.logger.warn({ planId: command.planId, commandId: command.commandId, attempt, err: (e as Error).message }, 'Kafka did not take the command; writing it again under the same commandId');
        await sleep(wait);
      }
    }
  }

  /**
   * The events partition's last stable offset, asked again (with a backoff) while Kafka cannot answer and
   * the caller's deadline lasts: a leader moving after a broker died fails the first ask, not the next.
   */
  private async stableOffsetBy(partition: number, deadline: number): Promise<bigint> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.stableOffset(partition);
      } catch (e) {
        const failure = kafkaFailure(e, `reading the end of the events partition ${partition}`);
        const wait = backoffMs(attempt, 100, 2_000);
        if (!isLedgerError(failure, 'UNAVAILABLE') || Date.now() + wait >= deadline) throw failure;
        this.d.logger.warn({ partition, attempt, err: (e as Error).message }, 'reading the end of an events partition failed; asking again');
        await sleep(wait);
      }
    }
  }

  /**
   * The events partition's last stable offset, read after this ask: one ListOffsets per partition in flight
   * at a time, and every ask that comes while it flies is answered by the next one (sent once it is back,
   * so after the ask, as a command's decision needs). With many commands in flight on a partition, one
   * read answers them all instead of one read each; a partition whose leader is away holds up only its own.
   */
  private stableOffset(partition: number): Promise<bigint> {
    let reads = this.stableReads.get(partition);
    if (reads === undefined) this.stableReads.set(partition, (reads = { waiting: [], reading: false }));
    const r = reads;
    return new Promise<bigint>((resolve, reject) => {
      r.waiting.push({ resolve, reject });
      if (!r.reading) void this.readStable(partition, r);
    });
  }

  private async readStable(partition: number, r: StableReads): Promise<void> {
    r.reading = true;
    try {
      while (r.waiting.length) {
        const asks = r.waiting.splice(0);
        try {
          const offset = await lastStableOffset(this.d.admin, this.topics.events, partition);
          for (const a of asks) a.resolve(offset);
        } catch (e) {
          for (const a of asks) a.reject(e);
        }
      }
    } finally {
      r.reading = false;
    }
  }

  private unavailable(type: string, planId: string, commandId: string, timeoutMs: number): LedgerError {
    return new LedgerError('UNAVAILABLE', `Kafka did not take ${type} for plan ${planId} within ${timeoutMs} ms (brokers ${this.d.config.brokers.join(',')})`, { commandId });
  }

  timeout(type: string, planId: string, commandId: string, timeoutMs: number): LedgerError {
    return new LedgerError('TIMEOUT', `no executor decided ${type} for plan ${planId} within ${timeoutMs} ms — is an executor running on prefix "${this.d.config.topicPrefix}"?`, { commandId });
  }

  /**
   * Sends a command and returns exactly the events its owner's decision appended: every event caused by
   * the command carries `causationId = commandId`, and a decision's events are appended in one
   * transaction. The tail reads `read_committed`, so when the first of them arrives the whole transaction
   * has committed and sits below the partition's last stable offset (LSO) as of then; once the tail has
   * handed over every record below that LSO, the decision is complete. No quiet window.
   */
  async send<K extends CommandType>(planId: string, type: K, data: CommandPayloads[K], opts: CommandOptions = {}): Promise<CommandOutcome> {
    checkPlanId(planId);
    const illFormed = illFormedField(data);
    if (illFormed !== undefined) throw new LedgerError('VALIDATION', `${illFormed}: must be well-formed Unicode (a lone surrogate has no UTF-8 form)`, { field: illFormed });
    const command = this.command(planId, type, data, opts.by);
    const { commandId } = command;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    let written = false;
    const events = new Map<number, PlanEvent>();
    let first!: (at: TailPosition) => void;
    const seen = new Promise<TailPosition>((r) => (first = r));
    const stop = this.d.events.listen(planId, (e, at) => {
      if (e.causationId !== commandId) return;
      if (!events.size) first(at);
      events.set(e.seq, e);
    });
    let timer: NodeJS.Timeout | undefined;
    // When each step ended, for a slow decision's account of where it waited.
    const began = Date.now();
    const steps: { writtenMs?: number; seenMs?: number; stableMs?: number } = {};
    try {
      const decided = (async () => {
        await this.produceBy(command, deadline);
        written = true;
        steps.writtenMs = Date.now() - began;
        const at = await seen;
        steps.seenMs = Date.now() - began;
        try {
          const stable = await this.stableOffsetBy(at.partition, deadline);
          steps.stableMs = Date.now() - began;
          await this.d.events.reached(at.partition, stable);
        } catch (e) {
          // Decided all the same (see the timer below): never reported as failed.
          this.d.logger.warn({ planId, commandId, type, err: (e as Error).message }, 'command decided; the end of its events partition could not be read: returning the events seen');
        }
      })();
      decided.catch(() => {}); // observed by the race below; after a timeout nobody waits for it any more
      await Promise.race([
        decided,
        new Promise<void>((resolve, reject) => {
          timer = setTimeout(() => {
            // The owner decided (its events are committed and the tail handed some over), but the end of
            // the partition could not be read in time (a broker moving leadership): the command did not
            // fail, and saying so would make a caller that retries create a second plan. Its outcome is
            // the decision's events the tail handed over; they come in one transaction, so one fetch
            // almost always carries them all.
            if (events.size) {
              this.d.logger.warn({ planId, commandId, type, timeoutMs }, 'command decided; the end of its events partition could not be read in time: returning the events seen');
              resolve();
            } else reject(written ? this.timeout(type, planId, commandId, timeoutMs) : this.unavailable(type, planId, commandId, timeoutMs));
          }, timeoutMs);
        }),
      ]);
    } finally {
      stop();
      clearTimeout(timer);
      const ms = Date.now() - began;
      if (ms >= SLOW_DECISION_MS) this.d.logger.warn({ planId, commandId, type, ms, ...steps }, 'a command took long: when it was written, its decision seen, and its partition\'s end read (ms after the call)');
    }
    const outcome = [...events.values()].sort((a, b) => a.seq - b.seq);
    const rejected = outcome.find((e) => e.type === 'CommandRejected');
    if (rejected && rejected.type === 'CommandRejected') {
      const r = rejected.data;
      throw new LedgerError('REJECTED', `${type} rejected: ${r.code}: ${r.message}`, { rejection: r.code, field: r.field, commandId, planId });
    }
    return { commandId, planId, events: outcome };
  }

  private connected(): RecordWriter {
    if (this.writer === undefined) throw new Error('the ledger client is not started');
    return this.writer;
  }
}
