import { randomBytes } from 'node:crypto';
import pino from 'pino';
import { afterAll, inject, onTestFinished } from 'vitest';
import { loadConfig, type LedgerConfig, type LedgerConfigInput } from '../../src/config.js';
import { createKafka, promptCompactionConfig, type GroupMember, type GroupMemberOptions, type KafkaClient, type LedgerAdmin, type LogRecord, type TopicSpec } from '../../src/kafka/index.js';
import { createLogger, silentLogger, type Logger } from '../../src/logging.js';
import { setting } from '../../src/settings.js';

/**
 * Silent; `TEST_LOG=debug` (or any pino level) shows what the services under test log, on stdout or,
 * with `TEST_LOG_FILE=path`, appended to that file.
 */
export const testLogger: Logger = process.env.TEST_LOG
  ? createLogger({ name: 'test', level: process.env.TEST_LOG }, process.env.TEST_LOG_FILE ? pino.destination({ dest: process.env.TEST_LOG_FILE, append: true, sync: true }) : undefined)
  : silentLogger();

/** Prefixes handed out in this test file: their topics are deleted when the file ends. */
const prefixes = new Set<string>();

/**
 * A fresh prefix per test, so tests never see each other's topics or groups. The topics named by it
 * (`<prefix>`, `<prefix>.…`, `<prefix>-…`) are deleted when the test file ends, so a long-lived stack
 * does not collect thousands of partitions (a broker replays each one at start-up);
 * PLAN_LEDGER_KEEP_TOPICS=1 keeps them for a post-mortem.
 */
export function randomPrefix(label = 't'): string {
  const prefix = `${label}-${randomBytes(5).toString('hex')}`;
  prefixes.add(prefix);
  return prefix;
}

afterAll(async () => {
  if (!prefixes.size || setting('PLAN_LEDGER_KEEP_TOPICS')) return;
  const brokers = inject('brokers');
  if (!brokers) return;
  const kafka = createKafka(loadConfig({ brokers: brokers.split(','), registryUrl: inject('registryUrl'), topicPrefix: 'test-cleanup' }), testLogger, 'test-cleanup');
  try {
    const admin = kafka.admin();
    await admin.connect();
    const mine = (t: string) => [...prefixes].some((p) => t === p || t.startsWith(`${p}.`) || t.startsWith(`${p}-`));
    const doomed = (await admin.listTopics()).filter(mine);
    if (doomed.length) await admin.deleteTopics(doomed);
    await admin.disconnect();
  } catch (e) {
    // Cleanup is a courtesy to the next run; a failure here says so and fails nothing.
    console.warn(`[test] deleting this file's topics failed: ${(e as Error).message}`);
  } finally {
    prefixes.clear();
    await kafka.close().catch(() => {});
  }
}, 60_000);

export function randomGroupId(prefix = randomPrefix('g')): string {
  return `${prefix}.group-${randomBytes(3).toString('hex')}`;
}

/** Config pointing at the real stack from the global setup, with a random topic prefix. */
export function testConfig(overrides: LedgerConfigInput = {}): LedgerConfig {
  return loadConfig({
    brokers: inject('brokers').split(','),
    registryUrl: inject('registryUrl'),
    topicPrefix: randomPrefix(),
    partitions: 3,
    ...overrides,
  });
}

/** Clients made by {@link testKafka} in this test file: closed (their shared reader admin) when the file ends. */
const clients = new Set<ReturnType<typeof createKafka>>();
afterAll(async () => {
  for (const k of clients) await k.close().catch(() => {});
  clients.clear();
});

export function testKafka(config: LedgerConfig = testConfig()): KafkaClient {
  const kafka = createKafka(config, testLogger, 'test');
  clients.add(kafka);
  return kafka;
}

export type TestAdmin = LedgerAdmin & { track(topic: string): void };

/** An admin client that disconnects when the test ends, after deleting the topics it was told about. */
export async function testAdmin(kafka: KafkaClient): Promise<TestAdmin> {
  const admin = kafka.admin();
  await admin.connect();
  const topics: string[] = [];
  onTestFinished(async () => {
    if (topics.length) await admin.deleteTopics(topics).catch(() => {});
    await admin.disconnect();
  });
  return Object.assign(admin, { track: (t: string) => void topics.push(t) });
}

/** Every record of a topic (or of some of its partitions) up to its stable end, read_committed. */
export async function readAll(kafka: KafkaClient, topic: string, partitions?: readonly number[]): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  await kafka.readToEnd({ topic, ...(partitions ? { partitions } : {}), onRecords: (r) => void records.push(...r) });
  return records;
}

/**
 * A topic spec with {@link promptCompactionConfig} over its own entries: the cleaner compacts it within a
 * second or so of a segment roll. Create the topic with it before the ledger first ensures its topics
 * (ensureTopics leaves an existing topic's config alone).
 */
export function withPromptCompaction(spec: TopicSpec): TopicSpec {
  const entries = new Map((spec.configEntries ?? []).map((e) => [e.name, e.value]));
  for (const e of promptCompactionConfig()) entries.set(e.name, e.value);
  return { ...spec, configEntries: [...entries].map(([name, value]) => ({ name, value })) };
}

/** Disconnects a client (writer, admin) when the test ends. */
export function closeAfter<T extends { disconnect(): Promise<void> }>(client: T): T {
  onTestFinished(async () => {
    await client.disconnect().catch(() => {});
  });
  return client;
}

/**
 * Polls `condition` until it returns a truthy value (returned) or the timeout passes (throws with
 * `message` and the last value seen). Tests wait on conditions, never on fixed sleeps.
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  opts: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
  let last: unknown;
  for (;;) {
    try {
      const v = await condition();
      if (v) return v as NonNullable<T>;
      last = v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) {
      throw new Error(`waitFor timed out: ${opts.message ?? 'condition not met'} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 100));
  }
}

export { freePortBlock, freeStackPorts } from '../../stack/processes.js';

/**
 * A member of a fresh group on `topic` with test timeouts (10 s session and rebalance, 1 s heartbeat); it
 * leaves the group when the test file's clean-up runs.
 */
export async function joinTestGroup(
  kafka: KafkaClient,
  topic: string,
  o: Pick<GroupMemberOptions, 'onRecords'> & Partial<Pick<GroupMemberOptions, 'onAssigned' | 'onRevoked'>>,
): Promise<GroupMember> {
  const member = await kafka.join({
    groupId: randomGroupId(),
    topic,
    sessionTimeoutMs: 10_000,
    heartbeatIntervalMs: 1000,
    rebalanceTimeoutMs: 10_000,
    onAssigned: o.onAssigned ?? (() => {}),
    onRevoked: o.onRevoked ?? (() => {}),
    onRecords: o.onRecords,
  });
  closeAfter({ disconnect: () => member.close() });
  return member;
}
