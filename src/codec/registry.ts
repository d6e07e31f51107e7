/**
 * The codec's two uses of the schema registry (Confluent API through @kafkajs/confluent-schema-registry):
 * register a subject's schema at start-up, and fetch an unknown writer schema by id, once. Every failure
 * becomes a {@link LedgerError}: the registry's definite answers (404, 409, 422) are `SCHEMA` errors,
 * everything that says "could not ask" (connection refused, 5xx, timeout, auth) is `UNAVAILABLE`.
 *
 * The calls go through the library's REST client (`dist/api`: mappersmith with its retry, basic-auth and
 * error middlewares), not its `SchemaRegistry` class: the class loads JSON Schema and Protobuf support
 * (ajv, protobufjs) on import, about 60 ms of every process's start, for schema types the ledger never
 * uses. Registering is the class's own sequence (the subject's compatibility, then the schema, then the
 * rule on a first registration).
 */
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { SchemaRegistryAPIClient, SchemaRegistryAPIClientArgs } from '@kafkajs/confluent-schema-registry/dist/api/index.js';
import { isLedgerError, type LedgerError } from '../errors.js';
import { errorMessage, schemaError, unavailableError } from './errors.js';

export type RegistryFailure = 'not_found' | 'incompatible' | 'invalid' | 'unavailable';

const NETWORK = /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|ENOTFOUND|EAI_AGAIN|EPIPE|socket hang up|network|fetch failed|timed? ?out/i;

/**
 * What a registry client error means. mappersmith reports a failed connection as a response with status
 * 400 and the socket error as the message, so a 400 is only a real "bad request" when it is not one of those.
 */
export function classifyRegistryError(e: unknown): { failure: RegistryFailure; status?: number } {
  const err = e as { status?: unknown; name?: unknown; message?: unknown } | null;
  const status = typeof err?.status === 'number' ? err.status : undefined;
  const message = typeof err?.message === 'string' ? err.message : String(e);
  if (err?.name === 'ConfluentSchemaRegistryCompatibilityError') return { failure: 'incompatible' };
  if (status === undefined) return { failure: NETWORK.test(message) ? 'unavailable' : 'invalid' };
  if (status === 404) return { failure: 'not_found', status };
  if (status === 409) return { failure: 'incompatible', status };
  if (status === 422) return { failure: 'invalid', status };
  if (status === 400) return { failure: NETWORK.test(message) ? 'unavailable' : 'invalid', status };
  return { failure: 'unavailable', status };
}

/** The library's REST client, from its own module (CommonJS: its function is the `default` export). */
export function registryApi(args: SchemaRegistryAPIClientArgs): SchemaRegistryAPIClient {
  const mod = createRequire(import.meta.url)('@kafkajs/confluent-schema-registry/dist/api/index.js') as { default: (a: SchemaRegistryAPIClientArgs) => SchemaRegistryAPIClient };
  return mod.default(args);
}

/** The REST client of a `SchemaRegistry` a caller handed over (its `api`, the same client the class calls through). */
export function apiOf(registry: SchemaRegistry): SchemaRegistryAPIClient {
  const api = (registry as unknown as { api?: SchemaRegistryAPIClient }).api;
  if (api?.Subject === undefined || api.Schema === undefined) throw new Error('@kafkajs/confluent-schema-registry SchemaRegistry without its api client (unsupported version)');
  return api;
}

/** The compatibility every ledger subject is registered with. */
const COMPATIBILITY = 'BACKWARD';

/** The error the library's class throws when a subject's compatibility is not the one asked for (classified as `incompatible`). */
class CompatibilityMismatch extends Error {
  override readonly name = 'ConfluentSchemaRegistryCompatibilityError';
}

interface ApiResponse {
  data(): unknown;
}

export interface RegistryAccessOptions {
  api: SchemaRegistryAPIClient;
  registryUrl: string;
  /** Each registry call fails with `UNAVAILABLE` after this long. */
  timeoutMs: number;
}

