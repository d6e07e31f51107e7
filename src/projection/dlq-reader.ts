import type { KafkaClient } from '../kafka/index.js';
import { causeFromHeaders, type DeadLetterCause } from './poison.js';

export interface DeadLetter {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly cause: DeadLetterCause | null;
}

/** Reads one partition of the DLQ topic to its end, with the cause each record carries in its headers. */
export async function readDeadLetters(opts: {
  kafka: KafkaClient;
  topic: string;
  partition: number;
  timeoutMs?: number;
  onPhase?: (phase: 'offsets' | 'records') => void;
}): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  await opts.kafka.readToEnd({
    topic: opts.topic,
    partitions: [opts.partition],
    ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.onPhase !== undefined ? { onPhase: opts.onPhase } : {}),
    onRecords: (records) => {
      for (const r of records) out.push({ offset: r.offset, key: r.key, value: r.value, cause: causeFromHeaders(r.headers) });
    },
  });
  return out;
}
