// Forks in the domain: a CreatePlan with `forkedFrom` and `inherited` decides PlanCreated naming the
// origin (hash-covered), the items, and ItemInherited for the items that finished before the fork point.
import avsc from 'avsc';
import { describe, expect, it } from 'vitest';
import { fromAvroEvent, planEventSchema, scanItems, stateDigest, toAvroEvent, verifyChain, type CreatePlan, type PlanState } from '../../src/plan/index.js';
import { command, fold, item } from './fixtures.js';
import { given } from './spec.js';

const HEAD = 'ab'.repeat(32);
const origin = { planId: 'source-1', seq: 9, chainHead: HEAD };
const a = item('a');
const b = item('b', ['a']);
const c = item('c', ['b']);
const fork = (over: Partial<CreatePlan> = {}) =>
  command('CreatePlan', { goal: 'ship it', mode: 'execute', labels: {}, parent: null, items: [a, b, c], forkedFrom: origin, inherited: [{ itemId: 'a', outputJson: '{"done":"a"}' }], ...over });

describe('CreatePlan as a fork', () => {
  it('names its origin in PlanCreated and completes the inherited items with their outputs; the rest is pending', () => {
    const { events, state } = given([])
      .when(fork())
      .then([
        { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: {}, parent: null, policy: null, forkedFrom: origin } },
        { type: 'ItemAdded', data: { item: a, followUpOf: null } },
        { type: 'ItemAdded', data: { item: b, followUpOf: null } },
        { type: 'ItemAdded', data: { item: c, followUpOf: null } },
        { type: 'ItemInherited', data: { itemId: 'a', outputJson: '{"done":"a"}' } },
      ]);
    expect(state!.forkedFrom).toEqual(origin);
    expect(state!.items['a']).toMatchObject({ status: 'completed', outputJson: '{"done":"a"}', attempts: [] });
    expect(scanItems(state!, 0).ready.map((r) => r.itemId)).toEqual(['b']);
    // The origin is hash-covered: another chainHead is another first event.
    expect(events[0]!.hash).not.toBe(given([]).when(fork({ forkedFrom: { ...origin, seq: 8 } })).then([
      { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: {}, parent: null, policy: null, forkedFrom: { ...origin, seq: 8 } } },
      { type: 'ItemAdded', data: { item: a, followUpOf: null } },
      { type: 'ItemAdded', data: { item: b, followUpOf: null } },
      { type: 'ItemAdded', data: { item: c, followUpOf: null } },
      { type: 'ItemInherited', data: { itemId: 'a', outputJson: '{"done":"a"}' } },
    ]).events[0]!.hash);
  });
  it('a propose-mode fork is a draft to review, with its inherited items completed', () => {
    const { state } = given([])
      .when(fork({ mode: 'propose' }))
      .then([
        { type: 'PlanCreated', data: { goal: 'ship it', mode: 'propose', labels: {}, parent: null, policy: null, forkedFrom: origin } },
        { type: 'ItemAdded', data: { item: a, followUpOf: null } },
        { type: 'ItemAdded', data: { item: b, followUpOf: null } },
        { type: 'ItemAdded', data: { item: c, followUpOf: null } },
        { type: 'ItemInherited', data: { itemId: 'a', outputJson: '{"done":"a"}' } },
      ]);
    expect(state!.status).toBe('draft');
    expect(scanItems(state!, 0).ready).toEqual([]);
  });
  it('rejects a bad origin, an inherited item that is not an item, twice, with a dependency that runs again, or everything inherited', () => {
    given([]).when(fork({ forkedFrom: { ...origin, planId: 'has space' } })).thenRejects('INVALID_FIELD', 'data.forkedFrom.planId');
    given([]).when(fork({ forkedFrom: { ...origin, planId: '__watermark' } })).thenRejects('INVALID_FIELD', 'data.forkedFrom.planId');
    given([]).when(fork({ forkedFrom: { ...origin, seq: 0 } })).thenRejects('INVALID_FIELD', 'data.forkedFrom.seq');
    given([]).when(fork({ forkedFrom: { ...origin, chainHead: 'nope' } })).thenRejects('INVALID_FIELD', 'data.forkedFrom.chainHead');
    given([]).when(fork({ parent: { planId: 'p', itemId: 'i' } })).thenRejects('INVALID_FIELD', 'data.parent');
    given([]).when(fork({ inherited: [{ itemId: 'zz', outputJson: null }] })).thenRejects('ITEM_NOT_FOUND', 'data.inherited[0].itemId');
    given([]).when(fork({ inherited: [{ itemId: 'a', outputJson: null }, { itemId: 'a', outputJson: null }] })).thenRejects('INVALID_FIELD', 'data.inherited[1].itemId');
    given([]).when(fork({ inherited: [{ itemId: 'b', outputJson: null }] })).thenRejects('INVALID_FIELD', 'data.inherited[0].itemId');
    given([]).when(fork({ inherited: [{ itemId: 'a', outputJson: '{ "x": 1 }' }] })).thenRejects('INVALID_FIELD', 'data.inherited[0].outputJson');
    given([])
      .when(fork({ inherited: ['a', 'b', 'c'].map((itemId) => ({ itemId, outputJson: null })) }))
      .thenRejects('INVALID_FIELD', 'data.inherited');
    given([]).when(fork({ forkedFrom: null })).thenRejects('INVALID_FIELD', 'data.inherited');
  });
  it('the forkedFrom label (how a source lists its forks) is a fork\'s own and names its source', () => {
    const labels = { forkedFrom: 'source-1', team: 'x' };
    const { state } = given([])
      .when(fork({ labels }))
      .then([
        { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels, parent: null, policy: null, forkedFrom: origin } },
        { type: 'ItemAdded', data: { item: a, followUpOf: null } },
        { type: 'ItemAdded', data: { item: b, followUpOf: null } },
        { type: 'ItemAdded', data: { item: c, followUpOf: null } },
        { type: 'ItemInherited', data: { itemId: 'a', outputJson: '{"done":"a"}' } },
      ]);
    expect(state!.labels).toEqual(labels);
    given([]).when(fork({ labels: { forkedFrom: 'another-plan' } })).thenRejects('INVALID_FIELD', 'data.labels.forkedFrom');
    given([]).when(fork({ labels: { forkedFrom: 'source-1' }, forkedFrom: null, inherited: [] })).thenRejects('INVALID_FIELD', 'data.labels.forkedFrom');
  });
  it('the fork events survive an Avro round trip with their hashes; a plan created without a fork carries no forkedFrom', () => {
    const type = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
    const { events } = given([]).when(fork()).then([
      { type: 'PlanCreated', data: { goal: 'ship it', mode: 'execute', labels: {}, parent: null, policy: null, forkedFrom: origin } },
      { type: 'ItemAdded', data: { item: a, followUpOf: null } },
      { type: 'ItemAdded', data: { item: b, followUpOf: null } },
      { type: 'ItemAdded', data: { item: c, followUpOf: null } },
      { type: 'ItemInherited', data: { itemId: 'a', outputJson: '{"done":"a"}' } },
    ]);
    const decoded = events.map((e) => fromAvroEvent(type.fromBuffer(type.toBuffer(toAvroEvent(e)))));
    expect(decoded).toEqual(events);
    expect(verifyChain(decoded).ok).toBe(true);
    expect(stateDigest(fold(decoded) as PlanState)).toBe(stateDigest(fold(events) as PlanState));
    const plain = given([]).when(command('CreatePlan', { goal: 'g', mode: 'execute', labels: {}, parent: null, items: [a] })).then([
      { type: 'PlanCreated', data: { goal: 'g', mode: 'execute', labels: {}, parent: null, policy: null } },
      { type: 'ItemAdded', data: { item: a, followUpOf: null } },
    ]);
    const round = fromAvroEvent(type.fromBuffer(type.toBuffer(toAvroEvent(plain.events[0]!))));
    expect(Object.keys(round.data)).not.toContain('forkedFrom');
    expect(round.hash).toBe(plain.events[0]!.hash);
  });
});
