// Chunked snapshot records without a broker: how a value is cut, keyed and put back together, and every
// way a head can fail to assemble (each one makes the reader replay the plan instead of trusting it).
import { describe, expect, it } from 'vitest';
import type { PlanState } from '../../src/plan/index.js';
import {
  assembleSnapshotValue,
  parseSnapshotChunkKey,
  planSnapshotRecords,
  SNAPSHOT_CHUNKS_HEADER,
  SNAPSHOT_SHA256_HEADER,
  SnapshotChunks,
  snapshotChunkKey,
  snapshotExceptionsOf,
  snapshotMessages,
  snapshotOf,
  SNAPSHOT_SUMMARY_HEADER,
  summarize,
  summaryOfHead,
  watermarkMessage,
  type PlanSnapshot,
} from '../../src/projection/index.js';

/** A stand-in codec: the JSON of the snapshot (the cutting does not care what the bytes are). */
const codec = { encodeSnapshot: (s: PlanSnapshot) => Buffer.from(JSON.stringify(s)) };

function state(planId: string, why: string, status: PlanState['status'] = 'running'): PlanState {
  return { planId, seq: 3, status, goal: 'g', mode: 'execute', labels: { team: 'x' }, parent: null, digest: 'd1', createdAt: 1, updatedAt: 2, itemOrder: ['a'], items: { a: { why, status: 'pending' } } } as unknown as PlanState;
}

