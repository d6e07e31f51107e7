import { describe, expect, it } from 'vitest';
import { auditRows, parseAsOf, planAsOf } from '../../src/audit/timeline.js';
import { isLedgerError } from '../../src/errors.js';
import { history, logged } from './fixtures.js';

describe('audit timeline', () => {
  const { events, state } = history();
  const rows = auditRows(logged(events));

  it('has one row per event with time, seq, position, actor and causation', () => {
    expect(rows.map((r) => r.seq)).toEqual(events.map((e) => e.seq));
    expect(rows[0]).toMatchObject({ kind: 'event', seq: 1, at: '1970-01-01T00:00:01.000Z', partition: 0, offset: '0', type: 'PlanCreated', actor: 'agent' });
    expect(rows.every((r, i) => r.causationId === events[i]!.causationId && r.hash === events[i]!.hash)).toBe(true);
    expect(rows.find((r) => r.type === 'PlanApproved')).toMatchObject({ actor: 'alice', outcome: 'approved' });
  });

  it('gives results and settlements the key of their attempt and the time since its intent', () => {
    const pay = rows.filter((r) => r.itemId === 'pay' && r.attempt === 1);
    expect(pay.map((r) => [r.type, r.idempotencyKey, r.outcome, r.sinceIntentMs, r.actor])).toEqual([
      ['IntentRecorded', 'plan-1/pay/1', null, null, 'tester'],
      ['ResultCommitted', 'plan-1/pay/1', 'succeeded', 6000, 'ex-2'],
      ['ItemCompleted', 'plan-1/pay/1', 'completed', 6000, 'ex-2'],
    ]);
    expect(pay[1]!.toolMs).toBe(5);
    expect(rows.find((r) => r.type === 'ItemAdded' && r.itemId === 'pay')).toMatchObject({ attempt: null, idempotencyKey: null });
  });

  it('shows the plan as it was at a seq or a time (time travel)', () => {
    const approvedAt = events.find((e) => e.type === 'PlanApproved')!.seq;
    expect(planAsOf('plan-1', events, { seq: approvedAt }).state?.status).toBe('approved');
    const beforePay = planAsOf('plan-1', events, { time: 3000 });
    expect(beforePay.state?.items.pay?.status).toBe('in_progress');
    expect(beforePay.at).toBe('1970-01-01T00:00:03.000Z');
    const now = planAsOf('plan-1', events, null);
    expect(now.seq).toBe(state.seq);
    expect(now.state?.status).toBe('completed');
    expect(planAsOf('plan-1', events, { time: 0 })).toMatchObject({ seq: 0, state: null, stateDigest: null });
  });

  it('parses --as-of as a seq or an ISO time, and nothing else', () => {
    expect(parseAsOf('7')).toEqual({ seq: 7 });
    expect(parseAsOf('2026-01-31T12:00:00Z')).toEqual({ time: Date.UTC(2026, 0, 31, 12) });
    expect(() => parseAsOf('yesterday')).toThrow(/--as-of: expected a seq/);
    try {
      parseAsOf('soon', '--until');
    } catch (e) {
      expect(isLedgerError(e, 'VALIDATION')).toBe(true);
      expect((e as Error).message).toMatch(/^--until/);
    }
  });
});
