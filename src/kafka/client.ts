import { Kafka, type KafkaConfig, type SASLOptions } from 'kafkajs';
import type { LedgerConfig } from '../config.js';
import { kafkajsLevel, kafkajsLogCreator, type Logger } from '../logging.js';

// kafkajs prints a one-off notice about its v2 partitioner; we always choose partitions ourselves.
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

/** A kafkajs client from the ledger config (SASL/TLS passed through), logging into `logger`. */
export function createKafka(config: LedgerConfig, logger: Logger, clientSuffix?: string): Kafka {
  const opts: KafkaConfig = {
    clientId: clientSuffix ? `${config.clientId}-${clientSuffix}` : config.clientId,
    brokers: [...config.brokers],
    ssl: config.ssl,
    logLevel: kafkajsLevel(logger),
    logCreator: kafkajsLogCreator(logger),
    retry: { initialRetryTime: 100, retries: 8 },
  };
  if (config.sasl) opts.sasl = config.sasl as SASLOptions;
  return new Kafka(opts);
}
