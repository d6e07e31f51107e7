// Where a command too large for the commands topic is too large: the field named in PAYLOAD_TOO_LARGE.
import { describe, expect, it } from 'vitest';
import { assertCommandFits, illFormedField, largestField, RECORD_OVERHEAD_BYTES } from '../../src/client/command-size.js';
import { isLedgerError } from '../../src/errors.js';
import type { PlanCommand } from '../../src/plan/index.js';

const item = (id: string, inputJson: string, why = 'w') => ({ id, title: 't', why, dependsOn: [], tool: 'noop', inputJson, retry: null });

describe('largestField', () => {
  it('names the largest string by UTF-8 bytes, with the caller\'s name for inputJson', () => {
    const data = { goal: 'g'.repeat(10), items: [item('a', '{}'), item('b', '{}', 'é'.repeat(30)), item('c', `"${'x'.repeat(80)}"`)] };
    expect(largestField(data)).toEqual({ field: 'items[2].input', bytes: 82 });
    expect(largestField({ items: [item('a', '{}', 'é'.repeat(30))] })).toEqual({ field: 'items[0].why', bytes: 60 }); // 2 bytes per é
    expect(largestField({ reason: 'r'.repeat(5), labels: { team: 't'.repeat(9) } })).toEqual({ field: 'labels.team', bytes: 9 });
    expect(largestField({})).toEqual({ field: '', bytes: 0 });
  });
});

describe('assertCommandFits', () => {
  const command = { type: 'AddItems', planId: 'p', commandId: 'c', issuedAt: 0, actor: 'a', correlationId: 'c', data: { items: [item('big', `"${'x'.repeat(1000)}"`)] } } as unknown as PlanCommand;

  it('passes a record at the limit and refuses one byte over, naming the field, its size and the limit', () => {
    const value = Buffer.alloc(2000);
    const limit = value.length + 1 + RECORD_OVERHEAD_BYTES; // key "p" is 1 byte
    expect(() => assertCommandFits(command, 'p', value, limit)).not.toThrow();
    let error: unknown;
    try {
      assertCommandFits(command, 'p', value, limit - 1);
    } catch (e) {
      error = e;
    }
    expect(isLedgerError(error, 'PAYLOAD_TOO_LARGE')).toBe(true);
    const e = error as { details: Record<string, unknown>; message: string };
    expect(e.details).toMatchObject({ field: 'items[0].input', bytes: 1002, size: limit, limit: limit - 1, command: 'AddItems', planId: 'p' });
    expect(e.message).toBe(`AddItems for plan p is ${limit} bytes encoded, over the commands topic's max.message.bytes (${limit - 1}); its largest field is items[0].input (1002 bytes)`);
  });
});

describe('illFormedField', () => {
  it('names the first string or key holding a lone surrogate, and nothing for well-formed text', () => {
    expect(illFormedField({ goal: 'ok 😀', labels: { team: 'مرحبا' }, items: [item('a', '{"k":"\\ud800"}')] })).toBeUndefined(); // escaped in canonical JSON: fine
    expect(illFormedField({ goal: '\ud800' })).toBe('goal');
    expect(illFormedField({ goal: 'g', items: [item('a', '{}'), item('b', '{}', 'tail \udfff')] })).toBe('items[1].why');
    expect(illFormedField({ labels: { 'tail \udfff': 'v' } })).toBe('labels.tail \udfff');
    expect(illFormedField({ labels: { k: 'mixed \ud83d\ude00 and \ud83d' } })).toBe('labels.k');
  });
});
