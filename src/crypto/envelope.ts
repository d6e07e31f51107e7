import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { LedgerError } from '../errors.js';
import { settingIfSet } from '../settings.js';

/**
 * Payload encryption (crypto-shredding). Each plan has its own random AES-256-GCM data key; the key is
 * stored wrapped by the master key (AES-256-GCM too) in the compacted `<prefix>.plan-keys` topic, keyed by
 * plan id. A payload (item input, output, checkpoint, evidence) is stored as the canonical JSON of an
 * envelope in place of its text:
 *
 *     {"$enc":{"ct":"<base64>","iv":"<base64>","tag":"<base64>","v":1}}
 *
 * with the plan id in the additional authenticated data, so a payload copied to another plan does not
 * open. The hash chain covers the envelope (the ciphertext): `verify` holds with or without the key and
 * after the key is destroyed. Erasing a plan destroys its key: every copy of its payloads (commands, DLQ,
 * events, snapshots, blobs, backups) is then ciphertext nobody can open. `$enc` is reserved.
 */
export interface Envelope {
  readonly v: 1;
  readonly iv: string;
  readonly ct: string;
  readonly tag: string;
}

const ENC_PREFIX = '{"$enc":{';
const B64 = /^[A-Za-z0-9+/]*={0,2}$/;

function payloadAad(planId: string): Buffer {
  return Buffer.from(`plan-ledger:payload:v1:${planId}`, 'utf8');
}

function keyAad(planId: string): Buffer {
  return Buffer.from(`plan-ledger:plan-key:v1:${planId}`, 'utf8');
}

function gcmSeal(key: Buffer, aad: Buffer, plain: Buffer): Envelope {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, iv);
  c.setAAD(aad);
  const ct = Buffer.concat([c.update(plain), c.final()]);
  return { v: 1, iv: iv.toString('base64'), ct: ct.toString('base64'), tag: c.getAuthTag().toString('base64') };
}

function gcmOpen(key: Buffer, aad: Buffer, e: Envelope, what: string): Buffer {
  try {
    const d = createDecipheriv('aes-256-gcm', key, Buffer.from(e.iv, 'base64'));
    d.setAAD(aad);
    d.setAuthTag(Buffer.from(e.tag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(e.ct, 'base64')), d.final()]);
  } catch (err) {
    throw new LedgerError('INTEGRITY', `${what} does not open with its key (altered, another plan's, or another key)`, {}, { cause: err });
  }
}

/** The envelope's canonical JSON (keys sorted, as every payload in an event must be). */
export function envelopeJson(e: Envelope): string {
  return `{"$enc":{"ct":"${e.ct}","iv":"${e.iv}","tag":"${e.tag}","v":1}}`;
}

/** The envelope a payload text is, or undefined for a plaintext payload. Cheap for plaintext. */
export function parseEnvelope(json: string | null | undefined): Envelope | undefined {
  if (json == null || !json.startsWith(ENC_PREFIX)) return undefined;
  try {
    const v = (JSON.parse(json) as Record<string, unknown>)['$enc'] as Record<string, unknown> | undefined;
    if (!v || typeof v !== 'object') return undefined;
    const { iv, ct, tag } = v;
    if (v['v'] !== 1 || typeof iv !== 'string' || typeof ct !== 'string' || typeof tag !== 'string' || ![iv, ct, tag].every((s) => B64.test(s))) return undefined;
    const e: Envelope = { v: 1, iv, ct, tag };
    return envelopeJson(e) === json ? e : undefined;
  } catch {
    return undefined;
  }
}

/** Encrypts a payload text of `planId` with its data key. */
export function sealPayload(dataKey: Buffer, planId: string, json: string): string {
  return envelopeJson(gcmSeal(dataKey, payloadAad(planId), Buffer.from(json, 'utf8')));
}

/** The payload text an envelope holds; INTEGRITY when it does not open with this key and plan. */
export function openPayload(dataKey: Buffer, planId: string, e: Envelope): string {
  return gcmOpen(dataKey, payloadAad(planId), e, `a payload of plan ${planId}`).toString('utf8');
}

/** A new random data key for a plan. */
export function newDataKey(): Buffer {
  return randomBytes(32);
}

/** The record value of a plan's data key: the key wrapped by the master key, the plan id authenticated. */
export function wrapDataKey(master: Buffer, planId: string, dataKey: Buffer): string {
  return JSON.stringify({ planKey: gcmSeal(master, keyAad(planId), dataKey) });
}

/** The data key a plan-keys record holds; INTEGRITY when the master key (or the plan) is not the one it was wrapped with. */
export function unwrapDataKey(master: Buffer, planId: string, value: string): Buffer {
  let e: Envelope;
  try {
    e = (JSON.parse(value) as { planKey: Envelope }).planKey;
    if (typeof e?.iv !== 'string' || typeof e.ct !== 'string' || typeof e.tag !== 'string') throw new Error('not a wrapped key');
  } catch (err) {
    throw new LedgerError('INTEGRITY', `the key record of plan ${planId} is not a wrapped key`, { planId }, { cause: err });
  }
  return gcmOpen(master, keyAad(planId), e, `the key of plan ${planId}`);
}

/**
 * The master key from `PLAN_LEDGER_MASTER_KEY_FILE` (a file holding the base64 key) or
 * `PLAN_LEDGER_MASTER_KEY` (the base64 key): 32 bytes; `PLAN_LEDGER_MASTER_KEY_PREVIOUS(_FILE)` likewise.
 * Undefined when neither is set (payloads are then stored as given). A bad value fails naming the
 * variable, never showing the value (src/settings.ts).
 */
export function masterKeyFromEnv(env: NodeJS.ProcessEnv = process.env, name: 'PLAN_LEDGER_MASTER_KEY' | 'PLAN_LEDGER_MASTER_KEY_PREVIOUS' = 'PLAN_LEDGER_MASTER_KEY'): Buffer | undefined {
  const [key, file] =
    name === 'PLAN_LEDGER_MASTER_KEY_PREVIOUS'
      ? [settingIfSet('PLAN_LEDGER_MASTER_KEY_PREVIOUS', env), settingIfSet('PLAN_LEDGER_MASTER_KEY_PREVIOUS_FILE', env)]
      : [settingIfSet('PLAN_LEDGER_MASTER_KEY', env), settingIfSet('PLAN_LEDGER_MASTER_KEY_FILE', env)];
  return file ? masterKeyFromFile(file, `${name}_FILE`) : key;
}

/** The master key in a file (32 bytes in base64, blanks around it ignored); an error names `field`, never the key. */
export function masterKeyFromFile(file: string, field: string): Buffer {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new LedgerError('VALIDATION', `${field}: cannot read ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`, { field });
  }
  const t = text.trim();
  const key = B64.test(t) ? Buffer.from(t, 'base64') : Buffer.alloc(0);
  if (key.length !== 32) throw new LedgerError('VALIDATION', `${field} must hold 32 bytes in base64 (44 characters; e.g. \`openssl rand -base64 32\`)`, { field });
  return key;
}
