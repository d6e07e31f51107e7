// `plan-ledger tail`'s lines and JSON lines, from a fixed history (no broker): one line per event, the
// audit row fed one event at a time, colour only when asked.
import { describe, expect, it } from 'vitest';
import type { TailRecord } from '../../src/audit/tail.js';
import { auditRowBuilder, auditRows } from '../../src/audit/timeline.js';
import { painter } from '../../cli/output.js';
import { renderStreamLine, renderTailLine, tailJson } from '../../cli/tail-actions.js';
import { history, logged } from '../audit/fixtures.js';

const { events } = history();
const planId = events[0]!.planId;
const records = (): TailRecord[] => {
  const build = auditRowBuilder();
  return logged(events).map((r) => ({ kind: 'event', planId, event: r.event, row: build(r) }));
};

describe('tail lines', () => {
  it('the row builder fed one event at a time gives the audit rows', () => {
    expect(records().map((r) => (r.kind === 'event' ? r.row : null))).toEqual(auditRows(logged(events)));
  });

  it('one line per event: time, plan, #seq, type, item#attempt, actor, summary with the plan id elided', () => {
    const lines = records().map((r) => renderTailLine(r, painter(false)));
    expect(lines).toHaveLength(events.length);
    expect(lines[0]).toMatch(new RegExp(`^1970-01-01T00:00:01\\.000Z  ${planId}  #1     PlanCreated\\s{9}\\s+agent\\s+plan created \\(propose\\)`));
    const result = lines.find((l) => l.includes('ResultCommitted') && l.includes('pay#1'))!;
    expect(result).toBe(`1970-01-01T00:00:09.000Z  ${planId}  #${String(events.find((e) => e.type === 'ResultCommitted' && e.data.itemId === 'pay')!.seq).padEnd(4)}  ResultCommitted     pay#1                 ex-2              result of pay attempt 1: succeeded in 5 ms`);
    expect(lines.join('\n')).not.toContain('\u001b[');
    expect(lines.find((l) => l.includes('IntentRecorded') && l.includes('pay#1'))).toContain('(key …/pay/1)');
  });

  it('colours type by outcome only when asked', () => {
    const [created, ...rest] = records().map((r) => renderTailLine(r, painter(true)));
    expect(created).toContain('\u001b[36mPlanCreated');
    expect(rest.find((l) => l.includes('ItemCompleted'))).toContain('\u001b[32mItemCompleted');
    expect(rest.find((l) => l.includes('IntentRecorded'))).toContain('\u001b[33mIntentRecorded');
  });

  it('--json: the audit row with its plan id, one object per event; an erasure is its own kind', () => {
    const rows = records().map(tailJson);
    expect(rows.map((r) => r.seq)).toEqual(events.map((e) => e.seq));
    expect(rows.find((r) => r.type === 'ResultCommitted' && r.itemId === 'pay')).toMatchObject({ planId, idempotencyKey: `${planId}/pay/1`, sinceIntentMs: 6000, outcome: 'succeeded' });
    const erased: TailRecord = { kind: 'erased', planId, at: '2026-01-01T00:00:00.000Z', partition: 3, offset: '17' };
    expect(tailJson(erased)).toEqual({ kind: 'erased', planId, at: '2026-01-01T00:00:00.000Z', partition: 3, offset: '17' });
    expect(renderTailLine(erased)).toBe(`2026-01-01T00:00:00.000Z  ${planId}  erased: tombstones for its events (plan-ledger erase)`);
  });
});

describe('tail --stream lines', () => {
  const base = { v: 1 as const, planId: 'p1', itemId: 'turn-2', attempt: 1, run: 3, seq: 4, at: 0, cursor: 's1.0.9.00000000' };
  it('names the item and attempt, and says what each chunk other than text is', () => {
    expect(renderStreamLine({ ...base, kind: 'tool-call', toolCallId: 'c1', toolName: 'lookup' })).toBe('[turn-2#1] tool call lookup (c1)');
    expect(renderStreamLine({ ...base, kind: 'usage', usage: { inputTokens: 40, outputTokens: 60, totalTokens: 100 } })).toBe('[turn-2#1] usage 40 in, 60 out');
    expect(renderStreamLine({ ...base, kind: 'progress', data: { page: 2, of: 5 } })).toBe('[turn-2#1] progress {"page":2,"of":5}');
    expect(renderStreamLine({ ...base, kind: 'end', end: 'final' })).toBe('[turn-2#1] final');
    expect(renderStreamLine({ ...base, kind: 'end', end: 'superseded', reason: 're-run by a new owner (run 3)' })).toBe('[turn-2#1] superseded re-run by a new owner (run 3)');
    expect(renderStreamLine({ ...base, kind: 'end', end: 'abandoned', reason: 'failed_retryable: TIMEOUT' }, painter(true))).toContain('abandoned');
  });
});
