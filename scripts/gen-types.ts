/**
 * Generates the TypeScript view of the Avro contract in `schemas/`:
 *
 * - `src/plan/generated/schemas.ts`: the three envelope schemas (PlanEvent, PlanCommand, PlanSnapshot) fully
 *   inlined (every named type defined at its first use, referenced by full name afterwards), the payload
 *   type names in union order, and the envelope schema version.
 * - `src/plan/generated/types.ts`: an interface per record and an `as const` object + union type per enum.
 * - Internal commands (`schemas/internal/`, never on the wire): their names and inlined records in
 *   `schemas.ts`, `InternalCommandPayloads` in `types.ts`.
 *   Optional Avro fields (`["null", T]`) become required properties typed `T | null`.
 *
 * Usage: `npx tsx scripts/gen-types.ts` writes both files; `--check` exits 1 when they are stale.
 * The schemas are the one truth; a unit test runs {@link generate} and compares with the committed files.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const PRIMITIVES = new Set(['null', 'boolean', 'int', 'long', 'float', 'double', 'bytes', 'string']);

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const generatedFiles = {
  schemas: 'src/plan/generated/schemas.ts',
  types: 'src/plan/generated/types.ts',
} as const;

export interface NamedSchema {
  readonly fullName: string;
  readonly shortName: string;
  readonly file: string;
  readonly schema: JsonObject;
}

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fullNameOf(name: string, namespace: string | undefined): string {
  return name.includes('.') || namespace === undefined ? name : `${namespace}.${name}`;
}

function listAvsc(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listAvsc(p));
    else if (entry.name.endsWith('.avsc')) out.push(p);
  }
  return out.sort();
}

/** Reads every `.avsc` under `dir` (one named type per file) into a map keyed by full name. */
export function loadSchemas(dir: string): Map<string, NamedSchema> {
  const named = new Map<string, NamedSchema>();
  for (const file of listAvsc(dir)) {
    const rel = relative(dir, file);
    const schema = JSON.parse(readFileSync(file, 'utf8')) as Json;
    if (!isObject(schema) || typeof schema['name'] !== 'string') throw new Error(`${rel}: not a named schema`);
    const ns = typeof schema['namespace'] === 'string' ? schema['namespace'] : undefined;
    const fullName = fullNameOf(schema['name'], ns);
    const shortName = fullName.slice(fullName.lastIndexOf('.') + 1);
    if (`${shortName}.avsc` !== rel.slice(rel.lastIndexOf('/') + 1)) throw new Error(`${rel}: file name must be ${shortName}.avsc`);
    if (named.has(fullName)) throw new Error(`${rel}: ${fullName} defined twice`);
    named.set(fullName, { fullName, shortName, file: rel, schema });
  }
  return named;
}

/** Inlines every named reference of `root`: defined at first use, referenced by full name afterwards. */
export function inlineSchema(root: string, named: Map<string, NamedSchema>): JsonObject {
  const defined = new Set<string>();
  const walk = (s: Json, ns: string): Json => {
    if (typeof s === 'string') {
      if (PRIMITIVES.has(s)) return s;
      const full = fullNameOf(s, ns);
      const target = named.get(full);
      if (target === undefined) throw new Error(`unknown type ${s} (resolved as ${full})`);
      if (defined.has(full)) return full;
      return walk(target.schema, ns);
    }
    if (Array.isArray(s)) return s.map((b) => walk(b, ns));
    if (!isObject(s)) throw new Error(`bad schema node ${JSON.stringify(s)}`);
    const type = s['type'];
    if (type === 'record' || type === 'enum' || type === 'fixed') {
      const ownNs = typeof s['namespace'] === 'string' ? s['namespace'] : ns;
      const full = fullNameOf(String(s['name']), ownNs);
      if (defined.has(full)) throw new Error(`${full} defined twice`);
      defined.add(full);
      const out: JsonObject = { ...s, namespace: full.slice(0, full.lastIndexOf('.')) };
      if (type === 'record') {
        const fields = s['fields'];
        if (!Array.isArray(fields)) throw new Error(`${full}: fields missing`);
        out['fields'] = fields.map((field) => {
          if (!isObject(field)) throw new Error(`${full}: bad field`);
          return { ...field, type: walk(field['type'] ?? null, ownNs) };
        });
      }
      return out;
    }
    if (type === 'array') return { ...s, items: walk(s['items'] ?? null, ns) };
    if (type === 'map') return { ...s, values: walk(s['values'] ?? null, ns) };
    if (typeof type === 'string' && PRIMITIVES.has(type)) return s;
    return walk(type ?? null, ns);
  };
  const start = named.get(root);
  if (start === undefined) throw new Error(`root ${root} not found`);
  const out = walk(start.schema, 'planledger');
  if (!isObject(out)) throw new Error('root must be a record');
  return out;
}

