import type { LedgerConfig } from '../config.js';
import type { Logger } from '../logging.js';
import { ConfluentAdmin } from './admin.js';
import { connectionConfig, type RdConfig } from './connection.js';
import type { FencedWriter, FencedWriterBounds, GroupMember, GroupMemberOptions, KafkaClient, LedgerAdmin, PartitionTail, PartitionTailOptions, ReadToEndOptions, RecordWriter } from './port.js';
import { joinGroup } from './member.js';
import { openTail, readToEnd, ReaderPool } from './reader.js';
import { NativeFencedWriter, NativeRecordWriter } from './writers.js';

// Kafka's errors, read in connection.ts (a leaf the handles share), for the port's callers (index.ts).
export { authenticationFailure, isFencingError, isRetriableKafkaError, kafkaErrorCode, kafkaErrorName, kafkaFailure } from './connection.js';

/**
 * How long a client keeps trying through a broker outage. Services (executor, projector) ride out an
 * outage of about two minutes; one-shot clients (CLI, library calls) give up after 30 s with a clear error.
 * librdkafka retries a produce internally (same producer id and sequence, so never a duplicate) until
 * `message.timeout.ms`, and reconnects with a backoff capped at 2 s.
 */
export const CLIENT_PROFILES = {
  service: { messageTimeoutMs: 120_000, requestTimeoutMs: 30_000 },
  client: { messageTimeoutMs: 30_000, requestTimeoutMs: 15_000 },
} as const;
export type ClientProfile = keyof typeof CLIENT_PROFILES;

/**
 * A Kafka connection with the ledger's settings. Every producer, reader and group member it makes is a
 * librdkafka handle of its own; the admin it uses for its own reads (end offsets) is made once and shared.
 */
class ConfluentKafka implements KafkaClient {
  private sharedAdmin: Promise<ConfluentAdmin> | undefined;
  /** Consumers for ranged reads, opened on first use and reused (reader.ts). */
  private pool: ReaderPool | undefined;

  constructor(
    readonly clientId: string,
    private readonly config: LedgerConfig,
    private readonly logger: Logger,
    private readonly profile: ClientProfile,
  ) {}

  private rd(): RdConfig {
    return connectionConfig(this.config, this.clientId, this.logger);
  }

  admin(): LedgerAdmin {
    return new ConfluentAdmin(this.rd(), this.logger, this.config);
  }

  writer(): RecordWriter {
    return new NativeRecordWriter(this.rd(), this.logger, CLIENT_PROFILES[this.profile], this.config);
  }

  fencedWriter(transactionalId: string, bounds?: FencedWriterBounds): FencedWriter {
    return new NativeFencedWriter(this.rd(), this.logger, transactionalId, this.config, bounds);
  }

  private readerAdmin(): Promise<ConfluentAdmin> {
    this.sharedAdmin ??= (async () => {
      const a = new ConfluentAdmin(this.rd(), this.logger, this.config);
      await a.connect();
      return a;
    })();
    this.sharedAdmin.catch(() => (this.sharedAdmin = undefined));
    return this.sharedAdmin;
  }

  async readToEnd(opts: ReadToEndOptions): Promise<Map<number, string>> {
    // Connected on the first read, in the background when this read knows its ends (a later read needs it).
    const admin = () => this.readerAdmin();
    if (opts.ends !== undefined) void admin().catch(() => {});
    // A pooled reader fetches ahead as far as librdkafka's default: a bound on what is fetched ahead needs its own.
    if (opts.follow || opts.prefetchKiB !== undefined) return readToEnd(this.readerContext(), admin, opts);
    this.pool ??= new ReaderPool(this.readerContext());
    return readToEnd(this.readerContext(), admin, opts, this.pool);
  }

  tail(opts: PartitionTailOptions): Promise<PartitionTail> {
    return openTail(this.readerContext(), opts);
  }

  join(opts: GroupMemberOptions): Promise<GroupMember> {
    return joinGroup({ rd: this.rd(), logger: this.logger, config: this.config }, opts);
  }

  private readerContext() {
    return { rd: this.rd(), logger: this.logger, groupId: `${this.config.topicPrefix}.reader`, config: this.config };
  }

  /** Closes the shared admin (readers' end offsets) and the pooled readers; handles the caller made close on their own. */
  async close(): Promise<void> {
    const a = this.sharedAdmin;
    this.sharedAdmin = undefined;
    const pool = this.pool;
    this.pool = undefined;
    await pool?.close();
    if (a) await (await a.catch(() => undefined))?.disconnect().catch(() => {});
  }
}

/**
 * A Kafka client from the ledger config (SASL/TLS passed through), logging into `logger`.
 *
 * @example
 * const kafka = createKafka(config, logger, 'cli');
 * const admin = kafka.admin();
 * await admin.connect();
 */
export function createKafka(config: LedgerConfig, logger: Logger, clientSuffix?: string, profile: ClientProfile = 'client'): KafkaClient {
  const clientId = clientSuffix ? `${config.clientId}-${clientSuffix}` : config.clientId;
  return new ConfluentKafka(clientId, config, logger.child({ component: 'kafka' }), profile);
}
