/**
 * A small, pure interpreter of the (inlined) Avro schemas in `generated/schemas.ts`. `decide` uses it to
 * check commands against the contract (so validation and schema are one truth) and `avro-mapping` uses it
 * to wrap and unwrap unions. Only the subset the contract uses is supported: primitives, records, enums,
 * arrays, maps and unions.
 */
import { planCommandSchema, planEventSchema } from './generated/schemas.js';

export type SchemaNode = string | readonly SchemaNode[] | { readonly [key: string]: unknown };

export interface SchemaField {
  readonly name: string;
  readonly type: SchemaNode;
  readonly default?: unknown;
}

export interface NamedNode {
  readonly type: 'record' | 'enum';
  readonly name: string;
  readonly namespace?: string;
  readonly fields?: readonly SchemaField[];
  readonly symbols?: readonly string[];
}

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

function isNode(v: unknown): v is { readonly [key: string]: unknown } {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Named types (records and enums) of a schema, keyed by full name. */
export function collectNamed(root: SchemaNode, into: Map<string, NamedNode> = new Map()): Map<string, NamedNode> {
  const walk = (s: unknown): void => {
    if (Array.isArray(s)) {
      s.forEach(walk);
      return;
    }
    if (!isNode(s)) return;
    const type = s['type'];
    if (type === 'record' || type === 'enum') {
      const node = s as unknown as NamedNode;
      into.set(fullName(node), node);
      if (type === 'record') for (const f of node.fields ?? []) walk(f.type);
      return;
    }
    if (type === 'array') walk(s['items']);
    else if (type === 'map') walk(s['values']);
    else walk(type);
  };
  walk(root);
  return into;
}

export function fullName(node: NamedNode): string {
  return node.name.includes('.') || node.namespace === undefined ? node.name : `${node.namespace}.${node.name}`;
}

/** Every named type of the contract (events and commands), by full name. */
export const contractTypes: ReadonlyMap<string, NamedNode> = collectNamed(
  planCommandSchema as unknown as SchemaNode,
  collectNamed(planEventSchema as unknown as SchemaNode),
);

export function namedType(name: string): NamedNode {
  const node = contractTypes.get(name) ?? contractTypes.get(`planledger.${name}`);
  if (node === undefined) throw new Error(`unknown Avro type ${name}`);
  return node;
}

/** Resolves a reference string to its named node (primitive names resolve to themselves). */
export function resolve(s: SchemaNode, names: ReadonlyMap<string, NamedNode> = contractTypes): SchemaNode {
  if (typeof s === 'string' && !PRIMITIVES.has(s)) {
    const node = names.get(s) ?? names.get(`planledger.${s}`);
    if (node === undefined) throw new Error(`unknown Avro type ${s}`);
    return node as unknown as SchemaNode;
  }
  return s;
}

/** The name avsc uses for a union branch when unions are wrapped. */
export function branchName(s: SchemaNode, names: ReadonlyMap<string, NamedNode> = contractTypes): string {
  const r = resolve(s, names);
  if (typeof r === 'string') return r;
  if (Array.isArray(r)) throw new Error('nested unions are not allowed in Avro');
  const node = r as { readonly [key: string]: unknown };
  const type = node['type'];
  if (type === 'record' || type === 'enum') return fullName(node as unknown as NamedNode);
  if (type === 'array' || type === 'map') return type;
  if (typeof type === 'string') return type;
  return branchName(type as SchemaNode, names);
}

/** A field that does not fit the schema: where and why. */
export class FieldProblem {
  constructor(
    readonly path: string,
    readonly message: string,
  ) {}
}

function fail(path: string, message: string): never {
  throw new FieldProblem(path, message);
}

function isWellFormed(text: string): boolean {
  return (text as string & { isWellFormed(): boolean }).isWellFormed();
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Checks `value` against `schema` and returns a normalized copy: plain objects, missing fields that have a
 * default filled in. Unknown fields, wrong types, non-integers for int/long, non-finite numbers and enum
 * values outside the symbols throw a {@link FieldProblem} naming the path.
 */
export function parseValue(schema: SchemaNode, value: unknown, path: string, names: ReadonlyMap<string, NamedNode> = contractTypes): unknown {
  const s = resolve(schema, names);
  if (typeof s === 'string') {
    switch (s) {
      case 'null':
        return value === null ? null : fail(path, 'must be null');
      case 'boolean':
        return typeof value === 'boolean' ? value : fail(path, 'must be a boolean');
      case 'int':
        return typeof value === 'number' && Number.isInteger(value) && value >= -2147483648 && value <= 2147483647
          ? value
          : fail(path, 'must be a 32-bit integer');
      case 'long':
        return typeof value === 'number' && Number.isSafeInteger(value) ? value : fail(path, 'must be a safe integer');
      case 'float':
      case 'double':
        return typeof value === 'number' && Number.isFinite(value) ? value : fail(path, 'must be a finite number');
      case 'string':
        if (typeof value !== 'string') return fail(path, 'must be a string');
        // A lone surrogate has no UTF-8 form: Avro would write U+FFFD, and the event read back would no
        // longer match the hash sealed over the original text.
        return isWellFormed(value) ? value : fail(path, 'must be well-formed Unicode (no lone surrogates)');
      default:
        return fail(path, `unsupported type ${s}`);
    }
  }
  if (Array.isArray(s)) {
    if (value === null) {
      if (s.includes('null')) return null;
      return fail(path, 'must not be null');
    }
    let first: FieldProblem | undefined;
    for (const branch of s) {
      if (branch === 'null') continue;
      try {
        return parseValue(branch as SchemaNode, value, path, names);
      } catch (e) {
        if (!(e instanceof FieldProblem)) throw e;
        first ??= e;
      }
    }
    throw first ?? new FieldProblem(path, 'matches no branch');
  }
  const node = s as { readonly [key: string]: unknown };
  const type = node['type'];
  switch (type) {
    case 'record': {
      if (!isPlainObject(value)) return fail(path, 'must be an object');
      const fields = (node['fields'] as readonly SchemaField[] | undefined) ?? [];
      const known = new Set(fields.map((f) => f.name));
      for (const key of Object.keys(value)) if (!known.has(key)) fail(`${path}.${key}`, 'unknown field');
      const out: Record<string, unknown> = {};
      for (const f of fields) {
        const fieldPath = `${path}.${f.name}`;
        const present = Object.prototype.hasOwnProperty.call(value, f.name) && value[f.name] !== undefined;
        if (!present) {
          if (!('default' in f)) fail(fieldPath, 'is required');
          out[f.name] = parseValue(f.type, f.default, fieldPath, names);
        } else {
          out[f.name] = parseValue(f.type, value[f.name], fieldPath, names);
        }
      }
      return out;
    }
    case 'enum': {
      const symbols = (node['symbols'] as readonly string[] | undefined) ?? [];
      return typeof value === 'string' && symbols.includes(value) ? value : fail(path, `must be one of ${symbols.join(', ')}`);
    }
    case 'array': {
      if (!Array.isArray(value)) return fail(path, 'must be an array');
      const items = node['items'] as SchemaNode;
      const out: unknown[] = [];
      for (let i = 0; i < value.length; i++) out.push(parseValue(items, value[i], `${path}[${i}]`, names));
      return out;
    }
    case 'map': {
      if (!isPlainObject(value)) return fail(path, 'must be an object');
      const values = node['values'] as SchemaNode;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        if (key === '__proto__') fail(`${path}.${key}`, 'reserved key');
        if (!isWellFormed(key)) fail(path, 'keys must be well-formed Unicode (no lone surrogates)');
        setOwn(out, key, parseValue(values, value[key], `${path}.${key}`, names));
      }
      return out;
    }
    default:
      if (typeof type === 'string' || Array.isArray(type) || isNode(type)) return parseValue(type as SchemaNode, value, path, names);
      return fail(path, 'bad schema');
  }
}
