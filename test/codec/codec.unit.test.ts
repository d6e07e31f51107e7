// The codec's pure parts: the Confluent header, registry error classification, and the proof that the
// fast mapping (wrapUnions 'auto', only the payload union mapped) equals src/plan/avro-mapping.ts.
import { dropNullItemFields } from '../../src/plan/absent-fields.js';
import avsc from 'avsc';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildType, mapperFor, tolerantReaderSchema } from '../../src/codec/avro.js';
import { classifyRegistryError } from '../../src/codec/registry.js';
import { HEADER_SIZE, readSchemaId, writeHeader } from '../../src/codec/wire.js';
import { isLedgerError } from '../../src/errors.js';
import {
  canonicalJson,
  commandTypes,
  fromAvroCommand,
  fromAvroEvent,
  planCommandSchema,
  planEventSchema,
  toAvroCommand,
  toAvroEvent,
  type PlanCommand,
  type PlanEvent,
} from '../../src/plan/index.js';
import { planSnapshotSchema } from '../../src/plan/generated/schemas.js';
import { scenarioArb, simulate } from '../plan/arbitraries.js';
import { anyCommandArb, anyEventArb } from './arbitraries.js';

/** The thrown value, for asserting on codes and reasons (a test that expects a throw fails without one). */
function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  throw new Error('expected a throw');
}

describe('Confluent wire header', () => {
  it('reads the big-endian schema id after magic byte 0, for every int32 id', () => {
    fc.assert(
      fc.property(fc.integer({ min: -2147483648, max: 2147483647 }), fc.uint8Array({ maxLength: 8 }), (id, body) => {
        const buf = Buffer.alloc(HEADER_SIZE + body.length);
        writeHeader(buf, id);
        Buffer.from(body).copy(buf, HEADER_SIZE);
        expect(buf[0]).toBe(0);
        expect(readSchemaId(buf)).toBe(id);
      }),
    );
    expect(readSchemaId(Buffer.from([0, 0, 0, 1, 7]))).toBe(263);
  });

  it('refuses values that are not Confluent-framed, with a reason', () => {
    const cases: Array<[Buffer | null, string]> = [
      [null, 'too_short'],
      [Buffer.alloc(0), 'too_short'],
      [Buffer.from([0, 0, 0, 1]), 'too_short'],
      [Buffer.from([1, 0, 0, 0, 1, 2]), 'bad_magic'],
      [Buffer.from('{"json":true}'), 'bad_magic'],
    ];
    for (const [buf, reason] of cases) {
      const e = thrown(() => readSchemaId(buf));
      expect(isLedgerError(e, 'SCHEMA')).toBe(true);
      expect((e as { details: { reason: string } }).details.reason).toBe(reason);
    }
  });
});

describe('registry error classification', () => {
  it('separates definite answers (poison or refused schema) from "could not ask" (retry)', () => {
    const cases: Array<[unknown, string]> = [
      [{ status: 404, message: 'Schema 999999 not found.' }, 'not_found'],
      [{ status: 409, message: 'incompatible' }, 'incompatible'],
      [{ status: 422, message: 'invalid schema' }, 'invalid'],
      [{ status: 400, message: 'Confluent_Schema_Registry - Error, status 400: connect ECONNREFUSED 127.0.0.1:1' }, 'unavailable'],
      [{ status: 400, message: 'bad request: unexpected token' }, 'invalid'],
      [{ status: 500, message: 'boom' }, 'unavailable'],
      [{ status: 503, message: 'starting' }, 'unavailable'],
      [{ status: 401, message: 'unauthorized' }, 'unavailable'],
      [{ status: 429, message: 'slow down' }, 'unavailable'],
      [new Error('socket hang up'), 'unavailable'],
      [new TypeError('fetch failed'), 'unavailable'],
      [Object.assign(new Error('Compatibility does not match the configuration'), { name: 'ConfluentSchemaRegistryCompatibilityError' }), 'incompatible'],
      [new Error('unknown type: planledger.Missing'), 'invalid'],
    ];
    for (const [err, failure] of cases) expect(classifyRegistryError(err).failure, JSON.stringify(err)).toBe(failure);
  });
});

