import { describe, expect, it } from 'vitest';
import { eventsBetweenSnapshots, SnapshotPolicy } from '../../src/projection/snapshot-policy.js';

describe('snapshots of large plans', () => {
  it('a plan under 1,000 items is due at every boundary, as before', () => {
    const policy = new SnapshotPolicy();
    expect(policy.applied('small', 1, 'PlanCreated', 10)).toBe(false);
    expect(policy.applied('small', 2, 'ItemCompleted', 10)).toBe(true);
    expect(policy.takeDue()).toEqual(['small']);
    expect(eventsBetweenSnapshots(999)).toBe(0);
  });

  it('a plan of 20,000 items waits 5,000 events after its last snapshot; the watermark lists it as deferred meanwhile', () => {
    const policy = new SnapshotPolicy();
    expect(eventsBetweenSnapshots(20_000)).toBe(5_000);
    policy.applied('big', 1, 'PlanCreated', 0);
    let seq = 1;
    for (let i = 0; i < 20_000; i++) policy.applied('big', ++seq, 'ItemAdded', i + 1);
    // 20,001 events since none: the ItemAdded boundaries made it due long ago (the wait grew with the plan).
    expect(policy.takeDue()).toEqual(['big']);
    policy.written('big', seq);
    expect(policy.dirty()).toEqual([]);
    expect(policy.deferred()).toEqual([]);

    let became = 0;
    for (let i = 0; i < 4_999; i++) if (policy.applied('big', ++seq, 'ItemCompleted', 20_000)) became++;
    expect(became).toBe(0);
    expect(policy.dirty()).toEqual([]);
    expect(policy.deferred()).toEqual(['big']);
    expect(policy.applied('big', ++seq, 'ItemCompleted', 20_000)).toBe(true); // the 5,000th
    expect(policy.takeDue()).toEqual(['big']);
    expect(policy.dirty()).toEqual(['big']);
    expect(policy.deferred()).toEqual([]);
  });

  it('the end of a large plan is due at once (its archive record), whatever came since the last snapshot', () => {
    const policy = new SnapshotPolicy();
    policy.applied('big', 1, 'PlanCreated', 5_000);
    policy.written('big', 1);
    expect(policy.applied('big', 2, 'ItemCompleted', 5_000)).toBe(false);
    expect(policy.applied('big', 3, 'PlanCancelled', 5_000)).toBe(true);
  });
});
