import { Kafka, type AdminConfig, type ConsumerConfig, type KafkaConfig, type Producer, type ProducerConfig, type SASLOptions } from 'kafkajs';
import { readFileSync } from 'node:fs';
import type { LedgerConfig } from '../config.js';
import { LedgerError } from '../errors.js';
import { kafkajsLevel, kafkajsLogCreator, type Logger } from '../logging.js';
import { installCoordinatorCache } from './coordinator-cache.js';

// kafkajs prints a one-off notice about its v2 partitioner; we always choose partitions ourselves.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
// One FindCoordinator per transactional id, not one before every transactional request.
installCoordinatorCache();

/**
 * How long a client keeps trying through a broker outage. Services (executor, projector) ride out an
 * outage of about a minute and notice the broker's return within 2 s; one-shot clients (CLI, library
 * calls) give up sooner with a clear error.
 */
export const RETRY_PROFILES = {
  service: { initialRetryTime: 100, maxRetryTime: 2_000, retries: 40 },
  client: { initialRetryTime: 100, retries: 8 },
} as const;

/** A kafkajs client from the ledger config (SASL/TLS passed through), logging into `logger`. */
export function createKafka(config: LedgerConfig, logger: Logger, clientSuffix?: string, profile: keyof typeof RETRY_PROFILES = 'client'): Kafka {
  const opts: KafkaConfig = {
    clientId: clientSuffix ? `${config.clientId}-${clientSuffix}` : config.clientId,
    brokers: [...config.brokers],
    ssl: config.sslCaFile ? { ca: [readFileSync(config.sslCaFile, 'utf8')] } : config.ssl,
    logLevel: kafkajsLevel(logger),
    logCreator: kafkajsLogCreator(logger),
    retry: { ...RETRY_PROFILES[profile] },
  };
  if (config.sasl) {
    const { mechanism, username, password } = config.sasl;
    opts.sasl = { mechanism, username, password } as SASLOptions;
  }
  return new AuthCheckedKafka(opts, config);
}

/**
 * A kafkajs client whose admin, producers and consumers fail `connect()` on a refused SASL login with
 * one {@link authenticationFailure} instead of kafkajs's own error (no retries: kafkajs does not retry
 * an authentication failure, and neither does anything above it, since a wrong password stays wrong).
 */
class AuthCheckedKafka extends Kafka {
  constructor(
    opts: KafkaConfig,
    private readonly config: LedgerConfig,
  ) {
    super(opts);
  }
  override producer(c?: ProducerConfig): Producer {
    return this.guard(super.producer(c));
  }
  override consumer(c: ConsumerConfig): ReturnType<Kafka['consumer']> {
    return this.guard(super.consumer(c));
  }
  override admin(c?: AdminConfig): ReturnType<Kafka['admin']> {
    return this.guard(super.admin(c));
  }
  private guard<T extends { connect(): Promise<void> }>(client: T): T {
    const connect = client.connect.bind(client);
    client.connect = async () => {
      try {
        await connect();
      } catch (e) {
        throw authenticationFailure(e, this.config) ?? e;
      }
    };
    return client;
  }
}

/**
 * The one-line error of a refused SASL login: the mechanism, the user and the brokers, never the
 * password (it is also cut out of kafkajs's reason, should a broker ever echo it). Undefined when `e` is
 * not an authentication failure.
 *
 * @example
 * // LedgerError UNAUTHENTICATED: Kafka refused SASL SCRAM-SHA-512 login of user "client" at 127.0.0.1:9092: ...
 */
export function authenticationFailure(e: unknown, config: LedgerConfig): LedgerError | undefined {
  const err = e as { name?: string; message?: string } | undefined;
  if (err?.name !== 'KafkaJSSASLAuthenticationError' || !config.sasl) return undefined;
  const { mechanism, username, password } = config.sasl;
  const reason = (err.message ?? '').split(password).join('***').replace(/^SASL [A-Z0-9 -]+ authentication failed: /i, '');
  return new LedgerError(
    'UNAUTHENTICATED',
    `Kafka refused SASL ${mechanism.toUpperCase()} login of user "${username}" at ${config.brokers.join(',')}: ${reason || 'invalid credentials'}`,
    { mechanism: mechanism.toUpperCase(), username },
  );
}

/** True for the errors a fenced (superseded) transactional producer gets: a newer writer took its id. */
export function isFencingError(e: unknown): boolean {
  const err = e as { type?: string; name?: string; message?: string; cause?: unknown } | undefined;
  if (!err) return false;
  if (err.type === 'INVALID_PRODUCER_EPOCH' || err.type === 'PRODUCER_FENCED' || err.type === 'INVALID_PRODUCER_ID_MAPPING') return true;
  if (/fenced|producer.?epoch|epoch.*(old|stale)/i.test(err.message ?? '')) return true;
  return err.cause !== undefined && err.cause !== e ? isFencingError(err.cause) : false;
}

/**
 * A partition writer's transactional producer: one in flight, and quick retries of the
 * CONCURRENT_TRANSACTIONS a transaction meets when it starts right after the previous commit, until the
 * broker has written the markers. A first retry after 2 ms instead of 20 ms took sequential one-record
 * transactions from 2.89 to 1.74 ms each on the local broker; with the coordinator cache (which starts the
 * next transaction sooner, into CONCURRENT_TRANSACTIONS more often) 20 ms would cost 16 ms a transaction,
 * and two producers taking turns bring it to 1.16 ms (`bench/tx-retry.ts [--cache]`, medians of 3 rounds).
 * With 33 retries the backoff still doubles up to 2 s and rides out an outage of about 48 s, as before.
 * Connect it with {@link connectFenced}.
 */
export function transactionalProducer(kafka: Kafka, transactionalId: string, extra: Partial<ProducerConfig> = {}): Producer {
  return kafka.producer({
    transactionalId,
    idempotent: true,
    maxInFlightRequests: 1,
    retry: { initialRetryTime: 2, maxRetryTime: 2_000, retries: 33 },
    ...extra,
  });
}

/**
 * Connects a transactional producer and fences every older producer of its `transactionalId` before it
 * returns. kafkajs's `connect()` only initialises an idempotent producer id; the transactional
 * InitProducerId — which bumps the epoch, so an older holder can commit nothing more, and aborts its open
 * transaction — happens at the first `transaction()`. An empty transaction, aborted, does it now: a new
 * owner must fence before it reads the log it is taking over, or a paused old owner could still append to it.
 */
export async function connectFenced(producer: Producer): Promise<void> {
  await producer.connect();
  const tx = await producer.transaction();
  await tx.abort();
}
