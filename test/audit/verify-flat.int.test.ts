// verify of one plan reads the snapshots and archive partitions from the plan's creation (by record
// timestamp, less the clock margin), not from their start: a partition holding the snapshots of many
// older plans costs nothing more, and the plan's own snapshot is still found and checked.
import { describe, expect, it, onTestFinished } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { newReadStats } from '../../src/kafka/index.js';
import { snapshotMessage } from '../../src/projection/snapshot.js';
import { commands, items, LedgerWriter, testLedger } from '../projector/support.js';
import { testConfig, testLogger } from '../support/helpers.js';

describe('verify of one plan', () => {
  it('skips the snapshots of plans older than it (by record timestamp) and still checks its own', async () => {
    const l = await testLedger(testConfig({ partitions: 1 }));
    const writer = new LedgerWriter(l);
    const PADS = 400;

    // Two hours ago: snapshots (live and archived) of 400 older plans.
    writer.now = Date.now() - 2 * 3600_000;
    const old = String(writer.now);
    const pads = Array.from({ length: PADS }, (_, i) => {
      writer.decide([commands.create(`old-${i}`, items(2))]);
      return { ...snapshotMessage(l.codec, writer.states.get(`old-${i}`)!, 0, '0', writer.now), timestamp: old };
    });
    await l.writer.send(l.topics.snapshots, pads);
    await l.writer.send(l.topics.archive, pads);

    // Now: the plan, run two steps, and its snapshot at its last event.
    writer.now = Date.now();
    await writer.run([commands.create('v', items(3))]);
    await writer.run([commands.intent('v', 'it-0')]);
    await writer.run([commands.commit('v', 'it-0', 1)]);
    const end = await l.admin.fetchTopicOffsets(l.topics.events);
    const lastOffset = String(BigInt(end.find((o) => o.partition === 0)!.high) - 1n);
    await l.writer.send(l.topics.snapshots, [snapshotMessage(l.codec, writer.states.get('v')!, 0, lastOffset, Date.now())]);

    const stats = newReadStats();
    const ledger = await connectLedger(l.config, { logger: testLogger, readStats: stats });
    onTestFinished(() => ledger.close());
    const before = { ...stats.records };
    const v = await ledger.verify('v');
    expect(v.ok, JSON.stringify(v.firstBroken)).toBe(true);
    expect(v.checks.find((c) => c.name === 'snapshots')?.detail).toBe('1 snapshot agree with a replay up to their seq');
    const read = (topic: string) => (stats.records[topic] ?? 0) - (before[topic] ?? 0);
    expect(read(l.topics.snapshots)).toBe(1); // its own snapshot, not the 400 before it
    expect(read(l.topics.archive)).toBe(0);

  });
});