function payloadBranches(envelope: NamedSchema): string[] {
  const fields = envelope.schema['fields'];
  const payload = Array.isArray(fields) ? fields.find((f) => isObject(f) && f['name'] === 'payload') : undefined;
  if (!isObject(payload) || !Array.isArray(payload['type'])) throw new Error(`${envelope.fullName}: payload must be a union`);
  return payload['type'].map((b) => {
    if (typeof b !== 'string') throw new Error(`${envelope.fullName}: payload branches must be named references`);
    const short = b.slice(b.lastIndexOf('.') + 1);
    return short;
  });
}

function tsType(s: Json, ns: string, named: Map<string, NamedSchema>): string {
  if (typeof s === 'string') {
    switch (s) {
      case 'null':
        return 'null';
      case 'boolean':
        return 'boolean';
      case 'int':
      case 'long':
      case 'float':
      case 'double':
        return 'number';
      case 'bytes':
        return 'Uint8Array';
      case 'string':
        return 'string';
      default: {
        const target = named.get(fullNameOf(s, ns));
        if (target === undefined) throw new Error(`unknown type ${s}`);
        return target.shortName;
      }
    }
  }
  if (Array.isArray(s)) {
    const parts = s.map((b) => tsType(b, ns, named));
    // `T | null` reads better than `null | T`.
    return [...parts.filter((p) => p !== 'null'), ...parts.filter((p) => p === 'null')].join(' | ');
  }
  if (!isObject(s)) throw new Error('bad schema node');
  const type = s['type'];
  if (type === 'array') {
    const inner = tsType(s['items'] ?? null, ns, named);
    return /[ |]/.test(inner) ? `Array<${inner}>` : `${inner}[]`;
  }
  if (type === 'map') return `Record<string, ${tsType(s['values'] ?? null, ns, named)}>`;
  if (type === 'record' || type === 'enum') throw new Error('nested named definitions are not supported; one .avsc per type');
  return tsType(type ?? null, ns, named);
}

function docComment(doc: Json | undefined, indent: string): string {
  if (typeof doc !== 'string') return '';
  return `${indent}/** ${doc.replace(/\*\//g, '*\\/')} */\n`;
}

/**
 * Fields added to a type that many callers build by hand (item specs): optional in TypeScript, absent
 * meaning null. The codec writes an absent field as its default, and a decoded value carries the null.
 */
const OPTIONAL_IN_TS = new Set(['planledger.ItemSpec.secret', 'planledger.ItemSpec.wait', 'planledger.PlanCreated.forkedFrom', 'planledger.CreatePlan.forkedFrom', 'planledger.CreatePlan.inherited']);

function renderFields(fields: Json[], ns: string, named: Map<string, NamedSchema>, skip: Set<string>, owner = ''): string {
  return fields
    .filter(isObject)
    .filter((f) => !skip.has(String(f['name'])))
    .map((f) => `${docComment(f['doc'], '  ')}  ${String(f['name'])}${OPTIONAL_IN_TS.has(`${owner}.${String(f['name'])}`) ? '?' : ''}: ${tsType(f['type'] ?? null, ns, named)};\n`)
    .join('');
}

