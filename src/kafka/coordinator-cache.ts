import { createRequire } from 'node:module';

/**
 * kafkajs asks a broker for the transaction coordinator (FindCoordinator) before every AddPartitionsToTxn,
 * AddOffsetsToTxn and EndTxn: two to three extra round trips in every transaction, with the coordinator
 * almost never moving. This remembers the coordinator of each transactional id per kafkajs cluster and
 * forgets it as soon as a request to it fails for a reason that may mean it moved ({@link forgetsCoordinator}:
 * NOT_COORDINATOR, a lost connection, a timeout, anything but an answer about the transaction itself), so
 * the next call — kafkajs's own retry of the failed one — looks it up afresh. Group coordinators
 * (consumers, TxnOffsetCommit) are looked up as before.
 *
 * It patches kafkajs's internal `Cluster.prototype.findGroupCoordinator` (kafkajs 2.x, whose package has
 * no `exports` map), once per process; {@link coordinatorLookups} counts the lookups that went to the
 * network, for tests and benchmarks.
 */
const require = createRequire(import.meta.url);

interface BrokerLike {
  [method: string]: unknown;
}
interface ClusterLike {
  findGroupCoordinator(args: { groupId: string; coordinatorType?: number }): Promise<BrokerLike>;
}

const TRANSACTION = 1;

/**
 * Answers of the coordinator about the transaction itself: it is the coordinator, so it is kept (the
 * CONCURRENT_TRANSACTIONS after every commit above all). Any other failure forgets it.
 */
const ANSWERS_OF_THE_COORDINATOR = new Set([
  'CONCURRENT_TRANSACTIONS',
  'INVALID_PRODUCER_EPOCH',
  'PRODUCER_FENCED',
  'INVALID_PRODUCER_ID_MAPPING',
  'INVALID_TXN_STATE',
  'TRANSACTIONAL_ID_AUTHORIZATION_FAILED',
  'INVALID_TRANSACTION_TIMEOUT',
  'UNKNOWN_PRODUCER_ID',
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
]);

/** Whether a failed request to a remembered coordinator makes the cache forget it. */
export function forgetsCoordinator(e: unknown): boolean {
  const err = e as { name?: string; type?: string } | undefined;
  return !(err?.name === 'KafkaJSProtocolError' && err.type !== undefined && ANSWERS_OF_THE_COORDINATOR.has(err.type));
}
const cacheOf = new WeakMap<object, Map<string, BrokerLike>>();
let installed = false;

/** FindCoordinator lookups for transaction coordinators that went to a broker since the process started. */
export const coordinatorLookups = { transaction: 0 };

export function installCoordinatorCache(): void {
  if (installed) return;
  installed = true;
  const { prototype } = require('kafkajs/src/cluster/index.js') as { prototype: ClusterLike };
  const original = prototype.findGroupCoordinator;
  prototype.findGroupCoordinator = async function (this: ClusterLike, args) {
    if (args.coordinatorType !== TRANSACTION) return original.call(this, args);
    let cache = cacheOf.get(this);
    if (!cache) cacheOf.set(this, (cache = new Map()));
    const hit = cache.get(args.groupId);
    if (hit) return hit;
    coordinatorLookups.transaction++;
    const broker = await original.call(this, args);
    const forget = (e: unknown) => {
      if (forgetsCoordinator(e) && cache.get(args.groupId) === remembered) cache.delete(args.groupId);
    };
    // Calls go to the real broker (its `this`); a failure that may mean it moved forgets it.
    const remembered: BrokerLike = new Proxy(broker, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        return (...a: unknown[]) => {
          try {
            const out = (value as (...x: unknown[]) => unknown).apply(target, a);
            return out instanceof Promise ? out.catch((e: unknown) => (forget(e), Promise.reject(e))) : out;
          } catch (e) {
            forget(e);
            throw e;
          }
        };
      },
    });
    cache.set(args.groupId, remembered);
    return remembered;
  };
}
