import { Kafka, type KafkaConfig, type SASLOptions } from 'kafkajs';
import type { LedgerConfig } from '../config.js';
import { kafkajsLevel, kafkajsLogCreator, type Logger } from '../logging.js';

// kafkajs prints a one-off notice about its v2 partitioner; we always choose partitions ourselves.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

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
