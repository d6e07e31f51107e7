import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../backoff.js';
import type avsc from 'avsc';
import { topicNames, type LedgerConfig } from '../config.js';
import { isLedgerError, LedgerError } from '../errors.js';
import { silentLogger, type Logger } from '../logging.js';
import type { PlanCommand, PlanEvent } from '../plan/index.js';
import { planCommandSchema, planEventSchema, planSnapshotSchema } from '../plan/generated/schemas.js';
import { buildType, mapperFor, tolerantReaderSchema, type Mapper } from './avro.js';
import { errorMessage, schemaError } from './errors.js';
import { apiOf, RegistryAccess, registryApi } from './registry.js';
import type { CodecOptions, CodecRecordKind, LedgerCodec, PlanSnapshot } from './types.js';
import { HEADER_SIZE, readSchemaId, writeHeader } from './wire.js';

const DEFAULT_TIMEOUT_MS = 10_000;

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

interface WriterSchema {
  readonly json: object;
  readonly type: avsc.Type;
  readonly name: string | undefined;
}

/** Writer schemas by id: this codec's own from the start, any other fetched once (concurrent asks share one fetch). */
class WriterSchemas {
  private readonly known = new Map<number, WriterSchema>();
  private readonly pending = new Map<number, Promise<WriterSchema>>();

  constructor(
    private readonly registry: RegistryAccess,
    private readonly log: Logger,
  ) {}

  add(id: number, json: object, type: avsc.Type): void {
    this.known.set(id, { json: deepFreeze(structuredClone(json)), type, name: type.name });
  }

  get(id: number): Promise<WriterSchema> {
    const known = this.known.get(id);
    if (known !== undefined) return Promise.resolve(known);
    let pending = this.pending.get(id);
    if (pending === undefined) {
      pending = this.fetch(id).finally(() => this.pending.delete(id));
      this.pending.set(id, pending);
    }
    return pending;
  }

  private async fetch(id: number): Promise<WriterSchema> {
    const { json } = await this.registry.fetchSchema(id);
    let type: avsc.Type;
    try {
      type = buildType(json);
    } catch (e) {
      throw schemaError('wrong_schema', `schema id ${id} cannot be parsed as Avro: ${errorMessage(e)}`, { schemaId: id }, e);
    }
    const schema: WriterSchema = { json: deepFreeze(json), type, name: type.name };
    this.known.set(id, schema);
    this.log.info({ schemaId: id, record: schema.name }, 'fetched writer schema');
    return schema;
  }
}

/** How records with one writer id are read: a reader Type (and resolver), or why they cannot be. */
interface Reader {
  readonly type: avsc.Type | undefined;
  readonly resolver: avsc.Resolver | undefined;
  readonly fail: (() => LedgerError) | undefined;
}

/** One growable buffer per codec: encode writes the header and body here, then copies out exactly. */
class Scratch {
  buf = Buffer.allocUnsafe(64 * 1024);
  grow(min: number): void {
    this.buf = Buffer.allocUnsafe(Math.max(min, this.buf.length * 2));
  }
}

const what: Record<CodecRecordKind, string> = { event: 'PlanEvent', command: 'PlanCommand', snapshot: 'PlanSnapshot' };

/** Encoding and decoding of one record kind (one subject). */
class Channel<T> {
  private id = 0;
  private readonly readers = new Map<number, Reader>();
  private readonly pending = new Map<number, Promise<Reader>>();

  constructor(
    readonly kind: CodecRecordKind,
    private readonly schema: object,
    readonly type: avsc.Type,
    private readonly mapper: Mapper<T>,
    private readonly writers: WriterSchemas,
    private readonly scratch: Scratch,
    private readonly log: Logger,
  ) {}

  get schemaId(): number {
    return this.id;
  }

  registered(id: number): void {
    this.id = id;
    this.readers.set(id, { type: this.type, resolver: undefined, fail: undefined });
    this.writers.add(id, this.schema, this.type);
  }

