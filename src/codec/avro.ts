/**
 * avsc Types for the codec, and the fast mapping between domain values and avsc values.
 *
 * Types are built with `wrapUnions: 'auto'`: every `["null", T]` field reads and writes as `null | T`,
 * exactly the domain shape, so only the envelope's `payload` union (many records: avsc wraps it as
 * `{ 'planledger.ItemAdded': data }`) needs mapping to and from `{ type: 'ItemAdded', data }`. Records
 * decode into plain objects (prototype `Object.prototype`), so decoded values are canonical-JSON-ready
 * with no copy. `test/codec/codec.unit.test.ts` proves the result equal to `src/plan/avro-mapping.ts`.
 * Arrays and maps refuse block counts larger than the bytes left (see {@link blockCount}).
 */
import avsc from 'avsc';
import { dropNullItemFields } from '../plan/absent-fields.js';
import { errorMessage, schemaError } from './errors.js';

/** A structural view of the avsc Type classes the codec walks (avsc's typings are incomplete). */
interface TypeNode {
  readonly typeName: string;
  readonly name?: string;
  readonly branchName?: string;
  readonly fields?: readonly { readonly name: string; readonly type: TypeNode }[];
  readonly types?: readonly TypeNode[];
  readonly itemsType?: TypeNode;
  readonly valuesType?: TypeNode;
  readonly underlyingType?: TypeNode;
  readonly recordConstructor?: { prototype: object };
}

const node = (t: avsc.Type): TypeNode => t as unknown as TypeNode;

/** Calls `visit` on every type reachable from `root` once, with a path for messages. */
function walkTypes(root: avsc.Type, visit: (t: TypeNode, path: string) => void): void {
  const seen = new Set<TypeNode>();
  const walk = (t: TypeNode, path: string): void => {
    if (seen.has(t)) return;
    seen.add(t);
    visit(t, path);
    if (t.typeName === 'record' || t.typeName === 'error') for (const f of t.fields ?? []) walk(f.type, `${path}.${f.name}`);
    else if (t.typeName.startsWith('union')) (t.types ?? []).forEach((b, i) => walk(b, `${path}|${b.branchName ?? i}`));
    else if (t.typeName === 'array' && t.itemsType) walk(t.itemsType, `${path}[]`);
    else if (t.typeName === 'map' && t.valuesType) walk(t.valuesType, `${path}{}`);
    else if (t.underlyingType) walk(t.underlyingType, path);
  };
  walk(node(root), node(root).name ?? '$');
}

/** The part of avsc's Tap (its read cursor) the guards below use. */
interface Tap {
  buf: Buffer;
  pos: number;
  readLong(): number;
  skipLong(): void;
  skipString(): void;
}

/** Smallest encoded size of a value of `t` (0 only for null, fixed(0) and records of such). */
function minBytes(t: TypeNode, seen = new Set<TypeNode>()): number {
  if (seen.has(t)) return 1;
  seen.add(t);
  if (t.typeName === 'null') return 0;
  if (t.typeName === 'fixed') return (t as unknown as { size: number }).size;
  if (t.typeName === 'record' || t.typeName === 'error') return (t.fields ?? []).reduce((n, f) => n + minBytes(f.type, seen), 0);
  if (t.underlyingType) return minBytes(t.underlyingType, seen);
  return 1;
}

/**
 * An array or map block count larger than the bytes left cannot be honest (every item takes at least one
 * byte), but avsc would loop that many times past the end of the buffer: 17 crafted bytes with a valid
 * schema id make it allocate until the process dies. Checked per block, so a poison record is `corrupt`.
 */
function blockCount(tap: Tap, itemBytes: number): number {
  let n = tap.readLong();
  if (n < 0) {
    n = -n;
    tap.skipLong(); // block size in bytes
  }
  if (itemBytes > 0 && n * itemBytes > tap.buf.length - tap.pos) {
    throw new Error(`block of ${n} items exceeds the ${Math.max(0, tap.buf.length - tap.pos)} bytes left`);
  }
  return n;
}

