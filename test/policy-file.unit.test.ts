import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLedgerError } from '../src/errors.js';
import { evaluatePolicy } from '../src/plan/index.js';
import { loadPolicy, parsePolicy, resolvePolicy } from '../src/policy-file.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-policy-'));
function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

function failure(fn: () => unknown): { field: unknown; message: string } {
  try {
    fn();
  } catch (e) {
    expect(isLedgerError(e, 'VALIDATION')).toBe(true);
    return { field: (e as { details: { field: unknown } }).details.field, message: (e as Error).message };
  }
  throw new Error('expected a VALIDATION error');
}

describe('policy file', () => {
  it('loads the examples, with defaults filled in and a hash of the content', () => {
    const production = loadPolicy('examples/policies/production.yaml');
    expect(production).toMatchObject({ id: 'production', approval: 'always', approvers: 2, forbidSelfApproval: true, rules: [] });
    expect(Object.isFrozen(production)).toBe(true);
    expect(loadPolicy('examples/policies/sandbox.yaml')).toMatchObject({ id: 'sandbox', approval: 'never', approvers: 1, forbidSelfApproval: false });
    const staging = loadPolicy('examples/policies/staging.yaml');
    expect(staging.rules.map((r) => r.name)).toEqual(['payments', 'customer-data', 'large-plans']);
    expect(staging.hash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the hash is of the content: comments, key order, YAML or JSON do not change it; a changed value does', () => {
    const yaml = loadPolicy(file('a.yaml', '# c\nrules: [{ tool: "payments.*", name: pay }]\napproval: rules\nid: p\n'));
    const json = loadPolicy(file('b.json', JSON.stringify({ id: 'p', approval: 'rules', approvers: 1, forbidSelfApproval: false, rules: [{ name: 'pay', tool: 'payments.*' }] })));
    expect(json.hash).toBe(yaml.hash);
    expect(loadPolicy(file('c.yaml', 'id: p\napproval: rules\napprovers: 2\nrules: [{ tool: "payments.*", name: pay }]\n')).hash).not.toBe(yaml.hash);
    // Pinned: sha256 of {"approval":"never","approvers":1,"forbidSelfApproval":false,"id":"sandbox","rules":[]};
    // a policy's version must not move between releases for the same content.
    expect(parsePolicy({ id: 'sandbox', approval: 'never' }).hash).toBe('ae8aff75deb9796cf8c4c1bec7cee76a029abbf31d6be280b7da0bc590b6e047');
    expect(loadPolicy('examples/policies/sandbox.yaml').hash).toBe('ae8aff75deb9796cf8c4c1bec7cee76a029abbf31d6be280b7da0bc590b6e047');
  });

  it('a bad value fails at load with the field path and the reason', () => {
    expect(failure(() => parsePolicy({ id: 'p', approval: 'rules', rules: [{ tool: 'a.*' }, { label: 'no-equals' }] }))).toMatchObject({ field: 'rules[1].label' });
    expect(failure(() => parsePolicy({ id: 'p', approval: 'always', approvers: 0 })).field).toBe('approvers');
    expect(failure(() => parsePolicy({ id: 'p', approval: 'sometimes' })).field).toBe('approval');
    expect(failure(() => parsePolicy({ id: 'p' })).field).toBe('approval');
    expect(failure(() => parsePolicy({ id: 'has space', approval: 'never' })).field).toBe('id');
    expect(failure(() => parsePolicy({ id: 'p', approval: 'never', aprovers: 2 })).message).toMatch(/aprovers/);
    expect(failure(() => parsePolicy({ id: 'p', approval: 'rules' }))).toMatchObject({ field: 'rules', message: expect.stringMatching(/at least one rule/) as unknown as string });
    expect(failure(() => parsePolicy({ id: 'p', approval: 'always', rules: [{ tool: 'x' }] })).field).toBe('rules');
    expect(failure(() => parsePolicy({ id: 'p', approval: 'rules', rules: [{ name: 'empty' }] })).field).toBe('rules[0]');
    expect(failure(() => parsePolicy({ id: 'p', approval: 'rules', rules: [{ itemsOver: -1 }] })).field).toBe('rules[0].itemsOver');
    expect(failure(() => parsePolicy(null)).field).toBe('(root)');
    expect(failure(() => loadPolicy(file('bad.yaml', 'id: [unclosed'))).message).toMatch(/bad\.yaml: \(file\) is not YAML or JSON/);
    expect(failure(() => loadPolicy(join(dir, 'missing.yaml'))).message).toMatch(/cannot be read/);
    expect(failure(() => loadPolicy(file('bomb.yaml', `a: &a [x, x]\n${Array.from({ length: 200 }, (_, i) => `k${i}: *a`).join('\n')}\n`))).field).toBe('(file)');
  });

  it('an executor takes the option first, then PLAN_LEDGER_POLICY, else no policy', () => {
    const env = { PLAN_LEDGER_POLICY: 'examples/policies/production.yaml' };
    expect(resolvePolicy(undefined, env)?.id).toBe('production');
    expect(resolvePolicy('examples/policies/sandbox.yaml', env)?.id).toBe('sandbox');
    const built = parsePolicy({ id: 'inline', approval: 'never' });
    expect(resolvePolicy(built, env)).toEqual(built);
    expect(resolvePolicy(undefined, {})).toBeUndefined();
    expect(failure(() => resolvePolicy(undefined, { PLAN_LEDGER_POLICY: join(dir, 'nope.yaml') })).message).toMatch(/nope\.yaml/);
  });

  it('the staging example decides by its rules in order', () => {
    const staging = loadPolicy('examples/policies/staging.yaml');
    const spec = (id: string, tool: string) => ({ id, title: id, why: '', dependsOn: [], tool, inputJson: '{}', retry: null });
    expect(evaluatePolicy(staging, { labels: {}, items: [spec('a', 'payments.refund')], itemCount: 1 })).toMatchObject({ required: true, rule: 'payments', approvers: 2, forbidSelfApproval: true });
    expect(evaluatePolicy(staging, { labels: { data: 'customer' }, items: [spec('a', 'echo')], itemCount: 1 })).toMatchObject({ required: true, rule: 'customer-data', approvers: 1 });
    expect(evaluatePolicy(staging, { labels: {}, items: [spec('a', 'echo')], itemCount: 21 })).toMatchObject({ required: true, rule: 'large-plans' });
    expect(evaluatePolicy(staging, { labels: {}, items: [spec('a', 'echo')], itemCount: 20 })).toMatchObject({ required: false, rule: null });
  });
});
