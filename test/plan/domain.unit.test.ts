import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  dependencyOutputs,
  eventHash,
  evolve,
  GENESIS_HASH,
  idempotencyKey,
  isCanonicalJsonText,
  isPlanError,
  itemId,
  nextWakeUp,
  pendingRecoveries,
  planDigest,
  planId,
  readyItems,
  recoveryAction,
  reviewView,
  sha256Hex,
  stateDigest,
  verifyChain,
  type PlanState,
} from '../../src/plan/index.js';
import { cmd, fold, item, PLAN, run } from './fixtures.js';

describe('canonicalJson', () => {
  it('sorts keys, keeps array order, no whitespace', () => {
    expect(canonicalJson({ b: [3, 1, { z: null, a: 'x' }], a: true, c: -0, d: 1.5 })).toBe('{"a":true,"b":[3,1,{"a":"x","z":null}],"c":0,"d":1.5}');
    expect(canonicalJson(Object.assign(Object.create(null) as object, { y: 1, x: 2 }))).toBe('{"x":2,"y":1}');
  });
  it('throws NOT_CANONICAL for undefined, NaN, Infinity, functions, bigint, class instances and cycles', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    for (const bad of [undefined, { a: undefined }, [undefined], Number.NaN, Infinity, () => 1, 1n, new Date(0), new Map(), cyclic]) {
      let caught: unknown;
      try {
        canonicalJson(bad);
      } catch (e) {
        caught = e;
      }
      expect(isPlanError(caught, 'NOT_CANONICAL')).toBe(true);
    }
  });
  it('names the path of the refused value', () => {
    const cyclic: Record<string, unknown> = { a: [] };
    (cyclic['a'] as unknown[]).push({ back: cyclic });
    const cases: Array<[unknown, string]> = [
      [{ a: [1, { b: undefined }] }, '$.a[1].b'],
      [[0, [Number.NaN]], '$[1][0]'],
      [{ d: new Date(0) }, '$.d'],
      [cyclic, '$.a[0].back'],
      [undefined, '$'],
    ];
    for (const [value, path] of cases) {
      let caught: unknown;
      try {
        canonicalJson(value);
      } catch (e) {
        caught = e;
      }
      expect(isPlanError(caught, 'NOT_CANONICAL')).toBe(true);
      expect((caught as { field: string }).field).toBe(path);
      expect((caught as Error).message.startsWith(`${path}: `)).toBe(true);
    }
    // A refused value does not poison the next call.
    expect(canonicalJson({ z: [{}], a: 'x' })).toBe('{"a":"x","z":[{}]}');
  });
  it('recognises canonical JSON text', () => {
    expect(isCanonicalJsonText('{"a":1,"b":[true]}')).toBe(true);
    expect(isCanonicalJsonText('{"b":1,"a":2}')).toBe(false);
    expect(isCanonicalJsonText('{ "a": 1 }')).toBe(false);
    expect(isCanonicalJsonText('1.0')).toBe(false);
    expect(isCanonicalJsonText('12345678901234567890')).toBe(false);
    expect(isCanonicalJsonText('nope')).toBe(false);
  });
});

describe('ids', () => {
  it('brands valid ids and refuses others with INVALID_ID', () => {
    expect(planId('p-1.a:b_c')).toBe('p-1.a:b_c');
    expect(() => itemId('with space')).toThrow(/invalid item id/);
    expect(() => planId('x'.repeat(129))).toThrow(/invalid plan id/);
    expect(idempotencyKey('p', 'i', 3)).toBe('p/i/3');
  });
});

