// Events appended by an owner that had been fenced, found from the log alone. An owner takes a partition
// over in one order: it fences the transactional ids (from then on no earlier owner can commit), restores
// the partition's plans, and only then decides anything; every event it decides carries its decision time
// (`occurredAt`, the record's timestamp). So, on one machine's clock, once an event stamped after an owner
// finished restoring stands in the partition's log, no event stamped before that owner began taking over
// may follow it: such an event was decided by an earlier owner and appended after it was fenced.

/** One record of an events-topic partition, in log order. */
export interface StampedRecord {
  readonly offset: bigint;
  /** The record's timestamp: the event's `occurredAt`. */
  readonly stamp: number;
  readonly key: string;
}

/** An owner's 'partition restored': when it said so, and how long its take-over (fence + restore) had taken. */
export interface Takeover {
  readonly partition: number;
  readonly label: string;
  readonly at: number;
  readonly ms: number;
}

/**
 * Every event that follows, in its partition's log, an event stamped after a take-over finished, though
 * it was stamped before that take-over began; one line each, naming the take-over.
 */
export function lateEvents(logs: ReadonlyMap<number, readonly StampedRecord[]>, takeovers: readonly Takeover[]): string[] {
  const found = new Map<string, string>();
  for (const [partition, unsorted] of logs) {
    const records = [...unsorted].sort((a, b) => (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0));
    // The lowest stamp from each position to the end: one look per take-over says whether any follows.
    const lowestFrom: number[] = new Array<number>(records.length + 1);
    lowestFrom[records.length] = Infinity;
    for (let i = records.length - 1; i >= 0; i--) lowestFrom[i] = Math.min(records[i]!.stamp, lowestFrom[i + 1]!);
    for (const t of takeovers) {
      if (t.partition !== partition) continue;
      const began = t.at - t.ms;
      const first = records.findIndex((r) => r.stamp >= t.at);
      if (first < 0 || lowestFrom[first + 1]! >= began) continue;
      for (const r of records.slice(first + 1)) {
        if (r.stamp < began && !found.has(`${partition}@${r.offset}`)) {
          found.set(`${partition}@${r.offset}`, `${r.key} at p${partition}@${r.offset}, decided ${began - r.stamp} ms before ${t.label} began taking p${partition} over, after ${records[first]!.key} at @${records[first]!.offset}`);
        }
      }
    }
  }
  return [...found.values()];
}
