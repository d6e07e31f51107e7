// Audit, replay and verify of plans in the live ledger, read from the log alone (no projector, no
// executor). The CLI verbs and the ledger client both call these; they only differ in how they show them.
import { PLAN_START_MARGIN_MS } from '../client/reads.js';
import { BlobReader, parseRef } from '../blobs/index.js';
import { LedgerError } from '../errors.js';
import { CopyCounter, type DuplicateRecord } from '../kafka/index.js';
import { evolveAll, getItem, stateDigest, verifyChain, type PlanEvent, type PlanState, type PlanStatus } from '../plan/index.js';
import type { LedgerLog, LoggedEvent } from './log.js';
import { auditRows, isBefore, planAsOf, type AsOf, type AuditRow, type PlanAsOf } from './timeline.js';
import { verifyPlan, type PlanVerification } from './verify.js';

/** Only rejections of commands sent to an id that never existed (they form a chain of their own). */
function onlyRejections(records: readonly LoggedEvent[]): boolean {
  return records.every((r) => r.event.type === 'CommandRejected');
}

/**
 * Every event of a plan (see {@link LedgerLog.readPlan}). `NOT_FOUND` for an id the log holds nothing
 * of but such rejections: unknown, or erased.
 */
export async function readPlanHistory(log: LedgerLog, planId: string, copies?: CopyCounter): Promise<LoggedEvent[]> {
  const records = await log.readPlan(planId, copies);
  if (records.length === 0 || onlyRejections(records)) {
    throw new LedgerError('NOT_FOUND', `plan ${planId} not found on prefix "${log.config.topicPrefix}"`, { planId });
  }
  return records;
}

/** The audit of one plan: its timeline, up to a point when asked, and the plan as it was there. */
export interface PlanAudit {
  planId: string;
  /** Where the plan's events live. */
  topic: string;
  partition: number;
  /** Events of the plan in the log now (the timeline stops at `asOf`). */
  events: number;
  /** The point asked for; null for now. */
  asOf: AsOf | null;
  /** One row per event up to `asOf`, in seq order. */
  rows: AuditRow[];
  /** The plan folded from exactly those events: as of `asOf`, or now. */
  state: PlanAsOf;
}

export async function auditPlan(log: LedgerLog, planId: string, asOf: AsOf | null, show?: (events: PlanEvent[]) => PlanEvent[]): Promise<PlanAudit> {
  const records = await readPlanHistory(log, planId);
  const upTo = records.filter((r) => isBefore(r.event, asOf));
  // `show` (the CLI: secret fields redacted) changes what the rows say, never the plan state or its digests.
  const shown = show ? show(upTo.map((r) => r.event)) : undefined;
  return {
    planId,
    topic: log.names.events,
    partition: log.partitionOf(planId),
    events: records.length,
    asOf,
    rows: auditRows(shown ? upTo.map((r, i) => ({ ...r, event: shown[i]! })) : upTo),
    state: planAsOf(planId, upTo.map((r) => r.event), null),
  };
}

/** A plan rebuilt from its events alone with the domain's `evolve`. */
export interface PlanReplay {
  ok: true;
  planId: string;
  status: PlanStatus;
  /** seq of the last event applied (the plan's, or the last one up to `until`). */
  seq: number;
  /** Number of items. */
  items: number;
  /** The plan digest (what an approval names). */
  digest: string;
  /** `stateDigest` of the rebuilt state: equal in every process that folds the same events. */
  stateDigest: string;
  /** Events of the plan in the log (all of them, also with `until`). */
  events: number;
  state: PlanState;
}

/** A plan whose events do not fold into a state (`verify` names the broken event). */
export interface ReplayFailure {
  ok: false;
  planId: string;
  events: number;
  /** Why the fold stopped. */
  reason: string;
}

function rebuild(events: readonly PlanEvent[], until: AsOf | null): PlanState | undefined {
  const upTo: PlanEvent[] = [];
  for (const e of events) {
    if (!isBefore(e, until)) break;
    upTo.push(e);
  }
  return evolveAll(undefined, upTo); // one fold: one copy of what the events change
}

/** Rebuilds one plan up to `until` (null: all of it); undefined when it did not exist yet at that point. */
export function replayHistory(planId: string, records: readonly LoggedEvent[], until: AsOf | null): PlanReplay | ReplayFailure | undefined {
  let s: PlanState | undefined;
  try {
    s = rebuild(records.map((r) => r.event), until);
  } catch (e) {
    return { ok: false, planId, events: records.length, reason: (e as Error).message };
  }
  if (!s || s.status === 'none') return undefined;
  return { ok: true, planId: s.planId, status: s.status, seq: s.seq, items: s.itemOrder.length, digest: s.digest, stateDigest: stateDigest(s), events: records.length, state: s };
}

