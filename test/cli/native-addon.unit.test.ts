import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addonStep, ensureKafkaClient } from '../../cli/native-addon.js';
import { LedgerError } from '../../src/errors.js';
import type { PidRecord } from '../../src/stack/pids.js';
import { probeFailureIsFinal, waitUntilReady } from '../../stack/processes.js';

const reason = 'libssl.so.3: cannot open shared object file: No such file or directory';

describe('a verb that needs the Kafka client and finds its native addon missing', () => {
  const checkout = mkdtempSync(join(tmpdir(), 'plan-ledger-checkout-'));
  mkdirSync(join(checkout, 'scripts'));
  writeFileSync(join(checkout, 'scripts', 'native.mjs'), '');
  const installed = mkdtempSync(join(tmpdir(), 'plan-ledger-installed-'));

  it('does nothing when the addon loads', () => {
    expect(addonStep({ loadError: null, root: checkout, built: false })).toEqual({ kind: 'ok' });
    expect(addonStep({ loadError: null, root: installed, built: false })).toEqual({ kind: 'ok' });
  });

  it('from a checkout builds it once, as npm run demo does, then fails in one line if it still does not load', () => {
    expect(addonStep({ loadError: reason, root: checkout, built: false })).toEqual({ kind: 'build', script: join(checkout, 'scripts', 'native.mjs') });
    expect(addonStep({ loadError: reason, root: checkout, built: true })).toEqual({
      kind: 'fail',
      message: `the Kafka client's native addon (@confluentinc/kafka-javascript) does not load: ${reason}; building it did not help: run \`npm run native\` in ${checkout} for the build's reason`,
    });
  });

  it('from an installed package names npm rebuild (it has no npm run native)', () => {
    expect(addonStep({ loadError: reason, root: installed, built: false })).toEqual({
      kind: 'fail',
      message: `the Kafka client's native addon (@confluentinc/kafka-javascript) does not load: ${reason}; run \`npm rebuild @confluentinc/kafka-javascript --foreground-scripts\` in the project that installed plan-ledger (without a prebuilt binary for this platform it needs a C++ compiler, make, python3, libssl-dev and zlib1g-dev)`,
    });
  });

  it('passes here, where the addon is built', () => {
    expect(() => ensureKafkaClient()).not.toThrow();
  });
});

describe('a readiness probe that cannot load the client', () => {
  // This process: alive, and its command line contains the empty marker.
  const self: PidRecord = { name: 'test', pid: process.pid, marker: '', logFile: '/tmp/none.log', startedAt: '' };
  const missing = new LedgerError('ENVIRONMENT', `the Kafka client's native addon (@confluentinc/kafka-javascript) is not built: run \`npm run native\``);

  it('ends the wait at once with the probe\'s own error; a broker that does not answer yet is asked again', async () => {
    expect(probeFailureIsFinal(missing)).toBe(true);
    expect(probeFailureIsFinal(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'ECONNREFUSED' }))).toBe(false);
    expect(probeFailureIsFinal(new LedgerError('UNAVAILABLE', 'Local: Broker transport failure'))).toBe(false);

    let calls = 0;
    await expect(waitUntilReady(self, 'Kafka broker kafka-1', () => ((calls += 1), Promise.reject(missing)), 120_000)).rejects.toBe(missing);
    expect(calls).toBe(1);

    let asked = 0;
    await waitUntilReady(self, 'Kafka broker kafka-1', async () => {
      asked += 1;
      if (asked === 1) throw new LedgerError('UNAVAILABLE', 'Local: Broker transport failure');
      return true;
    }, 120_000);
    expect(asked).toBe(2);
  });
});
