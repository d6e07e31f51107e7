// The pure parts of the executors' announcements (src/executors/announcement.ts): liveness from a heartbeat's
// age, the fold of the compacted topic, decoding with corrupt, foreign and huge records, and the tool check.
import { describe, expect, it } from 'vitest';
import {
  announcementRecord,
  checkTools,
  executorList,
  heartbeatRecord,
  liveness,
  MAX_ANNOUNCEMENT_BYTES,
  staleAfterMs,
  stopRecords,
  type AnnouncementRecord,
} from '../../src/executors/index.js';

const TOPIC = 't.plan-executors';
const T0 = Date.parse('2026-12-05T01:00:00.000Z');

let offset = 0;
/** A record as the reader gets it, stamped by the broker at `at`. */
function rec(key: string | null, value: string | Buffer | null, at = T0): AnnouncementRecord {
  return { key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.isBuffer(value) ? value : Buffer.from(value), offset: String(offset++), timestamp: String(at) };
}

function announce(executorId: string, tools: string[], at = T0, heartbeatMs = 1000): AnnouncementRecord {
  const a = announcementRecord({ executorId, version: '0.1.0', host: 'h1', pid: 4242, startedAt: new Date(at).toISOString(), heartbeatMs, tools });
  return rec(a.key, a.value, at);
}

function beat(executorId: string, partitions: number[], at: number): AnnouncementRecord {
  const h = heartbeatRecord(executorId, at, partitions);
  return rec(h.key, h.value, at);
}

describe('liveness', () => {
  it('is live up to the bound and stale past it, with the age and the bound in the reason', () => {
    expect(staleAfterMs(5000)).toBe(15_000);
    expect(liveness(0, 3000)).toEqual({ live: true });
    expect(liveness(3000, 3000)).toEqual({ live: true });
    expect(liveness(3001, 3000)).toEqual({ live: false, reason: 'no heartbeat for 3.0 s (bound 3.0 s)' });
    expect(liveness(45_400, 15_000)).toEqual({ live: false, reason: 'no heartbeat for 45 s (bound 15 s)' });
  });

  it('measures the age from the last heartbeat, never below zero, and a stale bound the reader gives wins', () => {
    const records = [announce('ex-a', ['noop'], T0), beat('ex-a', [0, 1], T0 + 2000)];
    const fresh = executorList(records, T0 + 4000, TOPIC);
    expect(fresh.live.map((e) => [e.executorId, e.heartbeatAgeMs, e.staleAfterMs, e.partitions])).toEqual([['ex-a', 2000, 3000, [0, 1]]]);
    expect(fresh.live[0]!.lastHeartbeatAt).toBe('2026-12-05T01:00:02.000Z');
    const late = executorList(records, T0 + 5001, TOPIC);
    expect(late.live).toEqual([]);
    expect(late.stale.map((e) => [e.executorId, e.heartbeatAgeMs, e.staleReason])).toEqual([['ex-a', 3001, 'no heartbeat for 3.0 s (bound 3.0 s)']]);
    // A reader clock behind the broker's: age 0, not negative.
    expect(executorList(records, T0, TOPIC).live[0]!.heartbeatAgeMs).toBe(0);
    expect(executorList(records, T0 + 5001, TOPIC, { staleAfterMs: 60_000 }).live).toHaveLength(1);
  });
});

describe('the fold of the topic', () => {
  it('keeps the latest record per key; tombstones of a clean stop remove the executor', () => {
    const stop = stopRecords('ex-b').map((r) => rec(r.key, r.value, T0 + 10));
    const list = executorList([announce('ex-a', ['lookup_order']), announce('ex-b', ['effect', 'agent:support']), beat('ex-b', [2], T0 + 5), ...stop, beat('ex-a', [0, 1], T0 + 20), beat('ex-a', [0], T0 + 30)], T0 + 40, TOPIC);
    expect(list.live.map((e) => ({ id: e.executorId, tools: e.tools, partitions: e.partitions, version: e.version, host: e.host, pid: e.pid }))).toEqual([
      { id: 'ex-a', tools: ['lookup_order'], partitions: [0], version: '0.1.0', host: 'h1', pid: 4242 },
    ]);
    expect(list.stale).toEqual([]);
    expect(list.invalid).toEqual([]);
  });

  it('names the agents an executor serves from its agent:<name> tools', () => {
    const [e] = executorList([announce('ex-b', ['effect', 'agent:support', 'agent:triage'])], T0, TOPIC).live;
    expect(e!.tools).toEqual(['agent:support', 'agent:triage', 'effect']);
    expect(e!.agents).toEqual(['support', 'triage']);
  });
});

