import { topicNames, type LedgerConfig } from '../config.js';
import type { KafkaClient } from '../kafka/index.js';
import { masterKeyFromEnv } from './envelope.js';
import { PlanKeyring } from './plan-keys.js';

export * from './envelope.js';
export { PlanKeyring, unwrapWithAny, type PlanKeyringOptions, type PlanPayloadKey } from './plan-keys.js';
export { rewrapPlanKeys, type RewrapResult } from './rotate.js';

/**
 * The keyring of a process, when a master key is configured (`PLAN_LEDGER_MASTER_KEY_FILE` or
 * `PLAN_LEDGER_MASTER_KEY`, or `master` given); undefined otherwise (payloads are stored as given).
 */
export function keyringFor(o: { kafka: KafkaClient; config: LedgerConfig; master?: Buffer; env?: NodeJS.ProcessEnv }): PlanKeyring | undefined {
  const master = o.master ?? masterKeyFromEnv(o.env);
  if (master === undefined) return undefined;
  // During a rotation (see docs/guides/security.md#rotating-the-master-key), the previous master key still unwraps records not re-wrapped yet.
  const previous = masterKeyFromEnv(o.env, 'PLAN_LEDGER_MASTER_KEY_PREVIOUS');
  return new PlanKeyring({
    kafka: o.kafka,
    topic: topicNames(o.config.topicPrefix).planKeys,
    partitions: o.config.partitions,
    master,
    ...(previous ? { previous: [previous] } : {}),
  });
}
