import type { Admin, Kafka } from 'kafkajs';
import { readToEnd } from '../kafka/log-reader.js';
import { causeFromHeaders, type DeadLetterCause } from './poison.js';

export interface DeadLetter {
  readonly offset: string;
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly cause: DeadLetterCause | null;
}

/** Reads one partition of the DLQ topic to its end, with the cause each record carries in its headers. */
export async function readDeadLetters(opts: {
  kafka: Kafka;
  admin: Admin;
  topic: string;
  partition: number;
  groupPrefix: string;
  timeoutMs?: number;
}): Promise<DeadLetter[]> {
  const out: DeadLetter[] = [];
  await readToEnd({
    kafka: opts.kafka,
    admin: opts.admin,
    topic: opts.topic,
    partitions: [opts.partition],
    groupPrefix: opts.groupPrefix,
    timeoutMs: opts.timeoutMs,
    onRecords: (records) => {
      for (const r of records) out.push({ offset: r.offset, key: r.key, value: r.value, cause: causeFromHeaders(r.headers) });
    },
  });
  return out;
}
