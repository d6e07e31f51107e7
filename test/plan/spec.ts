/**
 * Decider specifications in the style of emmett's DeciderSpecification:
 *
 *   given(history).when(command).then([{ type: 'ItemCompleted', data: {...} }])
 *   given(history).when(command).thenRejects('STALE_DIGEST', 'data.digest')
 *
 * Besides the payloads, `then` checks what every accepted decision must satisfy: contiguous seq after the
 * history, eventId, occurredAt = now, causation/correlation from the command, a valid hash chain.
 */
import { expect } from 'vitest';
import {
  decide,
  evolve,
  verifyChain,
  type AnyCommand,
  type DecideContext,
  type EventBody,
  type PlanEvent,
  type PlanState,
  type RejectionCode,
} from '../../src/plan/index.js';
import { fold } from './fixtures.js';

export interface Then {
  /** Expected events (type + data), or a rejection code. Returns the events and the state after them. */
  then(expected: EventBody[] | RejectionCode): { events: PlanEvent[]; state: PlanState | undefined };
  thenRejects(code: RejectionCode, field?: string | null): void;
  /** Accepted with no events (idempotent replay). */
  thenNothing(): void;
}

export function given(history: readonly PlanEvent[]) {
  const state = fold(history);
  return {
    state,
    when(command: AnyCommand | unknown, ctx: DecideContext = { now: 5000 }): Then {
      const decision = decide(state, command, ctx);
      const accepted = (expected: EventBody[]) => {
        if (!decision.ok) throw new Error(`expected acceptance, got ${decision.rejection.code}: ${decision.rejection.message}`);
        expect(decision.events.map((e) => ({ type: e.type, data: e.data }))).toEqual(expected);
        const c = command as AnyCommand;
        decision.events.forEach((e, i) => {
          const seq = (state?.seq ?? 0) + 1 + i;
          expect(e.seq).toBe(seq);
          expect(e.eventId).toBe(`${c.planId}:${seq}`);
          expect(e.planId).toBe(c.planId);
          expect(e.occurredAt).toBe(ctx.now);
          expect(e.causationId).toBe(c.commandId);
          expect(e.correlationId).toBe(c.correlationId);
          expect(e.actor).toBe(c.actor);
          expect(e.schemaVersion).toBe(1);
        });
        const chain = verifyChain([...history, ...decision.events]);
        expect(chain.ok).toBe(true);
        let after = state;
        for (const e of decision.events) after = evolve(after, e);
        return { events: decision.events, state: after };
      };
      const rejected = (code: RejectionCode, field?: string | null) => {
        if (decision.ok) throw new Error(`expected ${code}, got events ${decision.events.map((e) => e.type).join(', ')}`);
        expect(decision.rejection.code).toBe(code);
        expect(decision.rejection.message.length).toBeGreaterThan(0);
        if (field !== undefined) expect(decision.rejection.field).toBe(field);
      };
      return {
        then(expected) {
          if (typeof expected === 'string') {
            rejected(expected);
            return { events: [], state };
          }
          return accepted(expected);
        },
        thenRejects: rejected,
        thenNothing() {
          expect(decision).toEqual({ ok: true, events: [] });
        },
      };
    },
  };
}
