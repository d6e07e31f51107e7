// An erased plan (ErasePlan through its owning executor) disappears from the projector: its read model,
// its HTTP API, its snapshot, and again after the projector restarts from snapshots and watermark.
import { describe, expect, it } from 'vitest';
import { startProjector } from '../../projector/index.js';
import { topicNames } from '../../src/config.js';
import { partitionFor } from '../../src/kafka/index.js';
import { readAll, testKafka, testLogger, waitFor } from '../support/helpers.js';
import { chainOfItems, ledgerWithExecutor } from '../executor/support.js';
import { cleanup } from './support.js';

const TOKEN = 'erase-test-token-0123456789';

describe('projector and erasure', () => {
  it('drops an erased plan from its read model, API and snapshots, also after a restart', async () => {
    const { ledger, config } = await ledgerWithExecutor();
    const start = async () => {
      const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: TOKEN, defaultMetrics: false });
      cleanup(() => p.stop());
      return p;
    };
    const projector = await start();
    const { planId: keep } = await ledger.createPlan({ goal: 'kept', mode: 'execute', items: chainOfItems(2) });
    const { planId: gone } = await ledger.createPlan({ goal: 'erased', mode: 'execute', items: chainOfItems(2) });
    await ledger.waitFor(keep, 'completed');
    await ledger.waitFor(gone, 'completed');
    await waitFor(() => projector.plan(gone)?.state?.status === 'completed' && projector.plan(keep)?.state?.status === 'completed', { message: 'projected' });
    await projector.flush(); // snapshots of both plans are on the snapshots topic now

    await ledger.erase(gone, { by: 'dpo', reason: 'test' });
    await waitFor(() => projector.plan(gone) === undefined, { message: 'the projector dropped the erased plan' });
    const auth = { headers: { authorization: `Bearer ${TOKEN}` } };
    expect((await fetch(`${projector.url}/api/plans/${gone}`, auth)).status).toBe(404);
    const list = (await (await fetch(`${projector.url}/api/plans`, auth)).json()) as unknown;
    expect(JSON.stringify(list)).not.toContain(gone);
    expect(JSON.stringify(list)).toContain(keep);
    await projector.flush();

    // The erased plan had been snapshotted — live, or (a plan that finished within one batch of the
    // projector) straight into the archive — and the latest record under its key, on each topic that held
    // one, is a tombstone (whoever wrote last).
    const kafka = testKafka(config);
    const names = topicNames(config.topicPrefix);
    const recordsOfGone = async (topic: string) => (await readAll(kafka, topic, [partitionFor(gone, config.partitions)])).filter((r) => r.key?.toString() === gone);
    const [live, archived] = [await recordsOfGone(names.snapshots), await recordsOfGone(names.archive)];
    expect([...live, ...archived].some((r) => r.value !== null)).toBe(true);
    for (const ofGone of [live, archived]) if (ofGone.length) expect(ofGone.at(-1)?.value).toBeNull();

    const keepDigest = projector.stateDigests().get(keep);
    await projector.stop();
    const again = await start();
    await waitFor(async () => (await again.caughtUp()) && again.plan(keep)?.state?.status === 'completed', { message: 'restarted projector caught up' });
    expect(again.plan(gone)).toBeUndefined();
    expect(again.stateDigests().get(keep)).toBe(keepDigest);
  });
});
