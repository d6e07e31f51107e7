import { describe, expect, it } from 'vitest';
import { buildBundle, verifyBundle, type ExportBundle } from '../../src/audit/bundle.js';
import { verifyPlan } from '../../src/audit/verify.js';
import { isLedgerError } from '../../src/errors.js';
import { eventHash, sha256Hex, stateDigest } from '../../src/plan/index.js';
import { snapshotOf } from '../../src/projection/snapshot.js';
import { fold } from '../plan/fixtures.js';
import { history, logged, schemas } from './fixtures.js';

const h = history();

function bundle(): ExportBundle {
  const { events } = h;
  return buildBundle({ planId: 'plan-1', topicPrefix: 'p', topic: 'p.plan-events', partition: 0, records: logged(events), schemas, exportedAt: 0 });
}

const copy = (b: ExportBundle): ExportBundle => JSON.parse(JSON.stringify(b)) as ExportBundle;

describe('export bundles', () => {
  it('carry the events, their writer schema, hashes, the chain head and the final digests', () => {
    const b = bundle();
    const { events, state } = h;
    expect(Object.keys(b.schemas)).toEqual(['42']);
    expect(b.events.map((e) => e.hash)).toEqual(events.map((e) => e.hash));
    expect(b.chain).toEqual({ genesis: '0'.repeat(64), head: events[events.length - 1]!.hash, length: events.length });
    expect(b.final).toEqual({ status: 'completed', seq: state.seq, planDigest: state.digest, stateDigest: stateDigest(state) });
  });

  it('verify offline when untouched (after a JSON round trip)', () => {
    const v = verifyBundle(copy(bundle()));
    expect(v.ok).toBe(true);
    expect(v.checks.map((c) => c.name)).toEqual(['content', 'seq', 'chain', 'head', 'determinism', 'final']);
    expect(v.firstBroken).toBeNull();
  });

  it('name the edited event', () => {
    const b = copy(bundle());
    b.events[4]!.event.actor = 'mallory';
    const v = verifyBundle(b);
    expect(v.ok).toBe(false);
    expect(v.firstBroken).toMatchObject({ seq: 5, eventId: 'plan-1:5', offset: '8' });
    expect(v.firstBroken!.reason).toContain('does not match its hash');
  });

  it('name the edited event even when its hashes were recomputed (the next link breaks)', () => {
    const b = copy(bundle());
    const e = b.events[3]!;
    (e.event.data as { itemId?: string }).itemId = 'lookup';
    e.event.occurredAt += 1;
    e.event.hash = eventHash(e.event);
    e.hash = e.event.hash;
    const v = verifyBundle(b);
    expect(v.ok).toBe(false);
    expect(v.firstBroken).toMatchObject({ check: 'chain', seq: 5 });
    expect(v.firstBroken!.reason).toContain('prev mismatch');
  });

  it('detect events removed at the end against the recorded head', () => {
    const b = copy(bundle());
    b.events.pop();
    const v = verifyBundle(b);
    expect(v.ok).toBe(false);
    expect(v.firstBroken!.check).toBe('head');
  });

  it('detect an event that does not fit its writer schema', () => {
    const b = copy(bundle());
    (b.events[0]!.event as { seq: unknown }).seq = 'one';
    const v = verifyBundle(b);
    expect(v.firstBroken).toMatchObject({ check: 'content', eventId: 'plan-1:1' });
    expect(v.firstBroken!.reason).toMatch(/writer schema 42/);
  });

  it('refuse something that is not a bundle, naming the field', () => {
    try {
      verifyBundle({ format: 'plan-ledger.bundle/1', planId: 'x', schemas: {}, events: [{}] });
      expect.unreachable();
    } catch (e) {
      expect(isLedgerError(e, 'VALIDATION')).toBe(true);
      expect((e as Error).message).toContain('events[0]');
    }
  });
});

describe('verifyPlan', () => {
  const { events } = history();

  it('finds a seq gap and names the event after it', () => {
    const v = verifyPlan({ planId: 'plan-1', records: logged(events.filter((e) => e.seq !== 3)) });
    expect(v.ok).toBe(false);
    expect(v.firstBroken).toMatchObject({ check: 'seq', seq: 4 });
  });

  it('compares snapshots with a replay up to their seq', () => {
    const records = logged(events);
    const at = (seq: number) => snapshotOf(fold(events.slice(0, seq))!, 0, records[seq - 1]!.offset, 0);
    expect(verifyPlan({ planId: 'plan-1', records, snapshots: [{ snapshot: at(4), offset: '0' }, { snapshot: at(8), offset: '1' }] }).ok).toBe(true);

    // Self-consistent (its digest matches its JSON) but not what the events say at seq 7.
    const stateJson = at(6).stateJson.replace('"seq":6', '"seq":7');
    const lying = { ...at(7), stateJson, stateDigest: sha256Hex(stateJson) };
    const v = verifyPlan({ planId: 'plan-1', records, snapshots: [{ snapshot: lying, offset: '5' }] });
    expect(v.ok).toBe(false);
    expect(v.firstBroken!.check).toBe('snapshots');
    expect(v.firstBroken).toMatchObject({ seq: 7, offset: records[6]!.offset });
    expect(v.firstBroken!.reason).toMatch(/^snapshot at seq 7 \(snapshots offset 5\): stateDigest \w+ but a replay to seq 7 gives/);
  });

  it('fails on a key written more than once, naming its copies, and passes when each key is in one record', () => {
    const records = logged(events);
    const clean = verifyPlan({ planId: 'plan-1', records, duplicates: [] });
    expect(clean.checks.find((c) => c.name === 'duplicates')).toEqual({ name: 'duplicates', ok: true, detail: 'every key in one record' });
    expect(clean.ok).toBe(true);
    const v = verifyPlan({ planId: 'plan-1', records, duplicates: [{ seq: 3, offsets: ['4', '9'], identical: true }, { seq: 5, offsets: ['8', '11', '12'], identical: false }] });
    expect(v.ok).toBe(false);
    expect(v.firstBroken).toMatchObject({ check: 'duplicates', seq: 3, offset: records[2]!.offset });
    expect(v.checks.find((c) => c.name === 'duplicates')?.detail).toBe('2 keys written more than once: seq 3 at offsets 0/4, 0/9 (identical bytes); seq 5 at offsets 0/8, 0/11, 0/12 (differing)');
    // The chain is still checked over the last copies, and holds.
    expect(v.checks.find((c) => c.name === 'chain')?.ok).toBe(true);
    // Without the input (an export bundle) there is no such check.
    expect(verifyPlan({ planId: 'plan-1', records }).checks.map((c) => c.name)).not.toContain('duplicates');
  });

  it('reports disagreeing rebuilds', () => {
    const other = history().events.map((e) => (e.seq === 2 ? { ...e, data: { ...e.data, item: { ...(e.data as { item: object }).item, title: 'changed' } } } : e));
    const v = verifyPlan({ planId: 'plan-1', records: logged(events), roundTripped: other as typeof events });
    expect(v.firstBroken?.check).toBe('determinism');
  });
});
