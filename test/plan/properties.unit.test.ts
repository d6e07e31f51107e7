import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import avsc from 'avsc';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  decide,
  eventHash,
  evolve,
  evolveAll,
  isInternalCommandType,
  fromAvroCommand,
  fromAvroEvent,
  isCommandType,
  planCommandSchema,
  planDigest,
  planEventSchema,
  reviewJson,
  reviewView,
  RejectionCode,
  stateDigest,
  toAvroCommand,
  toAvroEvent,
  verifyChain,
  type ItemSpec,
  type PlanCommand,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';
import { scenarioArb, simulate } from './arbitraries.js';
import { fold } from './fixtures.js';

const RUNS = { numRuns: 150 };
const eventType = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
const commandType = avsc.Type.forSchema(planCommandSchema as unknown as avsc.Schema, { wrapUnions: true });
const roundTrip = (e: PlanEvent): PlanEvent => fromAvroEvent(eventType.fromBuffer(eventType.toBuffer(toAvroEvent(e))));

describe('determinism', () => {
  it('(a) same events give byte-identical state and digest after an Avro round trip', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const { events, state } = simulate(scenario);
        const decoded = events.map(roundTrip);
        expect(decoded).toEqual(events);
        for (const e of decoded) expect(eventHash(e)).toBe(e.hash);
        const replayed = fold(decoded) as PlanState;
        expect(canonicalJson(replayed)).toBe(canonicalJson(state));
        expect(stateDigest(replayed)).toBe(stateDigest(state));
      }),
      RUNS,
    );
  });

  it('(a) commands survive an Avro round trip unchanged', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        for (const step of simulate(scenario).steps) {
          if (!isCommandType(step.command.type)) continue;
          const c = step.command as PlanCommand;
          expect(fromAvroCommand(commandType.fromBuffer(commandType.toBuffer(toAvroCommand(c))))).toEqual(c);
        }
      }),
      { numRuns: 50 },
    );
  });

  it('(a) a fresh process computes the same state digests', () => {
    const sims = fc.sample(scenarioArb(), { numRuns: 25, seed: 7 }).map(simulate);
    const script = fileURLToPath(new URL('./replay-digest.ts', import.meta.url));
    const child = spawnSync(process.execPath, ['--import', 'tsx', script], {
      input: JSON.stringify(sims.map((s) => s.events.map(roundTrip))),
      encoding: 'utf8',
      cwd: fileURLToPath(new URL('../..', import.meta.url)),
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual(sims.map((s) => stateDigest(s.state)));
  }, 60_000);

  it('(b) a snapshot at any point plus the tail equals the state from scratch', () => {
    fc.assert(
      fc.property(scenarioArb(), fc.nat(), (scenario, cut) => {
        const { events, state } = simulate(scenario);
        const k = cut % (events.length + 1);
        const atK = fold(events.slice(0, k));
        const snapshot = atK === undefined ? undefined : (JSON.parse(canonicalJson(atK)) as PlanState);
        const restored = fold(events.slice(k), snapshot) as PlanState;
        expect(canonicalJson(restored)).toBe(canonicalJson(state));
        // The incremental digest equals the digest computed from scratch.
        expect(restored.digest).toBe(planDigest(JSON.parse(canonicalJson(state)) as PlanState));
      }),
      RUNS,
    );
  });

  it('(b) applying an event twice (an exact re-send) changes nothing', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const { events, state } = simulate(scenario);
        let s: PlanState | undefined;
        for (const e of events) s = evolve(evolve(s, e), e);
        expect(canonicalJson(s)).toBe(canonicalJson(state));
      }),
      { numRuns: 50 },
    );
  });

  it('(c) interleaving the events of different plans changes no plan', () => {
    fc.assert(
      fc.property(scenarioArb('plan-a'), scenarioArb('plan-b'), scenarioArb('plan-c'), fc.array(fc.nat(2), { maxLength: 400 }), (sa, sb, sc, picks) => {
        const sims = [simulate(sa), simulate(sb), simulate(sc)];
        const queues = sims.map((s) => [...s.events]);
        const merged: PlanEvent[] = [];
        let p = 0;
        while (queues.some((q) => q.length > 0)) {
          const pick = picks[p++] ?? 0;
          const q = queues.find((_, i) => i >= pick && queues[i]!.length > 0) ?? queues.find((x) => x.length > 0)!;
          merged.push(q.shift()!);
        }
        const states = new Map<string, PlanState>();
        for (const e of merged) states.set(e.planId, evolve(states.get(e.planId), e));
        for (const s of sims) expect(canonicalJson(states.get(s.state.planId))).toBe(canonicalJson(s.state));
      }),
      { numRuns: 100 },
    );
  });
});

