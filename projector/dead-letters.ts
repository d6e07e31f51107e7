import { setTimeout as sleep } from 'node:timers/promises';
import type { topicNames } from '../src/config.js';
import type { LogRecord, RecordWriter } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { backoffMs } from '../src/backoff.js';
import { dlqHeaders, type RecordOutcome } from '../src/projection/index.js';

/**
 * Writes a poison record of partition `p` to the DLQ, on the same partition, with its cause in headers
 * (`dlqHeaders`). A failed write is retried until it lands, with backoff: a dead letter is never skipped.
 * Gives up only when the projector stops.
 */
export async function sendDeadLetter(
  ctx: { readonly dlq: RecordWriter; readonly names: ReturnType<typeof topicNames>; readonly log: Logger; stopped(): boolean },
  p: number,
  m: Pick<LogRecord, 'key' | 'value' | 'offset'>,
  outcome: Extract<RecordOutcome, { kind: 'poison' }>,
): Promise<void> {
  const { decision } = outcome;
  const headers = dlqHeaders({ sourceTopic: ctx.names.events, sourcePartition: p, sourceOffset: m.offset, code: decision.code, reason: decision.reason, message: decision.message });
  ctx.log.error({ partition: p, offset: m.offset, planId: outcome.planId, code: decision.code, reason: decision.reason }, `record dead-lettered: ${decision.message}`);
  for (let attempt = 1; ; attempt++) {
    try {
      await ctx.dlq.send(ctx.names.dlq, [{ partition: p, key: m.key, value: m.value, headers }]);
      return;
    } catch (e) {
      if (ctx.stopped()) throw e;
      ctx.log.warn({ attempt, err: (e as Error).message }, 'DLQ write failed; retrying');
      await sleep(backoffMs(attempt, 200, 10_000));
    }
  }
}