describe('bad records', () => {
  it('skips a corrupt, foreign or mismatched record with its reason and still lists the good ones', () => {
    const good = announce('ex-a', ['noop']);
    const list = executorList(
      [
        good,
        rec('announce:ex-bad', Buffer.from([0x00, 0x01, 0xff, 0xfe])),
        rec('announce:ex-array', '[1,2,3]'),
        rec('heartbeat:ex-a', JSON.stringify({ type: 'ExecutorHeartbeat', format: 1, executorId: 'someone-else', at: '2026-12-05T01:00:00Z', partitions: [0] })),
        rec('orders:42', '{"orderId":42}'),
        rec(null, 'no key at all'),
        rec('announce:ex-future', JSON.stringify({ type: 'ExecutorAnnounced', format: 9, executorId: 'ex-future' })),
        rec('announce:ex-tools', JSON.stringify({ type: 'ExecutorAnnounced', format: 1, executorId: 'ex-tools', version: '1', host: 'h', pid: 1, startedAt: '2026-12-05T01:00:00Z', heartbeatMs: 1000, tools: [1, 2] })),
        rec('heartbeat:ghost', heartbeatRecord('ghost', T0, [3]).value),
      ],
      T0 + 100,
      TOPIC,
    );
    expect(list.live.map((e) => e.executorId)).toEqual(['ex-a']);
    expect(list.invalid.map((r) => [r.key, r.reason])).toEqual([
      ['announce:ex-bad', 'not JSON'],
      ['announce:ex-array', 'not a JSON object'],
      ['heartbeat:ex-a', 'executorId "someone-else" does not match its key'],
      ['orders:42', 'foreign key: neither announce:<id> nor heartbeat:<id>'],
      [null, 'no key'],
      ['announce:ex-future', "format 9 is newer than this reader's 1"],
      ['announce:ex-tools', 'tools is not a list of names'],
      ['heartbeat:ghost', 'a heartbeat without a readable announcement'],
    ]);
    // Every skipped record says where it is.
    expect(list.invalid.every((r) => /^\d+$/.test(r.offset))).toBe(true);
  });

  it('keeps the first 100 foreign keys and only counts a flood of more', () => {
    const flood = Array.from({ length: 10_000 }, (_, i) => rec(`junk-${i}`, 'x'));
    const list = executorList([announce('ex-a', ['noop']), ...flood], T0, TOPIC);
    expect(list.live.map((e) => e.executorId)).toEqual(['ex-a']);
    expect(list.invalid).toHaveLength(101);
    expect(list.invalid.at(-1)).toEqual({ key: null, offset: flood.at(-1)!.offset, reason: '9900 more records of foreign keys, not kept (the first 100 foreign keys are listed)' });
  });

  it('a later good record of a key replaces a corrupt one', () => {
    const list = executorList([rec('announce:ex-a', '{not json'), announce('ex-a', ['noop'])], T0, TOPIC);
    expect(list.live.map((e) => e.executorId)).toEqual(['ex-a']);
    expect(list.invalid).toEqual([]);
  });

  it('takes an announcement of thousands of tools; one over the bound is skipped with its size', () => {
    const tools = Array.from({ length: 5000 }, (_, i) => `tool.number-${String(i).padStart(5, '0')}`);
    const big = announce('ex-big', tools);
    expect(big.value!.length).toBeLessThan(MAX_ANNOUNCEMENT_BYTES);
    const began = performance.now();
    const list = executorList([big], T0, TOPIC);
    expect(performance.now() - began).toBeLessThan(1000);
    expect(list.live[0]!.tools).toHaveLength(5000);
    expect(list.live[0]!.toolsOmitted).toBe(0);

    const forged = JSON.stringify({ type: 'ExecutorAnnounced', format: 1, executorId: 'ex-huge', version: '1', host: 'h', pid: 1, startedAt: '2026-12-05T01:00:00Z', heartbeatMs: 1000, tools: Array.from({ length: 20_000 }, (_, i) => `t${i}`.padEnd(20, 'x')) });
    const huge = executorList([rec('announce:ex-huge', forged)], T0, TOPIC);
    expect(huge.live).toEqual([]);
    expect(huge.invalid).toEqual([{ key: 'announce:ex-huge', offset: expect.any(String), reason: `announcement of ${Buffer.byteLength(forged)} bytes is over the 262144-byte bound` }]);
  });

  it('the writer lists the tools that fit its bound and counts the rest', () => {
    const tools = Array.from({ length: 30_000 }, (_, i) => `t${String(i).padStart(5, '0')}`.padEnd(24, 'x'));
    const a = announcementRecord({ executorId: 'ex-many', version: '0.1.0', host: 'h', pid: 1, startedAt: new Date(T0).toISOString(), heartbeatMs: 1000, tools });
    expect(Buffer.byteLength(a.value)).toBeLessThanOrEqual(MAX_ANNOUNCEMENT_BYTES);
    expect(a.announcement.tools.length + a.announcement.toolsOmitted).toBe(30_000);
    expect(a.announcement.toolsOmitted).toBeGreaterThan(0);
    const [e] = executorList([rec(a.key, a.value)], T0, TOPIC).live;
    expect(e!.toolsOmitted).toBe(a.announcement.toolsOmitted);
  });
});

