import { Kafka, type KafkaConfig, type Producer, type ProducerConfig, type SASLOptions } from 'kafkajs';
import type { LedgerConfig } from '../config.js';
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
    ssl: config.ssl,
    logLevel: kafkajsLevel(logger),
    logCreator: kafkajsLogCreator(logger),
    retry: { ...RETRY_PROFILES[profile] },
  };
  if (config.sasl) opts.sasl = config.sasl as SASLOptions;
  return new Kafka(opts);
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
 * transactions from 6.9 to 2.4 ms each on the local broker (`bench/tx-retry.ts`); with 33 retries the backoff
 * still doubles up to 2 s and rides out an outage of about 48 s, as before. Connect it with {@link connectFenced}.
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
