import { describe, expect, it } from 'vitest';
import { canonicalJson, decide, eventHash, planDigest, sha256Hex, type PlanEvent } from '../../src/plan/index.js';
import { redactEvents, redactJson, redactPlan, SECRET_MARK } from '../../src/secrets/redact.js';
import { cmd, item, PLAN, run } from './fixtures.js';

const CARD = '{"amount":1299,"card":{"cvc":"123","number":"4111111111111111"},"token":"tok_live_42"}';

describe('secret paths on an item', () => {
  it('are recorded on ItemAdded and kept on the item; an item without any has no secret field at all', () => {
    const { events, state } = run([cmd.create([item('pay', [], { inputJson: CARD, secret: ['card.number', 'token'] }), item('plain')])]);
    const added = events.filter((e): e is Extract<PlanEvent, { type: 'ItemAdded' }> => e.type === 'ItemAdded');
    expect(added.map((e) => e.data.item.secret)).toEqual([['card.number', 'token'], undefined]);
    expect(state!.items['pay']!.secret).toEqual(['card.number', 'token']);
    expect(Object.prototype.hasOwnProperty.call(state!.items['plain'], 'secret')).toBe(false);
    // The tool's input is stored whole: redaction is for display.
    expect(state!.items['pay']!.inputJson).toBe(CARD);
  });

  it('an ItemAdded whose item.secret is null hashes as one without the field (old chains verify); a list is hashed', () => {
    const { events } = run([cmd.create([item('a')])]);
    const e = events[1] as Extract<PlanEvent, { type: 'ItemAdded' }>;
    const withNull = { ...e, data: { ...e.data, item: { ...e.data.item, secret: null } } };
    expect(eventHash(withNull)).toBe(e.hash);
    // The hash without the field, written out: prevHash + canonical event minus hash.
    const { hash: _h, ...rest } = e;
    expect(e.hash).toBe(sha256Hex(`${e.prevHash}\n${canonicalJson(rest)}`));
    const withList = { ...e, data: { ...e.data, item: { ...e.data.item, secret: ['x'] } } };
    expect(eventHash(withList)).not.toBe(e.hash);
  });

  it('are part of what is approved: the digest changes with them, and is unchanged without them', () => {
    const plain = run([cmd.create([item('a')])]).state!;
    const marked = run([cmd.create([item('a', [], { secret: ['token'] })])]).state!;
    const nulled = run([cmd.create([item('a', [], { secret: null })])]).state!;
    expect(marked.digest).not.toBe(plain.digest);
    expect(nulled.digest).toBe(plain.digest);
    expect(planDigest(plain)).toBe(plain.digest);
    expect(planDigest(marked)).toBe(marked.digest);
  });

  it('refuses bad paths with INVALID_FIELD naming the path', () => {
    const cases: Array<[string[], string]> = [
      [[''], 'data.items[0].secret[0]'],
      [['a..b'], 'data.items[0].secret[0]'],
      [['a.'], 'data.items[0].secret[0]'],
      [['x'.repeat(257)], 'data.items[0].secret[0]'],
      [['a', 'b', 'a'], 'data.items[0].secret[2]'],
      [Array.from({ length: 65 }, (_, i) => `f${i}`), 'data.items[0].secret'],
    ];
    for (const [secret, field] of cases) {
      const d = decide(undefined, cmd.create([item('a', [], { secret })]), { now: 1 });
      expect(d.ok ? 'accepted' : d.rejection).toMatchObject({ code: 'INVALID_FIELD', field });
    }
    const bad = decide(undefined, { ...cmd.create([]), data: { goal: 'g', mode: 'execute', labels: {}, parent: null, items: [{ ...item('a'), secret: [1] }] } } as never, { now: 1 });
    expect(bad.ok ? 'accepted' : bad.rejection).toMatchObject({ field: 'data.items[0].secret[0]' });
  });
});

describe('redaction', () => {
  it('replaces each path by "[secret]", in arrays by index or for every element, and leaves the rest', () => {
    expect(redactJson(CARD, ['card.number', 'token'])).toBe('{"amount":1299,"card":{"cvc":"123","number":"[secret]"},"token":"[secret]"}');
    expect(redactJson('{"cards":[{"n":"1"},{"n":"2"}]}', ['cards.n'])).toBe('{"cards":[{"n":"[secret]"},{"n":"[secret]"}]}');
    expect(redactJson('{"cards":[{"n":"1"},{"n":"2"}]}', ['cards.1.n'])).toBe('{"cards":[{"n":"1"},{"n":"[secret]"}]}');
    expect(redactJson('{"card":{"number":{"a":1}}}', ['card.number'])).toBe('{"card":{"number":"[secret]"}}');
    expect(redactJson('["a","b"]', ['0'])).toBe('["[secret]","b"]');
    expect(redactJson(CARD, ['nope.deeper', 'amount.x'])).toBe(CARD);
    expect(redactJson('"just a string"', ['x'])).toBe('"just a string"');
    expect(redactJson(null, ['x'])).toBeNull();
    const ref = '{"$blob":{"at":1,"bytes":2,"chunks":1,"sha256":"' + 'a'.repeat(64) + '"}}';
    expect(redactJson(ref, ['$blob'])).toBe(ref);
    expect(redactJson('{"__proto__":{"x":1}}', ['__proto__.x'])).toBe('{"__proto__":{"x":"[secret]"}}');
  });

  it('covers the input, every output, checkpoint and evidence of a plan, and the events shown', () => {
    const { events, state } = run([
      cmd.create([item('pay', [], { inputJson: CARD, secret: ['card.number', 'token'] }), item('plain', [], { inputJson: '{"token":"visible"}' })]),
      cmd.intent('pay'),
      cmd.commit('pay', 1, 'succeeded', { outputJson: '{"receipt":"r-1","token":"tok_out_9"}' }),
      cmd.settle('pay'),
    ]);
    const shown = redactPlan(state!);
    const text = canonicalJson(shown);
    expect(text).not.toContain('4111111111111111');
    expect(text).not.toContain('tok_live_42');
    expect(text).not.toContain('tok_out_9');
    expect(text).toContain('visible'); // another item's field of the same name is not secret
    expect(shown.items['pay']!.outputJson).toBe('{"receipt":"r-1","token":"[secret]"}');
    expect(shown.items['pay']!.attempts[0]!.outputJson).toBe('{"receipt":"r-1","token":"[secret]"}');
    expect(state!.items['pay']!.outputJson).toBe('{"receipt":"r-1","token":"tok_out_9"}'); // the state is not touched
    const shownEvents = canonicalJson(redactEvents(events, state));
    expect(shownEvents).not.toContain('4111111111111111');
    expect(shownEvents).not.toContain('tok_out_9');
    expect(shownEvents.split(SECRET_MARK).length - 1).toBe(3);
    expect(events.every((e) => e.planId === PLAN)).toBe(true);
  });
});