/** One line for a plan that cannot be rebuilt. */
export function describeReplayFailure(f: ReplayFailure): string {
  return `plan ${f.planId} cannot be rebuilt: ${f.reason} (see plan-ledger verify ${f.planId})`;
}

/**
 * Rebuilds one plan up to `until`. `NOT_FOUND` for an unknown plan or one that did not exist yet at
 * `until` (`untilText` says how it was asked for); `INTEGRITY` when its events do not fold.
 */
export async function replayPlan(log: LedgerLog, planId: string, until: AsOf | null, untilText?: string): Promise<PlanReplay> {
  const r = replayHistory(planId, await readPlanHistory(log, planId), until);
  if (r?.ok === false) throw new LedgerError('INTEGRITY', describeReplayFailure(r), { broken: 1 });
  if (r === undefined) throw new LedgerError('NOT_FOUND', `plan ${planId} did not exist yet at ${untilText}`, { planId });
  return r;
}

/**
 * Verifies a plan in the live ledger: the checks of {@link verifyPlan}, with the second rebuild fed by an
 * Avro round trip through the codec and every snapshot still on the snapshots topic compared with a replay.
 */
export async function verifyFromLog(log: LedgerLog, planId: string, records?: LoggedEvent[], duplicates?: readonly DuplicateRecord[]): Promise<PlanVerification> {
  const copies = records === undefined ? new CopyCounter() : undefined;
  const recs = records ?? (await log.readPlan(planId, copies));
  const dups = duplicates ?? copies?.duplicates();
  const roundTripped = await Promise.all(recs.map((r) => log.codec.decodeEvent(log.codec.encodeEvent(r.event))));
  // No snapshot of the plan is older than its first event (less the clock margin the client's reads use).
  const created = recs.find((r) => r.event.seq === 1)?.event.occurredAt;
  const snapshots = await log.readSnapshots(planId, created !== undefined ? { since: created - PLAN_START_MARGIN_MS } : {});
  const verdict = verifyPlan({ planId, records: recs, roundTripped, snapshots, ...(dups ? { duplicates: dups } : {}) });
  return checkLineage(log, recs, await checkPayloads(log, planId, recs, verdict));
}

/**
 * The `lineage` check of a fork: its source's log holds, at the fork point, the event whose hash the fork's
 * PlanCreated names, on an intact chain up to there; and every item the fork inherited was completed there
 * with exactly the output the fork recorded. A plan that is not a fork gets no such check.
 */
async function checkLineage(log: LedgerLog, recs: readonly LoggedEvent[], verdict: PlanVerification): Promise<PlanVerification> {
  const first = recs.find((r) => r.event.seq === 1);
  const origin = first?.event.type === 'PlanCreated' ? first.event.data.forkedFrom : undefined;
  if (first === undefined || origin == null) return verdict;
  const fail = (reason: string): PlanVerification => ({
    ...verdict,
    ok: false,
    checks: [...verdict.checks, { name: 'lineage', ok: false, detail: reason }],
    firstBroken: verdict.firstBroken ?? { check: 'lineage', seq: 1, eventId: first.event.eventId, partition: first.partition, offset: first.offset, reason },
  });
  const source = (await log.readPlan(origin.planId)).map((r) => r.event).filter((e) => e.seq <= origin.seq);
  const at = source.find((e) => e.seq === origin.seq);
  if (at === undefined) return fail(`source ${origin.planId} has no event at seq ${origin.seq} (erased, or never there)`);
  if (!verifyChain(source).ok || source.length !== origin.seq) return fail(`source ${origin.planId}'s chain up to seq ${origin.seq} does not verify`);
  if (at.hash !== origin.chainHead) return fail(`source ${origin.planId}'s event ${origin.seq} has hash ${at.hash.slice(0, 16)}, the fork names ${origin.chainHead.slice(0, 16)}`);
  const then = evolveAll(undefined, source) as PlanState;
  let inherited = 0;
  for (const r of recs) {
    if (r.event.type !== 'ItemInherited') continue;
    const it = getItem(then, r.event.data.itemId);
    if (it?.status !== 'completed' || it.outputJson !== r.event.data.outputJson) {
      return fail(`item ${r.event.data.itemId} (seq ${r.event.seq}) is not what ${origin.planId} completed by seq ${origin.seq}`);
    }
    inherited += 1;
  }
  return { ...verdict, checks: [...verdict.checks, { name: 'lineage', ok: true, detail: `forked from ${origin.planId} at seq ${origin.seq} (hash ${origin.chainHead.slice(0, 16)}); ${inherited} inherited output(s) equal the source's` }] };
}