  encode(value: T): Buffer {
    const s = this.scratch;
    let end: number;
    let avro: unknown;
    try {
      avro = this.mapper.toAvro(value);
      end = this.type.encode(avro, s.buf, HEADER_SIZE);
      if (end < 0) {
        s.grow(s.buf.length - end);
        end = this.type.encode(avro, s.buf, HEADER_SIZE);
      }
    } catch (e) {
      throw this.invalidValue(value, avro, e);
    }
    writeHeader(s.buf, this.id);
    const out = Buffer.allocUnsafe(end);
    s.buf.copy(out, 0, 0, end);
    return out;
  }

  private invalidValue(value: T, avro: unknown, e: unknown): LedgerError {
    if (isLedgerError(e)) return e;
    const paths: string[] = [];
    if (avro !== undefined) this.type.isValid(avro, { errorHook: (path) => paths.push(path.join('.')) });
    const type = (value as { type?: unknown } | null)?.type;
    const label = typeof type === 'string' ? `${what[this.kind]} ${type}` : what[this.kind];
    return schemaError(
      'invalid_value',
      `cannot encode ${label}: ${paths.length > 0 ? `invalid value at ${paths.join(', ')}` : errorMessage(e)}`,
      { schema: this.mapper.recordName, paths },
      e,
    );
  }

  decode(buf: Buffer): Promise<T> {
    try {
      const reader = this.readers.get(readSchemaId(buf));
      if (reader !== undefined) return Promise.resolve(this.read(reader, buf));
    } catch (e) {
      return Promise.reject(e);
    }
    return this.decodeWithNewSchema(buf);
  }

  /** Decodes without a promise when the writer schema is known already; undefined when it is not (use {@link decode}). */
  decodeKnown(buf: Buffer): T | undefined {
    const reader = this.readers.get(readSchemaId(buf));
    return reader === undefined ? undefined : this.read(reader, buf);
  }

  private async decodeWithNewSchema(buf: Buffer): Promise<T> {
    return this.read(await this.readerFor(readSchemaId(buf)), buf);
  }

  private read(reader: Reader, buf: Buffer): T {
    if (reader.fail !== undefined) throw reader.fail();
    const type = reader.type as avsc.Type;
    let res: { value: unknown; offset: number };
    try {
      res = type.decode(buf, HEADER_SIZE, reader.resolver);
    } catch (e) {
      throw this.corrupt(buf, `not valid Avro (${errorMessage(e)})`, e);
    }
    if (res.offset < 0) throw this.corrupt(buf, 'truncated Avro body');
    if (res.offset !== buf.length) throw this.corrupt(buf, `${buf.length - res.offset} trailing bytes after the Avro body`);
    return this.mapper.fromAvro(res.value);
  }

  private corrupt(buf: Buffer, why: string, cause?: unknown): LedgerError {
    const schemaId = buf.readInt32BE(1);
    return schemaError('corrupt', `${what[this.kind]} with schema id ${schemaId}: ${why}`, { schemaId, length: buf.length }, cause);
  }

  private readerFor(id: number): Promise<Reader> {
    const known = this.readers.get(id);
    if (known !== undefined) return Promise.resolve(known);
    let pending = this.pending.get(id);
    if (pending === undefined) {
      pending = this.buildReader(id).finally(() => this.pending.delete(id));
      this.pending.set(id, pending);
    }
    return pending;
  }

