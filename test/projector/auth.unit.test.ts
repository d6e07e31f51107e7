// API tokens as configured: the file formats, the errors that name the bad entry, and lookups that find
// exactly the holder of the token given (the legacy single token is read+write as `api-token`).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileTokens, parseTokens } from '../../src/api-tokens.js';
import { isLedgerError } from '../../src/errors.js';

const failure = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    if (isLedgerError(e, 'VALIDATION')) return { field: e.details['field'], message: e.message };
    throw e;
  }
  throw new Error('expected a VALIDATION error');
};

describe('API tokens', () => {
  it('reads a JSON array and JSON lines with comments', () => {
    const a = { token: 'a'.repeat(16), principal: 'alice', scopes: ['read', 'write'] };
    const g = { token: 'g'.repeat(20), principal: 'grafana', scopes: ['read'] };
    expect(parseTokens(JSON.stringify([a, g]), 'f')).toEqual([a, g]);
    expect(parseTokens(`# ops\n${JSON.stringify(a)}\n\n  ${JSON.stringify(g)}\n`, 'f')).toEqual([a, g]);
  });

  it('names the bad entry and field', () => {
    const ok = { token: 'a'.repeat(16), principal: 'alice', scopes: ['read'] };
    expect(failure(() => parseTokens(JSON.stringify([ok, { ...ok, token: 'short' }]), 'F'))).toEqual({ field: 'F[1].token', message: 'F[1].token: at least 16 characters' });
    expect(failure(() => parseTokens(`${JSON.stringify(ok)}\n${JSON.stringify({ ...ok, token: 'b'.repeat(16), scopes: ['admin'] })}`, 'F')).field).toBe('F:2.scopes.0');
    expect(failure(() => parseTokens(JSON.stringify([{ ...ok, principal: 'two words' }]), 'F')).field).toBe('F[0].principal');
    expect(failure(() => parseTokens(JSON.stringify([{ ...ok, principal: 'a\u0007b' }]), 'F')).field).toBe('F[0].principal');
    expect(failure(() => parseTokens(JSON.stringify([{ ...ok, scopes: [] }]), 'F')).field).toBe('F[0].scopes');
    expect(failure(() => parseTokens(JSON.stringify([{ ...ok, admin: true }]), 'F')).field).toBe('F[0]');
    expect(failure(() => parseTokens('{"token": ', 'F')).message).toMatch(/^F: not JSON/);
  });

  it('finds the holder of a token, and nobody for a near miss', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-tokens-'));
    const file = join(dir, 'tokens.json');
    writeFileSync(file, JSON.stringify([{ token: 'bob-0123456789abcdef', principal: 'bob', scopes: ['write', 'read', 'write'] }]));
    const set = compileTokens({ apiToken: 'legacy', apiTokens: [{ token: 'grafana-0123456789ab', principal: 'grafana', scopes: ['read'] }], tokensFile: file });
    expect(set.size).toBe(3);
    expect(set.openReads).toBe(false);
    expect(set.lookup('legacy')).toEqual({ name: 'api-token', scopes: ['read', 'write'] });
    expect(set.lookup('grafana-0123456789ab')).toEqual({ name: 'grafana', scopes: ['read'] });
    expect(set.lookup('bob-0123456789abcdef')).toEqual({ name: 'bob', scopes: ['write', 'read'] });
    for (const miss of ['', 'legac', 'legacy ', 'bob-0123456789abcdeF', 'grafana-0123456789ab\n']) expect(set.lookup(miss)).toBeNull();
    expect(Object.isFrozen(set)).toBe(true);
  });

  it('refuses a token configured twice and a missing file', () => {
    const t = { token: 'x'.repeat(16), principal: 'a', scopes: ['read'] as const };
    expect(failure(() => compileTokens({ apiTokens: [t, { ...t, principal: 'b' }] })).message).toBe('API tokens: the token of principal "b" is configured twice');
    expect(failure(() => compileTokens({ tokensFile: '/nonexistent/tokens.json' }))).toEqual({ field: 'PLAN_LEDGER_API_TOKENS_FILE', message: 'PLAN_LEDGER_API_TOKENS_FILE: cannot read /nonexistent/tokens.json (ENOENT)' });
    expect(compileTokens({}).size).toBe(0);
  });
});
