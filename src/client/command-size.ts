import { LedgerError } from '../errors.js';
import type { PlanCommand } from '../plan/index.js';

/**
 * Bytes a record adds around its key and value in a v2 record batch of one record: the batch header
 * (61 bytes) and the record's own varints and attributes (at most 5 × 5 + 1 with no headers), rounded up.
 */
export const RECORD_OVERHEAD_BYTES = 100;

/** The client's name for a command field: the domain's `inputJson` is the `input` the caller gave. */
function callerName(key: string): string {
  return key === 'inputJson' ? 'input' : key;
}

const wellFormed = (text: string): boolean => (text as string & { isWellFormed(): boolean }).isWellFormed();

/**
 * Where a command's data holds text with a lone surrogate (a string or an object key), or undefined. Such
 * text has no UTF-8 form: Avro would write U+FFFD in its place and the ledger would record text other than
 * the caller's, so the client refuses it before anything is sent.
 */
export function illFormedField(data: unknown): string | undefined {
  const walk = (v: unknown, path: string): string | undefined => {
    if (typeof v === 'string') return wellFormed(v) ? undefined : path;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const bad = walk(v[i], `${path}[${i}]`);
        if (bad !== undefined) return bad;
      }
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) {
        const at = path === '' ? callerName(k) : `${path}.${callerName(k)}`;
        if (!wellFormed(k)) return at;
        const bad = walk(x, at);
        if (bad !== undefined) return bad;
      }
    }
    return undefined;
  };
  return walk(data, '');
}

/** The largest string in a command's data and where it is (`items[3].input`), by UTF-8 bytes. */
export function largestField(data: unknown): { field: string; bytes: number } {
  let best = { field: '', bytes: 0 };
  const walk = (v: unknown, path: string) => {
    if (typeof v === 'string') {
      const bytes = Buffer.byteLength(v, 'utf8');
      if (bytes > best.bytes) best = { field: path, bytes };
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`));
    } else if (typeof v === 'object' && v !== null) {
      for (const [k, x] of Object.entries(v)) walk(x, path === '' ? callerName(k) : `${path}.${callerName(k)}`);
    }
  };
  walk(data, '');
  return best;
}

/**
 * Throws `PAYLOAD_TOO_LARGE` when a command's record would exceed the commands topic's
 * `max.message.bytes`, naming the command's largest field and its size, so the caller learns it before
 * anything is sent (the broker would refuse the record with a bare "message larger than the max").
 */
export function assertCommandFits(command: PlanCommand, key: string, value: Buffer, limit: number): void {
  const size = value.length + Buffer.byteLength(key, 'utf8') + RECORD_OVERHEAD_BYTES;
  if (size <= limit) return;
  const { field, bytes } = largestField(command.data);
  throw new LedgerError(
    'PAYLOAD_TOO_LARGE',
    `${command.type} for plan ${command.planId} is ${size} bytes encoded, over the commands topic's max.message.bytes (${limit}); its largest field is ${field || 'the command'} (${bytes} bytes)`,
    { field, bytes, size, limit, command: command.type, planId: command.planId },
  );
}