const eventType = buildType(planEventSchema);
const commandType = buildType(planCommandSchema);
const eventMapper = mapperFor<PlanEvent>(eventType);
const commandMapper = mapperFor<PlanCommand>(commandType);
const wrappedEvent = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
const wrappedCommand = avsc.Type.forSchema(planCommandSchema as unknown as avsc.Schema, { wrapUnions: true });

/** Both mappings encode to the same bytes and decode those bytes to the same domain value. */
function sameAsAvroMapping(value: PlanEvent | PlanCommand, kind: 'event' | 'command'): void {
  const [fast, mapper, slow, toSlow, fromSlow] =
    kind === 'event'
      ? [eventType, eventMapper, wrappedEvent, toAvroEvent as (v: unknown) => unknown, fromAvroEvent as (r: unknown) => unknown]
      : [commandType, commandMapper, wrappedCommand, toAvroCommand as (v: unknown) => unknown, fromAvroCommand as (r: unknown) => unknown];
  const fastBytes = fast.toBuffer((mapper.toAvro as (v: unknown) => unknown)(value));
  const slowBytes = slow.toBuffer(toSlow(value));
  expect(fastBytes.equals(slowBytes)).toBe(true);
  const fastValue = mapper.fromAvro(fast.fromBuffer(fastBytes));
  const slowValue = fromSlow(slow.fromBuffer(slowBytes));
  expect(fastValue).toStrictEqual(slowValue);
  expect(canonicalJson(fastValue)).toBe(canonicalJson(absentWhenNull(value)));
}

/** The value as a reader gives it back: an item spec's `secret: null` is absent (src/plan/absent-fields.ts). */
function absentWhenNull<T extends { data: unknown }>(value: T): T {
  const copy = structuredClone(value);
  dropNullItemFields(copy.data);
  return copy;
}

describe('fast mapping (wrapUnions auto) equals avro-mapping.ts (wrapUnions true)', () => {
  it('for every event and command of simulated plans (test/plan/arbitraries.ts)', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const sim = simulate(scenario);
        for (const e of sim.events) sameAsAvroMapping(e, 'event');
        for (const step of sim.steps) {
          if ((commandTypes as readonly string[]).includes(step.command.type)) sameAsAvroMapping(step.command as PlanCommand, 'command');
        }
      }),
      { numRuns: 150 },
    );
  });

  it('for any event and command the contract allows (every payload type, every optional branch)', () => {
    fc.assert(fc.property(anyEventArb, (e) => sameAsAvroMapping(e as unknown as PlanEvent, 'event')), { numRuns: 1500 });
    fc.assert(fc.property(anyCommandArb, (c) => sameAsAvroMapping(c as unknown as PlanCommand, 'command')), { numRuns: 800 });
  });

  it('decodes into plain objects that canonicalJson accepts (no avsc record classes)', () => {
    const [e] = simulate({ planId: 'p', mode: 'execute', items: [], choices: [1, 2, 3, 4, 5] }).events;
    const decoded = eventMapper.fromAvro(eventType.fromBuffer(eventType.toBuffer(eventMapper.toAvro(e!))));
    expect(Object.getPrototypeOf(decoded)).toBe(Object.prototype);
    expect(Object.getPrototypeOf(decoded.data)).toBe(Object.prototype);
    expect(canonicalJson(decoded)).toBe(canonicalJson(e));
  });

  it('the snapshot record maps to itself', () => {
    const type = buildType(planSnapshotSchema);
    const snap = { planId: 'p', partition: 2, seq: 9, eventsOffset: 41, stateDigest: 'd', stateJson: '{}', schemaVersion: 1, takenAt: 5 };
    const mapper = mapperFor<typeof snap>(type);
    expect(mapper.payloadTypes).toEqual([]);
    expect(mapper.fromAvro(type.fromBuffer(type.toBuffer(mapper.toAvro(snap))))).toStrictEqual(snap);
  });

  it('an unknown type is refused on encode with a SCHEMA error, not written', () => {
    const e = thrown(() => eventMapper.toAvro({ type: 'ItemArchived', data: {} } as unknown as PlanEvent));
    expect(isLedgerError(e, 'SCHEMA')).toBe(true);
    expect((e as { details: { reason: string } }).details.reason).toBe('invalid_value');
  });

  it('refuses a schema whose nested union would need wrapping (ambiguous under auto)', () => {
    const schema = structuredClone(planSnapshotSchema) as unknown as { fields: { name: string; type: unknown }[] };
    schema.fields.push({ name: 'size', type: ['null', 'int', 'long'] });
    const e = thrown(() => mapperFor(buildType(schema)));
    expect(isLedgerError(e, 'SCHEMA')).toBe(true);
    expect((e as { details: { reason: string; paths: string[] } }).details).toMatchObject({ reason: 'invalid_schema', paths: ['planledger.PlanSnapshot.size'] });
  });
});

