import { randomBytes } from 'node:crypto';
import { inject, onTestFinished } from 'vitest';
import type { Admin, Kafka } from 'kafkajs';
import { loadConfig, type LedgerConfig, type LedgerConfigInput } from '../../src/config.js';
import { createKafka } from '../../src/kafka/client.js';
import { createLogger, silentLogger, type Logger } from '../../src/logging.js';

/** Silent; `TEST_LOG=debug` (or any pino level) shows what the services under test log. */
export const testLogger: Logger = process.env.TEST_LOG ? createLogger({ name: 'test', level: process.env.TEST_LOG }) : silentLogger();

/** A fresh prefix per test, so tests never see each other's topics or groups. */
export function randomPrefix(label = 't'): string {
  return `${label}-${randomBytes(5).toString('hex')}`;
}

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

export function testKafka(config: LedgerConfig = testConfig()): Kafka {
  return createKafka(config, testLogger, 'test');
}

/** An admin client that disconnects when the test ends, after deleting the topics it was told about. */
export async function testAdmin(kafka: Kafka): Promise<Admin & { track(topic: string): void }> {
  const admin = kafka.admin();
  await admin.connect();
  const topics: string[] = [];
  onTestFinished(async () => {
    if (topics.length) await admin.deleteTopics({ topics, timeout: 10_000 }).catch(() => {});
    await admin.disconnect();
  });
  return Object.assign(admin, { track: (t: string) => void topics.push(t) });
}

/** Disconnects a client (producer, consumer, admin) when the test ends. */
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

export { freePortBlock } from '../../src/stack/processes.js';
