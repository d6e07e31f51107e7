// The one backoff of the plumbing (src/backoff.ts).
import { describe, expect, it } from 'vitest';
import { backoffMs } from '../src/backoff.js';

describe('backoffMs', () => {
  it('doubles from the first wait and stops at the cap', () => {
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, 500, 10_000))).toEqual([500, 1000, 2000, 4000, 8000, 10_000]);
  });

  it('an attempt of 0 or less waits the first wait; a huge attempt stays finite at the cap', () => {
    expect([backoffMs(0, 50, 1000), backoffMs(-3, 50, 1000), backoffMs(1e9, 50, 1000), backoffMs(Infinity, 50, 1000)]).toEqual([50, 50, 1000, 1000]);
  });
});
