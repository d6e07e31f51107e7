/**
 * fast-check arbitraries for any value of the Avro contract, derived from the schemas themselves (so a new
 * event type or field is covered without touching this file): domain-shaped events and commands
 * (`{ ...metadata, type, data }`, optional fields `T | null`).
 */
import fc from 'fast-check';
import { resolve, type SchemaField, type SchemaNode } from '../../src/plan/avro-schema.js';
import { planCommandSchema, planEventSchema } from '../../src/plan/index.js';

const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 12 }));

/** An arbitrary domain value of `schema` (named types resolved through the contract). */
export function valueArb(schema: SchemaNode): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (typeof s === 'string') {
    switch (s) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'int':
        return fc.integer({ min: -2147483648, max: 2147483647 });
      case 'long':
        // avsc's default long is a JS number: it refuses |n| > 2^53 - 2 on write and loses the last bit of
        // negatives below -2^52 (zigzag in float arithmetic). The ledger's longs are seqs, offsets, epoch ms.
        return fc.oneof(fc.integer(), fc.maxSafeInteger().filter((n) => Math.abs(n) < 2 ** 52));
      case 'float':
      case 'double':
        return fc.double({ noNaN: true, noDefaultInfinity: true });
      case 'string':
        return text;
      default:
        throw new Error(`no arbitrary for ${s}`);
    }
  }
  if (Array.isArray(s)) {
    const branch = (s as readonly SchemaNode[]).find((b) => b !== 'null');
    if (s.length !== 2 || branch === undefined) throw new Error('only ["null", T] unions are generated');
    return fc.option(valueArb(branch), { nil: null });
  }
  const node = s as { readonly [key: string]: unknown };
  switch (node['type']) {
    case 'record': {
      const fields = node['fields'] as readonly SchemaField[];
      return fc.record(Object.fromEntries(fields.map((f) => [f.name, valueArb(f.type)])));
    }
    case 'enum':
      return fc.constantFrom(...(node['symbols'] as string[]));
    case 'array':
      return fc.array(valueArb(node['items'] as SchemaNode), { maxLength: 3 });
    case 'map':
      // avsc (and so both mappings) reads maps into `{}`, where a `__proto__` key cannot be an own key;
      // the domain refuses that key anyway (avro-schema parseValue).
      return fc.dictionary(text.filter((k) => k !== '__proto__'), valueArb(node['values'] as SchemaNode), { maxKeys: 3 });
    default:
      return valueArb(node['type'] as SchemaNode);
  }
}

function envelopeArb(schema: { fields: readonly unknown[] }): fc.Arbitrary<Record<string, unknown>> {
  const fields = schema.fields as readonly SchemaField[];
  const meta = fc.record(Object.fromEntries(fields.filter((f) => f.name !== 'payload').map((f) => [f.name, valueArb(f.type)])));
  const payload = fields.find((f) => f.name === 'payload')!.type as readonly SchemaNode[];
  const bodies = payload.map((b) => {
    const name = (resolve(b) as { name: string }).name;
    return fc.record({ type: fc.constant(name.slice(name.lastIndexOf('.') + 1)), data: valueArb(b) });
  });
  return fc.tuple(meta, fc.oneof(...bodies)).map(([m, body]) => ({ ...m, ...body }));
}

/** Any PlanEvent the contract allows (not necessarily one `decide` would produce). */
export const anyEventArb = envelopeArb(planEventSchema);
/** Any PlanCommand the contract allows. */
export const anyCommandArb = envelopeArb(planCommandSchema);
