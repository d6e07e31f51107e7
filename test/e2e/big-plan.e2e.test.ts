// Issue 13: a plan of 20,000 items end to end on the real stack. It is created in batches through the
// client (CreatePlan in propose mode, then AddItems of 2,000 items at a time, then propose + approve),
// run by an executor process with a no-op effect tool whose service logs every idempotency key, killed
// with SIGKILL a third of the way, finished by a second executor that restores the partition from the log,
// and then checked from the log: one ItemAdded, intent, result and completion per item, one effect per
// key (an item recovered by the second owner is invoked again with the same key, never a new one),
// `plan-ledger verify` passes, and the projector's snapshot has the digest of a fold of the log.
// About 70 s on a busy 2-core machine.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProjector } from '../../projector/index.js';
import { LedgerLog } from '../../src/audit/log.js';
import { connectLedger } from '../../src/client/index.js';
import { configToEnv } from '../../src/config.js';
import { evolveAll, stateDigest, type PlanEvent } from '../../src/plan/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { ownsPartitions, spawnExecutor } from '../support/processes.js';

const ITEMS = 20_000;
const BATCH = 2_000;

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

const progress = (what: string, ms: number) => console.log(`big plan: ${what} at ${(ms / 1000).toFixed(1)} s`);
const item = (i: number) => ({ id: `i${i}`, title: `item ${i}`, why: 'a big plan, end to end', tool: 'effect', input: {} });

