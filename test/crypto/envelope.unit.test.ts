import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { envelopeJson, masterKeyFromEnv, openPayload, parseEnvelope, sealPayload, unwrapDataKey, wrapDataKey } from '../../src/crypto/index.js';
import { isLedgerError } from '../../src/errors.js';
import { isCanonicalJsonText } from '../../src/plan/canonical.js';

// Golden vectors made outside this code (Python `cryptography`, AESGCM): key 00..1f, iv 00..0b, AAD
// `plan-ledger:payload:v1:plan-golden`; the data key wrapped by master key 07 x32 with iv 09 x12 and AAD
// `plan-ledger:plan-key:v1:plan-golden`.
const KEY = Buffer.from('AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=', 'base64');
const GOLDEN = '{"$enc":{"ct":"PCC1ereB4CH2Y/n+3IsdH6HspQDBSm5eRRo=","iv":"AAECAwQFBgcICQoL","tag":"L26oPK0PwEpy51S1V/0q+Q==","v":1}}';
const MASTER = Buffer.alloc(32, 7);
const WRAPPED = '{"planKey":{"v":1,"iv":"CQkJCQkJCQkJCQkJ","ct":"J4SGl7r1x2aoa8Ez6uet0MShceAg++HXd7dcvclpH2U=","tag":"V9/afMErOoLrzyQ0WXeG2g=="}}';

describe('payload envelope (AES-256-GCM, plan id authenticated)', () => {
  it('opens a golden envelope made by another implementation', () => {
    const e = parseEnvelope(GOLDEN);
    expect(e).toBeDefined();
    expect(openPayload(KEY, 'plan-golden', e!)).toBe('{"card":{"number":"4111"}}');
    expect(unwrapDataKey(MASTER, 'plan-golden', WRAPPED).equals(KEY)).toBe(true);
  });

  it('seals to canonical JSON that opens again, a fresh iv each time; the plaintext is not in it', () => {
    const a = sealPayload(KEY, 'p1', '{"token":"tok_live_42"}');
    const b = sealPayload(KEY, 'p1', '{"token":"tok_live_42"}');
    expect(a).not.toBe(b);
    expect(isCanonicalJsonText(a)).toBe(true);
    expect(a).not.toContain('tok_live_42');
    expect(envelopeJson(parseEnvelope(a)!)).toBe(a);
    expect(openPayload(KEY, 'p1', parseEnvelope(a)!)).toBe('{"token":"tok_live_42"}');
  });

  it('refuses another plan, another key, an altered ciphertext or tag (INTEGRITY); plaintext is not an envelope', () => {
    const e = parseEnvelope(sealPayload(KEY, 'p1', '{"a":1}'))!;
    const wrong: Array<() => unknown> = [
      () => openPayload(KEY, 'p2', e),
      () => openPayload(Buffer.alloc(32, 1), 'p1', e),
      () => openPayload(KEY, 'p1', { ...e, ct: Buffer.from('{"a":2}').toString('base64') }),
      () => openPayload(KEY, 'p1', { ...e, tag: Buffer.alloc(16).toString('base64') }),
      () => unwrapDataKey(MASTER, 'other-plan', WRAPPED),
      () => unwrapDataKey(Buffer.alloc(32, 8), 'plan-golden', WRAPPED),
      () => unwrapDataKey(MASTER, 'plan-golden', 'not json'),
    ];
    for (const f of wrong) {
      let err: unknown;
      try {
        f();
      } catch (x) {
        err = x;
      }
      expect(isLedgerError(err, 'INTEGRITY')).toBe(true);
    }
    for (const text of ['{"a":1}', '{"$enc":{"ct":"x"}}', '{"$enc":{"ct":"AA==","iv":"AA==","tag":"AA==","v":2}}', '{"$enc":{"ct":"A A","iv":"AA==","tag":"AA==","v":1}}', `${GOLDEN} `]) {
      expect(parseEnvelope(text)).toBeUndefined();
    }
    const wrapped = wrapDataKey(MASTER, 'p9', KEY);
    expect(unwrapDataKey(MASTER, 'p9', wrapped).equals(KEY)).toBe(true);
    expect(wrapped).not.toContain(KEY.toString('base64'));
  });

  it('reads the master key from a file or the environment: 32 bytes of base64, else an error naming the variable (never the value)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'mk-'));
    const file = join(dir, 'master.key');
    writeFileSync(file, `${MASTER.toString('base64')}\n`);
    expect(masterKeyFromEnv({ PLAN_LEDGER_MASTER_KEY_FILE: file })?.equals(MASTER)).toBe(true);
    expect(masterKeyFromEnv({ PLAN_LEDGER_MASTER_KEY: KEY.toString('base64') })?.equals(KEY)).toBe(true);
    expect(masterKeyFromEnv({})).toBeUndefined();
    const bad = (env: NodeJS.ProcessEnv, field: string) => {
      try {
        masterKeyFromEnv(env);
        return 'accepted';
      } catch (e) {
        expect(isLedgerError(e, 'VALIDATION')).toBe(true);
        expect((e as Error).message).not.toContain('c2hvcnQ');
        return (e as { details: { field: string } }).details.field === field;
      }
    };
    expect(bad({ PLAN_LEDGER_MASTER_KEY: 'c2hvcnQ=' }, 'PLAN_LEDGER_MASTER_KEY')).toBe(true);
    expect(bad({ PLAN_LEDGER_MASTER_KEY: 'not base64 at all!' }, 'PLAN_LEDGER_MASTER_KEY')).toBe(true);
    expect(bad({ PLAN_LEDGER_MASTER_KEY_FILE: join(dir, 'missing') }, 'PLAN_LEDGER_MASTER_KEY_FILE')).toBe(true);
  });
});
