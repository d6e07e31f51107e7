import { describe, expect, it } from 'vitest';
import { MIN_THREAD_POOL, threadPoolAdvice } from '../../src/kafka/native.js';

describe('the thread pool advice (said once when the Kafka client loads)', () => {
  it('speaks when the pool is libuv default or small, naming the value and the fix', () => {
    expect(threadPoolAdvice({})).toBe(
      "UV_THREADPOOL_SIZE is unset (4): the Kafka client's readers each hold one of libuv's threads while they wait, so reads queue behind them; start node with UV_THREADPOOL_SIZE=64 (the plan-ledger CLI does)",
    );
    expect(threadPoolAdvice({ UV_THREADPOOL_SIZE: '8' })).toMatch(/^UV_THREADPOOL_SIZE is 8: .*UV_THREADPOOL_SIZE=64/);
    expect(threadPoolAdvice({ UV_THREADPOOL_SIZE: 'lots' })).toMatch(/^UV_THREADPOOL_SIZE is lots: /);
  });

  it('is silent from the minimum on', () => {
    expect(MIN_THREAD_POOL).toBe(16);
    expect(threadPoolAdvice({ UV_THREADPOOL_SIZE: '16' })).toBeUndefined();
    expect(threadPoolAdvice({ UV_THREADPOOL_SIZE: '64' })).toBeUndefined();
  });
});
