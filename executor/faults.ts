import { setting } from '../src/settings.js';

/**
 * Fault injection for the crash tests (docs/design.md#the-item-protocol): with PLAN_LEDGER_FAULT=<point>[:<itemId>] the
 * executor process kills itself with SIGKILL at that protocol boundary — no cleanup, no flush, exactly
 * like `kill -9`. Points: after_intent (intent committed, tool not returned), after_tool (tool returned,
 * result not recorded), after_result (the step's one transaction — result, completion and the intents it
 * readied — committed, the next tools not started). Unset in production.
 */
export type FaultPoint = 'after_intent' | 'after_tool' | 'after_result';

const spec = setting('PLAN_LEDGER_FAULT');

export function faultPoint(point: FaultPoint, where: { planId: string; itemId: string; attempt: number }): void {
  if (!spec) return;
  const [p, item] = spec.split(':');
  if (p !== point || (item && item !== where.itemId)) return;
  process.stderr.write(`plan-ledger: fault injected at ${point} (${where.planId}/${where.itemId}/${where.attempt}); killing this process\n`);
  process.kill(process.pid, 'SIGKILL');
}
