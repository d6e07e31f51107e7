import { planEventSchema } from '../../src/plan/generated/schemas.js';
import type { PlanEvent, PlanState } from '../../src/plan/index.js';
import type { LoggedEvent } from '../../src/audit/log.js';
import { cmd, item, run } from '../plan/fixtures.js';

export const SCHEMA_ID = 42;
export const schemas = new Map<number, object>([[SCHEMA_ID, planEventSchema]]);

/**
 * A propose-mode plan that ran its two items, the second one after a crash (its result by another
 * executor): intent at t=3000, result at t=9000.
 */
export function history(): { events: PlanEvent[]; state: PlanState } {
  let state: PlanState | undefined;
  const events: PlanEvent[] = [];
  const step = (commands: Parameters<typeof run>[0], now: number) => {
    const r = run(commands, now, state);
    state = r.state;
    events.push(...r.events);
  };
  step([cmd.create([item('lookup'), item('pay', ['lookup'])], 'propose', { actor: 'agent' })], 1000);
  step([cmd.propose({ actor: 'agent' })], 1100);
  step([cmd.approve(state!.digest, { actor: 'alice' })], 1200);
  step([cmd.intent('lookup'), cmd.commit('lookup', 1), cmd.settle('lookup')], 2000);
  step([cmd.intent('pay')], 3000);
  step([cmd.commit('pay', 1, 'succeeded', { executorId: 'ex-2' }, { actor: 'ex-2' }), cmd.settle('pay', { actor: 'ex-2' })], 9000);
  return { events, state: state! };
}

export function logged(events: readonly PlanEvent[]): LoggedEvent[] {
  return events.map((event, i) => ({ event, partition: 0, offset: String(i * 2), schemaId: SCHEMA_ID }));
}
