import type { LedgerCodec } from '../src/codec/index.js';
import { eventKey, partitionFor, type LogRecord, type OutRecord } from '../src/kafka/index.js';
import { canonicalJson, type PlanCommand, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { dlqHeaders } from '../src/projection/poison.js';

/**
 * Record building for an owned partition (events, cross-partition commands, DLQ records), apart from
 * the appender that commits them: every function here is pure given the codec.
 */

/** The plan's events as records of the events topic: key `planId:seq`, the event time as timestamp. */
export function eventMessages(codec: LedgerCodec, events: readonly PlanEvent[]): OutRecord[] {
  return events.map((e) => ({ key: eventKey(e.planId, e.seq), value: codec.encodeEvent(e), timestamp: String(e.occurredAt) }));
}

/** A command for another plan's partition (child plans, parents), keyed and placed like a client's. */
export function commandMessage(codec: LedgerCodec, partitions: number, c: PlanCommand): OutRecord {
  return { key: c.planId, value: codec.encodeCommand(c), partition: partitionFor(c.planId, partitions) };
}

/** Bytes a record takes in a produce request, near enough to stay under a broker's record limit. */
export function recordBytes(m: OutRecord): number {
  const size = (v: Buffer | string | null | undefined) => (v == null ? 0 : typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length);
  let headers = 0;
  for (const [k, v] of Object.entries(m.headers ?? {})) headers += Buffer.byteLength(k) + size(v) + 8;
  return size(m.key) + size(m.value) + headers + 32;
}

export interface DeadLetterCauseInput {
  readonly code: string;
  readonly reason: string;
  readonly message: string;
}

/** The DLQ record for a command: same partition number, original key and value, the cause in headers. */
export function deadLetterMessage(m: LogRecord, source: { topic: string; partition: number }, cause: DeadLetterCauseInput): OutRecord {
  const headers = dlqHeaders({ sourceTopic: source.topic, sourcePartition: source.partition, sourceOffset: m.offset, ...cause });
  return { key: m.key, value: m.value, partition: source.partition, headers };
}

type ChildPlanFinished = Extract<PlanCommand, { type: 'ChildPlanFinished' }>;

/** The ChildPlanFinished a finished child plan sends the parent item that delegated to it. */
export function childFinishedCommand(state: PlanState, finished: PlanEvent, from: { executorId: string; now: number }): ChildPlanFinished {
  const outputs: Record<string, unknown> = {};
  for (const id of state.itemOrder) {
    const out = state.items[id]?.outputJson;
    if (out != null) outputs[id] = JSON.parse(out);
  }
  const status = finished.type === 'PlanCompleted' ? 'completed' : finished.type === 'PlanFailed' ? 'failed' : 'cancelled';
  return toParent(state, finished.correlationId, from, {
    status,
    outputJson: status === 'completed' ? canonicalJson(outputs) : null,
    error: status === 'completed' ? null : { code: `CHILD_${status.toUpperCase()}`, message: `child plan ${state.planId} ${status}`, detailsJson: null },
  });
}

/**
 * The ChildPlanFinished a child plan erased before it finished sends its parent: status `failed`, so
 * the parent item fails terminally, as with a failed child. Same commandId as a finishing child's.
 */
export function childErasedCommand(state: PlanState, erase: Extract<PlanCommand, { type: 'ErasePlan' }>, from: { executorId: string; now: number }): ChildPlanFinished {
  const { by } = erase.data;
  return toParent(state, erase.correlationId, from, {
    status: 'failed',
    outputJson: null,
    error: {
      code: 'CHILD_ERASED',
      message: `child plan ${state.planId} was erased by ${by} while ${state.status}`,
      detailsJson: canonicalJson({ childPlanId: state.planId, erasedBy: by, erasureCommandId: erase.commandId, statusAtErasure: state.status }),
    },
  });
}

function toParent(
  state: PlanState,
  correlationId: string,
  from: { executorId: string; now: number },
  result: Pick<ChildPlanFinished['data'], 'status' | 'outputJson' | 'error'>,
): ChildPlanFinished {
  const parent = state.parent!;
  return {
    type: 'ChildPlanFinished',
    // One id per child: whatever ends the child first (finishing, erasure) is the one the parent applies.
    commandId: `child-finished:${state.planId}`,
    planId: parent.planId,
    issuedAt: from.now,
    actor: from.executorId,
    correlationId,
    data: { parentItemId: parent.itemId, childPlanId: state.planId, ...result },
  };
}