const ArrayBase = (avsc.types as unknown as { ArrayType: new (schema: object, opts: object) => object }).ArrayType;
const MapBase = (avsc.types as unknown as { MapType: new (schema: object, opts: object) => object }).MapType;
const itemSizes = new WeakMap<object, number>();
const itemSize = (t: TypeNode): number => {
  let n = itemSizes.get(t);
  if (n === undefined) itemSizes.set(t, (n = minBytes(t)));
  return n;
};

/** avsc's ArrayType with bounded block counts (resolvers reuse `_read`, so resolved reads are bounded too). */
class BoundedArrayType extends ArrayBase {
  _read(tap: Tap): unknown[] {
    const items = (this as unknown as { itemsType: TypeNode & { _read(t: Tap): unknown } }).itemsType;
    const size = itemSize(items);
    const out: unknown[] = [];
    let n: number;
    while ((n = blockCount(tap, size))) while (n--) out.push(items._read(tap));
    return out;
  }
  _skip(tap: Tap): void {
    const items = (this as unknown as { itemsType: TypeNode & { _skip(t: Tap): void } }).itemsType;
    const size = itemSize(items);
    let n: number;
    while ((n = blockCount(tap, size))) while (n--) items._skip(tap);
  }
}

/** avsc's MapType with bounded block counts; keys are own properties even for `__proto__`. */
class BoundedMapType extends MapBase {
  _read(tap: Tap & { readString(): string }): Record<string, unknown> {
    const values = (this as unknown as { valuesType: TypeNode & { _read(t: Tap): unknown } }).valuesType;
    const out: Record<string, unknown> = {};
    let n: number;
    while ((n = blockCount(tap, 1))) {
      while (n--) {
        const key = tap.readString();
        const value = values._read(tap);
        if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
        else out[key] = value;
      }
    }
    return out;
  }
  _skip(tap: Tap): void {
    const values = (this as unknown as { valuesType: TypeNode & { _skip(t: Tap): void } }).valuesType;
    let n: number;
    while ((n = blockCount(tap, 1))) {
      while (n--) {
        tap.skipString();
        values._skip(tap);
      }
    }
  }
}

function boundedCollections(schema: unknown, opts: unknown): avsc.Type | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return undefined;
  const type = (schema as { type?: unknown }).type;
  if (type === 'array') return new BoundedArrayType(schema, opts as object) as unknown as avsc.Type;
  if (type === 'map') return new BoundedMapType(schema, opts as object) as unknown as avsc.Type;
  return undefined;
}

/**
 * Parses `schema` the way the codec reads and writes: `wrapUnions: 'auto'`, records as plain objects.
 * Throws `SCHEMA` `invalid_schema` when avsc refuses the schema.
 */
export function buildType(schema: object): avsc.Type {
  let type: avsc.Type;
  try {
    type = avsc.Type.forSchema(schema as avsc.Schema, { wrapUnions: 'auto', omitRecordMethods: true, typeHook: boundedCollections });
  } catch (e) {
    throw schemaError('invalid_schema', `avsc cannot parse the schema: ${errorMessage(e)}`, {}, e);
  }
  // With omitRecordMethods the generated record constructors have no methods; pointing their prototype
  // at Object.prototype makes `new Record(...)` a plain object (canonicalJson accepts only those), at
  // no decoding cost and for resolved reads too (resolvers construct through the same function).
  walkTypes(type, (t) => {
    if (t.recordConstructor !== undefined) t.recordConstructor.prototype = Object.prototype;
  });
  return type;
}

