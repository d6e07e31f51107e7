import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LedgerError } from '../../src/errors.js';
import { sealEvent, stateDigest, type PlanEvent } from '../../src/plan/index.js';
import { PartitionProjection, processEventBatch, processEventRecord, type EventRecord } from '../../src/projection/index.js';
import { LedgerWriter } from './support.js';

/**
 * processEventBatch (the replay path: promise-free decode, one fold per plan and batch) must leave a
 * projection exactly as processEventRecord on every record in order does — over histories with re-sends,
 * gaps, forks, tombstones, undecodable records, unknown writer schemas and keys that lie.
 */

function history(planId: string, itemCount: number, failFirstTry: boolean): PlanEvent[] {
  const w = new LedgerWriter(undefined as never);
  for (const step of w.lifecycle(planId, itemCount, { failFirstTry })) w.decide(step);
  return w.events.get(planId)!;
}

/**
 * Stands in for the Avro codec in this pure test (the real codec is proven against the registry in
 * test/codec): a value is `K` + JSON for a known writer schema, `U` + JSON for one the codec has not seen
 * yet (decodeKnownEvent answers undefined, decodeEvent resolves), anything else is corrupt.
 */
const codec = {
  decodeKnownEvent(value: Buffer): PlanEvent | undefined {
    const tag = value.toString('utf8', 0, 1);
    if (tag === 'U') return undefined;
    if (tag !== 'K') throw new LedgerError('SCHEMA', 'PlanEvent: not valid Avro (test)', { reason: 'corrupt' });
    return JSON.parse(value.toString('utf8', 1)) as PlanEvent;
  },
  async decodeEvent(value: Buffer): Promise<PlanEvent> {
    const tag = value.toString('utf8', 0, 1);
    if (tag !== 'K' && tag !== 'U') throw new LedgerError('SCHEMA', 'PlanEvent: not valid Avro (test)', { reason: 'corrupt' });
    return JSON.parse(value.toString('utf8', 1)) as PlanEvent;
  },
};

type Entry = { key: string | null; value: Buffer | null };
const eventEntry = (e: PlanEvent, tag: 'K' | 'U' = 'K'): Entry => ({ key: `${e.planId}:${e.seq}`, value: Buffer.from(tag + JSON.stringify(e)) });