describe('invariants', () => {
  it('(d) accepted commands yield contiguous seq, eventIds and causation', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const { events, steps } = simulate(scenario);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
        let accepted = 0;
        for (const step of steps) {
          if (!step.decision.ok) continue;
          accepted++;
          step.decision.events.forEach((e, i) => {
            expect(e.seq).toBe((step.before?.seq ?? 0) + 1 + i);
            expect(e.eventId).toBe(`${e.planId}:${e.seq}`);
            expect(e.causationId).toBe(step.command.commandId);
            expect(e.occurredAt).toBe(step.now);
          });
        }
        expect(accepted).toBeGreaterThan(0);
        expect(verifyChain(events)).toEqual({ ok: true, head: events[events.length - 1]!.hash, seq: events.length });
      }),
      RUNS,
    );
  });

  it('(e) changing, removing, inserting or reordering any event is detected', () => {
    const mutation = fc.record({ kind: fc.constantFrom('change', 'change-rehash', 'remove', 'insert', 'swap'), i: fc.nat(), j: fc.nat() });
    fc.assert(
      fc.property(scenarioArb(), mutation, (scenario, m) => {
        const { events } = simulate(scenario);
        const n = events.length;
        const head = events[n - 1]!.hash;
        const i = m.i % n;
        const log = [...events];
        let tail = false;
        switch (m.kind) {
          case 'change':
            log[i] = { ...events[i]!, occurredAt: events[i]!.occurredAt + 1 };
            break;
          case 'change-rehash': {
            const changed = { ...events[i]!, actor: `${events[i]!.actor}-forged` };
            log[i] = { ...changed, hash: eventHash(changed) };
            tail = i === n - 1;
            break;
          }
          case 'remove':
            log.splice(i, 1);
            tail = i === n - 1;
            break;
          case 'insert':
            log.splice(i, 0, events[m.j % n]!);
            break;
          case 'swap': {
            const j = m.j % n;
            if (i === j) return;
            log[i] = events[j]!;
            log[j] = events[i]!;
            break;
          }
        }
        const result = verifyChain(log);
        if (tail) {
          // Truncating or forging the head leaves a consistent chain; only the known head tells.
          if (result.ok) expect(result.head).not.toBe(head);
        } else {
          expect(result.ok).toBe(false);
          if (!result.ok) expect(result.index).toBeLessThanOrEqual(Math.max(i, m.kind === 'swap' ? m.j % n : i) + 1);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('(f) decide never throws, also on garbage, and answers with events or a coded rejection', () => {
    const codes = new Set<string>(Object.values(RejectionCode));
    const states = fc.sample(scenarioArb(), { numRuns: 10, seed: 3 }).map((s) => simulate(s));
    const check = (state: PlanState | undefined, command: unknown) => {
      const d = decide(state, command, { now: 123 });
      if (d.ok) {
        expect(Array.isArray(d.events)).toBe(true);
        let s = state;
        for (const e of d.events) s = evolve(s, e);
      } else {
        expect(codes.has(d.rejection.code)).toBe(true);
        expect(typeof d.rejection.message).toBe('string');
      }
    };
    fc.assert(
      fc.property(fc.nat(states.length), fc.anything({ withNullPrototype: true, withBigInt: true, withMap: true, withSet: true, withTypedArray: true }), (k, garbage) => {
        check(states[k]?.state, garbage);
      }),
      { numRuns: 200 },
    );
    // Valid commands with one field replaced by garbage.
    const commands = states.flatMap((s) => s.steps.map((st) => st.command));
    fc.assert(
      fc.property(fc.nat(commands.length - 1), fc.nat(states.length), fc.string(), fc.anything(), (c, k, key, value) => {
        const base = commands[c]! as unknown as Record<string, unknown>;
        const data = base['data'] as Record<string, unknown>;
        const keys = Object.keys(data);
        const target = keys[key.length % Math.max(1, keys.length)] ?? key;
        check(states[k]?.state, { ...base, data: { ...data, [target]: value } });
        check(states[k]?.state, { ...base, [key]: value });
      }),
      { numRuns: 200 },
    );
  });
});

/** Freezes a value and everything reachable from it, so any write to it throws (ES modules are strict). */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

describe('fold', () => {
  it('evolveAll equals the event-by-event fold, from scratch and from any state, and never mutates its input', () => {
    fc.assert(
      fc.property(scenarioArb(), fc.nat(), (scenario, cut) => {
        const { events, state } = simulate(scenario);
        const all = evolveAll(undefined, events) as PlanState;
        expect(all).toEqual(fold(events));
        expect(canonicalJson(all)).toBe(canonicalJson(state));
        // From the live state at k (sharing objects with other states) and from its snapshot, frozen.
        const k = cut % (events.length + 1);
        const atK = fold(events.slice(0, k));
        for (const start of [atK, atK === undefined ? undefined : (JSON.parse(canonicalJson(atK)) as PlanState)]) {
          const before = canonicalJson(start ?? null);
          const frozen = deepFreeze(start);
          const tail = events.slice(k);
          expect(evolveAll(frozen, tail)).toEqual(fold(tail, frozen));
          expect(canonicalJson(start ?? null)).toBe(before);
          // Re-sent events (already applied) and an empty tail change nothing.
          expect(evolveAll(frozen, [...events.slice(0, k), ...tail])).toEqual(evolveAll(frozen, tail));
          if (frozen !== undefined) expect(evolveAll(frozen, [])).toBe(frozen);
        }
      }),
      RUNS,
    );
  });

  it('evolve and decide never mutate a frozen state, and decide matches applying its events', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const { steps } = simulate(scenario);
        for (const step of steps) {
          const frozen = deepFreeze(step.before === undefined ? undefined : (JSON.parse(canonicalJson(step.before)) as PlanState));
          const decision = decide(frozen, step.command, { now: step.now });
          expect(decision).toEqual(step.decision);
          let s = frozen;
          for (const e of step.events) s = deepFreeze(evolve(s, e));
          expect(canonicalJson(s)).toBe(canonicalJson(evolveAll(step.before, step.events)));
        }
      }),
      { numRuns: 60 },
    );
  });

  it('appliedCommandIds holds exactly the client commands that caused events (or their rejection)', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const { steps, state } = simulate(scenario);
        const expected: Record<string, number> = {};
        for (const step of steps) {
          const first = step.events[0];
          if (first === undefined || isInternalCommandType(step.command.type) || Object.prototype.hasOwnProperty.call(expected, step.command.commandId)) continue;
          expected[step.command.commandId] = first.seq;
        }
        expect(state.appliedCommandIds).toEqual(expected);
      }),
      RUNS,
    );
  });

  it('the incremental digest is right after a state is extended twice (a fork)', () => {
    fc.assert(
      fc.property(scenarioArb(), (scenario) => {
        const { steps } = simulate(scenario);
        for (const step of steps) {
          if (step.before === undefined || !step.events.some((e) => e.type === 'ItemAdded')) continue;
          // Extend the same state three times: each result's digest equals one computed from scratch.
          for (let i = 0; i < 3; i++) {
            const s = evolveAll(step.before, step.events) as PlanState;
            expect(s.digest).toBe(planDigest(JSON.parse(canonicalJson(s)) as PlanState));
          }
          expect(step.before.digest).toBe(planDigest(JSON.parse(canonicalJson(step.before)) as PlanState));
        }
      }),
      { numRuns: 60 },
    );
  });

  it('reviewJson is canonicalJson(reviewView(item)) for any item', () => {
    const retry = fc.option(
      fc.record({ maxAttempts: fc.integer(), initialBackoffMs: fc.double(), backoffMultiplier: fc.double({ noNaN: true }), maxBackoffMs: fc.integer() }),
      { nil: null },
    );
    const spec = fc.record({ id: fc.string(), title: fc.string({ unit: 'binary' }), why: fc.string({ unit: 'grapheme' }), dependsOn: fc.array(fc.string()), tool: fc.string(), inputJson: fc.string(), retry });
    fc.assert(
      fc.property(spec, (item: ItemSpec) => {
        let expected: string | Error;
        try {
          expected = canonicalJson(reviewView(item));
        } catch (e) {
          expected = e as Error;
        }
        if (typeof expected === 'string') expect(reviewJson(item)).toBe(expected);
        else expect(() => reviewJson(item)).toThrow(expected.message);
      }),
      { numRuns: 300 },
    );
  });
});
