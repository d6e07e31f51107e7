// Guarantee 7 (docs/design.md#guarantees): the local stack is durable. A private stack runs a plan, goes down and comes
// up again: the topics are still there, every subject keeps its schema id (Apicurio's KafkaSQL journal
// is replayed), the client reads the plan back with the same digests, `verify` passes, and a new plan
// runs. Then `reset --yes` wipes it and the next `up` starts from empty storage.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { createCodec } from '../../src/codec/codec.js';
import { loadConfig, topicNames, type LedgerConfig } from '../../src/config.js';
import { createKafka } from '../../src/kafka/index.js';
import { stateDigest, verifyChain } from '../../src/plan/index.js';
import { stackDown, stackReset, stackStatus, stackUp } from '../../stack/stack.js';
import { startExecutor } from '../../executor/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { tools } from '../fixtures/tools.js';
import { freeStackPorts, randomPrefix, testLogger } from '../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-durable-'));
let ports: { kafkaPort: number; registryPort: number };
let config: LedgerConfig;
let effects: EffectsService;

beforeAll(async () => {
  ports = await freeStackPorts();
  const up = await stackUp({ dir, ...ports });
  expect(up.reused).toBe(false);
  config = loadConfig({ brokers: up.info.brokers, registryUrl: up.info.registryUrl, topicPrefix: randomPrefix('durable'), partitions: 3 });
  effects = await new EffectsService().start();
  process.env.EFFECTS_URL = effects.url;
}, 240_000);

afterAll(async () => {
  await effects?.stop();
  // The data would outlive the test in the stack folder: wipe it.
  await stackReset({ dir, confirm: true });
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

async function listTopics(): Promise<string[]> {
  const admin = createKafka(config, testLogger, 'durable-test').admin();
  await admin.connect();
  try {
    return (await admin.listTopics()).sort();
  } finally {
    await admin.disconnect();
  }
}

async function subjectIds(): Promise<Record<string, number>> {
  const subjects = (await (await fetch(`${config.registryUrl}/subjects`)).json()) as string[];
  const ids: Record<string, number> = {};
  for (const s of subjects.filter((x) => x.startsWith(`${config.topicPrefix}.`)).sort()) {
    const v = (await (await fetch(`${config.registryUrl}/subjects/${encodeURIComponent(s)}/versions/latest`)).json()) as { id: number };
    ids[s] = v.id;
  }
  return ids;
}

const items = Array.from({ length: 5 }, (_, i) => ({
  id: `s${i}`,
  title: `step ${i}`,
  why: 'lives across a restart',
  tool: 'effect',
  dependsOn: i ? [`s${i - 1}`] : [],
}));

describe('durable local stack', () => {
  it('keeps topics, schema ids and plans across down/up; verify passes and new plans run; reset wipes it', async () => {
    // Before: a plan runs to completion.
    let executor = await startExecutor({ tools, config, executorId: 'durable-1', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 });
    let ledger = await connectLedger(config);
    const before = await (async () => {
      try {
        await executor.started;
        const { planId } = await ledger.createPlan({ goal: 'outlive the stack', mode: 'execute', items });
        const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 90_000 });
        const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix, logger: testLogger });
        return { planId, digest: done.digest, state: stateDigest(done), events: (await ledger.planEvents(planId)).length, schemaIds: codec.schemaIds };
      } finally {
        await ledger.close();
        await executor.stop();
      }
    })();
    const topicsBefore = (await listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`));
    const t = topicNames(config.topicPrefix);
    expect(topicsBefore).toEqual([t.archive, t.blobs, t.commands, t.dlq, t.events, t.planExecutors, t.planKeys, t.snapshots, t.streams, `${config.topicPrefix}.ledger-audit`].sort());
    const idsBefore = await subjectIds();
    expect(Object.keys(idsBefore)).toHaveLength(3);

    // Down, and up on the same storage.
    const down = await stackDown({ dir });
    expect(down.stopped).toHaveLength(2);
    expect(stackStatus({ dir }).hasData).toBe(true);
    const up = await stackUp({ dir, ...ports });
    expect(up.alreadyRunning).toBe(false);
    expect(up.reused).toBe(true);

    // Topics, schema ids and the plan are all there.
    expect((await listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`))).toEqual(topicsBefore);
    expect(await subjectIds()).toEqual(idsBefore);
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix, logger: testLogger });
    expect(codec.schemaIds).toEqual(before.schemaIds);

    executor = await startExecutor({ tools, config, executorId: 'durable-2', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 });
    ledger = await connectLedger(config);
    try {
      await executor.started;
      const again = await ledger.getPlan(before.planId);
      expect(again?.status).toBe('completed');
      expect(again!.digest).toBe(before.digest);
      expect(stateDigest(again!)).toBe(before.state);
      const events = (await ledger.planEvents(before.planId)).map((r) => r.event);
      expect(events).toHaveLength(before.events);
      expect(verifyChain(events).ok).toBe(true);
      const verified = await ledger.verify({ all: true });
      expect(verified.map((v) => [v.planId, v.ok])).toEqual([[before.planId, true]]);
      expect(verified[0]!.stateDigest).toBe(before.state);

      // New work on the restarted stack, one effect per item.
      const next = await ledger.createPlan({ goal: 'after the restart', mode: 'execute', items });
      const done = await ledger.waitFor(next.planId, 'completed', { timeoutMs: 90_000 });
      expect(done.itemOrder.every((id) => done.items[id]!.status === 'completed')).toBe(true);
      const keys = [...effects.effects.keys()].filter((k) => k.startsWith(`${next.planId}/`)).sort();
      expect(keys).toEqual(items.map((i) => `${next.planId}/${i.id}/1`).sort());
    } finally {
      await ledger.close();
      await executor.stop();
    }

    // reset --yes is the one way to wipe: the next up formats new storage and the topics are gone.
    const reset = await stackReset({ dir, confirm: true });
    expect(reset.stopped).toHaveLength(2);
    expect(stackStatus({ dir }).hasData).toBe(false);
    const fresh = await stackUp({ dir, ...ports });
    expect(fresh.reused).toBe(false);
    expect((await listTopics()).filter((t) => t.startsWith(`${config.topicPrefix}.`))).toEqual([]);
    expect(await subjectIds()).toEqual({});
  });
});
