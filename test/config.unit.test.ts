import { describe, expect, it } from 'vitest';
import { configToEnv, loadConfig } from '../src/config.js';
import { isLedgerError } from '../src/errors.js';

describe('config', () => {
  it('round-trips through the environment a child process inherits, SASL and registry auth included', () => {
    const config = loadConfig({
      brokers: ['b1:9092', 'b2:9093'],
      registryUrl: 'http://registry.local:8081/apis/ccompat/v7',
      topicPrefix: 'billing-agent',
      partitions: 12,
      replicationFactor: 3,
      ssl: true,
      sasl: { mechanism: 'scram-sha-512', username: 'svc', password: 'pw' },
      registryAuth: { username: 'reg', password: 'rpw' },
    }, {});
    expect(loadConfig({}, configToEnv(config))).toEqual(config);
  });

  it('names the field and the reason of a bad value', () => {
    const bad = (() => {
      try {
        return loadConfig({}, { PLAN_LEDGER_BROKERS: 'no-port-here', PLAN_LEDGER_REGISTRY_URL: 'http://r/x' });
      } catch (e) {
        return e;
      }
    })();
    expect(isLedgerError(bad, 'VALIDATION')).toBe(true);
    expect((bad as Error).message).toBe('invalid config brokers.0: host:port');
    expect(() => loadConfig({}, { PLAN_LEDGER_BROKERS: 'a:1', PLAN_LEDGER_REGISTRY_URL: 'http://r/x', PLAN_LEDGER_PARTITIONS: 'six' })).toThrow(
      'PLAN_LEDGER_PARTITIONS: expected an integer, got "six"',
    );
  });
});
