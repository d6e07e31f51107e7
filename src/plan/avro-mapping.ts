/**
 * Pure mapping between the domain shapes (`{ ...metadata, type, data }`) and the Avro envelope records as
 * avsc reads and writes them with `wrapUnions: true` (every union value wrapped as `{ branchName: value }`,
 * e.g. `{ 'planledger.ItemAdded': {...} }`, `{ string: 'x' }`). Schema-driven, so it follows the contract.
 *
 * @example
 * const type = avsc.Type.forSchema(planEventSchema, { wrapUnions: true });
 * const bytes = type.toBuffer(toAvroEvent(event));
 * fromAvroEvent(type.fromBuffer(bytes)) // deep-equals event
 */
import { dropNullItemFields } from './absent-fields.js';
import { branchName, contractTypes, resolve, type SchemaField, type SchemaNode } from './avro-schema.js';
import type { PlanCommand } from './commands.js';
import { PlanError } from './errors.js';
import type { PlanEvent } from './events.js';
import { planCommandSchema, planEventSchema } from './generated/schemas.js';

type AvroRecord = Record<string, unknown>;

function bad(path: string, message: string): never {
  throw new PlanError('INVALID_RECORD', `${path}: ${message}`, path);
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Domain value -> avsc value (wrap unions). */
function toAvro(schema: SchemaNode, value: unknown, path: string): unknown {
  const s = resolve(schema);
  if (typeof s === 'string') return value;
  if (Array.isArray(s)) {
    if (value === null || value === undefined) return null; // absent optional field: its default
    const branch = (s as readonly SchemaNode[]).find((b) => b !== 'null');
    if (branch === undefined || s.length !== 2) bad(path, 'only ["null", T] unions are mapped here');
    return { [branchName(branch)]: toAvro(branch, value, path) };
  }
  const node = s as Record<string, unknown>;
  switch (node['type']) {
    case 'record': {
      if (!isObject(value)) bad(path, 'expected a record');
      const out: AvroRecord = {};
      for (const f of node['fields'] as readonly SchemaField[]) out[f.name] = toAvro(f.type, value[f.name], `${path}.${f.name}`);
      return out;
    }
    case 'array':
      if (!Array.isArray(value)) bad(path, 'expected an array');
      return value.map((v, i) => toAvro(node['items'] as SchemaNode, v, `${path}[${i}]`));
    case 'map': {
      if (!isObject(value)) bad(path, 'expected a map');
      const out: AvroRecord = {};
      for (const k of Object.keys(value)) setOwn(out, k, toAvro(node['values'] as SchemaNode, value[k], `${path}.${k}`));
      return out;
    }
    case 'enum':
      return value;
    default:
      return toAvro(node['type'] as SchemaNode, value, path);
  }
}

/** avsc value -> domain value (unwrap unions, plain objects). */
function fromAvro(schema: SchemaNode, value: unknown, path: string): unknown {
  const s = resolve(schema);
  if (typeof s === 'string') return value;
  if (Array.isArray(s)) {
    if (value === null) return null;
    if (!isObject(value)) bad(path, 'expected a wrapped union value');
    const keys = Object.keys(value);
    const branch = (s as readonly SchemaNode[]).find((b) => b !== 'null' && branchName(b) === keys[0]);
    if (keys.length !== 1 || branch === undefined) bad(path, `unknown union branch ${keys.join(',')}`);
    return fromAvro(branch, value[keys[0] as string], path);
  }
  const node = s as Record<string, unknown>;
  switch (node['type']) {
    case 'record': {
      if (!isObject(value)) bad(path, 'expected a record');
      const out: AvroRecord = {};
      for (const f of node['fields'] as readonly SchemaField[]) out[f.name] = fromAvro(f.type, value[f.name], `${path}.${f.name}`);
      return out;
    }
    case 'array':
      if (!Array.isArray(value)) bad(path, 'expected an array');
      return value.map((v, i) => fromAvro(node['items'] as SchemaNode, v, `${path}[${i}]`));
    case 'map': {
      if (!isObject(value)) bad(path, 'expected a map');
      const out: AvroRecord = {};
      for (const k of Object.keys(value)) setOwn(out, k, fromAvro(node['values'] as SchemaNode, value[k], `${path}.${k}`));
      return out;
    }
    case 'enum':
      return value;
    default:
      return fromAvro(node['type'] as SchemaNode, value, path);
  }
}

interface Envelope {
  fields: readonly SchemaField[];
  payload: readonly string[];
}

function envelope(schema: { fields: readonly unknown[] }): Envelope {
  const fields = schema.fields as readonly SchemaField[];
  const payload = fields.find((f) => f.name === 'payload');
  if (payload === undefined || !Array.isArray(payload.type)) throw new Error('envelope without payload union');
  return { fields: fields.filter((f) => f.name !== 'payload'), payload: (payload.type as readonly SchemaNode[]).map((b) => branchName(b, contractTypes)) };
}

const eventEnvelope = envelope(planEventSchema);
const commandEnvelope = envelope(planCommandSchema);

function shortName(full: string): string {
  return full.slice(full.lastIndexOf('.') + 1);
}

function toEnvelope(env: Envelope, value: { type: string; data: unknown } & Record<string, unknown>): AvroRecord {
  const out: AvroRecord = {};
  for (const f of env.fields) out[f.name] = toAvro(f.type, value[f.name], f.name);
  const branch = env.payload.find((b) => shortName(b) === value.type) ?? bad('type', `unknown type ${String(value.type)}`);
  out['payload'] = { [branch]: toAvro(branch, value.data, 'data') };
  return out;
}

function fromEnvelope(env: Envelope, record: unknown): Record<string, unknown> {
  if (!isObject(record)) bad('record', 'expected an envelope record');
  const out: Record<string, unknown> = {};
  for (const f of env.fields) out[f.name] = fromAvro(f.type, record[f.name], f.name);
  const payload = record['payload'];
  if (!isObject(payload)) bad('payload', 'expected a wrapped payload');
  const keys = Object.keys(payload);
  const branch = env.payload.find((b) => b === keys[0]);
  // An unknown branch means a newer writer: the caller must dead-letter the record, never skip it.
  if (keys.length !== 1 || branch === undefined) bad('payload', `unknown payload type ${keys.join(',')}`);
  out['type'] = shortName(branch);
  out['data'] = fromAvro(branch, payload[branch], 'data');
  dropNullItemFields(out['data']);
  return out;
}

/** PlanEvent -> the avsc value of the `planledger.PlanEvent` envelope (wrapped unions). */
export function toAvroEvent(event: PlanEvent): AvroRecord {
  return toEnvelope(eventEnvelope, event as unknown as { type: string; data: unknown } & Record<string, unknown>);
}

/** avsc value of the `planledger.PlanEvent` envelope -> PlanEvent (plain objects). Throws `INVALID_RECORD`. */
export function fromAvroEvent(record: unknown): PlanEvent {
  return fromEnvelope(eventEnvelope, record) as unknown as PlanEvent;
}

/** PlanCommand -> the avsc value of the `planledger.PlanCommand` envelope (wrapped unions). */
export function toAvroCommand(command: PlanCommand): AvroRecord {
  return toEnvelope(commandEnvelope, command as unknown as { type: string; data: unknown } & Record<string, unknown>);
}

/** avsc value of the `planledger.PlanCommand` envelope -> PlanCommand (plain objects). Throws `INVALID_RECORD`. */
export function fromAvroCommand(record: unknown): PlanCommand {
  return fromEnvelope(commandEnvelope, record) as unknown as PlanCommand;
}
