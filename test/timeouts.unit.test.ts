import { describe, expect, it } from 'vitest';
import { settledWithin } from '../src/timeouts.js';

describe('settledWithin', () => {
  it('gives the value of a promise that settles in time', async () => {
    expect(await settledWithin(new Promise<string>((r) => setTimeout(() => r('done'), 5)), 1_000, 'late')).toBe('done');
  });

  it('gives the fallback for a promise that never settles, after the bound', async () => {
    const t0 = Date.now();
    expect(await settledWithin(new Promise<string>(() => {}), 50, 'late')).toBe('late');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(45);
  });
});
