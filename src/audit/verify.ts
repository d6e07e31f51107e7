import { canonicalJson, evolveAll, stateDigest, verifyChain, type PlanEvent, type PlanState } from '../plan/index.js';
import { stateFromSnapshot, type PlanSnapshot } from '../projection/snapshot.js';
import type { DuplicateRecord } from '../kafka/index.js';
import type { PositionedEvent } from './timeline.js';

export type CheckName = 'seq' | 'duplicates' | 'chain' | 'head' | 'content' | 'determinism' | 'final' | 'snapshots' | 'payloads' | 'lineage';

export interface Check {
  name: CheckName;
  ok: boolean;
  detail: string;
}

/** The first event (or snapshot) that does not verify. */
export interface BrokenAt {
  check: CheckName;
  seq: number | null;
  eventId: string | null;
  partition: number | null;
  offset: string | null;
  reason: string;
}

export interface PlanVerification {
  planId: string;
  ok: boolean;
  events: number;
  /** Hash of the last event (chain head), or null when the chain is broken. */
  head: string | null;
  /** stateDigest of the plan rebuilt from its events. */
  stateDigest: string | null;
  checks: Check[];
  firstBroken: BrokenAt | null;
}

/** A snapshot as read from the snapshots topic, with its own offset there. */
export interface SnapshotAt {
  readonly snapshot: PlanSnapshot;
  readonly offset: string;
}

export interface VerifyInput {
  readonly planId: string;
  readonly records: readonly PositionedEvent[];
  /**
   * The same events after an independent decode (an Avro round trip through their writer schema), for the
   * determinism check. Must have the same length; omit to skip that rebuild.
   */
  readonly roundTripped?: readonly PlanEvent[];
  /** Snapshots of the plan to compare with a replay up to their seq. */
  readonly snapshots?: readonly SnapshotAt[];
  /** Head and final digest recorded elsewhere (an export bundle), to detect events removed at the end. */
  readonly expected?: { head?: string; stateDigest?: string; seq?: number };
  /**
   * Keys of the plan found in more than one record of the live topic (the records above are the last copy
   * of each): each is a failed `duplicates` check, with the copies' offsets. Omit when the source cannot
   * hold copies (an export bundle).
   */
  readonly duplicates?: readonly DuplicateRecord[];
  /** Problems found before (e.g. an event that does not fit its writer schema): reported as the `content` check. */
  readonly schemaProblems?: readonly { index: number; reason: string }[];
}

/** One fold of the events (one copy of what they change, not one copy of the items map per event). */
function fold(events: readonly PlanEvent[]): PlanState | undefined {
  return evolveAll(undefined, events);
}

/**
 * Fold in two halves with a snapshot-style hand-over between them (canonical JSON out, JSON.parse in), as a
 * restore from a snapshot does.
 */
function foldThroughSnapshot(events: readonly PlanEvent[]): PlanState | undefined {
  const mid = Math.floor(events.length / 2);
  const first = fold(events.slice(0, mid));
  const s = first === undefined ? undefined : (JSON.parse(canonicalJson(first)) as PlanState);
  return evolveAll(s, events.slice(mid));
}

function tryDigest(f: () => PlanState | undefined): { digest: string | null; error: string | null } {
  try {
    const s = f();
    return { digest: s ? stateDigest(s) : null, error: null };
  } catch (e) {
    return { digest: null, error: (e as Error).message };
  }
}

/**
 * Verifies one plan from its events alone: seq contiguous from 1, hash chain intact, projection
 * deterministic (a straight fold, a fold of independently decoded events and a fold through a snapshot
 * hand-over agree on stateDigest), and every snapshot agrees with a replay up to its seq.
 * Names the first broken event.
 *
 * @example
 * const v = verifyPlan({ planId, records, roundTripped });
 * if (!v.ok) console.error(`first broken event: ${v.firstBroken?.eventId} (${v.firstBroken?.reason})`);
 */