/** Union shapes the fast mapping cannot represent: every nested union must be unwrapped under 'auto'. */
export function wrappedNestedUnions(type: avsc.Type, payloadField: string | undefined): string[] {
  const bad: string[] = [];
  const root = node(type);
  const payload = payloadField === undefined ? undefined : root.fields?.find((f) => f.name === payloadField)?.type;
  walkTypes(type, (t, path) => {
    if (t.typeName === 'union:wrapped' && t !== payload) bad.push(path);
  });
  return bad;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

function shortName(full: string): string {
  return full.slice(full.lastIndexOf('.') + 1);
}

/** Domain value <-> avsc value of one record schema. */
export interface Mapper<T> {
  /** The record's full name, e.g. `planledger.PlanEvent`. */
  readonly recordName: string;
  /** Payload type names in union order (empty for records without a payload union). */
  readonly payloadTypes: readonly string[];
  toAvro(value: T): unknown;
  fromAvro(record: unknown): T;
}

/**
 * The mapping for a record: for an envelope (a record whose field `payload` is a union of records) the
 * payload becomes `type` + `data` and back; any other record maps to itself.
 *
 * The two envelope functions are generated once per schema (as avsc itself does) so that each builds an
 * object literal of a fixed shape: no per-field loop, no schema walk per value.
 */
export function mapperFor<T>(type: avsc.Type): Mapper<T> {
  const root = node(type);
  const recordName = root.name ?? '';
  if (root.typeName !== 'record' || root.fields === undefined) throw schemaError('invalid_schema', `${recordName || 'schema'} is not a record`);
  const payload = root.fields.find((f) => f.name === 'payload');
  if (payload === undefined) {
    const bad = wrappedNestedUnions(type, undefined);
    if (bad.length > 0) throw ambiguous(recordName, bad);
    return { recordName, payloadTypes: [], toAvro: (v) => v, fromAvro: (r) => r as T };
  }
  if (payload.type.typeName !== 'union:wrapped') {
    throw schemaError('invalid_schema', `${recordName}.payload must be a union of two or more records`, { schema: recordName });
  }
  const bad = wrappedNestedUnions(type, 'payload');
  if (bad.length > 0) throw ambiguous(recordName, bad);

  const meta = root.fields.filter((f) => f.name !== 'payload').map((f) => f.name);
  for (const name of meta) {
    if (!IDENTIFIER.test(name) || name === 'type' || name === 'data') {
      throw schemaError('invalid_schema', `${recordName}.${name}: envelope field names must be identifiers other than type/data`);
    }
  }
  const fullByShort: Record<string, string> = Object.create(null) as Record<string, string>;
  const shortByFull: Record<string, string> = Object.create(null) as Record<string, string>;
  const payloadTypes: string[] = [];
  for (const b of payload.type.types ?? []) {
    if (b.typeName !== 'record' || b.name === undefined) {
      throw schemaError('invalid_schema', `${recordName}.payload branches must be records`, { schema: recordName });
    }
    const short = shortName(b.name);
    if (short in fullByShort) throw schemaError('invalid_schema', `${recordName}.payload has two records named ${short}`);
    fullByShort[short] = b.name;
    shortByFull[b.name] = short;
    payloadTypes.push(short);
  }
  const metaCopy = meta.map((f) => `${f}: v.${f}`).join(', ');
  // jshint-style generated code over identifiers checked above; the only inputs are our own schemas.
  const toAvro = new Function(
    'fullByShort',
    'unknownType',
    `return function toAvro(v) {
      var full = fullByShort[v.type];
      if (full === undefined) throw unknownType(v.type);
      var p = {}; p[full] = v.data;
      return { ${metaCopy}, payload: p };
    };`,
  )(fullByShort, (t: unknown) =>
    schemaError('invalid_value', `${recordName} has no payload type ${JSON.stringify(t)}`, { schema: recordName, type: t }),
  ) as (v: T) => unknown;
  const fromAvro = new Function(
    'shortByFull',
    'unknownBranch',
    `return function fromAvro(v) {
      var p = v.payload;
      var full = Object.keys(p)[0];
      var type = shortByFull[full];
      if (type === undefined) throw unknownBranch(full);
      return { ${metaCopy}, type: type, data: p[full] };
    };`,
  )(shortByFull, (full: unknown) =>
    schemaError(
      'unknown_branch',
      `${recordName} payload type ${String(full)} is unknown to this reader (written by a newer schema); dead-letter the record, never skip it`,
      { schema: recordName, type: typeof full === 'string' ? shortName(full) : full },
    ),
  ) as (r: unknown) => T;
  // Item specs a payload carries: `secret` is absent when null (see src/plan/absent-fields.ts).
  const withItems = new Set(['ItemAdded', 'CreatePlan', 'AddItems', 'PlanCreated']);
  const fromAvroNormalized = (r: unknown): T => {
    const v = fromAvro(r) as { type: string; data: unknown };
    if (withItems.has(v.type)) dropNullItemFields(v.data);
    return v as T;
  };
  return { recordName, payloadTypes, toAvro, fromAvro: fromAvroNormalized };
}

function ambiguous(recordName: string, paths: string[]) {
  return schemaError(
    'invalid_schema',
    `${recordName}: unions other than the payload must be ["null", T] (these would need wrapping: ${paths.join(', ')})`,
    { schema: recordName, paths },
  );
}

interface SchemaJson {
  type?: unknown;
  name?: unknown;
  fields?: { name: string; type: unknown }[];
}

/** Full names defined anywhere in a (JSON) schema. */
function definedNames(schema: unknown, ns = '', into = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) {
    for (const s of schema) definedNames(s, ns, into);
  } else if (typeof schema === 'object' && schema !== null) {
    const s = schema as Record<string, unknown>;
    let inner = ns;
    if ((s['type'] === 'record' || s['type'] === 'enum' || s['type'] === 'fixed' || s['type'] === 'error') && typeof s['name'] === 'string') {
      const name = s['name'];
      const own = typeof s['namespace'] === 'string' ? s['namespace'] : ns;
      const full = name.includes('.') || own === '' ? name : `${own}.${name}`;
      into.add(full);
      inner = full.includes('.') ? full.slice(0, full.lastIndexOf('.')) : '';
    }
    for (const f of (s['fields'] as { type: unknown }[] | undefined) ?? []) definedNames(f.type, inner, into);
    if (s['items'] !== undefined) definedNames(s['items'], inner, into);
    if (s['values'] !== undefined) definedNames(s['values'], inner, into);
    if (typeof s['type'] === 'object') definedNames(s['type'], inner, into);
  }
  return into;
}

