import { describe, expect, it } from 'vitest';
import { CHUNK_BYTES, blobTombstones, parseRef, payloadLimitsFromEnv, payloadPlacement, refJson, toBlob } from '../../src/blobs/index.js';
import { isLedgerError } from '../../src/errors.js';

describe('payloads by reference', () => {
  it('pins the reference format (golden): canonical JSON, keys sorted, the sha256 of the UTF-8 bytes', () => {
    const b = toBlob('p1', '{"a":"é"}', 1733011200000, 3);
    // sha256 of the 10 UTF-8 bytes {"a":"é"}, computed outside this code base (`printf '{"a":"é"}' | sha256sum`).
    expect(b.refJson).toBe('{"$blob":{"at":1733011200000,"bytes":10,"chunks":1,"sha256":"b3a092a6af48807fa9482b2ee140105575daa26d5b24b3c0e60a7e2dee6683b1"}}');
    expect(b.messages).toHaveLength(1);
    expect(b.messages[0]).toMatchObject({ key: `p1:${b.ref.sha256}:0`, timestamp: '1733011200000', partition: 3 });
    expect(parseRef(b.refJson)).toEqual(b.ref);
  });

  it('chunks by CHUNK_BYTES and reassembles to the same bytes', () => {
    const text = 'x'.repeat(CHUNK_BYTES * 2 + 5);
    const b = toBlob('p', text, 1, 0);
    expect(b.ref.chunks).toBe(3);
    expect(b.messages.map((m) => (m.value as Buffer).length)).toEqual([CHUNK_BYTES, CHUNK_BYTES, 5]);
    expect(Buffer.concat(b.messages.map((m) => m.value as Buffer)).toString()).toBe(text);
    expect(blobTombstones('p', b.ref, 0).map((m) => [m.key, m.value])).toEqual([0, 1, 2].map((i) => [`p:${b.ref.sha256}:${i}`, null]));
  });

  it('reads only exact references: anything else is an inline payload', () => {
    const ref = { at: 5, bytes: 7, chunks: 1, sha256: 'a'.repeat(64) };
    expect(parseRef(refJson(ref))).toEqual(ref);
    for (const notRef of [
      null,
      '{"a":1}',
      '{"$blob":{"at":5,"bytes":7,"chunks":1,"sha256":"zz"}}',
      '{"$blob":{"at":5,"bytes":7,"chunks":1,"sha256":"' + 'a'.repeat(64) + '","x":1}}',
      '{"$blob":{"bytes":7,"at":5,"chunks":1,"sha256":"' + 'a'.repeat(64) + '"}}',
      '{"$blob":{"at":-1,"bytes":7,"chunks":1,"sha256":"' + 'a'.repeat(64) + '"}}',
      '{"$blob":',
    ]) {
      expect(parseRef(notRef)).toBeUndefined();
    }
  });

  it('places payloads: inline up to the threshold, by reference above it, refused past the ceiling with the field and size', () => {
    const limits = { inlineBytes: 100, maxPayloadBytes: 1000 };
    expect(payloadPlacement('x'.repeat(100), 'f', limits)).toBeUndefined();
    expect(payloadPlacement('x'.repeat(101), 'f', limits)).toBe(101);
    expect(payloadPlacement('é'.repeat(51), 'f', limits)).toBe(102); // counted in UTF-8 bytes
    const e = (() => {
      try {
        payloadPlacement('x'.repeat(1001), 'items[2].input', limits);
      } catch (err) {
        return err;
      }
    })();
    expect(isLedgerError(e, 'PAYLOAD_TOO_LARGE')).toBe(true);
    expect((e as { details: unknown }).details).toEqual({ field: 'items[2].input', bytes: 1001, limit: 1000 });
  });

  it('validates the limits from the environment, naming the variable', () => {
    expect(payloadLimitsFromEnv({})).toEqual({ inlineBytes: 65536, maxPayloadBytes: 67108864 });
    expect(payloadLimitsFromEnv({ PLAN_LEDGER_INLINE_PAYLOAD_BYTES: '1000', PLAN_LEDGER_MAX_PAYLOAD_BYTES: '5000' })).toEqual({ inlineBytes: 1000, maxPayloadBytes: 5000 });
    expect(() => payloadLimitsFromEnv({ PLAN_LEDGER_MAX_PAYLOAD_BYTES: 'lots' })).toThrow('PLAN_LEDGER_MAX_PAYLOAD_BYTES="lots" is not allowed: expected a positive integer');
    expect(() => payloadLimitsFromEnv({ PLAN_LEDGER_INLINE_PAYLOAD_BYTES: '300000' })).toThrow('PLAN_LEDGER_INLINE_PAYLOAD_BYTES="300000" is not allowed: expected an integer from 1 to 262144');
  });
});
