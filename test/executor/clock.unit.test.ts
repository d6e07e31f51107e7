// The executor's clock parts (executor/clock.ts): the offset clock, the owner's first-seen memo, and the
// skew estimate behind plan_ledger_clock_skew_ms.
import { describe, expect, it } from 'vitest';
import { FirstSeenMemo, offsetClock, SKEW_WARN_MS, SkewEstimate } from '../../executor/clock.js';
import { isLedgerError } from '../../src/errors.js';
import { CLOCK_OFFSET_MAX_MS, setting } from '../../src/settings.js';

describe('offsetClock', () => {
  it('shifts every read by the offset', () => {
    let t = 1_000;
    const c = offsetClock(-300_000, () => t);
    expect([c.now(), c.offsetMs]).toEqual([1_000 - 300_000, -300_000]);
    t = 2_000;
    expect(c.now()).toBe(2_000 - 300_000);
    expect(offsetClock(0, () => t).now()).toBe(2_000);
  });
});

describe('PLAN_LEDGER_CLOCK_OFFSET_MS', () => {
  it('is 0 by default, an integer within ±30 min, and a bad value fails naming the variable', () => {
    expect(setting('PLAN_LEDGER_CLOCK_OFFSET_MS', {})).toBe(0);
    expect(setting('PLAN_LEDGER_CLOCK_OFFSET_MS', { PLAN_LEDGER_CLOCK_OFFSET_MS: '-300000' })).toBe(-300_000);
    expect(setting('PLAN_LEDGER_CLOCK_OFFSET_MS', { PLAN_LEDGER_CLOCK_OFFSET_MS: String(CLOCK_OFFSET_MAX_MS) })).toBe(1_800_000);
    for (const bad of ['1800001', '-1800001', '5m', '1.5']) {
      let err: unknown;
      try {
        setting('PLAN_LEDGER_CLOCK_OFFSET_MS', { PLAN_LEDGER_CLOCK_OFFSET_MS: bad });
      } catch (e) {
        err = e;
      }
      expect(isLedgerError(err)).toBe(true);
      expect(String((err as Error).message)).toContain('PLAN_LEDGER_CLOCK_OFFSET_MS');
    }
  });
});

describe('FirstSeenMemo', () => {
  it('records the first question per item and mark; a new mark (the next retry or wait) is seen anew; forget drops a plan', () => {
    let t = 100;
    const memo = new FirstSeenMemo(() => t);
    expect(memo.ask('p', 'a', 'r:1:500')).toBe(100);
    t = 200;
    expect(memo.ask('p', 'a', 'r:1:500')).toBe(100);
    expect(memo.ask('p', 'b', 'w:1:900')).toBe(200);
    expect(memo.ask('p', 'a', 'r:2:800')).toBe(200);
    expect(memo.size).toBe(2);
    memo.forget('p');
    expect(memo.size).toBe(0);
    t = 300;
    expect(memo.ask('p', 'a', 'r:2:800')).toBe(300);
  });
});

describe('SkewEstimate', () => {
  it('is the lower quartile of now - CreateTime: live records near the skew, a backlog above it moves nothing', () => {
    const e = new SkewEstimate();
    expect(e.estimate()).toBe(undefined);
    const skew = -300_000; // our clock 5 min behind the writers
    const now = 10_000_000;
    for (let i = 0; i < 16; i++) e.sample(now - skew - (5 + (i % 4)), now); // delivered 5..8 ms after written
    expect(e.estimate()).toBe(skew + 5);
    // a backlog read after a failover: 40 records that waited 8..12 s
    for (let i = 0; i < 40; i++) e.sample(now - skew - (8_000 + i * 100), now);
    expect(e.estimate()).toBeGreaterThanOrEqual(skew + 5);
    expect(e.estimate()).toBeLessThanOrEqual(skew + 8);
  });
  it('drops samples past an hour (a record long in the log, a timestamp no broker takes) and nonsense stamps', () => {
    const e = new SkewEstimate();
    e.sample(1_000, 1_000 + 7_200_000);
    e.sample(0, 5_000);
    e.sample(Number.NaN, 5_000);
    expect(e.estimate()).toBe(undefined);
    e.sample(1_000, 1_250);
    expect(e.estimate()).toBe(250);
  });
  it('warns past the threshold, then again only when the estimate grew by half', () => {
    const e = new SkewEstimate();
    e.sample(0 + 1, SKEW_WARN_MS - 1 + 1);
    expect(e.shouldWarn()).toBe(false);
    const w = new SkewEstimate();
    for (let i = 0; i < 4; i++) w.sample(1, 1 + 300_000);
    expect([w.estimate(), w.shouldWarn(), w.shouldWarn()]).toEqual([300_000, true, false]);
    for (let i = 0; i < 64; i++) w.sample(1, 1 + 450_000);
    expect(w.shouldWarn()).toBe(true);
  });
});
