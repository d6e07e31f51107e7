import { isLedgerError } from '../src/errors.js';
import { eventKey, isFencingError, isRetriableKafkaError, isWriterGivenUp, kafkaErrorName, partitionFor, type LogRecord } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { decide, rejectionEvent, type PlanCommand } from '../src/plan/index.js';
import type { OwnerDeps } from './context.js';
import { erasePlan, type ErasureContext } from './erasure.js';
import type { PartitionBook } from './partition-book.js';
import type { PlanWriter } from './plan-writer.js';
import { deadLetterMessage } from './records.js';
import type { CommandTrace, PlanTraces } from './tracing.js';

/** A command the owner could not get into the ledger: the executor counts these per offset (see Executor). */
export class CommandStepError extends Error {
  constructor(
    readonly offset: string,
    readonly failure: unknown,
  ) {
    super(`command at offset ${offset} failed: ${failure instanceof Error ? failure.message : String(failure)}`);
  }
}

/** How the executor asks an owner to take a batch after failures (see Executor.onCommands). */
export interface BatchGuard {
  /** Decide and append one command per transaction, so a failure names its command. */
  readonly isolate?: boolean;
  /** A command that failed repeatedly: dead-letter it with this cause instead of deciding it again. */
  readonly poison?: { readonly offset: string; readonly cause: string; readonly failures: number };
}

/** What the handler reads of the owner's dependencies. */
export type CommandHandlerDeps = Pick<OwnerDeps, 'codec' | 'config' | 'metrics' | 'now'>;

/**
 * The commands of one owned partition, in steps: decode (undecodable → DLQ), check (misrouted, stalled,
 * archived, dormant, no such plan), decide against the plan's state, append what it caused with the
 * command's offset. Every command ends as events, a coded rejection or a DLQ record with its cause.
 */
export class CommandHandler {
  constructor(
    private readonly partition: number,
    private readonly book: PartitionBook,
    private readonly writer: PlanWriter,
    private readonly d: CommandHandlerDeps,
    private readonly log: Logger,
    private readonly topics: { commands: string; dlq: string; snapshots: string; archive: string; blobs: string; planKeys: string },
    private readonly ctx: ErasureContext,
    /** The owner's spans (one per command decision); absent or without a tracer when tracing is off. */
    private readonly traces?: PlanTraces,
  ) {}

  private now(): number {
    return this.d.now?.() ?? Date.now();
  }

  /**
   * Commands of this partition, in offset order: decide, append events, commit offsets — one transaction
   * (group commit). With `guard.isolate`, one command per transaction, so a failure names its command
   * ({@link CommandStepError}); `guard.poison` is a command that failed repeatedly: it goes to the DLQ with
   * its cause instead of being decided again, and the partition moves on.
   */
  async handle(messages: LogRecord[], guard: BatchGuard = {}): Promise<Set<string>> {
    const reqs: Promise<void>[] = [];
    const touched = new Set<string>();
    for (const m of messages) {
      const next = (BigInt(m.offset) + 1n).toString();
      const req = this.handleCommand(m, next, guard, touched);
      if (!req) continue;
      if (guard.isolate) {
        try {
          await req;
        } catch (e) {
          throw isKafkaTrouble(e) ? e : new CommandStepError(m.offset, e);
        }
      } else {
        reqs.push(req);
      }
    }
    await Promise.all(reqs);
    return touched;
  }

  /** One command: the append request that records what it caused (events, a rejection, a DLQ record). */
  private handleCommand(m: LogRecord, next: string, guard: BatchGuard, touched: Set<string>): Promise<void> | undefined {
    if (guard.poison && guard.poison.offset === m.offset) {
      return this.deadLetter(m, { code: 'INTERNAL', message: `the command failed ${guard.poison.failures} times in a row; last: ${guard.poison.cause}`, details: { reason: 'repeated_failure' } }, next);
    }
    return this.decodeAndDecide(m, next, touched);
  }

  private decodeAndDecide(m: LogRecord, next: string, touched: Set<string>): Promise<void> {
    const trace = this.traces?.command(m);
    return trace === undefined ? this.decideCommand(m, next, touched, undefined) : trace.end(this.decideCommand(m, next, touched, trace));
  }

