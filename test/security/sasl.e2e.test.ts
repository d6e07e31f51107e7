// Authenticated Kafka that the broker enforces (issue 11): a private `stack up --sasl` (SCRAM-SHA-512,
// StandardAuthorizer, allow.everyone.if.no.acl.found=false) with the ledger's ACLs for a fresh prefix.
// Each component connects as its own principal with a password read from the stack's password file, and
// the broker — not the library — refuses what a principal may not do.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LedgerLog } from '../../src/audit/log.js';
import { verifyPlanInLog } from '../../src/audit/live.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { configToEnv, loadConfig, topicNames, type LedgerConfig } from '../../src/config.js';
import { isLedgerError } from '../../src/errors.js';
import { auditTopic, createKafka, kafkaErrorName, type LedgerAdmin } from '../../src/kafka/index.js';
import { rotateStackPassword } from '../../stack/credentials.js';
import { provisionPrefix, stackDown, stackStatus, stackUp, type StackInfo, type StackSecurity, type StackUser } from '../../stack/stack.js';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { startProjector } from '../../projector/index.js';
import { tools } from '../fixtures/tools.js';
import { freeStackPorts, randomPrefix, testLogger, waitFor } from '../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-sasl-'));
const prefix = randomPrefix('sasl');
const PARTITIONS = 2;
let info: StackInfo;
let security: StackSecurity;
let executor: ExecutorHandle | undefined;
let ledger: Ledger | undefined;
let completedPlan: string;

/** The config of one stack user, its password read from the stack's password file (as a deployment would). */
function configAs(user: StackUser, passwordFile = security.passwordFiles[user]): LedgerConfig {
  return loadConfig(
    { brokers: info.brokers, registryUrl: info.registryUrl, topicPrefix: prefix, partitions: PARTITIONS },
    { PLAN_LEDGER_SASL_MECHANISM: 'SCRAM-SHA-512', PLAN_LEDGER_SASL_USERNAME: user, PLAN_LEDGER_SASL_PASSWORD_FILE: passwordFile },
  );
}

/** A pino logger (debug) whose lines land in `lines`: the Kafka client (librdkafka) logs into it. */
function capturingLogger() {
  const lines: Array<Record<string, unknown> & { msg?: string }> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
}

const passwords = () => Object.values(security.passwordFiles).map((f) => readFileSync(f, 'utf8'));

async function withAdmin<T>(user: StackUser, fn: (admin: LedgerAdmin) => Promise<T>): Promise<T> {
  const admin = createKafka(configAs(user), testLogger, `sasl-${user}`).admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect();
  }
}

/** The end offsets of a topic as the admin user sees them: a refused write must leave them unchanged. */
const endOffsets = (topic: string) => withAdmin('admin', async (a) => (await a.fetchTopicOffsets(topic)).map((o) => `${o.partition}:${o.high}`).sort().join(','));

/** What a plain (non-transactional) write as `user` to `topic` ends with: the broker's error name, or 'ok'. */
async function produceAs(user: StackUser, topic: string): Promise<string> {
  const writer = createKafka(configAs(user), testLogger, `sasl-${user}-producer`).writer();
  await writer.connect();
  try {
    await writer.send(topic, [{ key: 'forged', value: 'not an event', partition: 0 }]);
    return 'ok';
  } catch (e) {
    return kafkaErrorName(e) ?? (e as Error).message;
  } finally {
    await writer.disconnect();
  }
}

beforeAll(async () => {
  const up = await stackUp({ dir, ...(await freeStackPorts()), sasl: true });
  info = up.info;
  security = info.security!;
  await provisionPrefix({ dir, prefix, partitions: PARTITIONS });
}, 240_000);

afterAll(async () => {
  await ledger?.close();
  await executor?.stop();
  await stackDown({ dir }); // stops exactly the pids this stack started
  rmSync(dir, { recursive: true, force: true });
}, 90_000);