/** Runs a registry call with a deadline. */
async function withTimeout<T>(what: string, url: string, timeoutMs: number, call: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(unavailableError(`schema registry ${url} did not answer ${what} within ${timeoutMs} ms`, { registryUrl: url, timeoutMs })), timeoutMs);
    timer.unref();
  });
  try {
    return await Promise.race([call(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** A writer schema fetched from the registry. */
export interface FetchedSchema {
  readonly json: object;
}

export class RegistryAccess {
  constructor(private readonly opts: RegistryAccessOptions) {}

  /**
   * Registers `schema` under `subject` (idempotent: the same schema gets the same id) with BACKWARD
   * compatibility, and returns the id.
   */
  async register(subject: string, schema: object): Promise<number> {
    const { registryUrl, timeoutMs } = this.opts;
    for (let attempt = 1; ; attempt++) {
      try {
        return await withTimeout(`registering ${subject}`, registryUrl, timeoutMs, () => this.registerOnce(subject, schema));
      } catch (e) {
        // Two processes registering a NEW subject at once both see "first registration" and both set
        // its compatibility rule; the slower one gets 409 "A rule named 'COMPATIBILITY' already exists".
        // The schema itself is registered: asking again finds the rule and returns the id.
        if (attempt < 5 && /rule named .* already exists/i.test(errorMessage(e))) {
          await sleep(50 * attempt);
          continue;
        }
        // A request the registry never answered: Apicurio has left one of two processes registering the same
        // new subject at once without an answer (seen in CI: the other process's request was answered at
        // once). Registering is idempotent, so it is asked again, twice at most.
        if (attempt < 3 && isLedgerError(e, 'UNAVAILABLE') && e.details.timeoutMs === timeoutMs) continue;
        throw this.registerError(subject, e);
      }
    }
  }

  /**
   * The library's register sequence: the subject's compatibility must be BACKWARD (a subject without a
   * rule, 404, is a first registration), then POST the schema, then set the rule on a first registration.
   */
  private async registerOnce(subject: string, schema: object): Promise<number> {
    const { Subject } = this.opts.api;
    let first = false;
    try {
      const config = ((await Subject.config({ subject })) as ApiResponse).data() as { compatibilityLevel?: unknown } | null;
      const level = String(config?.compatibilityLevel ?? '').toUpperCase();
      if (level !== COMPATIBILITY) throw new CompatibilityMismatch(`Compatibility does not match the configuration (${COMPATIBILITY} != ${level})`);
    } catch (e) {
      if ((e as { status?: unknown } | null)?.status !== 404) throw e;
      first = true;
    }
    const registered = ((await Subject.register({ subject, body: { schema: JSON.stringify(schema) } })) as ApiResponse).data() as { id?: unknown } | null;
    if (first) await Subject.updateConfig({ subject, body: { compatibility: COMPATIBILITY } });
    const id = registered?.id;
    if (typeof id !== 'number' || !Number.isInteger(id)) throw new Error(`the registry answered the registration of ${subject} without a schema id`);
    return id;
  }

  private registerError(subject: string, e: unknown): LedgerError {
    if (isLedgerError(e)) return e;
    const { failure, status } = classifyRegistryError(e);
    const details = { subject, registryUrl: this.opts.registryUrl, status };
    switch (failure) {
      case 'incompatible':
        return schemaError('incompatible', `schema registry refused the schema for subject ${subject}: not BACKWARD compatible with its latest version (${errorMessage(e)})`, details, e);
      case 'invalid':
      case 'not_found':
        return schemaError('invalid_schema', `schema registry refused the schema for subject ${subject}: ${errorMessage(e)}`, details, e);
      case 'unavailable':
        return unavailableError(`schema registry ${this.opts.registryUrl} unavailable while registering ${subject}: ${errorMessage(e)}`, details, e);
    }
  }

  /**
   * The writer schema with this id, as the registry holds it (parsed JSON). Throws `SCHEMA`
   * `unknown_schema_id` when the registry says it does not exist, `SCHEMA` `wrong_schema` when it is not
   * an Avro schema, `UNAVAILABLE` when the registry cannot be asked.
   */
  async fetchSchema(id: number): Promise<FetchedSchema> {
    const { registryUrl, timeoutMs } = this.opts;
    let found: { schema?: unknown; schemaType?: unknown };
    try {
      found = await withTimeout(`schema id ${id}`, registryUrl, timeoutMs, () => this.findById(id));
    } catch (e) {
      if (isLedgerError(e)) throw e;
      const { failure, status } = classifyRegistryError(e);
      const details = { schemaId: id, registryUrl, status };
      if (failure === 'not_found') throw schemaError('unknown_schema_id', `schema id ${id} does not exist in the registry`, details, e);
      throw unavailableError(`schema registry ${registryUrl} unavailable while fetching schema id ${id}: ${errorMessage(e)}`, details, e);
    }
    if (found.schemaType !== undefined && found.schemaType !== null && found.schemaType !== 'AVRO') {
      throw schemaError('wrong_schema', `schema id ${id} is a ${String(found.schemaType)} schema, not Avro`, { schemaId: id });
    }
    try {
      const json: unknown = typeof found.schema === 'string' ? JSON.parse(found.schema) : found.schema;
      if (typeof json !== 'object' || json === null) throw new Error('not a JSON object');
      return { json };
    } catch (e) {
      throw schemaError('wrong_schema', `schema id ${id} is not an Avro record schema: ${errorMessage(e)}`, { schemaId: id }, e);
    }
  }

  /**
   * GET /schemas/ids/{id} through the library's HTTP client (its retries, auth and middlewares), for the
   * exact text the registry holds: the class's `getSchema` returns only an avsc Type, whose re-export loses
   * attributes (enum defaults) an export bundle must keep, and it joins a pending request for the same id
   * forever when the registry hangs.
   */
  private async findById(id: number): Promise<{ schema?: unknown; schemaType?: unknown }> {
    const response = (await this.opts.api.Schema.find({ id })) as ApiResponse;
    const data = response.data();
    return typeof data === 'object' && data !== null ? (data as { schema?: unknown; schemaType?: unknown }) : {};
  }
}
