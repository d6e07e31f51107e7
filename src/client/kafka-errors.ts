import { isLedgerError, LedgerError } from '../errors.js';
import { kafkaErrorName, kafkaFailure } from '../kafka/index.js';

/**
 * The client as its callers see it: an error of the Kafka client that a method meets reaches the caller as
 * a LedgerError (UNAVAILABLE when the cluster did not serve in time, FORBIDDEN for ACLs, INTERNAL with the
 * Kafka error's name otherwise), never as the client's own error. Other errors pass as they are.
 */
export function kafkaErrorsAsLedgerErrors<T extends object>(client: T): T {
  const map = (e: unknown, method: string): unknown => {
    if (isLedgerError(e) || kafkaErrorName(e) === undefined) return e;
    const mapped = kafkaFailure(e, `ledger.${method}`);
    return isLedgerError(mapped) ? mapped : new LedgerError('INTERNAL', `ledger.${method}: Kafka error ${kafkaErrorName(e)}: ${(e as Error).message}`, { kafka: kafkaErrorName(e) }, { cause: e });
  };
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => {
        try {
          const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
          return out instanceof Promise ? out.catch((e: unknown) => Promise.reject(map(e, prop))) : out;
        } catch (e) {
          throw map(e, prop);
        }
      };
    },
  });
}