describe('stack up --sasl', () => {
  it('keeps passwords in 0600 files and off every command line: ps shows none', () => {
    expect(security).toMatchObject({ protocol: 'SASL_PLAINTEXT', mechanism: 'SCRAM-SHA-512' });
    expect(Object.keys(security.passwordFiles).sort()).toEqual(['admin', 'auditor', 'client', 'executor', 'projector']);
    for (const file of Object.values(security.passwordFiles)) {
      expect(file.startsWith(join(dir, 'secrets'))).toBe(true);
      expect(spawnSync('stat', ['-c', '%a', file], { encoding: 'utf8' }).stdout.trim()).toBe('600');
    }
    const pws = passwords();
    expect(new Set(pws).size).toBe(5);
    const procs = stackStatus({ dir }).processes;
    expect(procs.map((p) => p.name).sort()).toEqual(['kafka-1', 'registry']);
    for (const p of procs) {
      const cmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8');
      expect(cmdline).toContain('java');
      for (const pw of pws) expect(cmdline).not.toContain(pw);
    }
    const serverProperties = readFileSync(join(dir, 'kafka-1', 'server.properties'), 'utf8');
    for (const pw of pws) expect(serverProperties).not.toContain(pw);
  });
});

describe('principals against the broker', () => {
  it('an executor and a client, each as its own principal, run a plan to completion', async () => {
    executor = await startExecutor({ tools, config: configAs('executor'), logger: testLogger, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    await executor.started;
    ledger = await connectLedger(configAs('client'));
    // The executor principal announced itself on plan-executors; the client principal reads it.
    const announced = await ledger.executors();
    expect(announced.live.map((e) => [e.executorId, e.tools.includes('noop'), e.partitions.length > 0])).toEqual([[executor.executorId, true, true]]);
    expect(announced.invalid).toEqual([]);
    const { planId, warnings } = await ledger.createPlan({
      goal: 'prove the ACLs let the ledger work',
      mode: 'execute',
      items: [
        { id: 'a', title: 'A', why: 'first', tool: 'noop', input: { n: 1 } },
        { id: 'b', title: 'B', why: 'after a', tool: 'noop', input: { n: 2 }, dependsOn: ['a'] },
        { id: 'c', title: 'C', why: 'after b', tool: 'noop', input: { n: 3 }, dependsOn: ['b'] },
      ],
    });
    expect(warnings).toEqual([]);
    const plan = await ledger.waitFor(planId, 'completed', { timeoutMs: 120_000 });
    expect(plan.status).toBe('completed');
    expect(Object.values(plan.items).map((i) => i.status)).toEqual(['completed', 'completed', 'completed']);
    expect(JSON.parse(plan.items.c!.attempts[0]!.outputJson!)).toEqual({ echo: { n: 3 } });
    completedPlan = planId;
  });

  it("an operator's CLI, as the client principal, shows the plan (the CLI reads under the client's reader group id)", () => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...configToEnv(configAs('client')) };
    delete env.PLAN_LEDGER_SASL_PASSWORD;
    const r = spawnSync(process.execPath, ['bin/plan-ledger.js', 'show', completedPlan, '--json'], { env, encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr.split('\n').filter((l) => l && !l.startsWith('{'))).toEqual([]);
    expect(r.status).toBe(0);
    const shown = JSON.parse(r.stdout) as { status?: string; state?: { status?: string } };
    expect(shown.status ?? shown.state?.status).toBe('completed');
  });

  it('refuses the client principal a write to the events topic (TOPIC_AUTHORIZATION_FAILED); nothing lands', async () => {
    const events = topicNames(prefix).events;
    const before = await endOffsets(events);
    expect(await produceAs('client', events)).toBe('TOPIC_AUTHORIZATION_FAILED');
    expect(await endOffsets(events)).toBe(before);
  });

  it("refuses the client an executor's transactional id: it cannot fence the partition's owner", async () => {
    const kafka = createKafka(configAs('client'), testLogger, 'sasl-client-tx');
    const writer = kafka.fencedWriter(`${prefix}.executor.p0`);
    try {
      // connect() is FindCoordinator + InitProducerId for the id: what would fence the owner.
      const err = await writer.connect().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeDefined();
      expect(kafkaErrorName(err) ?? String((err as Error).message)).toMatch(/TRANSACTIONAL_ID_AUTHORIZATION_FAILED|Transactional Id authorization failed/i);
    } finally {
      await writer.disconnect();
    }
    // The owner was not fenced: the executor still runs a new plan to the end.
    const { planId } = await ledger!.createPlan({ goal: 'after the refused fencing', mode: 'execute', items: [{ id: 'x', title: 'X', why: 'still served', tool: 'noop', input: {} }] });
    expect((await ledger!.waitFor(planId, 'completed', { timeoutMs: 120_000 })).status).toBe('completed');
  });

  it('refuses the auditor a write to the commands topic and to every other plan topic', async () => {
    // The auditor may write to no topic at all, so the broker already refuses its idempotent producer id
    // (Kafka asks for WRITE on some topic, or IDEMPOTENT_WRITE): CLUSTER_AUTHORIZATION_FAILED, before any
    // topic is asked; either refusal leaves nothing in the log.
    const refusal = /^(TOPIC|CLUSTER)_AUTHORIZATION_FAILED$/;
    const t = topicNames(prefix);
    const before = await endOffsets(t.commands);
    expect(await produceAs('auditor', t.commands)).toMatch(refusal);
    expect(await endOffsets(t.commands)).toBe(before);
    for (const topic of [t.events, t.snapshots, t.archive, t.blobs, t.dlq, auditTopic(prefix)]) {
      expect(await produceAs('auditor', topic), topic).toMatch(refusal);
    }
  });

  it('refuses the projector a write to the events topic', async () => {
    expect(await produceAs('projector', topicNames(prefix).events)).toBe('TOPIC_AUTHORIZATION_FAILED');
  });

  it('refuses a principal to create topics: a prefix nobody provisioned is one FORBIDDEN line naming them', async () => {
    const other = randomPrefix('unprovisioned');
    const config = loadConfig(
      { brokers: info.brokers, registryUrl: info.registryUrl, topicPrefix: other, partitions: PARTITIONS },
      { PLAN_LEDGER_SASL_MECHANISM: 'SCRAM-SHA-512', PLAN_LEDGER_SASL_USERNAME: 'client', PLAN_LEDGER_SASL_PASSWORD_FILE: security.passwordFiles.client },
    );
    const err = await connectLedger(config).catch((e: unknown) => e);
    expect(isLedgerError(err, 'FORBIDDEN')).toBe(true);
    expect((err as Error).message).toBe(
      `topics ${[auditTopic(other), ...['archive', 'blobs', 'commands', 'dlq', 'events', 'executors', 'keys', 'snapshots', 'streams'].map((t) => `${other}.plan-${t}`)].sort().join(', ')} do not exist and Kafka does not let this principal create them: create them as an admin (on the local SASL stack: plan-ledger stack acls --prefix <prefix>)`,
    );
    expect(await withAdmin('admin', async (a) => (await a.listTopics()).filter((t) => t.startsWith(other)))).toEqual([]);
  });

  it('the projector, as its own principal, projects the plan and writes its snapshots and archive', async () => {
    expect(completedPlan).toBeDefined();
    const projector = await startProjector({ config: configAs('projector'), logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false });
    try {
      await waitFor(() => projector.caughtUp(), { timeoutMs: 90_000, message: 'projector caught up with the events' });
      await projector.flush();
      expect(projector.plan(completedPlan)?.state?.status).toBe('completed');
    } finally {
      await projector.stop();
    }
    const archived = await withAdmin('admin', async (a) => (await a.fetchTopicOffsets(topicNames(prefix).archive)).reduce((n, o) => n + Number(o.high), 0));
    expect(archived).toBeGreaterThanOrEqual(1);
  });

  it('lets the auditor read the events: it verifies the completed plan from the log', async () => {
    expect(completedPlan).toBeDefined();
    const log = await LedgerLog.open(configAs('auditor'), testLogger);
    try {
      const events = await log.readPlan(completedPlan);
      // PlanCreated, 3 × (ItemAdded, IntentRecorded, ResultCommitted, ItemCompleted), PlanCompleted at least.
      expect(events.length).toBeGreaterThanOrEqual(14);
      expect(events.map((e) => e.event.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.event.type === 'ItemCompleted')).toHaveLength(3);
      const v = await verifyPlanInLog(log, completedPlan);
      expect(v.ok).toBe(true);
      expect(v.events).toBe(events.length);
      // The auditor read the projector's snapshots too (archive of the finished plan).
      expect(v.checks.find((c) => c.name === 'snapshots')?.detail).toMatch(/^[1-9]\d* snapshots? agree/);
    } finally {
      await log.close();
    }
  });
});

describe('config on the local SASL stack', () => {
  it('takes the brokers from the stack and the password from its file when a component names only its user', async () => {
    const saved = process.env.PLAN_LEDGER_STACK_DIR;
    process.env.PLAN_LEDGER_STACK_DIR = dir;
    try {
      const config = loadConfig({ topicPrefix: prefix, partitions: PARTITIONS }, { PLAN_LEDGER_SASL_USERNAME: 'auditor' });
      expect(config.brokers).toEqual(info.brokers);
      expect(config.sasl).toMatchObject({ mechanism: 'scram-sha-512', username: 'auditor', passwordFile: security.passwordFiles.auditor });
      expect(() => loadConfig({ topicPrefix: prefix }, {})).toThrow(
        'the local stack runs with SASL: set PLAN_LEDGER_SASL_USERNAME to executor, projector, client, auditor (the password is read from the stack)',
      );
      const log = await LedgerLog.open(config, testLogger);
      try {
        expect((await verifyPlanInLog(log, completedPlan)).ok).toBe(true);
      } finally {
        await log.close();
      }
    } finally {
      if (saved === undefined) delete process.env.PLAN_LEDGER_STACK_DIR;
      else process.env.PLAN_LEDGER_STACK_DIR = saved;
    }
  });
});

describe('rotating a SCRAM password', () => {
  it("gives the auditor a new password: the old one is refused, the new one from the same file reads the log", async () => {
    const old = join(dir, 'auditor-old.password');
    writeFileSync(old, readFileSync(security.passwordFiles.auditor), { mode: 0o600 });
    const r = rotateStackPassword({ dir, brokers: info.brokers, security, user: 'auditor' });
    expect(r.passwordFile).toBe(security.passwordFiles.auditor);
    expect(readFileSync(r.passwordFile, 'utf8')).not.toBe(readFileSync(old, 'utf8'));
    expect(readFileSync(r.passwordFile, 'utf8')).toMatch(/^[A-Za-z0-9_-]{32}$/);
    const refused = await LedgerLog.open(configAs('auditor', old), testLogger).catch((e: unknown) => e);
    expect(isLedgerError(refused, 'UNAUTHENTICATED')).toBe(true);
    const log = await LedgerLog.open(configAs('auditor'), testLogger);
    try {
      expect((await verifyPlanInLog(log, completedPlan)).ok).toBe(true);
    } finally {
      await log.close();
    }
    expect(() => rotateStackPassword({ dir, brokers: info.brokers, security, user: 'admin' })).toThrow(/admin password is the brokers' own login/);
  });
});

describe('a wrong password', () => {
  it('fails connect() once, without retries, with one UNAUTHENTICATED line naming mechanism and user, never the password', async () => {
    const wrong = join(dir, 'wrong.password');
    writeFileSync(wrong, 'not-the-password', { mode: 0o600 });
    const { logger, lines } = capturingLogger();
    const config = configAs('client', wrong);
    const t0 = Date.now();
    const err = await connectLedger(config, { logger }).catch((e: unknown) => e);
    const ms = Date.now() - t0;
    expect(isLedgerError(err, 'UNAUTHENTICATED')).toBe(true);
    expect((err as Error).message).toBe(
      `Kafka refused SASL SCRAM-SHA-512 login of user "client" at ${info.brokers.join(',')}: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512`,
    );
    expect((err as Error).message).not.toContain('not-the-password');
    expect(JSON.stringify(lines)).not.toContain('not-the-password');
    // One refused login, not a retry loop: a one-shot client retrying its connection would take its whole
    // request timeout (15 s and more) to give up.
    expect(ms).toBeLessThan(10_000);
    console.log(`wrong password refused in ${ms} ms`);
  });

  it('ends the CLI with exit 1 and exactly one line on stderr', () => {
    const wrong = join(dir, 'wrong.password');
    const env: NodeJS.ProcessEnv = { ...process.env, ...configToEnv(configAs('client')), PLAN_LEDGER_SASL_PASSWORD_FILE: wrong };
    delete env.PLAN_LEDGER_SASL_PASSWORD;
    const r = spawnSync(process.execPath, ['bin/plan-ledger.js', 'show', 'plan-1'], { env, encoding: 'utf8', timeout: 60_000 });
    expect(r.status).toBe(1);
    const stderr = r.stderr.split('\n').filter((l) => l && !l.startsWith('{'));
    expect(stderr).toEqual([`plan-ledger: Kafka refused SASL SCRAM-SHA-512 login of user "client" at ${info.brokers.join(',')}: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512`]);
    for (const pw of [...passwords(), 'not-the-password']) expect(r.stdout + r.stderr).not.toContain(pw);
  });
});