describe('digest', () => {
  it('is sha256 of the canonical review view, incremental or not', () => {
    const { state } = run([cmd.create([item('a'), item('b', ['a'])])]);
    const s = state as PlanState;
    const expected = sha256Hex(canonicalJson({ goal: s.goal, mode: s.mode, items: s.itemOrder.map((id) => reviewView(s.items[id]!)) }));
    expect(s.digest).toBe(expected);
    expect(planDigest(JSON.parse(JSON.stringify(s)) as PlanState)).toBe(expected);
  });
  it('ignores status and attempts but not specs', () => {
    const created = run([cmd.create([item('a')])]);
    const started = run([cmd.intent('a')], 1000, created.state).state as PlanState;
    expect(started.digest).toBe(created.state?.digest);
    const other = run([cmd.create([item('a', [], { title: 'other' })])]).state as PlanState;
    expect(other.digest).not.toBe(started.digest);
  });
  it('stateDigest is sha256 of the canonical state', () => {
    const s = run([cmd.create([item('a')])]).state as PlanState;
    expect(stateDigest(s)).toBe(sha256Hex(canonicalJson(s)));
    expect(stateDigest(s)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe('hash chain', () => {
  it('hashes prevHash and the canonical event without its hash (and without added payload fields that are null)', () => {
    const { events } = run([cmd.create([item('a')]), cmd.intent('a')]);
    for (const e of events) {
      const { hash, ...rest } = e;
      // PlanCreated.policy was added after the first schema: null, it is not part of the canonical content.
      const content = e.type === 'PlanCreated' ? { ...rest, data: { goal: e.data.goal, mode: e.data.mode, labels: e.data.labels, parent: e.data.parent } } : rest;
      expect(hash).toBe(sha256Hex(`${e.prevHash}\n${canonicalJson(content)}`));
      expect(eventHash(e)).toBe(hash);
      expect(eventHash(Object.assign(Object.create({ inherited: 1 }) as object, e) as typeof e)).toBe(hash); // not a plain object
    }
  });
  it('starts at genesis and names the first broken event', () => {
    const { events } = run([cmd.create([item('a'), item('b')]), cmd.intent('a')]);
    expect(events[0]?.prevHash).toBe(GENESIS_HASH);
    expect(verifyChain(events)).toEqual({ ok: true, head: events[3]!.hash, seq: 4 });
    const edited = events.map((e, i) => (i === 2 ? { ...e, actor: 'mallory' } : e));
    expect(verifyChain(edited)).toEqual({ ok: false, index: 2, seq: 3, eventId: `${PLAN}:3`, reason: 'hash_mismatch' });
    expect(verifyChain([events[0]!, events[2]!])).toMatchObject({ ok: false, index: 1, reason: 'seq_gap' });
    expect(verifyChain([events[0]!, { ...events[1]!, planId: 'other' }])).toMatchObject({ ok: false, index: 1, reason: 'plan_mismatch' });
    expect(verifyChain([events[0]!, { ...events[1]!, prevHash: GENESIS_HASH }])).toMatchObject({ ok: false, index: 1, reason: 'prev_mismatch' });
    expect(verifyChain(events.slice(2), { seq: 2, hash: events[1]!.hash })).toMatchObject({ ok: true, seq: 4 });
  });
});

describe('evolve', () => {
  it('never mutates its input', () => {
    const { events } = run([cmd.create([item('a'), item('b', ['a'])]), cmd.intent('a'), cmd.commit('a', 1), cmd.settle('a')]);
    let s: PlanState | undefined;
    for (const e of events) {
      const before = s === undefined ? undefined : canonicalJson(s);
      const next = evolve(s, e);
      if (s !== undefined) expect(canonicalJson(s)).toBe(before);
      expect(next).not.toBe(s);
      s = next;
    }
  });
  it('refuses gaps, forks and other plans with INVALID_EVENT', () => {
    const { events } = run([cmd.create([item('a')]), cmd.intent('a')]);
    const s1 = fold(events.slice(0, 1));
    const expectInvalid = (f: () => unknown) => {
      try {
        f();
        expect.unreachable();
      } catch (e) {
        expect(isPlanError(e, 'INVALID_EVENT')).toBe(true);
      }
    };
    expectInvalid(() => evolve(s1, events[2]!));
    expectInvalid(() => evolve(fold(events.slice(0, 2)), { ...events[1]!, hash: 'x' }));
    expectInvalid(() => evolve(s1, { ...events[1]!, planId: 'other' }));
    expectInvalid(() => evolve(undefined, events[1]!));
  });
});

describe('execution', () => {
  const a = item('a');
  const b = item('b', ['a']);
  const c = item('c');
  it('readyItems lists pending items whose dependencies completed, in add order', () => {
    const s = run([cmd.create([a, b, c])]).state as PlanState;
    expect(readyItems(s, 0).map((v) => [v.itemId, v.nextAttempt, v.idempotencyKey])).toEqual([
      ['a', 1, `${PLAN}/a/1`],
      ['c', 1, `${PLAN}/c/1`],
    ]);
    const done = run([cmd.intent('a'), cmd.commit('a', 1), cmd.settle('a')], 1000, s).state as PlanState;
    const ready = readyItems(done, 0);
    expect(ready.map((v) => v.itemId)).toEqual(['b', 'c']);
    expect(ready[0]?.dependencies).toEqual({ a: '{"done":"a"}' });
    expect(dependencyOutputs(done, 'b')).toEqual({ a: '{"done":"a"}' });
  });
  it('nothing is ready before approval; retries wait for retryAt', () => {
    const draft = run([cmd.create([a], 'propose')]).state as PlanState;
    expect(readyItems(draft, 0)).toEqual([]);
    const retrying = run([cmd.create([a]), cmd.intent('a'), cmd.commit('a', 1, 'failed_retryable'), cmd.settle('a')], 1000).state as PlanState;
    expect(readyItems(retrying, 1999)).toEqual([]);
    expect(nextWakeUp(retrying, 1999)).toBe(2000);
    expect(readyItems(retrying, 2000).map((v) => v.nextAttempt)).toEqual([2]);
  });
  it('recoveryAction continues from the next incomplete step', () => {
    const base = run([cmd.create([a, b, c]), cmd.intent('a'), cmd.intent('c'), cmd.delegate('c', 1, 'child')]);
    const s = base.state as PlanState;
    expect(recoveryAction(s, 'a')).toEqual({ kind: 'reinvoke', attempt: 1, idempotencyKey: `${PLAN}/a/1` });
    expect(recoveryAction(s, 'b')).toBeNull();
    expect(recoveryAction(s, 'c')).toEqual({ kind: 'await_child', attempt: 1, childPlanId: 'child' });
    const committed = run([cmd.commit('a', 1)], 1000, s).state as PlanState;
    expect(recoveryAction(committed, 'a')).toEqual({ kind: 'settle', attempt: 1 });
    expect(pendingRecoveries(committed).map((r) => [r.itemId, r.action.kind])).toEqual([
      ['a', 'settle'],
      ['c', 'await_child'],
    ]);
  });
});