const HEADER = '// Generated by scripts/gen-types.ts from schemas/**/*.avsc. Do not edit; run `npx tsx scripts/gen-types.ts`.\n';

function renderTypes(named: Map<string, NamedSchema>, events: string[], commands: string[], internal: string[]): string {
  let out = HEADER;
  const envelopes = new Set(['planledger.PlanEvent', 'planledger.PlanCommand']);
  const sorted = [...named.values()].filter((n) => !envelopes.has(n.fullName)).sort((a, b) => a.file.localeCompare(b.file));
  for (const n of sorted) {
    const s = n.schema;
    const ns = n.fullName.slice(0, n.fullName.lastIndexOf('.'));
    out += '\n' + docComment(s['doc'], '');
    if (s['type'] === 'enum') {
      const symbols = Array.isArray(s['symbols']) ? s['symbols'].map(String) : [];
      out += `export const ${n.shortName} = {\n${symbols.map((sym) => `  ${sym}: '${sym}',\n`).join('')}} as const;\n`;
      out += `export type ${n.shortName} = (typeof ${n.shortName})[keyof typeof ${n.shortName}];\n`;
    } else if (s['type'] === 'record') {
      const fields = Array.isArray(s['fields']) ? s['fields'] : [];
      out += `export interface ${n.shortName} {\n${renderFields(fields, ns, named, new Set(), n.fullName)}}\n`;
    } else {
      throw new Error(`${n.file}: only records and enums are supported`);
    }
  }
  for (const [envName, metaName] of [
    ['planledger.PlanEvent', 'EventMetadata'],
    ['planledger.PlanCommand', 'CommandMetadata'],
  ] as const) {
    const env = named.get(envName);
    if (env === undefined) throw new Error(`${envName} missing`);
    const fields = Array.isArray(env.schema['fields']) ? env.schema['fields'] : [];
    out += `\n/** Metadata fields of the ${env.shortName} envelope (every field but the payload union). */\n`;
    out += `export interface ${metaName} {\n${renderFields(fields, 'planledger', named, new Set(['payload']))}}\n`;
  }
  out += '\n/** Event payload records, keyed by Avro record name, in union order. */\n';
  out += `export interface EventPayloads {\n${events.map((e) => `  ${e}: ${e};\n`).join('')}}\n`;
  out += 'export type EventType = keyof EventPayloads;\n';
  out += '\n/** Command payload records, keyed by Avro record name, in union order. */\n';
  out += `export interface CommandPayloads {\n${commands.map((c) => `  ${c}: ${c};\n`).join('')}}\n`;
  out += 'export type CommandType = keyof CommandPayloads;\n';
  out += '\n/** Commands the executor gives itself (schemas/internal/), by record name: TypeScript only, never on the wire. */\n';
  out += `export interface InternalCommandPayloads {\n${internal.map((c) => `  ${c}: ${c};\n`).join('')}}\n`;
  out += 'export type InternalCommandType = keyof InternalCommandPayloads;\n';
  return out;
}

function schemaVersionOf(envelope: NamedSchema): number {
  const fields = Array.isArray(envelope.schema['fields']) ? envelope.schema['fields'] : [];
  const field = fields.find((f) => isObject(f) && f['name'] === 'schemaVersion');
  const def = isObject(field) ? field['default'] : undefined;
  if (typeof def !== 'number') throw new Error('PlanEvent.schemaVersion needs a numeric default');
  return def;
}

