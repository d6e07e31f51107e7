// Rejections a plan keeps are bounded: the state holds the latest MAX_REJECTIONS_KEPT and, past the bound,
// the total; every CommandRejected stays in the log. The fold is deterministic whichever way it runs.
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  decide,
  evolve,
  evolveAll,
  evolveInPlace,
  MAX_REJECTIONS_KEPT,
  rejectionEvent,
  rejectionTotal,
  stateDigest,
  type AnyCommand,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';
import { cmd, command, item } from './fixtures.js';

/** A plan created, then `n` RetryItem commands for an item it does not have: each one a CommandRejected. */
function historyWithRejections(n: number): PlanEvent[] {
  const commands: AnyCommand[] = [cmd.create([item('a')], 'propose', { commandId: 'create-1', issuedAt: 1 })];
  for (let i = 0; i < n; i++) commands.push(command('RetryItem', { itemId: `missing-${i}` }, { commandId: `retry-${i}`, issuedAt: 10 + i }));
  let state: PlanState | undefined;
  const events: PlanEvent[] = [];
  for (const [i, c] of commands.entries()) {
    const ctx = { now: 1000 + i };
    const d = decide(state, c, ctx);
    const out = d.ok ? d.events : [rejectionEvent(state, c, d.rejection, ctx)];
    for (const e of out) {
      state = evolve(state, e);
      events.push(e);
    }
  }
  return events;
}

/** The same events applied in batches of `size` to one state held in place (the executor's way). */
function inPlace(events: readonly PlanEvent[], size: number): PlanState | undefined {
  let s: PlanState | undefined;
  for (let i = 0; i < events.length; i += size) s = evolveInPlace(s, events.slice(i, i + size));
  return s;
}

describe('rejections kept per plan', () => {
  it('keeps the latest rejections and the total once past the bound; every fold agrees', () => {
    const n = 250;
    const events = historyWithRejections(n);
    const rejected = events.filter((e) => e.type === 'CommandRejected');
    expect(rejected).toHaveLength(n); // the log keeps them all

    const oneByOne = events.reduce<PlanState | undefined>((s, e) => evolve(s, e), undefined)!;
    const all = evolveAll(undefined, events)!;
    const held = inPlace(events, 7)!;
    const held1 = inPlace(events, 1)!;
    for (const s of [all, held, held1]) expect(canonicalJson(s)).toBe(canonicalJson(oneByOne));

    expect(oneByOne.rejections).toHaveLength(MAX_REJECTIONS_KEPT);
    expect(oneByOne.rejectionCount).toBe(n);
    expect(rejectionTotal(oneByOne)).toBe(n);
    // The window is the latest ones, oldest first, by seq.
    expect(oneByOne.rejections.map((r) => r.seq)).toEqual(rejected.slice(n - MAX_REJECTIONS_KEPT).map((e) => e.seq));
    expect(oneByOne.rejections[0]).toMatchObject({ commandId: `retry-${n - MAX_REJECTIONS_KEPT}`, commandType: 'RetryItem', code: 'ITEM_NOT_FOUND' });
    expect(oneByOne.rejections.at(-1)).toMatchObject({ commandId: `retry-${n - 1}` });
    expect(oneByOne.seq).toBe(events.length);
    // Pinned: a change to the bound or to how the window moves changes this digest.
    expect(stateDigest(oneByOne)).toBe(PINNED_250);
  });

  it('a plan at the bound has no total field: its state is what it was before the bound existed', () => {
    const at = evolveAll(undefined, historyWithRejections(MAX_REJECTIONS_KEPT))!;
    expect(at.rejections).toHaveLength(MAX_REJECTIONS_KEPT);
    expect('rejectionCount' in at).toBe(false);
    expect(rejectionTotal(at)).toBe(MAX_REJECTIONS_KEPT);
    expect(canonicalJson(at)).not.toContain('rejectionCount');

    const past = evolveAll(undefined, historyWithRejections(MAX_REJECTIONS_KEPT + 1))!;
    expect(past.rejections).toHaveLength(MAX_REJECTIONS_KEPT);
    expect(past.rejectionCount).toBe(MAX_REJECTIONS_KEPT + 1);
    expect(past.rejections[0]?.commandId).toBe('retry-1');
  });

  it('a fold from a snapshot (state through JSON) past the bound gives the same state as from scratch', () => {
    const events = historyWithRejections(180);
    for (const cut of [50, 101, 102, 150]) {
      const snap = JSON.parse(canonicalJson(evolveAll(undefined, events.slice(0, cut))!)) as PlanState;
      const fromSnap = evolveAll(snap, events.slice(cut))!;
      const fromSnapInPlace = evolveInPlace(JSON.parse(canonicalJson(snap)) as PlanState, events.slice(cut))!;
      const scratch = evolveAll(undefined, events)!;
      expect(stateDigest(fromSnap)).toBe(stateDigest(scratch));
      expect(stateDigest(fromSnapInPlace)).toBe(stateDigest(scratch));
      expect(scratch.rejectionCount).toBe(180);
    }
  });

  it('the pure folds leave their input untouched when the window moves', () => {
    const events = historyWithRejections(MAX_REJECTIONS_KEPT + 5);
    const before = evolveAll(undefined, events.slice(0, -3))!;
    const frozen = canonicalJson(before);
    const after = evolveAll(before, events.slice(-3))!;
    expect(canonicalJson(before)).toBe(frozen);
    expect(after.rejectionCount).toBe(MAX_REJECTIONS_KEPT + 5);
    expect(before.rejectionCount).toBe(MAX_REJECTIONS_KEPT + 2);
  });
});

const PINNED_250 = '452152cfe855702eda041c35f5a770d9832fefc1e7154070797d662b23ee0377';