  private decideCommand(m: LogRecord, next: string, touched: Set<string>, trace: CommandTrace | undefined): Promise<void> {
    return (async () => {
      let command: PlanCommand;
      try {
        command = await this.d.codec.decodeCommand(m.value ?? Buffer.alloc(0));
      } catch (e) {
        if (isLedgerError(e, 'UNAVAILABLE')) throw e; // registry down: retry the batch, do not dead-letter
        return this.deadLetter(m, e, next, trace);
      }
      trace?.start(command);
      const home = partitionFor(command.planId, this.d.config.partitions);
      if (home !== this.partition) {
        // A producer with another partition count or partitioner: the plan's events live on `home`.
        return this.deadLetter(m, { code: 'VALIDATION', message: `command for plan ${command.planId} arrived on partition ${this.partition}; its partition is ${home}`, details: { reason: 'misrouted' } }, next, trace);
      }
      // A plan this owner does not hold may be archived (finished) or erased: know which before deciding.
      if (!this.book.plans.has(command.planId)) await this.book.fromArchive(command.planId);
      // A finished plan aside (restored dormant, or put aside once finished): load it, so the command is
      // decided against its real state.
      if (this.book.isAside(command.planId)) await this.book.wake(command.planId);
      const stall = this.book.stalled.get(command.planId);
      // ErasePlan is let through for a stalled plan with a state; without one (e.g. a dormant plan whose
      // snapshot does not verify) it cannot be decided without writing over the plan's first event.
      if (stall !== undefined && (command.type !== 'ErasePlan' || !this.book.plans.has(command.planId))) {
        // Its log has a record this executor cannot apply; deciding on the partial state could reuse a
        // seq that is already taken. The command goes to the DLQ with the reason instead.
        return this.deadLetter(m, { code: 'CONFLICT', message: `plan ${command.planId} is stalled (${stall}); the command was not applied`, details: { reason: 'plan_stalled' } }, next, trace);
      }
      if (!this.book.plans.has(command.planId)) {
        // No plan (unknown, or erased): a refusal is answered without leaving a live record behind.
        const refused = this.rejectWithoutPlan(m, command, next, trace);
        if (refused) return refused;
        this.book.erased.delete(command.planId); // an accepted CreatePlan: the id starts afresh
      }
      if (command.type === 'ErasePlan') {
        trace?.accepted(command.planId);
        this.traces?.forget(command.planId);
        return erasePlan(this.ctx, command, next);
      }
      const decided = this.book.decideAndApply(command, true);
      if (decided.fault !== undefined) {
        return this.deadLetter(m, { code: 'INTERNAL', message: `decide failed on this command (a defect, not a rejection): ${decided.fault}`, details: { reason: 'decide_fault' } }, next, trace);
      }
      if (trace !== undefined) {
        if (decided.rejection) trace.rejected(decided.rejection.code);
        else trace.accepted(command.planId);
      }
      touched.add(command.planId);
      return this.writer.append(command.planId, decided, next);
    })();
  }

  /**
   * A command for a plan this owner does not hold (never created, or erased) that `decide` refuses —
   * PLAN_NOT_FOUND for anything but CreatePlan, or an invalid CreatePlan: its CommandRejected goes out for
   * the client to see, followed in the same transaction by a tombstone for its key, so no live record of
   * a plan that does not exist stays in the compacted events topic (anyone could otherwise grow it without
   * bound). Once the cleaner has run, only the tombstone is left, until delete.retention.ms. Undefined when
   * the command is accepted (a CreatePlan) and must be handled normally.
   */
  private rejectWithoutPlan(m: LogRecord, command: PlanCommand, commitOffset: string, trace?: CommandTrace): Promise<void> | undefined {
    const ctx = this.book.decideContext();
    const decision = decide(undefined, command, ctx);
    if (decision.ok) return undefined;
    if (decision.fault !== undefined) {
      this.d.metrics.decideFaults.inc();
      return this.deadLetter(m, { code: 'INTERNAL', message: `decide failed on this command (a defect, not a rejection): ${decision.fault}`, details: { reason: 'decide_fault' } }, commitOffset, trace);
    }
    trace?.rejected(decision.rejection.code);
    this.log.warn({ planId: command.planId, command: command.type, rejection: decision.rejection }, 'command for a plan that does not exist rejected');
    const e = rejectionEvent(undefined, command, decision.rejection, ctx);
    const key = eventKey(e.planId, e.seq);
    return this.writer.appender.append({
      events: [
        { key, value: this.d.codec.encodeEvent(e), timestamp: String(e.occurredAt) },
        { key, value: null },
      ],
      commitOffset,
    });
  }

  /** The command goes to the DLQ (same partition number, original key and value, cause in headers) with its offset. */
  private deadLetter(m: LogRecord, e: unknown, commitOffset: string, trace?: CommandTrace): Promise<void> {
    const err = e as { code?: string; message?: string; details?: { reason?: string } };
    const reason = String(err.details?.reason ?? 'unknown');
    trace?.deadLettered(reason, String(err.code ?? 'SCHEMA'));
    this.log.error({ offset: m.offset, reason, err: err.message }, 'command sent to the DLQ');
    this.d.metrics.deadLettered.inc({ reason });
    const dlq = deadLetterMessage(m, { topic: this.topics.commands, partition: this.partition }, { code: String(err.code ?? 'SCHEMA'), reason, message: String(err.message ?? e) });
    return this.writer.appender.append({ events: [], extra: [{ topic: this.topics.dlq, messages: [dlq] }], commitOffset });
  }
}

/** A retriable error of the Kafka client itself (it carries librdkafka's code): a produce that timed out through an outage, a leader moving. */
export function isKafkaOutage(e: unknown): boolean {
  return kafkaErrorName(e) !== undefined && !isFencingError(e) && isRetriableKafkaError(e);
}

/**
 * A failure of Kafka, not of the command: fenced, the registry or the cluster unavailable, a writer given
 * up, or {@link isKafkaOutage}. Never counted against a command, so an outage of any length dead-letters
 * nothing.
 */
export function isKafkaTrouble(e: unknown): boolean {
  return isLedgerError(e, 'FENCED') || isLedgerError(e, 'UNAVAILABLE') || isWriterGivenUp(e) || isFencingError(e) || isKafkaOutage(e);
}