  /** Fetches (once) and judges a writer schema; unreachable registry and unknown ids are not cached. */
  private async buildReader(id: number): Promise<Reader> {
    const writer = await this.writers.get(id);
    const expected = this.mapper.recordName;
    let reader: Reader;
    if (writer.name !== expected) {
      const actual = writer.name ?? writer.type.typeName;
      reader = failing(() =>
        schemaError('wrong_schema', `schema id ${id} is ${actual}, not ${expected}: a record of another topic?`, { schemaId: id, expected, actual }),
      );
    } else if (writer.type.fingerprint().equals(this.type.fingerprint())) {
      reader = { type: this.type, resolver: undefined, fail: undefined };
    } else {
      const tolerant = tolerantReaderSchema(this.schema, this.type, writer.type);
      const type = tolerant === undefined ? this.type : buildType(tolerant);
      try {
        reader = { type, resolver: type.createResolver(writer.type), fail: undefined };
        this.log.info({ schemaId: id, record: expected, newerPayloadTypes: tolerant !== undefined }, 'reading a new writer schema through a resolver');
      } catch (e) {
        const why = errorMessage(e);
        reader = failing(() =>
          schemaError('wrong_schema', `schema id ${id} (${expected}) cannot be resolved by this reader: ${why}`, { schemaId: id, expected, actual: expected }, e),
        );
      }
    }
    this.readers.set(id, reader);
    return reader;
  }
}

function failing(fail: () => LedgerError): Reader {
  return { type: undefined, resolver: undefined, fail };
}

class Codec implements LedgerCodec {
  readonly schemaIds: Readonly<Record<CodecRecordKind, number>>;

  constructor(
    readonly subjects: Readonly<Record<CodecRecordKind, string>>,
    private readonly events: Channel<PlanEvent>,
    private readonly commands: Channel<PlanCommand>,
    private readonly snapshots: Channel<PlanSnapshot>,
    private readonly writers: WriterSchemas,
  ) {
    this.schemaIds = Object.freeze({ event: events.schemaId, command: commands.schemaId, snapshot: snapshots.schemaId });
  }

  encodeEvent(event: PlanEvent): Buffer {
    return this.events.encode(event);
  }
  decodeEvent(value: Buffer): Promise<PlanEvent> {
    return this.events.decode(value);
  }
  decodeKnownEvent(value: Buffer): PlanEvent | undefined {
    return this.events.decodeKnown(value);
  }
  encodeCommand(command: PlanCommand): Buffer {
    return this.commands.encode(command);
  }
  decodeCommand(value: Buffer): Promise<PlanCommand> {
    return this.commands.decode(value);
  }
  encodeSnapshot(snapshot: PlanSnapshot): Buffer {
    return this.snapshots.encode(snapshot);
  }
  decodeSnapshot(value: Buffer): Promise<PlanSnapshot> {
    return this.snapshots.decode(value);
  }
  async schemaFor(id: number): Promise<object> {
    return (await this.writers.get(id)).json;
  }
}

/**
 * Registers the three record schemas (idempotently; same schema, same id) under the TopicNameStrategy
 * subjects of `topicPrefix` with BACKWARD compatibility, and returns a codec that writes with those ids.
 *
 * Fails with `SCHEMA` `incompatible` when the registry refuses a schema as not BACKWARD compatible with
 * the subject's latest version (the message names the subject), `SCHEMA` `invalid_schema` for a schema
 * avsc or the registry rejects, and `UNAVAILABLE` when the registry cannot be reached: retry start-up later
 * (services do: {@link codecWhenRegistryAnswers}).
 *
 * @example
 * const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix, auth: config.registryAuth, logger });
 * codec.schemaIds // { event: 12, command: 13, snapshot: 14 }
 */
