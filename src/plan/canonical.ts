import { PlanError } from './errors.js';

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units), no whitespace, arrays in order. Only plain
 * objects, arrays, strings, finite numbers, booleans and null are allowed; anything else (undefined, NaN,
 * Infinity, bigint, functions, symbols, class instances, cycles) throws a `PlanError` `NOT_CANONICAL`.
 * Same value in, same bytes out, in any process: the base of digests and the hash chain.
 *
 * @example canonicalJson({ b: [1, 'x'], a: null }) === '{"a":null,"b":[1,"x"]}'
 */
export function canonicalJson(value: unknown): string {
  return write(value, '$', new Set());
}

function write(value: unknown, path: string, stack: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new PlanError('NOT_CANONICAL', `${path}: ${String(value)} is not a finite number`, path);
      return JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new PlanError('NOT_CANONICAL', `${path}: ${typeof value} is not JSON`, path);
  }
  if (stack.has(value)) throw new PlanError('NOT_CANONICAL', `${path}: cycle`, path);
  stack.add(value);
  try {
    if (Array.isArray(value)) {
      const parts: string[] = [];
      for (let i = 0; i < value.length; i++) parts.push(write(value[i], `${path}[${i}]`, stack));
      return `[${parts.join(',')}]`;
    }
    const proto: unknown = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) throw new PlanError('NOT_CANONICAL', `${path}: not a plain object`, path);
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    const parts: string[] = [];
    for (const key of keys) parts.push(`${JSON.stringify(key)}:${write(record[key], `${path}.${key}`, stack)}`);
    return `{${parts.join(',')}}`;
  } finally {
    stack.delete(value);
  }
}

/** True when `text` is JSON written canonically (so hashing it again gives the same bytes). */
export function isCanonicalJsonText(text: string): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return false;
  }
  try {
    return canonicalJson(parsed) === text;
  } catch {
    return false;
  }
}

/** UTF-8 byte length of a string (payload limits are in bytes). */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