const plansArb = fc.array(fc.record({ items: fc.integer({ min: 1, max: 4 }), failFirstTry: fc.boolean() }), { minLength: 1, maxLength: 4 });
const disturbance = fc.oneof(
  fc.record({ kind: fc.constant('resend' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('garbage' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('unknownSchema' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('fork' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('badKey' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('wrongPlanKey' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('erase' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('moveLater' as const), at: fc.nat() }),
);

/** Interleaves the plans' events as an executor appends them, then applies the disturbances. */
function buildLog(plans: Array<{ items: number; failFirstTry: boolean }>, picks: number[], disturbances: Array<{ kind: string; at: number }>): Entry[] {
  const queues = plans.map((p, i) => history(`plan-${i}`, p.items, p.failFirstTry));
  const log: Entry[] = [];
  let pick = 0;
  while (queues.some((q) => q.length > 0)) {
    const open = queues.filter((q) => q.length > 0);
    const q = open[(picks[pick++ % Math.max(picks.length, 1)] ?? 0) % open.length]!;
    log.push(eventEntry(q.shift()!));
  }
  for (const d of disturbances) {
    const i = d.at % log.length;
    const at = log[i]!;
    const event = at.value === null || at.value.toString('utf8', 0, 1) === 'G' ? null : (JSON.parse(at.value.toString('utf8', 1)) as PlanEvent);
    switch (d.kind) {
      case 'resend':
        log.push({ ...at });
        break;
      case 'drop':
        log.splice(i, 1);
        break;
      case 'garbage':
        log[i] = { key: at.key, value: Buffer.from('G garbage') };
        break;
      case 'unknownSchema':
        if (event) log[i] = eventEntry(event, 'U');
        break;
      case 'fork':
        if (event) log.push(eventEntry(sealEvent({ ...event, occurredAt: event.occurredAt + 1 } as never)));
        break;
      case 'badKey':
        log[i] = { key: 'no-seq-here', value: at.value };
        break;
      case 'wrongPlanKey':
        if (event) log[i] = { key: `${event.planId}:${event.seq + 1}`, value: at.value };
        break;
      case 'erase':
        if (event) for (let s = 1; s <= event.seq; s++) log.push({ key: `${event.planId}:${s}`, value: null });
        break;
      case 'moveLater':
        log.splice(i, 1);
        log.push(at);
        break;
    }
  }
  return log;
}

function records(log: Entry[]): EventRecord[] {
  return log.map((e, i) => ({ offset: String(i), key: e.key === null ? null : Buffer.from(e.key), value: e.value }));
}

/** Everything a reader of a projection can see. */
function observe(p: PartitionProjection, poison: Array<{ offset: string; reason: string; planId: string | null }>) {
  const plans = [...p.plans.values()]
    .map((e) => ({ planId: e.planId, digest: e.state === undefined ? null : stateDigest(e.state), lastOffset: e.lastOffset, stalled: e.stalled }))
    .sort((a, b) => a.planId.localeCompare(b.planId));
  return {
    plans,
    poison: [...poison].sort((a, b) => Number(a.offset) - Number(b.offset)),
    lastOffset: p.lastOffset,
    eventsApplied: p.eventsApplied,
    maxFencingToken: p.maxFencingToken,
    watermark: p.watermarkOffset(),
    gaps: p.settleGaps().map((g) => g.outcome),
    dirty: p.policy.dirty().sort(),
    due: p.policy.takeDue().sort(),
  };
}

async function oneByOne(rs: EventRecord[]) {
  const p = new PartitionProjection(0, { everyEvents: 5 });
  const poison: Array<{ offset: string; reason: string; planId: string | null }> = [];
  let applied = 0;
  for (const r of rs) {
    const o = await processEventRecord(p, codec, r);
    if (o.kind === 'applied') applied += 1 + o.drained.length;
    if (o.kind === 'poison') poison.push({ offset: o.offset, reason: o.decision.reason, planId: o.planId });
  }
  return { applied, seen: observe(p, poison) };
}

async function batched(rs: EventRecord[], cuts: number[]) {
  const p = new PartitionProjection(0, { everyEvents: 5 });
  const poison: Array<{ offset: string; reason: string; planId: string | null }> = [];
  let applied = 0;
  const bounds = [...new Set(cuts.map((c) => c % (rs.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...bounds, rs.length]) {
    if (to <= from) continue;
    const out = await processEventBatch(p, codec, rs.slice(from, to));
    applied += out.applied;
    for (const { outcome } of out.poison) poison.push({ offset: outcome.offset, reason: outcome.decision.reason, planId: outcome.planId });
    from = to;
  }
  return { applied, seen: observe(p, poison) };
}

describe('batched replay', () => {
  it('leaves the projection exactly as record-by-record replay does (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        plansArb,
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.array(disturbance, { maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 5 }),
        async (plans, picks, disturbances, cuts) => {
          const rs = records(buildLog(plans, picks, disturbances));
          const expected = await oneByOne(rs);
          const actual = await batched(rs, cuts);
          expect(actual).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  }, 60_000); // CPU-bound: a loaded 2-core machine needs more than the default 5 s

  it('folds a clean log in one run per plan and reports every poison record with its plan', async () => {
    const a = history('a', 3, true);
    const b = history('b', 2, false);
    const log: Entry[] = [...a.map((e) => eventEntry(e)), ...b.map((e) => eventEntry(e))];
    log.splice(a.length + 1, 1, { key: `b:2`, value: Buffer.from('G garbage') }); // b's second record cannot decode
    const rs = records(log);
    const p = new PartitionProjection(0);
    const out = await processEventBatch(p, codec, rs);
    expect(out.applied).toBe(a.length + 1); // all of a, and b's first event
    expect(out.poison.map((x) => [x.record.offset, x.outcome.planId, x.outcome.decision.reason])).toEqual([[String(a.length + 1), 'b', 'corrupt']]);
    expect(p.get('a')!.state!.status).toBe('completed');
    expect(p.get('a')!.state!.seq).toBe(a.length);
    expect(p.get('a')!.lastOffset).toBe(String(a.length - 1));
    expect(p.get('b')!.state!.seq).toBe(1);
    expect(p.get('b')!.stalled).toMatchObject({ reason: 'corrupt', seq: 2, heldEvents: b.length - 2 });
    expect(p.lastOffset).toBe(String(rs.length - 1));
    expect(p.eventsApplied).toBe(a.length + 1);
  });
});
