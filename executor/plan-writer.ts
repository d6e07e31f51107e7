import type { LedgerConfig } from '../src/config.js';
import type { LedgerCodec } from '../src/codec/index.js';
import type { PlanEvent } from '../src/plan/index.js';
import type { AppendRequest, TransactionalAppender } from './appender.js';
import type { Decided, PartitionBook } from './partition-book.js';
import { childFinishedCommand, commandMessage, eventMessages } from './records.js';
import type { PlanTraces } from './tracing.js';

/**
 * Appends a plan's decided events through the partition's appender, adding what must commit with them:
 * a plan that finished tells its parent (a cross-partition ChildPlanFinished in the same transaction).
 */
export class PlanWriter {
  constructor(
    readonly appender: TransactionalAppender,
    private readonly book: PartitionBook,
    private readonly d: { codec: LedgerCodec; config: LedgerConfig; executorId: string; now: () => number },
    private readonly topics: { commands: string },
    /** The plans' trace contexts, written as a `traceparent` header on their event records (absent: none). */
    private readonly traces?: PlanTraces,
  ) {}

  private now(): number {
    return this.d.now();
  }

  /** Appends decided events (already encoded); a plan that just finished tells its parent (cross-partition). */
  append(planId: string, decided: Pick<Decided, 'events' | 'messages'>, commitOffset?: string, extra: AppendRequest['extra'] = []): Promise<void> {
    const finished = decided.events.find((e) => e.type === 'PlanCompleted' || e.type === 'PlanFailed' || e.type === 'PlanCancelled');
    const state = this.book.plans.get(planId);
    const all = [...extra];
    if (finished && state?.parent) {
      const told = childFinishedCommand(state, finished, { executorId: this.d.executorId, now: this.now() });
      all.push({ topic: this.topics.commands, messages: [commandMessage(this.d.codec, this.d.config.partitions, told)] });
    }
    if (!decided.messages.length && !all.length && commitOffset === undefined) return Promise.resolve();
    // Record metadata, not part of the event (nor of its hash): the plan's trace context for the next owner.
    const events = this.traces === undefined ? decided.messages : this.traces.withHeaders(planId, decided.messages);
    return this.appender.append({ events, extra: all, ...(commitOffset !== undefined ? { commitOffset } : {}) });
  }

  /** Encodes and appends events (for callers that built them outside {@link decideAndApply}). */
  appendEvents(planId: string, events: PlanEvent[], commitOffset?: string): Promise<void> {
    return this.append(planId, { events, messages: eventMessages(this.d.codec, events) }, commitOffset);
  }
}