/**
 * A reader schema that can resolve `writer` even when the writer's payload union has records this reader
 * does not know (a newer writer appended event types). avsc refuses to build a resolver for such a union
 * at all, which would make *every* record of that writer unreadable; appending an empty record of each
 * unknown name lets the known types resolve as usual and turns an unknown one into `{ name: {} }` (its
 * fields skipped), which the mapper reports as `unknown_branch`. Returns undefined when nothing is unknown.
 */
export function tolerantReaderSchema(readerSchema: object, reader: avsc.Type, writer: avsc.Type): object | undefined {
  const payloadOf = (t: avsc.Type) => node(t).fields?.find((f) => f.name === 'payload')?.type;
  const readerPayload = payloadOf(reader);
  const writerPayload = payloadOf(writer);
  if (readerPayload?.types === undefined || writerPayload?.types === undefined) return undefined;
  const known = new Set(readerPayload.types.map((b) => b.name));
  const unknown = writerPayload.types.filter((b) => b.typeName === 'record' && b.name !== undefined && !known.has(b.name)).map((b) => b.name as string);
  if (unknown.length === 0) return undefined;
  const copy = structuredClone(readerSchema) as SchemaJson;
  const field = copy.fields?.find((f) => f.name === 'payload');
  if (field === undefined || !Array.isArray(field.type)) return undefined;
  const defined = definedNames(copy);
  field.type = [...(field.type as unknown[]), ...unknown.map((name) => (defined.has(name) ? name : { type: 'record', name, fields: [] }))];
  return copy;
}