export function verifyPlan(input: VerifyInput): PlanVerification {
  const { planId, records } = input;
  const events = records.map((r) => r.event);
  const checks: Check[] = [];
  let firstBroken: BrokenAt | null = null;
  const at = (index: number) => records[index];
  const fail = (check: CheckName, index: number | null, reason: string): void => {
    checks.push({ name: check, ok: false, detail: reason });
    if (firstBroken) return;
    const r = index === null ? undefined : at(index);
    firstBroken = { check, seq: r?.event.seq ?? null, eventId: r?.event.eventId ?? null, partition: r?.partition ?? null, offset: r?.offset ?? null, reason };
  };
  const where = (index: number) => {
    const r = at(index);
    return r ? `event ${r.event.eventId} (seq ${r.event.seq}${r.offset !== '' ? `, offset ${r.partition}/${r.offset}` : ''})` : `event #${index}`;
  };

  if (input.schemaProblems?.length) {
    const p = input.schemaProblems[0]!;
    fail('content', p.index, `${where(p.index)}: ${p.reason}`);
  } else if (input.schemaProblems) {
    checks.push({ name: 'content', ok: true, detail: `${events.length} events fit their writer schemas and recorded hashes` });
  }

  if (input.duplicates?.length) {
    const d = input.duplicates;
    const partition = records[0]?.partition;
    const listed = d.slice(0, 10).map((x) => `seq ${x.seq} at offsets ${x.offsets.map((o) => (partition === undefined ? o : `${partition}/${o}`)).join(', ')} (${x.identical ? 'identical bytes' : 'differing'})`);
    fail('duplicates', events.findIndex((e) => e.seq === d[0]!.seq), `${d.length} key${d.length === 1 ? '' : 's'} written more than once: ${listed.join('; ')}${d.length > 10 ? '; …' : ''}`);
  } else if (input.duplicates) checks.push({ name: 'duplicates', ok: true, detail: 'every key in one record' });

  const gap = events.findIndex((e, i) => e.seq !== i + 1);
  if (gap >= 0) fail('seq', gap, `${where(gap)}: expected seq ${gap + 1}`);
  else checks.push({ name: 'seq', ok: true, detail: `seq 1..${events.length} contiguous` });

  const chain = verifyChain(events);
  const head = chain.ok ? chain.head : null;
  if (!chain.ok) fail('chain', chain.index, `${where(chain.index)}: ${chain.reason.replace('_', ' ')}`);
  else checks.push({ name: 'chain', ok: true, detail: `hash chain intact, head ${chain.head.slice(0, 16)}` });

  const exp = input.expected;
  if (exp?.head !== undefined || exp?.seq !== undefined) {
    const last = events[events.length - 1];
    if (exp.seq !== undefined && (last?.seq ?? 0) !== exp.seq) fail('head', events.length - 1, `the chain ends at seq ${last?.seq ?? 0}, expected ${exp.seq}`);
    else if (exp.head !== undefined && head !== null && head !== exp.head) fail('head', events.length - 1, `chain head ${head.slice(0, 16)} differs from the recorded head ${exp.head.slice(0, 16)}`);
    else if (head !== null) checks.push({ name: 'head', ok: true, detail: 'chain head matches the recorded head' });
  }

  const straight = tryDigest(() => fold(events));
  const passes = [{ name: 'evolve', ...straight }, { name: 'snapshot hand-over', ...tryDigest(() => foldThroughSnapshot(events)) }];
  if (input.roundTripped) {
    const rt = input.roundTripped;
    passes.push({ name: 'Avro round trip', ...tryDigest(() => fold(rt)) });
  }
  const broken = passes.find((p) => p.error !== null);
  if (broken) fail('determinism', null, `the ${broken.name} rebuild failed: ${broken.error}`);
  else if (passes.some((p) => p.digest !== straight.digest)) {
    fail('determinism', null, `rebuilds disagree: ${passes.map((p) => `${p.name} ${p.digest?.slice(0, 16)}`).join(', ')}`);
  } else checks.push({ name: 'determinism', ok: true, detail: `${passes.length} independent rebuilds agree on stateDigest ${straight.digest?.slice(0, 16)}` });

  if (exp?.stateDigest !== undefined && straight.digest !== null) {
    if (straight.digest !== exp.stateDigest) fail('final', null, `rebuilt stateDigest ${straight.digest.slice(0, 16)} differs from the recorded ${exp.stateDigest.slice(0, 16)}`);
    else checks.push({ name: 'final', ok: true, detail: 'final stateDigest matches the recorded one' });
  }

  if (input.snapshots) checkSnapshots(input.snapshots, records, checks, fail);

  return { planId, ok: checks.every((c) => c.ok), events: events.length, head, stateDigest: straight.digest, checks, firstBroken };
}

function checkSnapshots(
  snapshots: readonly SnapshotAt[],
  records: readonly PositionedEvent[],
  checks: Check[],
  fail: (check: CheckName, index: number | null, reason: string) => void,
): void {
  if (snapshots.length === 0) {
    checks.push({ name: 'snapshots', ok: true, detail: 'no snapshots of this plan to compare' });
    return;
  }
  const events = records.map((r) => r.event);
  // Snapshots come oldest first: one progressive fold serves them all (a fold from scratch per snapshot
  // would cost the plan's history once per snapshot).
  let progress: { seq: number; state: PlanState | undefined } = { seq: 0, state: undefined };
  const replayTo = (seq: number) =>
    tryDigest(() => {
      if (seq < progress.seq) return fold(events.slice(0, seq));
      progress = { seq, state: evolveAll(progress.state, events.slice(progress.seq, seq)) };
      return progress.state;
    });
  for (const { snapshot: s, offset } of snapshots) {
    const label = `snapshot at seq ${s.seq} (snapshots offset ${offset})`;
    const parsed = stateFromSnapshot(s);
    if (!parsed.ok) return fail('snapshots', null, `${label}: ${parsed.reason}`);
    const index = s.seq - 1;
    if (index < 0 || index >= events.length) return fail('snapshots', null, `${label}: the plan has no event with seq ${s.seq}`);
    const r = records[index]!;
    if (r.offset !== '' && String(s.eventsOffset) !== r.offset) {
      return fail('snapshots', index, `${label}: eventsOffset ${s.eventsOffset} but seq ${s.seq} is at offset ${r.offset}`);
    }
    const replay = replayTo(s.seq);
    if (replay.digest !== s.stateDigest) {
      return fail('snapshots', index, `${label}: stateDigest ${s.stateDigest.slice(0, 16)} but a replay to seq ${s.seq} gives ${replay.digest?.slice(0, 16) ?? replay.error}`);
    }
  }
  checks.push({ name: 'snapshots', ok: true, detail: `${snapshots.length} snapshot${snapshots.length === 1 ? '' : 's'} agree with a replay up to their seq` });
}

/** One line naming the first broken event, for the CLI's error output. */
export function describeBroken(v: PlanVerification): string {
  const b = v.firstBroken;
  if (!b) return `plan ${v.planId} verifies`;
  return `plan ${v.planId}: ${b.check} check failed: ${b.reason}`;
}