describe('the tool check of a new plan', () => {
  const live = [announce('ex-orders', ['lookup_order', 'refund'], T0), announce('ex-b', ['agent:support', 'effect'], T0)];

  it('finds nothing to say when every tool is served', () => {
    expect(checkTools(['lookup_order', 'effect', 'lookup_order'], executorList(live, T0, TOPIC))).toEqual({ tools: ['effect', 'lookup_order'], unserved: [], conclusive: true });
  });

  it('names the unserved tools and the live executors with what they serve', () => {
    const c = checkTools(['lookup_ordr', 'refund'], executorList(live, T0, TOPIC));
    expect(c.unserved).toEqual(['lookup_ordr']);
    expect(c.warning).toBe('tool "lookup_ordr" is served by no live executor (live: ex-b serves agent:support, effect; ex-orders serves lookup_order, refund)');
    expect(checkTools(['a', 'b'], executorList(live, T0, TOPIC)).warning).toMatch(/^tools "a", "b" are served by no live executor \(live: /);
  });

  it('says that no executor is live instead of a list, counting the stale ones', () => {
    expect(checkTools(['noop'], executorList([], T0, TOPIC)).warning).toBe('no live executor has announced itself on t.plan-executors: nothing serves tool "noop" now');
    // A stale executor does not serve: its tools are not counted.
    const c = checkTools(['lookup_order'], executorList(live, T0 + 60_000, TOPIC));
    expect(c.unserved).toEqual(['lookup_order']);
    expect(c.warning).toBe('no live executor has announced itself on t.plan-executors (2 stale: ex-b, ex-orders): nothing serves tool "lookup_order" now');
  });

  it('is not conclusive while a live executor lists only part of its tools', () => {
    const tools = Array.from({ length: 30_000 }, (_, i) => `t${String(i).padStart(5, '0')}`.padEnd(24, 'x'));
    const a = announcementRecord({ executorId: 'ex-many', version: '0.1.0', host: 'h', pid: 1, startedAt: new Date(T0).toISOString(), heartbeatMs: 1000, tools });
    const c = checkTools(['t29999'.padEnd(24, 'x')], executorList([rec(a.key, a.value)], T0, TOPIC));
    expect(c.unserved).toHaveLength(1);
    expect(c.conclusive).toBe(false);
    expect(c.warning).toMatch(/ex-many serves .* and \d+ more\)$/);
  });
});
