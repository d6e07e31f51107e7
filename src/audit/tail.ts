// `plan-ledger tail`: the events of one plan or of every plan of the prefix as a stream, history first
// (read as audit and replay read it: the latest copy of each key, erased events left out), then live from
// the offsets the history read started at. Each plan's events come out once, in seq order.
import { readSchemaId } from '../codec/index.js';
import { LedgerError } from '../errors.js';
import { parseEventKey, type LogRecord } from '../kafka/index.js';
import type { PlanEvent } from '../plan/index.js';
import { readPlanHistory } from './live.js';
import type { LedgerLog, LoggedEvent } from './log.js';
import { SecretTracker } from '../secrets/redact.js';
import { auditRowBuilder, isBefore, type AsOf, type AuditRow } from './timeline.js';

export interface TailOptions {
  /** One plan; without it every plan of the prefix. */
  planId?: string;
  /**
   * Include the history: the default for one plan; for every plan it reads the whole events topic
   * first (as `replay --all` does). Without it and without a plan, only new events come.
   */
  fromBeginning?: boolean;
  /**
   * Start after this point: only the events `audit --as-of` does not show (with a seq, one plan only).
   * Implies the history from there on.
   */
  asOf?: AsOf | null;
  /** Keep reading new events until this signal aborts; without it the tail ends after the history. */
  follow?: AbortSignal;
}

export type TailRecord =
  | { kind: 'event'; planId: string; event: PlanEvent; row: AuditRow }
  /** The first tombstone of a plan seen live: it is being erased (`plan-ledger erase`). */
  | { kind: 'erased'; planId: string; at: string; partition: number; offset: string };

/**
 * Streams events to `emit` (awaited, so a slow reader holds the tail back). Resolves when the history is
 * out and, with `follow`, once the signal aborts. `NOT_FOUND` for an unknown plan unless following (then
 * its events are waited for).
 */
export async function tailEvents(log: LedgerLog, o: TailOptions, emit: (r: TailRecord) => void | Promise<void>): Promise<void> {
  const asOf = o.asOf ?? null;
  if (asOf && 'seq' in asOf && !o.planId) throw new LedgerError('VALIDATION', 'tail: --as-of <seq> needs a plan (seq is per plan); give a time for every plan', { field: '--as-of' });
  if (!(await log.topicExists(log.names.events))) {
    throw new LedgerError('NOT_FOUND', `no events on prefix "${log.config.topicPrefix}" (topic ${log.names.events} does not exist)`, { topic: log.names.events });
  }
  const partitions = o.planId === undefined ? undefined : [log.partitionOf(o.planId)];
  // Where live reading starts: the end as of now, before the history is read, so nothing falls in between
  // (what both see is sent once: by seq, below).
  const ends = await log.admin.fetchTopicOffsets(log.names.events);
  const from = new Map(ends.filter((e) => !partitions || partitions.includes(e.partition)).map((e) => [e.partition, e.high]));

  const lastSeq = new Map<string, number>();
  const rowOf = new Map<string, (r: LoggedEvent) => AuditRow>();
  const erased = new Set<string>();
  // What is shown has the items' secret fields redacted (the paths come with each item's ItemAdded).
  const secrets = new SecretTracker();
  const send = async (logged: LoggedEvent) => {
    const planId = logged.event.planId;
    let build = rowOf.get(planId);
    if (!build) rowOf.set(planId, (build = auditRowBuilder()));
    if (logged.event.seq <= (lastSeq.get(planId) ?? 0)) return; // a re-sent key, or seen by both reads
    lastSeq.set(planId, logged.event.seq);
    const r = { ...logged, event: secrets.show(logged.event) };
    const row = build(r); // every event, also those before --as-of: a result needs its intent's key
    if (asOf !== null && isBefore(r.event, asOf)) return;
    await emit({ kind: 'event', planId, event: r.event, row });
  };

  if (o.planId !== undefined) {
    let history: LoggedEvent[] = [];
    try {
      history = await readPlanHistory(log, o.planId);
    } catch (e) {
      if (!(o.follow && e instanceof LedgerError && e.code === 'NOT_FOUND')) throw e;
    }
    for (const r of history) await send(r);
  } else if (o.fromBeginning || asOf) {
    // Every plan's history, merged by time: the plans are collected as the log streams them.
    const plans = new Map<string, LoggedEvent[]>();
    await log.streamPlans((planId, records) => void plans.set(planId, records));
    for (const r of interleaved(plans)) await send(r);
  }

  if (!o.follow) return;
  await log.kafka.readToEnd({
    topic: log.names.events,
    ...(partitions ? { partitions } : {}),
    from,
    follow: o.follow,
    onRecords: async (records: LogRecord[]) => {
      for (const rec of records) {
        const key = parseEventKey(rec.key);
        if (key === null || (o.planId !== undefined && key.planId !== o.planId)) continue;
        if (rec.value === null) {
          if (erased.has(key.planId)) continue;
          erased.add(key.planId);
          await emit({ kind: 'erased', planId: key.planId, at: new Date(Number(rec.timestamp)).toISOString(), partition: rec.partition, offset: rec.offset });
          continue;
        }
        let event: PlanEvent;
        try {
          event = await log.codec.decodeEvent(rec.value);
        } catch (e) {
          throw new LedgerError('SCHEMA', `cannot decode the event at ${log.names.events} ${rec.partition}/${rec.offset}: ${(e as Error).message}`, { partition: rec.partition, offset: rec.offset }, { cause: e });
        }
        await send({ event, partition: rec.partition, offset: rec.offset, schemaId: readSchemaId(rec.value) });
      }
    },
  });
}

/**
 * Every plan's events (grouped by plan, from {@link LedgerLog.readAll}) in one timeline: by time, each
 * plan's own events kept in seq order even where executors' clocks disagree (a plan's time never goes back).
 */
function interleaved(plans: ReadonlyMap<string, readonly LoggedEvent[]>): LoggedEvent[] {
  const all: Array<{ t: number; r: LoggedEvent }> = [];
  for (const records of plans.values()) {
    let t = -Infinity;
    for (const r of records) all.push({ t: (t = Math.max(t, r.event.occurredAt)), r });
  }
  all.sort((a, b) => a.t - b.t || (a.r.event.planId < b.r.event.planId ? -1 : a.r.event.planId > b.r.event.planId ? 1 : a.r.event.seq - b.r.event.seq));
  return all.map((x) => x.r);
}