function renderSchemas(named: Map<string, NamedSchema>, events: string[], commands: string[], internal: string[]): string {
  const eventEnv = named.get('planledger.PlanEvent');
  if (eventEnv === undefined) throw new Error('PlanEvent.avsc missing');
  let out = HEADER;
  out += '\n/** The PlanEvent envelope (subject `<prefix>.plan-events-value`), every named type inlined. */\n';
  out += `export const planEventSchema = ${JSON.stringify(inlineSchema('planledger.PlanEvent', named), null, 2)} as const;\n`;
  out += '\n/** The PlanCommand envelope (subject `<prefix>.plan-commands-value`), every named type inlined. */\n';
  out += `export const planCommandSchema = ${JSON.stringify(inlineSchema('planledger.PlanCommand', named), null, 2)} as const;\n`;
  out += '\n/** The PlanSnapshot record (subject `<prefix>.plan-snapshots-value`), written by the projector. */\n';
  out += `export const planSnapshotSchema = ${JSON.stringify(inlineSchema('planledger.PlanSnapshot', named), null, 2)} as const;\n`;
  out += '\n/** Event payload record names in union order (new ones are appended, never reordered). */\n';
  out += `export const eventTypes = ${JSON.stringify(events)} as const;\n`;
  out += '\n/** Command payload record names in union order (new ones are appended, never reordered). */\n';
  out += `export const commandTypes = ${JSON.stringify(commands)} as const;\n`;
  out += '\n/** Internal command record names (schemas/internal/, by name): commands the executor gives itself, never on the wire. */\n';
  out += `export const internalCommandTypes = ${JSON.stringify(internal)} as const;\n`;
  out += '\n/** Each internal command\'s record, every named type inlined, so `decide` validates it like a client command. */\n';
  out += `export const internalCommandSchemas = ${JSON.stringify(Object.fromEntries(internal.map((n) => [n, inlineSchema(`planledger.${n}`, named)])), null, 2)} as const;\n`;
  out += '\n/** The schemaVersion every event written with this contract carries. */\n';
  out += `export const eventSchemaVersion = ${schemaVersionOf(eventEnv)};\n`;
  return out;
}

/** Pure generation: schema directory in, file contents (path relative to the repo root) out. */
export function generate(schemasDir: string = join(repoRoot, 'schemas')): Record<string, string> {
  const named = loadSchemas(schemasDir);
  const eventEnv = named.get('planledger.PlanEvent');
  const commandEnv = named.get('planledger.PlanCommand');
  if (eventEnv === undefined || commandEnv === undefined || !named.has('planledger.PlanSnapshot')) {
    throw new Error('PlanEvent.avsc, PlanCommand.avsc and PlanSnapshot.avsc are required');
  }
  const events = payloadBranches(eventEnv);
  const commands = payloadBranches(commandEnv);
  // Internal commands: every record under internal/ (none is on the wire, so their order is their name's).
  const internal = [...named.values()].filter((n) => n.file.startsWith('internal/')).map((n) => n.shortName).sort();
  const onWire = new Set([...events, ...commands]);
  for (const n of internal) if (onWire.has(n)) throw new Error(`internal/${n}.avsc: an internal command cannot also be a payload on the wire`);
  return {
    [generatedFiles.schemas]: renderSchemas(named, events, commands, internal),
    [generatedFiles.types]: renderTypes(named, events, commands, internal),
  };
}

/** Names of generated files whose committed content differs from what the schemas produce. */
export function staleFiles(root: string = repoRoot): string[] {
  const files = generate(join(root, 'schemas'));
  return Object.entries(files)
    .filter(([path, content]) => {
      const full = join(root, path);
      return !existsSync(full) || readFileSync(full, 'utf8') !== content;
    })
    .map(([path]) => path);
}

function main(argv: string[]): number {
  if (argv.includes('--check')) {
    const stale = staleFiles();
    if (stale.length > 0) {
      process.stderr.write(`stale generated files: ${stale.join(', ')}; run npx tsx scripts/gen-types.ts\n`);
      return 1;
    }
    process.stdout.write('generated files are up to date\n');
    return 0;
  }
  for (const [path, content] of Object.entries(generate())) {
    const full = join(repoRoot, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
    process.stdout.write(`wrote ${path}\n`);
  }
  return 0;
}

const invoked = process.argv[1];
if (invoked !== undefined && import.meta.url === pathToFileURL(resolve(invoked)).href) {
  process.exitCode = main(process.argv.slice(2));
}