describe('hostile bytes', () => {
  // PlanCancelled { reason: '', cancelledItemIds: <a block of 2^30 - 1 items> } after empty metadata:
  // plain avsc loops a billion times past the end of these 17 bytes and the process dies out of memory.
  const hugeArray = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2 * 13, 0, 0xfe, 0xff, 0xff, 0xff, 0x07]);

  it('an array or map block count beyond the bytes left fails fast instead of allocating', () => {
    const t0 = Date.now();
    expect(() => eventType.decode(hugeArray, 0)).toThrow(/exceeds the \d+ bytes left/);
    const labels = Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0x07]); // PlanCreated.labels
    expect(() => eventType.decode(labels, 0)).toThrow(/exceeds/);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('arrays and maps still read every item, also through a resolver', () => {
    fc.assert(
      fc.property(anyEventArb, (e) => {
        const bytes = eventType.toBuffer(eventMapper.toAvro(e as unknown as PlanEvent));
        expect(canonicalJson(eventMapper.fromAvro(eventType.fromBuffer(bytes, eventType.createResolver(buildType(planEventSchema)))))).toBe(canonicalJson(absentWhenNull(e as unknown as PlanEvent)));
      }),
      { numRuns: 300 },
    );
  }, 60_000); // CPU-bound: a loaded 2-core machine needs more than the default 5 s

  it('a map key "__proto__" is kept as an own key, not dropped or turned into a prototype', () => {
    const type = buildType({ type: 'map', values: 'string' });
    const read = type.fromBuffer(type.toBuffer(Object.defineProperty({ a: 'x' }, '__proto__', { value: 'y', enumerable: true }))) as Record<string, unknown>;
    expect(Object.keys(read)).toEqual(['a', '__proto__']);
    expect(Object.getPrototypeOf(read)).toBe(Object.prototype);
  });
});

describe('reading a newer writer that appended a payload type', () => {
  const v2Schema = structuredClone(planEventSchema) as unknown as { fields: { name: string; type: unknown[] }[] };
  v2Schema.fields.find((f) => f.name === 'payload')!.type.push({
    type: 'record',
    name: 'ItemArchived',
    namespace: 'planledger',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'labels', type: { type: 'map', values: 'string' } },
    ],
  });
  const v2 = buildType(v2Schema);
  const v2Mapper = mapperFor<Record<string, unknown>>(v2);

  it('avsc alone cannot resolve it at all; the tolerant reader resolves known types and names the unknown one', () => {
    expect(() => eventType.createResolver(v2)).toThrow();
    const tolerant = buildType(tolerantReaderSchema(planEventSchema, eventType, v2)!);
    const resolver = tolerant.createResolver(v2);
    const [created] = simulate({ planId: 'p', mode: 'execute', items: [], choices: [1] }).events;
    const known = v2.toBuffer(v2Mapper.toAvro(created as unknown as Record<string, unknown>));
    expect(canonicalJson(eventMapper.fromAvro(tolerant.fromBuffer(known, resolver)))).toBe(canonicalJson(created));

    const archived = v2.toBuffer(v2Mapper.toAvro({ ...created, type: 'ItemArchived', data: { itemId: 'i1', labels: { a: 'b' } } }));
    const e = thrown(() => eventMapper.fromAvro(tolerant.fromBuffer(archived, resolver)));
    expect(isLedgerError(e, 'SCHEMA')).toBe(true);
    expect((e as { details: unknown }).details).toMatchObject({ reason: 'unknown_branch', type: 'ItemArchived' });
  });

  it('is not needed when the writer has no unknown payload type', () => {
    expect(tolerantReaderSchema(planEventSchema, eventType, eventType)).toBeUndefined();
  });
});
