import type { KafkaClient } from '../kafka/index.js';
import { wrapDataKey } from './envelope.js';
import { unwrapWithAny } from './plan-keys.js';

export interface RewrapResult {
  /** Keys written wrapped by the new master key. */
  readonly rewrapped: number;
  /** Keys already wrapped by the new master key. */
  readonly current: number;
  /** Records no given key unwraps (left as they are). */
  readonly unreadable: string[];
  /** Plans erased while the rotation ran: their tombstone written again after the re-wrapped key. */
  readonly erasedMeanwhile: string[];
}

/**
 * Master key rotation: every live data key in `<prefix>.plan-keys` re-wrapped by `to` (payloads are not
 * touched: the data keys stay the same). Reads the topic to its end, writes the re-wrapped records
 * (acknowledged by all in-sync replicas), then reads what was written meanwhile: a plan erased after the
 * first read (its tombstone lies before the re-wrapped record) gets its tombstone written again, so an
 * erased key never comes back.
 */
export async function rewrapPlanKeys(o: { kafka: KafkaClient; topic: string; from: readonly Buffer[]; to: Buffer }): Promise<RewrapResult> {
  const latest = new Map<string, { partition: number; value: string | null }>();
  const ends = await o.kafka.readToEnd({
    topic: o.topic,
    onRecords: (rs) => {
      for (const r of rs) if (r.key) latest.set(r.key.toString('utf8'), { partition: r.partition, value: r.value === null ? null : r.value.toString('utf8') });
    },
  });
  const messages: Array<{ key: string; value: string; partition: number }> = [];
  const unreadable: string[] = [];
  let current = 0;
  for (const [planId, { partition, value }] of latest) {
    if (value === null) continue;
    try {
      unwrapWithAny([o.to], planId, value);
      current += 1;
      continue;
    } catch {
      // not wrapped by the new key yet
    }
    try {
      const key = unwrapWithAny(o.from, planId, value);
      messages.push({ key: planId, value: wrapDataKey(o.to, planId, key), partition });
    } catch {
      unreadable.push(planId);
    }
  }
  const writer = o.kafka.writer();
  await writer.connect();
  try {
    for (let i = 0; i < messages.length; i += 500) await writer.send(o.topic, messages.slice(i, i + 500));
    // Any tombstone of a re-wrapped plan since the first read is written again, after our record (a
    // tombstone that already came after it is repeated harmlessly).
    const rewritten = new Set(messages.map((m) => m.key));
    const erased = new Map<string, number>();
    await o.kafka.readToEnd({
      topic: o.topic,
      from: ends,
      onRecords: (rs) => {
        for (const r of rs) {
          const planId = r.key?.toString('utf8');
          if (planId !== undefined && rewritten.has(planId) && r.value === null) erased.set(planId, r.partition);
        }
      },
    });
    const again = [...erased].map(([planId, partition]) => ({ key: planId, value: null, partition }));
    if (again.length) await writer.send(o.topic, again);
    return { rewrapped: messages.length, current, unreadable, erasedMeanwhile: again.map((m) => m.key) };
  } finally {
    await writer.disconnect();
  }
}