describe('chunked snapshots', () => {
  it('keeps a snapshot under the chunk size as one record, and cuts a larger one into chunks then a head', () => {
    const small = snapshotMessages(codec, state('p1', 'x'), 2, '10', 5, 1000);
    expect(small).toHaveLength(1);
    expect(small[0]!.key).toBe('p1');
    expect(small[0]!.headers[SNAPSHOT_CHUNKS_HEADER]).toBeUndefined();

    const big = snapshotMessages(codec, state('p1', 'y'.repeat(2500)), 2, '10', 5, 1000);
    const whole = codec.encodeSnapshot(snapshotOf(state('p1', 'y'.repeat(2500)), 2, '10', 5));
    expect(whole.length).toBeGreaterThan(2000);
    expect(whole.length).toBeLessThanOrEqual(3000);
    expect(big.map((m) => m.key)).toEqual(['__chunk:p1/0', '__chunk:p1/1', '__chunk:p1/2', 'p1']);
    expect(big.slice(0, 3).map((m) => m.value.length)).toEqual([1000, 1000, whole.length - 2000]);
    expect(Buffer.concat(big.slice(0, 3).map((m) => m.value)).equals(whole)).toBe(true);
    const head = big[3]!;
    expect(head.headers[SNAPSHOT_CHUNKS_HEADER]).toBe('3');
    expect(head.headers['plan-status']).toBe('running');
    expect(JSON.parse(head.value.toString()).stateJson).toBe(''); // a reader without chunks does not trust it
    for (const m of big) expect(m.partition).toBe(2);
  });

  it('assembles a head from the latest chunks and refuses a missing, foreign or altered chunk', () => {
    const msgs = snapshotMessages(codec, state('p1', 'z'.repeat(2500)), 0, '1', 1, 1000);
    const head = msgs.at(-1)!;
    const chunks = new SnapshotChunks();
    for (const m of msgs.slice(0, -1)) expect(chunks.offer(m.key, m)).toBe(true);
    expect(chunks.offer('p1', head)).toBe(false);
    const ok = chunks.assemble('p1', head);
    expect(ok.ok && JSON.parse(ok.value.toString()).stateJson).toContain('zzzz');
    expect(chunks.counts()).toEqual(new Map([['p1', 3]]));

    const byIndex = (f: (i: number) => { value: Buffer | null; headers?: Record<string, string> } | undefined) => assembleSnapshotValue(head, f);
    const chunk = (i: number) => msgs[i];
    expect(byIndex((i) => (i === 1 ? undefined : chunk(i)))).toEqual({ ok: false, reason: 'chunk 1 of 3 is missing' });
    expect(byIndex((i) => (i === 2 ? { ...chunk(i)!, headers: { [SNAPSHOT_SHA256_HEADER]: 'f'.repeat(64) } } : chunk(i)))).toEqual({ ok: false, reason: 'chunk 2 of 3 belongs to another snapshot' });
    expect(byIndex((i) => (i === 0 ? { ...chunk(i)!, value: Buffer.from('x'.repeat(1000)) } : chunk(i)))).toEqual({ ok: false, reason: "chunks do not match the head's sha256" });
    chunks.offer('__chunk:p1/1', { value: null });
    expect(chunks.assemble('p1', head)).toEqual({ ok: false, reason: 'chunk 1 of 3 is missing' });
    // A one-record snapshot assembles to itself.
    const one = snapshotMessages(codec, state('p2', 'x'), 0, '1', 1, 1000)[0]!;
    expect(assembleSnapshotValue(one, () => undefined)).toEqual({ ok: true, value: one.value });
  });

  it('puts the plan\'s summary on a chunked head only, and takes it back only when it is well formed and names the head\'s plan and seq', () => {
    const s = state('p1', 'y'.repeat(2500));
    expect(snapshotMessages(codec, state('p1', 'x'), 2, '10', 5, 1000)[0]!.headers[SNAPSHOT_SUMMARY_HEADER]).toBeUndefined();
    const head = snapshotMessages(codec, s, 2, '10', 5, 1000).at(-1)!;
    const expected = summarize({ planId: 'p1', state: s, stalled: null });
    expect(expected.progress).toEqual({ total: 1, pending: 1, running: 0, completed: 0, failed: 0, cancelled: 0 });
    const own = { planId: 'p1', seq: 3 };
    expect(summaryOfHead(head.headers, own)).toEqual(expected);
    expect(summaryOfHead({}, own)).toBeNull(); // an older writer's head
    expect(summaryOfHead(head.headers, { planId: 'p2', seq: 3 })).toBeNull();
    expect(summaryOfHead(head.headers, { planId: 'p1', seq: 4 })).toBeNull();
    const bad = (change: Record<string, unknown>) => summaryOfHead({ [SNAPSHOT_SUMMARY_HEADER]: JSON.stringify({ ...expected, ...change }) }, own);
    expect(bad({})).toEqual(expected);
    expect(bad({ extra: 'x' })).toEqual(expected); // a later writer's extra field is not passed on
    const refused: Array<Record<string, unknown>> = [
      { status: 'finished' },
      { goal: 7 },
      { digest: null },
      { mode: 3 },
      { createdAt: -1 },
      { createdAt: '1' },
      { updatedAt: 1.5 },
      { labels: { team: 1 } },
      { labels: ['x'] },
      { progress: { ...expected.progress, total: -1 } },
      { progress: null },
      { parent: 'p0' },
    ];
    for (const change of refused) expect(bad(change), JSON.stringify(change)).toBeNull();
    for (const raw of ['', 'null', '[]', '{', '"p1"']) expect(summaryOfHead({ [SNAPSHOT_SUMMARY_HEADER]: raw }, own), raw).toBeNull();
  });

  it('names chunk keys that no plan id can collide with', () => {
    expect(snapshotChunkKey('plan-7', 12)).toBe('__chunk:plan-7/12');
    expect(parseSnapshotChunkKey('__chunk:a:b/3')).toEqual({ planId: 'a:b', index: 3 });
    for (const k of ['plan-7', '__watermark', '__chunk:/1', '__chunk:p/x', '__chunk:p/-1', '__chunk:p']) expect(parseSnapshotChunkKey(k), k).toBeNull();
  });

  it('moves a finished plan and its chunks to the archive, and tombstones its chunk keys in the snapshots topic', () => {
    const topics = { snapshots: 'snap', archive: 'arch' };
    const live = planSnapshotRecords(codec, topics, state('p1', 'q'.repeat(2500)), 1, '9', 1, { chunkBytes: 1000, staleChunks: 5 });
    expect(live.chunks).toBe(3);
    expect(live.snapshots.map((m) => [m.key, m.value === null])).toEqual([
      ['__chunk:p1/0', false],
      ['__chunk:p1/1', false],
      ['__chunk:p1/2', false],
      ['p1', false],
      ['__chunk:p1/3', true], // left over from a bigger snapshot before
      ['__chunk:p1/4', true],
    ]);
    const done = planSnapshotRecords(codec, topics, state('p1', 'q'.repeat(2500), 'completed'), 1, '9', 1, { chunkBytes: 1000, staleChunks: 3 });
    expect(done.archive.map((m) => m.key)).toEqual(['__chunk:p1/0', '__chunk:p1/1', '__chunk:p1/2', 'p1']);
    expect(done.snapshots.map((m) => [m.key, m.value])).toEqual([
      ['__chunk:p1/0', null],
      ['__chunk:p1/1', null],
      ['__chunk:p1/2', null],
      ['p1', null],
    ]);
  });

  it('carries snapshot exceptions in the watermark as canonical JSON, and reads none from a plain one', () => {
    const w = watermarkMessage(codec, 1, '41', 7, 1, new Map([['b', '12'], ['a', '0']]));
    const decoded = JSON.parse(w.value.toString()) as PlanSnapshot;
    expect(decoded.stateJson).toBe('{"snapshotExceptions":{"a":"0","b":"12"}}');
    expect(snapshotExceptionsOf(decoded)).toEqual(new Map([['a', '0'], ['b', '12']]));
    expect(snapshotExceptionsOf(JSON.parse(watermarkMessage(codec, 1, '41', 7, 1).value.toString()) as PlanSnapshot).size).toBe(0);
    expect(snapshotExceptionsOf({ stateJson: 'not json' }).size).toBe(0);
    expect(snapshotExceptionsOf({ stateJson: '{"snapshotExceptions":{"a":-1,"b":"x","c":"3"}}' })).toEqual(new Map([['c', '3']]));
  });
});
