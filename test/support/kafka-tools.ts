import { alterTopicConfig, topicConfig as jvmTopicConfig } from '../../stack/jvm-admin.js';

/**
 * A topic's configuration as the broker reports it, through Kafka's own Java AdminClient (librdkafka's
 * Node binding has no DescribeConfigs). Talks to the test stack of PLAN_LEDGER_BROKERS (plaintext).
 */
export function topicConfig(topic: string, names: readonly string[]): Promise<Record<string, string>> {
  return Promise.resolve(jvmTopicConfig({ brokers: brokers() }, topic, names));
}

/** Sets topic configuration values on the test stack (the others stay as they are). */
export function setTopicConfig(topic: string, values: Readonly<Record<string, string>>): Promise<void> {
  return Promise.resolve(alterTopicConfig({ brokers: brokers() }, topic, values));
}

function brokers(): string[] {
  const b = process.env.PLAN_LEDGER_BROKERS;
  if (!b) throw new Error('PLAN_LEDGER_BROKERS is not set (the int/e2e global setup sets it)');
  return b.split(',');
}
