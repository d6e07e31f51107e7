import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { configToEnv, loadConfig } from '../src/config.js';
import { isLedgerError } from '../src/errors.js';
import { authenticationFailure } from '../src/kafka/index.js';

describe('config', () => {
  it('round-trips through the environment a child process inherits, SASL and registry auth included', () => {
    const config = loadConfig({
      brokers: ['b1:9092', 'b2:9093'],
      registryUrl: 'http://registry.local:8081/apis/ccompat/v7',
      topicPrefix: 'billing-agent',
      partitions: 12,
      replicationFactor: 3,
      ssl: true,
      sslCaFile: '/etc/kafka/ca.pem',
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
    expect((bad as Error).message).toBe('PLAN_LEDGER_BROKERS="no-port-here" is not allowed: expected a comma-separated list of host:port');
    expect(() => loadConfig({}, { PLAN_LEDGER_BROKERS: 'a:1', PLAN_LEDGER_REGISTRY_URL: 'http://r/x', PLAN_LEDGER_PARTITIONS: 'six' })).toThrow(
      'PLAN_LEDGER_PARTITIONS="six" is not allowed: expected an integer from 1 to 10000',
    );
    // A value given in code names its field.
    expect(() => loadConfig({ brokers: ['no-port-here'], registryUrl: 'http://r/x' }, {})).toThrow('invalid config brokers.0: host:port');
  });

  it('a value given in code is checked field by field, with the path of the first bad one; unknown fields are dropped', () => {
    const base = { brokers: ['a:1'], registryUrl: 'http://r/x' };
    const fails = (input: object) => () => loadConfig(input as never, {}, { stack: () => undefined });
    expect(fails({ ...base, brokers: [] })).toThrow('invalid config brokers: expected a non-empty list of host:port');
    expect(fails({ ...base, brokers: ['a:1', 42] })).toThrow('invalid config brokers.1: host:port');
    expect(fails({ ...base, registryUrl: 'not a url' })).toThrow('invalid config registryUrl: expected a URL');
    expect(fails({ ...base, topicPrefix: 'a/b' })).toThrow('invalid config topicPrefix: letters, digits, ".", "_", "-"');
    expect(fails({ ...base, clientId: '' })).toThrow('invalid config clientId: expected a non-empty string');
    expect(fails({ ...base, partitions: 1.5 })).toThrow('invalid config partitions: expected an integer from 1 to 10000');
    expect(fails({ ...base, replicationFactor: -2 })).toThrow('invalid config replicationFactor: expected an integer from -1 to 32');
    expect(fails({ ...base, ssl: 'yes' })).toThrow('invalid config ssl: expected true or false');
    expect(fails({ ...base, sasl: { mechanism: 'gssapi', username: 'u', password: 'p' } })).toThrow('invalid config sasl.mechanism: expected one of plain, scram-sha-256, scram-sha-512');
    expect(fails({ ...base, sasl: { mechanism: 'plain', username: 'u', password: '' } })).toThrow('invalid config sasl.password: expected a non-empty string');
    expect(fails({ ...base, registryAuth: { username: 'u' } })).toThrow('invalid config registryAuth.password: expected a string');
    const e = (() => {
      try {
        return fails({ ...base, partitions: 0 })();
      } catch (err) {
        return err;
      }
    })();
    expect(isLedgerError(e, 'VALIDATION') && e.details).toEqual({ field: 'partitions' });
    const config = loadConfig({ ...base, surplus: 'dropped' } as never, {}, { stack: () => undefined });
    expect(Object.keys(config).sort()).toEqual(['brokers', 'clientId', 'partitions', 'registryUrl', 'replicationFactor', 'ssl', 'topicPrefix']);
    expect(Object.isFrozen(config) && Object.isFrozen(config.brokers)).toBe(true);
  });

  describe('SASL password from a file', () => {
    const base = { PLAN_LEDGER_BROKERS: 'a:1', PLAN_LEDGER_REGISTRY_URL: 'http://r/x', PLAN_LEDGER_SASL_MECHANISM: 'SCRAM-SHA-512', PLAN_LEDGER_SASL_USERNAME: 'executor' };
    const secret = (content: string) => {
      const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-secret-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const file = join(dir, 'executor.password');
      writeFileSync(file, content, { mode: 0o600 });
      return file;
    };

    it('reads PLAN_LEDGER_SASL_PASSWORD_FILE (one trailing newline dropped) and hands the file, not the password, to children', () => {
      const file = secret('pa ss\n');
      const config = loadConfig({}, { ...base, PLAN_LEDGER_SASL_PASSWORD_FILE: file });
      expect(config.sasl).toEqual({ mechanism: 'scram-sha-512', username: 'executor', password: 'pa ss', passwordFile: file });
      const env = configToEnv(config);
      expect(env.PLAN_LEDGER_SASL_PASSWORD_FILE).toBe(file);
      expect(env.PLAN_LEDGER_SASL_PASSWORD).toBeUndefined();
      expect(Object.values(env).join('\n')).not.toContain('pa ss');
      expect(loadConfig({}, env)).toEqual(config);
    });

    it('refuses a missing file and a password given twice, naming the variables', () => {
      expect(() => loadConfig({}, { ...base, PLAN_LEDGER_SASL_PASSWORD_FILE: '/nonexistent/pw' })).toThrow('PLAN_LEDGER_SASL_PASSWORD_FILE: cannot read /nonexistent/pw (ENOENT)');
      const file = secret('pw');
      expect(() => loadConfig({}, { ...base, PLAN_LEDGER_SASL_PASSWORD_FILE: file, PLAN_LEDGER_SASL_PASSWORD: 'pw' })).toThrow(
        'PLAN_LEDGER_SASL_PASSWORD and PLAN_LEDGER_SASL_PASSWORD_FILE are both set: set one',
      );
    });

    it('turns a refused login into one UNAUTHENTICATED line naming mechanism and user, never the password', () => {
      const config = loadConfig({}, { ...base, PLAN_LEDGER_SASL_PASSWORD: 'hunter2' });
      // librdkafka's error (ERR__AUTHENTICATION): the broker's reason between the broker's name and how long the state lasted.
      const refused = Object.assign(new Error('sasl_plaintext://a:1/bootstrap: SASL authentication error: bad password hunter2 (after 3ms in state AUTH_REQ)'), { code: -169 });
      const e = authenticationFailure(refused, config);
      expect(isLedgerError(e, 'UNAUTHENTICATED')).toBe(true);
      expect(e?.message).toBe('Kafka refused SASL SCRAM-SHA-512 login of user "executor" at a:1: bad password ***');
      expect(e?.details).toEqual({ mechanism: 'SCRAM-SHA-512', username: 'executor' });
      expect(authenticationFailure(new Error('ECONNREFUSED'), config)).toBeUndefined();
    });
  });
});
