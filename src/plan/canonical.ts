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
  return new Writer().write(value);
}

/** Canonical JSON of a plain object without one of its top-level keys (an event without its `hash`), with no copy. */
export function canonicalJsonWithout(value: object, skipKey: string): string {
  return new Writer(skipKey).write(value);
}

/**
 * The walk keeps the open containers and keys on a stack and only builds the error path (`$.data.items[2]`)
 * when a value is refused, so a valid value costs no path strings.
 */
class Writer {
  private readonly open: object[] = [];
  private readonly keys: Array<string | number> = [];

  constructor(private readonly skipKey: string | null = null) {}

  write(value: unknown): string {
    if (value === null) return 'null';
    switch (typeof value) {
      case 'string':
        return JSON.stringify(value);
      case 'boolean':
        return value ? 'true' : 'false';
      case 'number':
        if (!Number.isFinite(value)) this.fail(`${String(value)} is not a finite number`);
        return JSON.stringify(value);
      case 'object':
        break;
      default:
        this.fail(`${typeof value} is not JSON`);
    }
    // Containers nest a few levels at most, so a linear scan is cheaper than a Set.
    if (this.open.includes(value)) this.fail('cycle');
    const depth = this.open.length;
    this.open.push(value);
    let out: string;
    if (Array.isArray(value)) {
      out = '[';
      for (let i = 0; i < value.length; i++) {
        this.keys[depth] = i;
        out += i === 0 ? this.write(value[i]) : `,${this.write(value[i])}`;
      }
      out += ']';
    } else {
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) {
        this.open.pop();
        this.fail('not a plain object');
      }
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record).sort();
      const skip = depth === 0 ? this.skipKey : null;
      out = '{';
      let first = true;
      for (const key of keys) {
        if (key === skip) continue;
        this.keys[depth] = key;
        out += `${first ? '' : ','}${JSON.stringify(key)}:${this.write(record[key])}`;
        first = false;
      }
      out += '}';
    }
    this.open.pop();
    this.keys.length = depth;
    return out;
  }

  private fail(reason: string): never {
    let path = '$';
    for (let i = 0; i < this.open.length; i++) {
      const k = this.keys[i];
      if (k === undefined) break;
      path += typeof k === 'number' ? `[${k}]` : `.${k}`;
    }
    throw new PlanError('NOT_CANONICAL', `${path}: ${reason}`, path);
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
