// Guarantee 4 (docs/design.md#guarantees): a broker outage is a pause. The broker of a private local stack is killed
// (SIGKILL) mid-plan and started again on the same storage; the executor and the client ride it out,
// the plan completes with one effect per item, and no accepted event is lost (chain intact, seq contiguous).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { loadConfig, type LedgerConfig } from '../../src/config.js';
import { isLedgerError } from '../../src/errors.js';
import { createLogger } from '../../src/logging.js';
import { verifyChain } from '../../src/plan/index.js';
import { restartBroker, restartRegistry, startBroker, stackDown, stackUp, stopBroker } from '../../stack/stack.js';
import { startExecutor } from '../../executor/index.js';
import { startProjector } from '../../projector/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { tools } from '../fixtures/tools.js';
import { freeStackPorts, randomPrefix, waitFor } from '../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-outage-'));
let config: LedgerConfig;
let effects: EffectsService;

beforeAll(async () => {
  const up = await stackUp({ dir, ...(await freeStackPorts()) });
  config = loadConfig({ brokers: up.info.brokers, registryUrl: up.info.registryUrl, topicPrefix: randomPrefix('outage'), partitions: 3 });
  effects = await new EffectsService().start();
  process.env.EFFECTS_URL = effects.url;
}, 180_000);

afterAll(async () => {
  await effects?.stop();
  await stackDown({ dir });
}, 60_000);

