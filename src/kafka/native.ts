import { createRequire } from 'node:module';
import type * as Confluent from '@confluentinc/kafka-javascript';
import { LedgerError } from '../errors.js';

export type ConfluentModule = typeof Confluent;

let loaded: ConfluentModule | undefined;

/** Below this many libuv threads, a process running the ledger's readers waits on its own thread pool. */
export const MIN_THREAD_POOL = 16;

/**
 * The binding waits for records on libuv's thread pool (4 threads unless UV_THREADPOOL_SIZE says more):
 * each reader blocks a thread while it waits, and a ledger client runs its events tail beside up to four
 * pooled ranged readers (its plan index reads three topics at once), so its reads and admin calls queued behind them and a `getPlan` took ~1.8 s
 * instead of ~0.15 s. The size is read once, when the pool starts — before the first line of an ES module
 * runs — so it can only be set from outside: said once, on stderr, with the fix.
 */
export function threadPoolAdvice(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const size = Number(env.UV_THREADPOOL_SIZE ?? 4);
  if (Number.isFinite(size) && size >= MIN_THREAD_POOL) return undefined;
  return `UV_THREADPOOL_SIZE is ${env.UV_THREADPOOL_SIZE ?? 'unset (4)'}: the Kafka client's readers each hold one of libuv's threads while they wait, so reads queue behind them; start node with UV_THREADPOOL_SIZE=64 (the plan-ledger CLI does)`;
}

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
    const advice = threadPoolAdvice();
    if (advice !== undefined) process.emitWarning(advice, { type: 'PlanLedgerWarning', code: 'THREAD_POOL' });
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
