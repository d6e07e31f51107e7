import { createRequire } from 'node:module';
import type * as Confluent from '@confluentinc/kafka-javascript';
import { LedgerError } from '../errors.js';

export type ConfluentModule = typeof Confluent;

let loaded: ConfluentModule | undefined;

/**
 * The librdkafka binding, loaded on first use: a process that never talks to Kafka (`plan-ledger --help`,
 * the unit tests) does not need the native addon. When the addon was never built (an install with
 * scripts off and no `npm run native` since), one line says what to run instead of a stack of
 * `bindings` paths.
 */
export function confluent(): ConfluentModule {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)('@confluentinc/kafka-javascript') as ConfluentModule;
    return loaded;
  } catch (e) {
    throw new LedgerError(
      'ENVIRONMENT',
      `the Kafka client's native addon (@confluentinc/kafka-javascript) is not built: run \`npm run native\` (needs a C++ compiler, make, python3, libssl-dev and zlib1g-dev): ${(e as Error).message.split('\n')[0]}`,
      {},
      { cause: e },
    );
  }
}