export async function createCodec(opts: CodecOptions): Promise<LedgerCodec> {
  if (typeof opts.topicPrefix !== 'string' || opts.topicPrefix === '') {
    throw new LedgerError('VALIDATION', 'createCodec: topicPrefix must be a non-empty string', { field: 'topicPrefix' });
  }
  if (typeof opts.registryUrl !== 'string' || opts.registryUrl === '') {
    throw new LedgerError('VALIDATION', 'createCodec: registryUrl must be a URL', { field: 'registryUrl' });
  }
  const log = (opts.logger ?? silentLogger()).child({ component: 'codec' });
  const api = opts.registry !== undefined ? apiOf(opts.registry) : registryApi({ host: opts.registryUrl, clientId: 'plan-ledger', ...(opts.auth ? { auth: opts.auth } : {}) });
  const access = new RegistryAccess({ api, registryUrl: opts.registryUrl, timeoutMs: opts.registryTimeoutMs ?? DEFAULT_TIMEOUT_MS });
  const writers = new WriterSchemas(access, log);
  const scratch = new Scratch();
  const topics = topicNames(opts.topicPrefix);
  const subjects = Object.freeze({ event: `${topics.events}-value`, command: `${topics.commands}-value`, snapshot: `${topics.snapshots}-value` });

  const channel = <T>(kind: CodecRecordKind, fallback: object): Channel<T> => {
    const schema = opts.schemas?.[kind] ?? fallback;
    const type = buildType(schema);
    return new Channel<T>(kind, schema, type, mapperFor<T>(type), writers, scratch, log);
  };
  const events = channel<PlanEvent>('event', planEventSchema);
  const commands = channel<PlanCommand>('command', planCommandSchema);
  const snapshots = channel<PlanSnapshot>('snapshot', planSnapshotSchema);

  const ids = await Promise.all([
    access.register(subjects.event, opts.schemas?.event ?? planEventSchema),
    access.register(subjects.command, opts.schemas?.command ?? planCommandSchema),
    access.register(subjects.snapshot, opts.schemas?.snapshot ?? planSnapshotSchema),
  ]);
  events.registered(ids[0]);
  commands.registered(ids[1]);
  snapshots.registered(ids[2]);
  log.info({ subjects, schemaIds: { event: ids[0], command: ids[1], snapshot: ids[2] } }, 'registered schemas');
  return new Codec(subjects, events, commands, snapshots, writers);
}

/**
 * The one way components build their codec: registry URL, topic prefix and registry credentials
 * (`PLAN_LEDGER_REGISTRY_USERNAME`/`_PASSWORD`) all come from the compiled config, so no caller can
 * forget the credentials.
 *
 * @example
 * const codec = await codecFromConfig(config, { logger });
 */
export function codecFromConfig(config: LedgerConfig, opts: Omit<CodecOptions, 'registryUrl' | 'topicPrefix' | 'auth'> = {}): Promise<LedgerCodec> {
  return createCodec({ ...opts, registryUrl: config.registryUrl, topicPrefix: config.topicPrefix, ...(config.registryAuth ? { auth: config.registryAuth } : {}) });
}

/**
 * {@link codecFromConfig} for a service starting up (an executor, a projector): while the registry cannot
 * be reached (`UNAVAILABLE`: restarting, not up yet) it is asked again, 1 s and then up to 10 s apart, with
 * a warning each time, until it answers, like the Kafka client waits for brokers. A refusal that waiting
 * cannot change is thrown at once: a schema the registry rejects, credentials it refuses (401, 403).
 */
export async function codecWhenRegistryAnswers(config: LedgerConfig, opts: Omit<CodecOptions, 'registryUrl' | 'topicPrefix' | 'auth'> = {}): Promise<LedgerCodec> {
  const log = (opts.logger ?? silentLogger()).child({ component: 'codec' });
  for (let attempt = 1; ; attempt++) {
    const delay = backoffMs(attempt, 1000, 10_000);
    try {
      return await codecFromConfig(config, opts);
    } catch (e) {
      const status = isLedgerError(e, 'UNAVAILABLE') ? e.details.status : undefined;
      if (!isLedgerError(e, 'UNAVAILABLE') || status === 401 || status === 403) throw e;
      log.warn({ attempt, retryInMs: delay, registryUrl: config.registryUrl, err: errorMessage(e) }, 'schema registry unavailable at start-up; asking again');
      await sleep(delay);
    }
  }
}
