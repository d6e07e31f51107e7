// Pure logic of the live streams: coalescing text deltas into records, and the reader's cursor.
import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { cutAtBytes, DeltaCoalescer } from '../../src/streams/coalesce.js';
import { decodeStreamRecord, encodeCursor, encodeStreamRecord, isStreamKeyOf, parseCursor, streamKey, type StreamRecord } from '../../src/streams/records.js';

describe('DeltaCoalescer', () => {
  it('coalesces a million one-character deltas into 62 records of at most 16 KiB, in order, losing nothing', () => {
    const c = new DeltaCoalescer(16 * 1024, 25);
    const out: string[] = [];
    let expected = '';
    for (let i = 0; i < 1_000_000; i++) {
      const ch = String.fromCharCode(97 + (i % 26));
      expected += ch;
      out.push(...c.push(ch, 0));
    }
    const rest = c.take();
    if (rest !== undefined) out.push(rest);
    expect(out.length).toBe(Math.ceil(1_000_000 / (16 * 1024)));
    expect(out.every((s) => Buffer.byteLength(s) <= 16 * 1024)).toBe(true);
    expect(out.join('')).toBe(expected);
  });

  it('holds small deltas until the linger is over, then hands them out as one', () => {
    const c = new DeltaCoalescer(1024, 25);
    expect(c.dueAt()).toBeUndefined();
    expect(c.push('Hel', 1000)).toEqual([]);
    expect(c.push('lo', 1010)).toEqual([]);
    expect(c.dueAt()).toBe(1025);
    expect(c.take()).toBe('Hello');
    expect(c.take()).toBeUndefined();
    expect(c.dueAt()).toBeUndefined();
  });

  it('cuts one 10 MB delta into records of the bound, on code point boundaries (multi-byte characters intact)', () => {
    const c = new DeltaCoalescer(16 * 1024, 25);
    const big = 'é€😀x'.repeat(1_000_000); // 2+3+4+1 bytes: 10 MB
    const out = c.push(big, 0);
    const rest = c.take();
    const all = rest === undefined ? out : [...out, rest];
    expect(all.join('')).toBe(big);
    expect(all.every((s) => Buffer.byteLength(s) <= 16 * 1024 && !s.includes('\uFFFD'))).toBe(true);
    // Each record is full but for the 0-3 bytes a 4-byte character would not fit in.
    expect(all.length).toBeGreaterThanOrEqual(Math.ceil(10_000_000 / (16 * 1024)));
    expect(all.length).toBeLessThanOrEqual(Math.ceil(10_000_000 / (16 * 1024 - 3)));
  });

  it('cutAtBytes keeps a surrogate pair whole and never returns an empty head', () => {
    expect(cutAtBytes('ab😀c', 3)).toEqual(['ab', '😀c']);
    expect(cutAtBytes('😀', 2)).toEqual(['😀', '']);
    expect(cutAtBytes('abc', 10)).toEqual(['abc', '']);
  });
});

describe('stream records and cursors', () => {
  const rec: StreamRecord = { v: 1, planId: 'p:1', itemId: 'turn-1', attempt: 2, run: 7, seq: 3, kind: 'text', text: 'hi', at: 1 };

  it('round-trips a record and refuses values that are not one', () => {
    expect(decodeStreamRecord(Buffer.from(encodeStreamRecord(rec)))).toEqual(rec);
    expect(decodeStreamRecord(null)).toBeUndefined();
    expect(decodeStreamRecord('not json')).toBeUndefined();
    expect(decodeStreamRecord(JSON.stringify({ ...rec, v: 2 }))).toBeUndefined();
    expect(decodeStreamRecord(JSON.stringify({ ...rec, kind: 'shout' }))).toBeUndefined();
    expect(decodeStreamRecord(JSON.stringify({ ...rec, seq: -1 }))).toBeUndefined();
  });

  it('keys a record by plan, item, attempt, run and seq; a plan id that is a prefix of another does not match it', () => {
    expect(streamKey(rec)).toBe('p:1/turn-1/2/7/3');
    expect(streamKey({ ...rec, kind: 'end', seq: 0 })).toBe('p:1/turn-1/2/7/end-0');
    expect(isStreamKeyOf('p:1/turn-1/2/7/3', 'p:1')).toBe(true);
    expect(isStreamKeyOf('p:1/turn-1/2/7/3', 'p')).toBe(false);
    expect(isStreamKeyOf('p:10/turn-1/2/7/3', 'p:1')).toBe(false);
    expect(isStreamKeyOf(null, 'p:1')).toBe(false);
  });

  it('parses the cursors it makes and refuses garbage, another plan and another partition with VALIDATION naming `from`', () => {
    const cursor = encodeCursor('plan-a', 2, 41n);
    expect(parseCursor(cursor, 'plan-a', 2)).toBe(41n);
    const refused = (c: string, plan = 'plan-a', partition = 2) => {
      try {
        parseCursor(c, plan, partition);
        return 'accepted';
      } catch (e) {
        return isLedgerError(e, 'VALIDATION') && e.details.field === 'from' ? e.message : `wrong error ${String(e)}`;
      }
    };
    expect(refused('garbage')).toMatch(/is not a stream cursor/);
    expect(refused('')).toMatch(/is not a stream cursor/);
    expect(refused('s1.2.-1.abcdef01')).toMatch(/is not a stream cursor/);
    expect(refused(`${cursor}x`)).toMatch(/is not a stream cursor/);
    expect(refused(cursor, 'plan-b')).toMatch(/another plan/);
    expect(refused(cursor, 'plan-a', 0)).toMatch(/partition 2/);
  });
});