/** The payload texts an event carries (item inputs, outputs, checkpoints, evidence). */
function payloadsOf(e: PlanEvent): Array<string | null> {
  switch (e.type) {
    case 'ItemAdded':
      return [e.data.item.inputJson];
    case 'ResultCommitted':
      return [e.data.outputJson];
    case 'ItemCheckpointed':
      return [e.data.stateJson];
    case 'EvidenceRecorded':
      return [e.data.valueJson];
    case 'ItemSignalled':
      return [e.data.dataJson];
    case 'ItemInherited':
      return [e.data.outputJson];
    default:
      return [];
  }
}

/**
 * The `payloads` check: every payload stored by reference is read from the blobs topic and must match the
 * sha256 and size its event (and so the hash chain) holds. A plan with none gets no such check.
 */
async function checkPayloads(log: LedgerLog, planId: string, recs: readonly LoggedEvent[], verdict: PlanVerification): Promise<PlanVerification> {
  const refs = recs.flatMap((r) => payloadsOf(r.event).flatMap((json) => (parseRef(json) !== undefined ? [{ rec: r, json: json! }] : [])));
  if (!refs.length) return verdict;
  const reader = new BlobReader({ kafka: log.kafka, admin: log.admin, topic: log.names.blobs, partitions: log.config.partitions, cacheBytes: 0 });
  for (const { rec, json } of refs) {
    try {
      await reader.resolve(planId, json);
    } catch (e) {
      const reason = `payload of seq ${rec.event.seq} (${rec.event.type}) does not verify: ${(e as Error).message}`;
      return {
        ...verdict,
        ok: false,
        checks: [...verdict.checks, { name: 'payloads', ok: false, detail: reason }],
        firstBroken: verdict.firstBroken ?? { check: 'payloads', seq: rec.event.seq, eventId: rec.event.eventId, partition: rec.partition, offset: rec.offset, reason },
      };
    }
  }
  return { ...verdict, checks: [...verdict.checks, { name: 'payloads', ok: true, detail: `${refs.length} payload(s) stored by reference match their sha256` }] };
}

/** Verifies one plan of the live ledger; `NOT_FOUND` for an unknown plan. A broken plan is a result, not a throw. */
export async function verifyPlanInLog(log: LedgerLog, planId: string): Promise<PlanVerification> {
  const copies = new CopyCounter();
  const records = await readPlanHistory(log, planId, copies);
  return verifyFromLog(log, planId, records, copies.duplicates());
}

/**
 * Rebuilds every plan of the log that existed at `until`, streaming: one plan at a time, as
 * {@link LedgerLog.streamPlans} hands them over, never the whole topic in memory. `onResult` gets each
 * rebuild (or failure) in the order the plans' last records appear.
 */
export async function replayAll(log: LedgerLog, until: AsOf | null, onResult: (r: PlanReplay | ReplayFailure) => void | Promise<void>, onProgress?: (done: number, total: number) => void): Promise<void> {
  await log.streamPlans(async (planId, records, poison) => {
    if (poison) return onResult({ ok: false, planId: displayId(planId), events: records.length, reason: poison.message });
    const r = replayHistory(planId, records, until);
    if (r !== undefined) await onResult(r);
  }, onProgress);
}

/**
 * Verifies every plan of the log, streaming (see {@link replayAll}). Commands sent to a plan that never
 * existed leave a valid chain of rejections: nothing to verify there.
 */
export async function verifyAll(log: LedgerLog, onResult: (v: PlanVerification) => void | Promise<void>, onProgress?: (done: number, total: number) => void): Promise<void> {
  await log.streamPlans(async (planId, records, poison, duplicates) => {
    if (poison) {
      // A record of the plan does not decode: the plan does not verify, and the result says where.
      const details = poison.details as { partition?: number; offset?: string };
      return onResult({
        planId: displayId(planId),
        ok: false,
        events: records.length,
        head: null,
        stateDigest: null,
        checks: [{ name: 'content', ok: false, detail: poison.message }],
        firstBroken: { check: 'content', seq: null, eventId: null, partition: details.partition ?? null, offset: details.offset ?? null, reason: poison.message },
      });
    }
    if (records[0]?.event.seq === 1 && onlyRejections(records)) return;
    await onResult(await verifyFromLog(log, planId, records, duplicates ?? []));
  }, onProgress);
}

/** A plan id for a report: a record whose key names no plan is shown by its key's bytes. */
function displayId(streamId: string): string {
  return streamId.startsWith('\u0000') ? `(record key 0x${streamId.slice(1)})` : streamId;
}