describe('broker outage', () => {
  it('the plan running across a broker kill and restart completes with one effect per item and an intact log', async () => {
    const executor = await startExecutor({ tools, config, executorId: 'outage-exec', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 });
    const ledger = await connectLedger(config);
    try {
      await executor.started;
      const items = Array.from({ length: 10 }, (_, i) => ({
        id: `s${i}`,
        title: `step ${i}`,
        why: 'spans the outage',
        tool: 'effect',
        input: { holdMs: 300 },
        dependsOn: i ? [`s${i - 1}`] : [],
      }));
      const { planId } = await ledger.createPlan({ goal: 'survive a broker restart', mode: 'execute', items });
      await waitFor(() => effects.calls.some((c) => c.key === `${planId}/s2/1`), { message: 'third step started', timeoutMs: 30_000 });

      await restartBroker({ dir, hard: true, downMs: 3000 });

      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 150_000 });
      expect(done.itemOrder.every((id) => done.items[id]!.status === 'completed')).toBe(true);
      // One effect per item: every key that reached the service belongs to attempt 1 of its item.
      const keys = [...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`)).sort();
      expect(keys).toEqual(items.map((i) => `${planId}/${i.id}/1`).sort());
      const events = (await ledger.planEvents(planId)).map((r) => r.event);
      expect(verifyChain(events).ok).toBe(true);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.filter((e) => e.type === 'ItemCompleted')).toHaveLength(10);

      // And the ledger takes new work after the outage.
      const next = await ledger.createPlan({ goal: 'after the outage', mode: 'execute', items: [{ id: 'x', title: 'x', why: 'new work', tool: 'noop' }] });
      await ledger.waitFor(next.planId, 'completed', { timeoutMs: 60_000 });
    } finally {
      await ledger.close();
      await executor.stop();
    }
  });

  it('an executor and a projector started while the registry restarts wait for it, saying so, and then serve', async () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    // restartRegistry kills the registry at once (SIGKILL) and starts a new JVM, which takes seconds to answer.
    const restarting = restartRegistry({ dir, hard: true });
    const [executor, projector] = await Promise.all([
      startExecutor({ tools, config, executorId: 'registry-late-exec', logger, sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 }),
      startProjector({ config, logger, port: 0, apiToken: null, openReads: true, groupId: `${config.topicPrefix}.projector-registry-late`, defaultMetrics: false }),
    ]);
    await restarting;
    const ledger = await connectLedger(config);
    try {
      // Both asked again while the registry was down (before, each exited with UNAVAILABLE here).
      const waited = lines.map((l) => JSON.parse(l) as { msg: string; executorId?: string }).filter((l) => l.msg === 'schema registry unavailable at start-up; asking again');
      expect(waited.filter((l) => l.executorId === 'registry-late-exec').length).toBeGreaterThanOrEqual(1);
      expect(waited.filter((l) => l.executorId === undefined).length).toBeGreaterThanOrEqual(1);
      await executor.started;
      const { planId } = await ledger.createPlan({ goal: 'after the registry came back', mode: 'execute', items: [{ id: 'x', title: 'x', why: 'served by the executor that waited', tool: 'effect', input: {} }] });
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
      expect(done.items['x']!.status).toBe('completed');
      expect([...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`))).toEqual([`${planId}/x/1`]);
      await waitFor(async () => (await fetch(`${projector.url}/api/plans/${planId}`)).status === 200, { message: 'the projector that waited serves the plan', timeoutMs: 60_000 });
    } finally {
      await ledger.close();
      await projector.stop();
      await executor.stop();
    }
  }, 300_000);

  it('a command the broker could not take is written again under its commandId until the caller\'s timeout: decided once after a 35 s outage, UNAVAILABLE when the outage outlasts the timeout', async () => {
    const executor = await startExecutor({ tools, config, executorId: 'outage-exec-2', sessionTimeoutMs: 10_000, heartbeatIntervalMs: 1000 });
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const ledger = await connectLedger(config, { logger });
    const item = (id: string) => ({ id, title: id, why: 'written during an outage', tool: 'effect', input: {} });
    try {
      await executor.started;
      // Warm: the client has its connections, metadata and producer id before the broker goes away.
      const warm = await ledger.createPlan({ goal: 'before the outage', mode: 'execute', items: [item('w')] });
      await ledger.waitFor(warm.planId, 'completed', { timeoutMs: 60_000 });

      await stopBroker({ dir, hard: true });
      // An outage longer than the caller's timeout: a LedgerError that says so, not a raw client error.
      const short = await ledger.createPlan({ planId: 'outage-short', goal: 'times out', mode: 'execute', items: [item('a')] }, { timeoutMs: 4_000 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isLedgerError(short, 'UNAVAILABLE'), String(short)).toBe(true);
      expect((short as Error).message).toMatch(/Kafka did not take CreatePlan for plan outage-short within 4000 ms/);

      // An outage longer than librdkafka's 30 s message timeout, shorter than the caller's: the first
      // write fails inside the client (before this client wrote it again, that error reached the caller).
      const started = Date.now();
      const long = ledger.createPlan({ planId: 'outage-long', goal: 'rides it out', mode: 'execute', items: [item('b')] }, { timeoutMs: 150_000 });
      long.catch(() => {});
      await new Promise((r) => setTimeout(r, 35_000));
      await startBroker({ dir });
      const decided = await long;
      expect(Date.now() - started).toBeGreaterThan(35_000);
      expect(decided.events.filter((e) => e.type === 'PlanCreated')).toHaveLength(1);
      const rewrites = lines.filter((l) => l.includes('writing it again under the same commandId') && l.includes('outage-long'));
      expect(rewrites.length).toBeGreaterThanOrEqual(1);

      const done = await ledger.waitFor('outage-long', 'completed', { timeoutMs: 60_000 });
      expect(done.items['b']!.status).toBe('completed');
      // Decided once, one effect: every copy of the command after the first is a no-op for its owner.
      const events = (await ledger.planEvents('outage-long')).map((r) => r.event);
      for (const type of ['PlanCreated', 'ItemCompleted', 'PlanCompleted']) expect(events.filter((e) => e.type === type), type).toHaveLength(1);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      expect(verifyChain(events).ok).toBe(true);
      expect([...effects.effects.keys()].filter((k) => k.startsWith('outage-long/'))).toEqual(['outage-long/b/1']);
    } finally {
      await ledger.close();
      await executor.stop();
    }
  }, 300_000);
});
