import { describe, expect, it } from 'vitest';
import { formatPath, parsePlanFile, toCreatePlanInput } from '../../src/audit/plan-file.js';
import { isLedgerError } from '../../src/errors.js';

function problem(text: string): string {
  try {
    parsePlanFile(text, 'plan.yaml');
  } catch (e) {
    expect(isLedgerError(e, 'VALIDATION')).toBe(true);
    return (e as Error).message;
  }
  throw new Error('expected a validation error');
}

const valid = `
goal: Refund order 42
mode: propose
labels: { ticket: SUP-1 }
items:
  - { id: lookup, title: Look it up, why: need the order, tool: orders.lookup, input: { orderId: 42 } }
  - id: pay
    why: the money
    tool: payments.refund
    dependsOn: [lookup]
    retry: { maxAttempts: 5 }
`;

describe('plan files', () => {
  it('reads YAML into createPlan input, defaulting title, why, dependsOn and input', () => {
    const plan = parsePlanFile(valid, 'plan.yaml');
    expect(toCreatePlanInput(plan, 'propose')).toEqual({
      goal: 'Refund order 42',
      mode: 'propose',
      labels: { ticket: 'SUP-1' },
      items: [
        { id: 'lookup', title: 'Look it up', why: 'need the order', dependsOn: [], tool: 'orders.lookup', input: { orderId: 42 } },
        { id: 'pay', title: 'pay', why: 'the money', dependsOn: ['lookup'], tool: 'payments.refund', input: {}, retry: { maxAttempts: 5 } },
      ],
    });
  });

  it('takes a wait item without a tool', () => {
    const plan = parsePlanFile('goal: g\nitems:\n  - { id: ask, wait: { signal: customer-reply, timeoutMs: 86400000, prompt: Which address? } }', 'plan.yaml');
    expect(toCreatePlanInput(plan, 'execute').items![0]).toEqual({ id: 'ask', title: 'ask', why: '', dependsOn: [], input: {}, wait: { signal: 'customer-reply', timeoutMs: 86400000, prompt: 'Which address?' } });
  });

  it('reads JSON too', () => {
    expect(parsePlanFile('{"goal":"g","items":[{"id":"a","tool":"t"}]}', 'p.json').items[0]!.id).toBe('a');
  });

  it.each([
    ['a missing goal', 'items: []', 'plan.yaml: goal: '],
    ['an unknown mode', 'goal: g\nmode: later', 'plan.yaml: mode: '],
    ['a missing tool', 'goal: g\nitems:\n  - { id: a }', 'plan.yaml: items[0].tool: '],
    ['a bad item id', 'goal: g\nitems:\n  - { id: "a b", tool: t }', 'plan.yaml: items[0].id: must be 1..128 chars'],
    ['an unknown dependency', 'goal: g\nitems:\n  - { id: a, tool: t }\n  - { id: b, tool: t }\n  - { id: c, tool: t, dependsOn: [a, zz] }', 'plan.yaml: items[2].dependsOn[1]: unknown item "zz"'],
    ['a duplicate id', 'goal: g\nitems:\n  - { id: a, tool: t }\n  - { id: a, tool: t }', 'plan.yaml: items[1].id: duplicate item id "a" (also items[0])'],
    ['a cycle', 'goal: g\nitems:\n  - { id: a, tool: t, dependsOn: [b] }\n  - { id: b, tool: t, dependsOn: [a] }', 'plan.yaml: items[0].dependsOn: dependency cycle a -> b -> a'],
    ['a typo in a field name', 'goal: g\nitems:\n  - { id: a, tool: t, depends_on: [b] }', 'plan.yaml: items[0].depends_on: unknown field'],
    ['a bad retry policy', 'goal: g\nitems:\n  - { id: a, tool: t, retry: { maxAttempts: 0 } }', 'plan.yaml: items[0].retry.maxAttempts: '],
    ['broken YAML', 'goal: [unclosed', 'plan.yaml:1:'],
  ])('names the bad field for %s', (_name, text, expected) => {
    expect(problem(text)).toContain(expected);
  });

  it('formats paths as people write them', () => {
    expect(formatPath(['items', 2, 'dependsOn', 0])).toBe('items[2].dependsOn[0]');
    expect(formatPath([])).toBe('(root)');
  });
});
