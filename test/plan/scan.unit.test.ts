import { describe, expect, it } from 'vitest';
import { readyItem, scanItems } from '../../src/plan/index.js';
import { cmd, item, run } from './fixtures.js';

const chain = (n: number) => Array.from({ length: n }, (_, i) => item(`i${i}`, i ? [`i${i - 1}`] : []));

describe('scanItems with a window, and readyItem', () => {
  it('looks at no more than maxScan items from the cursor', () => {
    const { state } = run([cmd.create(chain(1000))]);
    const s = scanItems(state!, 1000, { from: 0, limit: 16, maxScan: 10 });
    expect(s.ready.map((r) => r.itemId)).toEqual(['i0']);
    expect(s.complete).toBe(false);
    expect(s.firstOpen).toBe(0);
    const whole = scanItems(state!, 1000, { from: 0, limit: 16 });
    expect(whole.ready.map((r) => r.itemId)).toEqual(['i0']);
    expect(whole.complete).toBe(true);
  });

  it('moves the cursor past a settled window, and tells one item as the scan would', () => {
    const steps = [0, 1, 2, 3, 4].flatMap((i) => [cmd.intent(`i${i}`), cmd.commit(`i${i}`, 1), cmd.settle(`i${i}`)]);
    const { state } = run([cmd.create(chain(50)), ...steps]);
    const window = scanItems(state!, 1000, { from: 0, limit: 16, maxScan: 3 });
    expect(window.ready).toEqual([]);
    expect(window.firstOpen).toBe(3); // settled up to where it stopped
    const next = scanItems(state!, 1000, { from: 3, limit: 16, maxScan: 3 });
    expect(next.ready.map((r) => r.itemId)).toEqual(['i5']);
    expect(next.firstOpen).toBe(5);
    const one = readyItem(state!, 'i5', 1000);
    expect(one).toEqual(next.ready[0]);
    expect(readyItem(state!, 'i7', 1000)).toBeNull(); // its dependency is not completed
    expect(readyItem(state!, 'i2', 1000)).toBeNull(); // completed
    expect(readyItem(state!, 'nope', 1000)).toBeNull();
  });
});
