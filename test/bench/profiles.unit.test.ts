import { describe, expect, it } from 'vitest';
import { summarizeJfrText } from '../../bench/lib/profiles.js';

/** One execution sample as `jfr print --events jdk.ExecutionSample` prints it. */
function sample(thread: string, frames: string[]): string {
  return [
    'jdk.ExecutionSample {',
    '  startTime = 11:56:24.927',
    `  sampledThread = "${thread}" (javaThreadId = 27)`,
    '  state = "STATE_RUNNABLE"',
    '  stackTrace = [',
    ...frames.map((f) => `    ${f}(Object) line: 12`),
    '  ]',
    '}',
    '',
  ].join('\n');
}

describe('summarizeJfrText', () => {
  it('counts samples by thread (digits folded) and by the first frame outside the JDK', () => {
    const text = [
      sample('data-plane-kafka-request-handler-3', ['java.util.concurrent.ConcurrentSkipListMap.cpr', 'com.yammer.metrics.stats.ExponentiallyDecayingSample.update', 'kafka.network.RequestChannel.updateRequestMetrics']),
      sample('data-plane-kafka-request-handler-5', ['java.util.concurrent.ConcurrentSkipListMap.doPut', 'com.yammer.metrics.stats.ExponentiallyDecayingSample.update']),
      sample('kafka-log-cleaner-thread-0', ['scala.collection.IterableOnceOps.foreach', 'org.apache.kafka.storage.internals.log.LogCleanerManager.grabFilthiestCompactedLog']),
      sample('Attach Listener', ['java.util.concurrent.ConcurrentHashMap.clear']),
      'jdk.ExecutionSample {\n  stackTrace = [\n  ]\n}\n', // no frames: not a sample
    ].join('\n');
    const s = summarizeJfrText(text, 2);
    expect(s.samples).toBe(4);
    expect(s.threads).toEqual([
      { thread: 'data-plane-kafka-request-handler-N', samples: 2, pct: 50 },
      { thread: 'kafka-log-cleaner-thread-N', samples: 1, pct: 25 },
    ]);
    expect(s.top).toEqual([
      { frame: 'com.yammer.metrics.stats.ExponentiallyDecayingSample.update', samples: 2, pct: 50 },
      { frame: 'org.apache.kafka.storage.internals.log.LogCleanerManager.grabFilthiestCompactedLog', samples: 1, pct: 25 },
    ]);
    expect(summarizeJfrText('').samples).toBe(0);
  });
});