describe('a plan of 20,000 items', () => {
  it('is created in batches, survives kill -9 of its executor, completes each item once and verifies', { timeout: 900_000 }, async () => {
    const config = testConfig({ partitions: 1 });
    const env = { EFFECTS_URL: effects.url };
    const a = spawnExecutor(config, { label: 'big-A', env });
    const ledger = await connectLedger(config);
    let cleanupProjector = async () => {};
    try {
      await a.waitForLog(ownsPartitions);
      const t0 = Date.now();
      const { planId } = await ledger.createPlan({ goal: 'twenty thousand steps', mode: 'propose', items: Array.from({ length: BATCH }, (_, i) => item(i)) });
      for (let from = BATCH; from < ITEMS; from += BATCH) {
        const out = await ledger.addItems(planId, Array.from({ length: BATCH }, (_, i) => item(from + i)), { timeoutMs: 60_000 });
        expect(out.events.filter((e) => e.type === 'ItemAdded')).toHaveLength(BATCH);
      }
      const { digest } = await ledger.propose(planId);
      await ledger.approve(planId, digest, { by: 'operator' });
      const created = Date.now() - t0;
      progress('created', created);

      // Kill the owner once a third of the items have had their effect.
      await waitFor(() => effects.calls.filter((c) => c.key.startsWith(`${planId}/`)).length >= ITEMS / 3, { timeoutMs: 600_000, intervalMs: 250, message: 'a third of the items ran' });
      progress('killing A', Date.now() - t0);
      a.kill('SIGKILL');
      expect((await a.exited).signal).toBe('SIGKILL');
      const callsBeforeKill = effects.calls.filter((c) => c.key.startsWith(`${planId}/`)).length;
      expect(callsBeforeKill).toBeLessThan(ITEMS);

      const t1 = Date.now();
      const b = spawnExecutor(config, { label: 'big-B', env });
      await b.waitForLog(ownsPartitions, 120_000);
      const restored = await b.waitForLog((l) => l.msg === 'partition restored' && l.component === 'partition-owner', 120_000);
      progress(`B restored in ${String(restored.ms)} ms (${String(restored.eventsReplayed)} events replayed)`, Date.now() - t0);
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 600_000 });
      const finished = Date.now() - t1;
      progress('completed', Date.now() - t0);
      b.kill('SIGTERM');
      expect(Object.keys(done.items)).toHaveLength(ITEMS);
      expect(Object.values(done.items).every((it) => it.status === 'completed' && it.attempts.length === 1)).toBe(true);
      // No projector ran (see below): the new owner restored the plan from its events alone.
      expect(restored.plans).toBe(1);
      expect(restored.fromSnapshot).toBe(0);

      // From the log: exactly one intent, one result and one completion per item, one ItemAdded each.
      const events = (await ledger.planEvents(planId)).map((r) => r.event);
      progress('read events', Date.now() - t0);
      const count = (type: PlanEvent['type']) => {
        const per = new Map<string, number>();
        for (const e of events) {
          if (e.type !== type) continue;
          const id = e.type === 'ItemAdded' ? e.data.item.id : (e.data as { itemId: string }).itemId;
          per.set(id, (per.get(id) ?? 0) + 1);
        }
        return per;
      };
      for (const type of ['ItemAdded', 'IntentRecorded', 'ResultCommitted', 'ItemCompleted'] as const) {
        const per = count(type);
        expect(per.size, type).toBe(ITEMS);
        expect([...per.values()].every((n) => n === 1), `${type} once per item`).toBe(true);
      }
      expect(events.filter((e) => e.type === 'PlanCompleted')).toHaveLength(1);
      expect(events.some((e) => e.actor === 'big-A') && events.some((e) => e.actor === 'big-B')).toBe(true);

      // The effect service: one effect per item, under the item's attempt-1 key. An item in flight at the
      // kill is invoked again by the new owner with the same key (recovering) and the service replays it.
      const mine = effects.calls.filter((c) => c.key.startsWith(`${planId}/`));
      const keys = [...effects.effects.keys()].filter((k) => k.startsWith(`${planId}/`));
      expect(keys).toHaveLength(ITEMS);
      expect(new Set(keys)).toEqual(new Set(Array.from({ length: ITEMS }, (_, i) => `${planId}/i${i}/1`)));
      // Slots are freed when a tool returns, not when its result commits, so at the kill every item whose
      // intent A recorded and whose result had not committed yet is recovered by B with the same key: an
      // item whose ResultCommitted is B's was called by A at most once (not recovering), then once by B
      // (recovering); every other item was called exactly once, by the executor that committed it.
      const intentBy = new Map<string, string>();
      const resultBy = new Map<string, string>();
      for (const e of events) {
        if (e.type === 'IntentRecorded') intentBy.set(e.data.itemId, e.actor);
        if (e.type === 'ResultCommitted') resultBy.set(e.data.itemId, e.actor);
      }
      const callsOf = new Map<string, Array<[string, boolean]>>();
      for (const c of mine) callsOf.set(c.itemId, [...(callsOf.get(c.itemId) ?? []), [c.executorId, c.recovering]]);
      const recovered = new Set([...resultBy].filter(([id, by]) => by === 'big-B' && intentBy.get(id) === 'big-A').map(([id]) => id));
      const repeated = [...callsOf].filter(([, calls]) => calls.length > 1).map(([id]) => id);
      for (let i = 0; i < ITEMS; i++) {
        const id = `i${i}`;
        const calls = callsOf.get(id) ?? [];
        if (recovered.has(id)) {
          expect([[['big-A', false], ['big-B', true]], [['big-B', true]]], id).toContainEqual(calls);
        } else {
          expect(calls, id).toEqual([[resultBy.get(id), false]]);
        }
      }
      expect(mine).toHaveLength(ITEMS + repeated.length);

      // The projector's snapshot of the plan has the digest of a fold of the log. The projector starts only
      // now: while a plan this size runs, it would write the whole plan's snapshot after every batch that
      // completes an item (O(items) per batch: 866 MB of snapshots for this run, 30x its events), and a
      // new owner would read all of them back (restore > 2 min) until the cleaner compacts the topic.
      const folded = stateDigest(evolveAll(undefined, events)!);
      const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 1000, defaultMetrics: false });
      cleanupProjector = () => projector.stop();
      await waitFor(async () => (await projector.caughtUp()) && projector.stateDigests().get(planId) === folded, { timeoutMs: 180_000, intervalMs: 500, message: 'projector caught up' });
      await projector.flush();
      const log = await LedgerLog.open(config, testLogger);
      try {
        const snapshots = await log.readSnapshots(planId);
        expect(snapshots.length).toBeGreaterThan(0);
        const last = snapshots.at(-1)!.snapshot;
        expect(last.seq).toBe(events.length);
        expect(last.stateDigest).toBe(folded);
      } finally {
        await log.close();
      }

      // `plan-ledger verify <planId>`: seq, chain, determinism and every snapshot against a replay.
      const t2 = Date.now();
      const cli = spawnSync(process.execPath, ['bin/plan-ledger.js', 'verify', planId, '--json'], { env: { ...process.env, ...configToEnv(config) }, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
      expect(cli.status, cli.stderr).toBe(0);
      const v = JSON.parse(cli.stdout.trim().split('\n').at(-1)!) as { ok: boolean; events: number; stateDigest: string; checks: { name: string; ok: boolean }[] };
      expect(v.ok).toBe(true);
      expect(v.events).toBe(events.length);
      expect(v.stateDigest).toBe(folded);
      expect(v.checks.map((c) => c.name)).toEqual(expect.arrayContaining(['seq', 'chain', 'determinism', 'snapshots']));
      console.log(JSON.stringify({ items: ITEMS, events: events.length, createdMs: created, callsBeforeKill, restoreMs: restored.ms, eventsReplayed: restored.eventsReplayed, recoverAndFinishMs: finished, recovered: recovered.size, repeated: repeated.length, verifyMs: Date.now() - t2 }));
    } finally {
      await ledger.close();
      await cleanupProjector();
    }
  });
});
