import type { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import type { Logger } from '../logging.js';
import type { PlanCommand, PlanEvent } from '../plan/index.js';
import type { PlanSnapshot } from '../plan/generated/types.js';

export type { PlanSnapshot };

/** The three records the codec carries, one registry subject each (TopicNameStrategy). */
export type CodecRecordKind = 'event' | 'command' | 'snapshot';

export interface CodecOptions {
  /** Confluent-compatible registry base URL, e.g. `http://127.0.0.1:8081/apis/ccompat/v7` (Apicurio). */
  registryUrl: string;
  /** Topic prefix: subjects are `<prefix>.plan-events-value`, `<prefix>.plan-commands-value`, `<prefix>.plan-snapshots-value`. */
  topicPrefix: string;
  /** Basic auth for the registry. */
  auth?: { username: string; password: string };
  /** Parent logger; the codec logs under `component: 'codec'` (registrations, new writer schemas). */
  logger?: Logger;
  /**
   * A registry client to use instead of one built from `registryUrl`/`auth` (to share one client, or to
   * add mappersmith middlewares such as metrics). `registryUrl` still names it in errors.
   */
  registry?: SchemaRegistry;
  /**
   * Reader and writer schemas, by record; each defaults to the contract in `schemas/`
   * (`src/plan/generated/schemas.ts`). Set one to run a newer (or older) schema version, e.g. in a rolling
   * upgrade or an evolution test; the TypeScript types stay those of the contract.
   */
  schemas?: Partial<Record<CodecRecordKind, object>>;
  /** A registry call that has not answered after this long fails with `UNAVAILABLE`. Default 10 000 ms. */
  registryTimeoutMs?: number;
}

/**
 * Avro serde of the ledger's records in the Confluent wire format (magic byte 0, schema id, Avro body).
 *
 * Encoding is synchronous and uses the id registered at start-up. Decoding a record written with one of
 * this codec's own ids makes no registry call; an id seen for the first time (another schema version)
 * is fetched once, cached, and read through an Avro resolver.
 *
 * Failures are {@link LedgerError}s. `SCHEMA` (with `details.reason`: `bad_magic`, `too_short`,
 * `unknown_schema_id`, `corrupt`, `wrong_schema`, `unknown_branch`) means the record can never be
 * decoded by this reader: dead-letter it with the error as the cause, never skip it silently.
 * `UNAVAILABLE` means the registry could not be asked: retry the same record later, do not dead-letter.
 *
 * @example
 * const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix, logger });
 * await producer.send({ topic: topics.events, messages: [{ key: `${e.planId}:${e.seq}`, value: codec.encodeEvent(e) }] });
 * // consumer side
 * try {
 *   const event = await codec.decodeEvent(message.value!);
 * } catch (err) {
 *   if (isLedgerError(err, 'SCHEMA')) await deadLetter(message, err); // poison: park it with the cause
 *   else throw err; // UNAVAILABLE: let the consumer retry this offset
 * }
 */
export interface LedgerCodec {
  /** Schema ids this codec writes with (for audit and export bundles). */
  readonly schemaIds: Readonly<Record<CodecRecordKind, number>>;
  /** Registry subjects, `<prefix>.plan-events-value` etc. */
  readonly subjects: Readonly<Record<CodecRecordKind, string>>;
  /** Throws `SCHEMA` `invalid_value` when the event does not fit the schema. */
  encodeEvent(event: PlanEvent): Buffer;
  decodeEvent(value: Buffer): Promise<PlanEvent>;
  /**
   * `decodeEvent` without a promise, for replaying a log: the event when its writer schema is known already
   * (seen before, or this codec's own), undefined when it is not (then `await decodeEvent`). Throws the same
   * typed `SCHEMA` errors.
   */
  decodeKnownEvent(value: Buffer): PlanEvent | undefined;
  /** Throws `SCHEMA` `invalid_value` when the command does not fit the schema. */
  encodeCommand(command: PlanCommand): Buffer;
  decodeCommand(value: Buffer): Promise<PlanCommand>;
  /** Throws `SCHEMA` `invalid_value` when the snapshot does not fit the schema. */
  encodeSnapshot(snapshot: PlanSnapshot): Buffer;
  decodeSnapshot(value: Buffer): Promise<PlanSnapshot>;
  /**
   * The writer schema (JSON, frozen) registered under `id`: this codec's own without a registry call,
   * any other fetched once and cached. Throws like decoding does (`unknown_schema_id`, `UNAVAILABLE`).
   */
  schemaFor(id: number): Promise<object>;
}
