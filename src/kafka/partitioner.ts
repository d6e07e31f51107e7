/**
 * The partition of a plan in each of the co-partitioned plan topics: FNV-1a (32-bit) of the planId's
 * UTF-8 bytes modulo the partition count. Every writer (clients, executors, projector) uses this one
 * function, so a plan's commands, events and snapshots always share a partition number.
 */
export function partitionFor(planId: string, partitions: number): number {
  let h = 0x811c9dc5;
  const bytes = Buffer.from(planId, 'utf8');
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h % partitions;
}

/** Key of an event record: unique per event, so compaction never removes a fact. */
export function eventKey(planId: string, seq: number): string {
  return `${planId}:${seq}`;
}

/** An events-topic record key `planId:seq`, parsed (plan ids may contain `:`, the seq is after the last one). */
export interface EventKey {
  readonly planId: string;
  readonly seq: number;
}

export function parseEventKey(key: Buffer | string | null | undefined): EventKey | null {
  if (key === null || key === undefined) return null;
  const text = typeof key === 'string' ? key : key.toString('utf8');
  const i = text.lastIndexOf(':');
  if (i <= 0 || i === text.length - 1) return null;
  const seq = Number(text.slice(i + 1));
  if (!Number.isSafeInteger(seq) || seq < 1) return null;
  return { planId: text.slice(0, i), seq };
}
