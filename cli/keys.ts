import type { LedgerLog } from '../src/audit/log.js';
import { keyringFor } from '../src/crypto/index.js';

/**
 * How the CLI opens a plan's payloads for display: decrypted with the plan's key when a master key is
 * configured (PLAN_LEDGER_MASTER_KEY_FILE / PLAN_LEDGER_MASTER_KEY), "[erased]" when the key was
 * destroyed; undefined without a master key (envelopes are shown as stored).
 */
export async function openerOf(log: LedgerLog, planId: string): Promise<((json: string) => string) | undefined> {
  const keys = keyringFor({ kafka: log.kafka, config: log.config });
  return keys ? keys.opener(planId) : undefined;
}
