// `stack up --sasl --tls`: the client listener is SASL_SSL with a certificate made by keytool at first
// start. The ledger runs over it with each principal's credentials and the stack's CA file, found from
// the stack alone (PLAN_LEDGER_SASL_USERNAME is all a component sets); the ACLs hold as on SASL_PLAINTEXT.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { loadConfig, topicNames, type LedgerConfig } from '../../src/config.js';
import { createKafka, kafkaErrorName } from '../../src/kafka/index.js';
import { provisionPrefix, stackDown, stackUp, type StackInfo, type StackUser } from '../../stack/stack.js';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { tools } from '../fixtures/tools.js';
import { freeStackPorts, randomPrefix, testLogger } from '../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-tls-'));
const prefix = randomPrefix('tls');
let info: StackInfo;
let executor: ExecutorHandle | undefined;
let ledger: Ledger | undefined;

/** A component's config on this stack: only the user is named; brokers, password file and CA come from the stack. */
function configAs(user: StackUser): LedgerConfig {
  const saved = process.env.PLAN_LEDGER_STACK_DIR;
  process.env.PLAN_LEDGER_STACK_DIR = dir;
  try {
    return loadConfig({ topicPrefix: prefix, partitions: 2 }, { PLAN_LEDGER_SASL_USERNAME: user });
  } finally {
    if (saved === undefined) delete process.env.PLAN_LEDGER_STACK_DIR;
    else process.env.PLAN_LEDGER_STACK_DIR = saved;
  }
}

beforeAll(async () => {
  info = (await stackUp({ dir, ...(await freeStackPorts()), sasl: true, tls: true })).info;
  await provisionPrefix({ dir, prefix, partitions: 2 });
}, 240_000);

afterAll(async () => {
  await ledger?.close();
  await executor?.stop();
  await stackDown({ dir });
  rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe('stack up --sasl --tls', () => {
  it('serves TLS on the client listener with a certificate for 127.0.0.1 that its CA file verifies', async () => {
    expect(info.security).toMatchObject({ protocol: 'SASL_SSL', mechanism: 'SCRAM-SHA-512', caFile: join(dir, 'secrets', 'ca.pem') });
    const [host, port] = info.brokers[0]!.split(':');
    const cert = await new Promise<PeerCertificate>((resolve, reject) => {
      const socket = tlsConnect({ host, port: Number(port), ca: readFileSync(info.security!.caFile!), servername: undefined }, () => {
        const c = socket.getPeerCertificate();
        socket.end();
        resolve(c);
      });
      socket.once('error', reject);
    });
    expect(cert.subject.CN).toBe('plan-ledger local broker');
    expect(cert.subjectaltname).toContain('IP Address:127.0.0.1');
  });

  it('runs a plan with the executor and client principals over SASL_SSL, and still refuses the client a write to events', async () => {
    const executorConfig = configAs('executor');
    expect(executorConfig).toMatchObject({ ssl: true, sslCaFile: info.security!.caFile, sasl: { username: 'executor', passwordFile: info.security!.passwordFiles.executor } });
    executor = await startExecutor({ tools, config: executorConfig, logger: testLogger, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    await executor.started;
    ledger = await connectLedger(configAs('client'));
    const { planId } = await ledger.createPlan({
      goal: 'over TLS',
      mode: 'execute',
      items: [
        { id: 'a', title: 'A', why: 'first', tool: 'noop', input: { n: 1 } },
        { id: 'b', title: 'B', why: 'after a', tool: 'noop', input: { n: 2 }, dependsOn: ['a'] },
      ],
    });
    const plan = await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
    expect(Object.values(plan.items).map((i) => i.status)).toEqual(['completed', 'completed']);

    const writer = createKafka(configAs('client'), testLogger, 'tls-client-producer').writer();
    await writer.connect();
    try {
      const err = await writer.send(topicNames(prefix).events, [{ key: 'forged', value: 'x', partition: 0 }]).catch((e: unknown) => e);
      expect(kafkaErrorName(err)).toBe('TOPIC_AUTHORIZATION_FAILED');
    } finally {
      await writer.disconnect();
    }
  });
});
