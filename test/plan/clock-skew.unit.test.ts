// Times one owner records and another reads (docs/concepts/item-protocol.md#clocks): a retry's retryAt and a
// wait's deadline are on the recording owner's clock; an owner is bound by min(recorded time, first seen +
// the full delay), so a clock behind never holds a retry or a timeout back by the difference, and the
// recording owner itself (which saw it as it recorded it) keeps exactly the recorded time. decide and the
// scan apply the same rule.
import { describe, expect, it } from 'vitest';
import {
  decide,
  dueMark,
  nextWakeUp,
  readyItem,
  retryDelayMs,
  retryDueAt,
  scanItems,
  waitDueAt,
  type FirstSeen,
  type ItemSpec,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';
import { cmd, command, fold, item, run } from './fixtures.js';

const MIN5 = 5 * 60_000;
/** Recording owner's clock at the failure (5 min ahead of the true time 1_000_000). */
const AHEAD = 1_000_000 + MIN5;
const retried: ItemSpec = item('charge', [], { retry: { maxAttempts: 3, initialBackoffMs: 2000, backoffMultiplier: 2, maxBackoffMs: 60_000 } });
const waitItem: ItemSpec = item('reply', [], { tool: 'wait', inputJson: '{}', wait: { signal: 'answer', timeoutMs: 30_000, prompt: 'answer' } });

const stateOf = (events: PlanEvent[]) => fold(events) as PlanState;
/** charge failed retryably once, settled at `at` (the recording owner's clock): retryAt = at + 2 s. */
function failedOnce(at: number): PlanState {
  const history = run([cmd.create([retried]), cmd.intent('charge')], at - 10).events;
  const more = run([cmd.commit('charge', 1, 'failed_retryable'), cmd.settle('charge')], at, stateOf(history)).events;
  return stateOf([...history, ...more]);
}
/** A memo that answers `seenAt` for every question and counts them. */
function seenAt(at: number): FirstSeen & { asked: string[] } {
  const asked: string[] = [];
  const f = ((planId: string, itemId: string, mark: string) => {
    asked.push(`${planId}/${itemId}/${mark}`);
    return at;
  }) as FirstSeen & { asked: string[] };
  f.asked = asked;
  return f;
}

describe('retry due time under clock skew', () => {
  it('the delay is the backoff nextRetryAt added (exact), 0 for a manual retry', () => {
    const s = failedOnce(AHEAD);
    const it0 = s.items['charge']!;
    expect(it0.retryAt).toBe(AHEAD + 2000);
    expect(retryDelayMs(it0)).toBe(2000);
    expect(dueMark(it0)).toBe(`r:1:${AHEAD + 2000}`);
    // second failure: backoff 4 s
    const h = [...run([cmd.create([retried]), cmd.intent('charge')], AHEAD - 10).events];
    const h2 = [...h, ...run([cmd.commit('charge', 1, 'failed_retryable'), cmd.settle('charge')], AHEAD, stateOf(h)).events];
    const h3 = [...h2, ...run([cmd.intent('charge'), cmd.commit('charge', 2, 'failed_retryable'), cmd.settle('charge')], AHEAD + 3000, stateOf(h2)).events];
    expect(stateOf(h3).items['charge']!.retryAt).toBe(AHEAD + 3000 + 4000);
    expect(retryDelayMs(stateOf(h3).items['charge']!)).toBe(4000);
    // manual retry after the item failed for good
    const h4 = [...h3, ...run([cmd.intent('charge'), cmd.commit('charge', 3, 'failed_terminal'), cmd.settle('charge'), cmd.retry('charge')], AHEAD + 8000, stateOf(h3)).events];
    const manual = stateOf(h4).items['charge']!;
    expect(manual.retryAt).toBe(AHEAD + 8000);
    expect(retryDelayMs(manual)).toBe(0);
  });

  it('an owner 10 min behind the recorder, seeing the retry at its time T, may start it at T + 2 s (not 10 min later)', () => {
    const s = failedOnce(AHEAD);
    const behindNow = AHEAD - 2 * MIN5; // the new owner's clock, 10 min behind the recorder's
    const seen = seenAt(behindNow);
    expect(retryDueAt(s, s.items['charge']!, seen)).toBe(behindNow + 2000);
    expect(retryDueAt(s, s.items['charge']!)).toBe(AHEAD + 2000); // without a memo: the recorded time
    // the scan: not ready before, wake-up at T + 2 s; ready at T + 2 s
    expect(readyItem(s, 'charge', behindNow + 1999, seen)).toBe(behindNow + 2000);
    expect(nextWakeUp(s, behindNow, seen)).toBe(behindNow + 2000);
    expect(scanItems(s, behindNow, { firstSeen: seen }).nextWakeUp).toBe(behindNow + 2000);
    expect(scanItems(s, behindNow + 2000, { firstSeen: seen }).ready.map((r) => r.itemId)).toEqual(['charge']);
    // decide refuses at T + 1999 and accepts at T + 2000, by the same rule
    const early = decide(s, cmd.intent('charge'), { now: behindNow + 1999, firstSeen: seen });
    expect(early.ok).toBe(false);
    if (!early.ok) expect(early.rejection).toMatchObject({ code: 'INVALID_STATE', message: `item charge may not retry before ${behindNow + 2000}` });
    const onTime = decide(s, cmd.intent('charge'), { now: behindNow + 2000, firstSeen: seen });
    expect(onTime.ok && onTime.events.map((e) => [e.type, e.occurredAt])).toEqual([['IntentRecorded', behindNow + 2000]]);
    // without the memo decide keeps the recorded time: the behind owner would wait 10 min more
    expect(decide(s, cmd.intent('charge'), { now: behindNow + 2000 }).ok).toBe(false);
    expect(seen.asked.every((a) => a === `plan-1/charge/r:1:${AHEAD + 2000}`)).toBe(true);
  });

  it('the recording owner (seen as it was recorded) and an owner ahead keep the recorded time', () => {
    const s = failedOnce(AHEAD);
    expect(retryDueAt(s, s.items['charge']!, seenAt(AHEAD))).toBe(AHEAD + 2000);
    // an owner 5 min ahead that sees it at AHEAD + 5 min: the recorded time has passed, it starts at once (early by its skew)
    expect(retryDueAt(s, s.items['charge']!, seenAt(AHEAD + MIN5))).toBe(AHEAD + 2000);
    expect(decide(s, cmd.intent('charge'), { now: AHEAD + MIN5, firstSeen: seenAt(AHEAD + MIN5) }).ok).toBe(true);
  });
});

describe('wait deadline under clock skew', () => {
  const waiting = (at: number) => stateOf(run([cmd.create([waitItem]), cmd.intent('reply')], at).events);
  const expire = (now: number, firstSeen?: FirstSeen) =>
    decide(waiting(AHEAD), command('ExpireWait', { itemId: 'reply', attempt: 1, executorId: 'ex-2' }), { now, ...(firstSeen ? { firstSeen } : {}) });

  it('the timeout is deadline - startedAt (one clock, one event); an owner behind times out at first seen + timeout', () => {
    const s = waiting(AHEAD);
    const w = s.items['reply']!;
    expect(w.attempts[0]!.wait!.deadline).toBe(AHEAD + 30_000);
    expect(dueMark(w)).toBe(`w:1:${AHEAD + 30_000}`);
    const behindNow = AHEAD - 2 * MIN5;
    expect(waitDueAt(s, w, seenAt(behindNow))).toBe(behindNow + 30_000);
    expect(waitDueAt(s, w)).toBe(AHEAD + 30_000);
    expect(scanItems(s, behindNow + 29_999, { firstSeen: seenAt(behindNow) })).toMatchObject({ expired: [], nextWakeUp: behindNow + 30_000 });
    expect(scanItems(s, behindNow + 30_000, { firstSeen: seenAt(behindNow) }).expired).toEqual([{ itemId: 'reply', attempt: 1 }]);
    expect(nextWakeUp(s, behindNow, seenAt(behindNow))).toBe(behindNow + 30_000);
    expect(expire(behindNow + 29_999, seenAt(behindNow)).ok).toBe(false);
    const timedOut = expire(behindNow + 30_000, seenAt(behindNow));
    expect(timedOut.ok && timedOut.events.map((e) => [e.type, e.data])).toMatchObject([['ResultCommitted', { itemId: 'reply', outcome: 'failed_retryable', error: { code: 'WAIT_TIMEOUT' } }]]);
    // without the memo: only at the recorded deadline
    expect(expire(behindNow + 30_000).ok).toBe(false);
    expect(expire(AHEAD + 30_000).ok).toBe(true);
  });

  it('an owner ahead times out early by at most its skew: at the recorded deadline on its clock', () => {
    const s = waiting(AHEAD - MIN5); // recorded by an owner on true time
    const aheadSeen = AHEAD; // the new owner (5 min ahead) sees it at once
    expect(waitDueAt(s, s.items['reply']!, seenAt(aheadSeen))).toBe(AHEAD - MIN5 + 30_000);
  });

  it('a wait without a deadline has no due time', () => {
    const noDeadline = stateOf(run([cmd.create([item('w', [], { tool: 'wait', inputJson: '{}', wait: { signal: 's', timeoutMs: null, prompt: 'p' } })]), cmd.intent('w')], AHEAD).events);
    expect(dueMark(noDeadline.items['w']!)).toBe(null);
    expect(waitDueAt(noDeadline, noDeadline.items['w']!, seenAt(0))).toBe(null);
  });
});
