// Compaction of the events topic removes exact re-sends (keys are unique per event): projections are the
// same before and after it has run — through restorePartition and through the projector's consumer.
import { describe, expect, it } from 'vitest';
import { startProjector } from '../../projector/index.js';
import { stateDigest } from '../../src/plan/index.js';
import { restorePartition } from '../../src/projection/index.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, commands, items, LedgerWriter, readAll, testLedger, type TestLedger } from './support.js';

async function restoreAll(l: TestLedger): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (let partition = 0; partition < l.config.partitions; partition++) {
    const r = await restorePartition({ kafka: l.kafka, codec: l.codec, config: l.config, partition, logger: testLogger });
    expect(r.stalled.size).toBe(0);
    for (const [id, s] of r.plans) out.set(id, stateDigest(s));
  }
  return out;
}

describe('projection and compaction', () => {
  it('gives the same digests before and after compaction removed re-sent events', async () => {
    const config = testConfig({ partitions: 1 });
    const ledger = await testLedger(config, { compactPromptly: ['events'] });
    const writer = new LedgerWriter(ledger);
    const history = [];
    for (const step of writer.lifecycle('compacted', 5, { failFirstTry: true })) history.push(...(await writer.run(step)));
    // A producer retry after a lost ack: the same records again (same keys, same bytes).
    await writer.append(history.slice(3, 12));
    await writer.append(history.slice(20, 24));
    const expected = writer.replayDigests();

    const before = await restoreAll(ledger);
    expect(before).toEqual(expected);
    const withDuplicates = (await readAll(ledger, ledger.topics.events)).length;
    expect(withDuplicates).toBe(history.length + 13);

    // The active segment is never cleaned, and segments roll only on append: keep appending real events
    // (a second plan's steps) until the cleaner has removed the re-sends.
    let n = 0;
    await waitFor(
      async () => {
        n += 1;
        await writer.run([commands.create(`filler-${n}`, items(1))]);
        const records = await readAll(ledger, ledger.topics.events);
        const keys = records.map((r) => r.key!.toString());
        return new Set(keys).size === keys.length;
      },
      { timeoutMs: 50_000, intervalMs: 400, message: 'compaction removed the re-sent events' },
    );
    const after = await restoreAll(ledger);
    expect(after).toEqual(writer.replayDigests());
    expect(after.get('compacted')).toBe(before.get('compacted'));

    const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, defaultMetrics: false });
    cleanup(() => projector.stop());
    await waitFor(async () => (await projector.caughtUp()) && projector.stateDigests().size === after.size, { message: 'projector caught up' });
    expect(projector.stateDigests()).toEqual(after);
  });
});
