import { describe, expect, it } from 'vitest';
import { MAX_EVIDENCE_PER_ATTEMPT, planDigest, stateDigest } from '../../src/plan/index.js';
import { cmd, command, item, run } from './fixtures.js';
import { given } from './spec.js';

const checkpoint = (itemId: string, attempt: number, stateJson: string) => command('RecordCheckpoint', { itemId, attempt, stateJson });
const evidence = (itemId: string, attempt: number, name: string, valueJson: string) => command('RecordEvidence', { itemId, attempt, name, valueJson });

describe('checkpoints and evidence (decide)', () => {
  const base = run([cmd.create([item('a')]), cmd.intent('a')]);
  const running = base.events;

  it('given a running attempt, when it checkpoints, then ItemCheckpointed numbers the checkpoints per item', () => {
    const first = given(running).when(checkpoint('a', 1, '{"page":1}')).then([{ type: 'ItemCheckpointed', data: { itemId: 'a', attempt: 1, checkpoint: 1, stateJson: '{"page":1}' } }]);
    expect(first.state?.items['a']?.checkpoint).toEqual({ attempt: 1, checkpoint: 1, stateJson: '{"page":1}', at: 5000, seq: 4 });
    given([...running, ...first.events]).when(checkpoint('a', 1, '{"page":2}')).then([{ type: 'ItemCheckpointed', data: { itemId: 'a', attempt: 1, checkpoint: 2, stateJson: '{"page":2}' } }]);
  });

  it('refuses a checkpoint of an attempt that is not running, not current, or not canonical JSON', () => {
    given(running).when(checkpoint('a', 2, '{}')).thenRejects('INVALID_STATE', 'data.attempt');
    given(running).when(checkpoint('zz', 1, '{}')).thenRejects('ITEM_NOT_FOUND', 'data.itemId');
    given(running).when(checkpoint('a', 1, '{ "page": 1 }')).thenRejects('INVALID_FIELD', 'data.stateJson');
    const done = run([cmd.commit('a', 1), cmd.settle('a')], 1000, base.state).events;
    given([...running, ...done]).when(checkpoint('a', 1, '{}')).thenRejects('PLAN_FINISHED');
  });

  it('given a running attempt, when it records evidence, then EvidenceRecorded; an empty name is refused', () => {
    const r = given(running).when(evidence('a', 1, 'source', '"https://example.test/a"')).then([{ type: 'EvidenceRecorded', data: { itemId: 'a', attempt: 1, name: 'source', valueJson: '"https://example.test/a"' } }]);
    expect(r.state?.items['a']?.evidence).toEqual([{ attempt: 1, name: 'source', valueJson: '"https://example.test/a"', at: 5000, seq: 4 }]);
    given(running).when(evidence('a', 1, ' ', '1')).thenRejects('INVALID_FIELD', 'data.name');
  });

  it(`caps evidence at ${MAX_EVIDENCE_PER_ATTEMPT} records per attempt`, () => {
    const many = run(Array.from({ length: MAX_EVIDENCE_PER_ATTEMPT }, (_, i) => evidence('a', 1, `e${i}`, String(i))), 1000, base.state).events;
    given([...running, ...many]).when(evidence('a', 1, 'one-more', '1')).thenRejects('PAYLOAD_TOO_LARGE', 'data.name');
  });

  it('an item that never checkpointed has the state and digests it always had (no new fields)', () => {
    const { state } = run([cmd.create([item('a')]), cmd.intent('a'), cmd.commit('a', 1), cmd.settle('a')]);
    expect(Object.keys(state!.items['a']!)).not.toContain('checkpoint');
    expect(Object.keys(state!.items['a']!)).not.toContain('evidence');
    expect(planDigest(state!)).toBe(state!.digest);
    expect(stateDigest(state!)).toMatch(/^[0-9a-f]{64}$/);
  });
});
