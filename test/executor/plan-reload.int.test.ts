// An owner reads a finished plan it let go of back from its events (executor/plan-reload.ts), located by
// the record timestamp of the plan's first event. When the records do not carry the times the owner wrote
// (a broker stamping them itself with a clock behind the owner's by more than the margin), the lookup lands
// past the plan's first event: the read sees the plan without its start and reads again from the
// partition's start, so the plan still comes back whole (docs/concepts/item-protocol.md#clocks).
import { describe, expect, it } from 'vitest';
import { firstEventAt, readPlanFromEvents } from '../../executor/plan-reload.js';
import { eventKey, partitionFor } from '../../src/kafka/index.js';
import { stateDigest, type PlanEvent } from '../../src/plan/index.js';
import { commands, items, LedgerWriter, testLedger, type TestLedger } from '../projector/support.js';
import { readAll, testConfig } from '../support/helpers.js';

/** Appends events with record timestamps `shiftMs` off their occurredAt. */
async function appendStamped(l: TestLedger, evs: PlanEvent[], shiftMs: number): Promise<void> {
  await l.writer.send(
    l.topics.events,
    evs.map((e) => ({ key: eventKey(e.planId, e.seq), value: l.codec.encodeEvent(e), partition: partitionFor(e.planId, l.config.partitions), timestamp: String(e.occurredAt + shiftMs) })),
  );
}

describe('reading a plan back from its events (real broker and registry)', () => {
  it('finds the whole plan by its first record timestamp, and from the start when the records are stamped 2 min behind', async () => {
    const config = testConfig({ partitions: 1 });
    const l = await testLedger(config);
    const w = new LedgerWriter(l);
    w.now = Date.now();
    const run = (cmds: Parameters<LedgerWriter['decide']>[0]) => w.decide(cmds);
    // 'exact': stamped with its event times (as an owner writes them); 'behind': stamped 2 min early
    for (const [planId, shift] of [['behind', -120_000], ['exact', 0]] as const) {
      await appendStamped(l, run([commands.create(planId, items(2)), commands.intent(planId, 'it-0')]), shift);
      // another plan's records in between, stamped with the writer's time
      await appendStamped(l, run([commands.create(`${planId}-other`, items(1))]), 0);
      await appendStamped(l, run([commands.commit(planId, 'it-0', 1), commands.settle(planId, 'it-0'), commands.cancel(planId)]), shift);
    }
    const admin = l.admin;
    for (const planId of ['behind', 'exact']) {
      const expected = w.states.get(planId)!;
      expect(expected.status).toBe('cancelled');
      const since = firstEventAt(expected);
      expect(since).toBe(expected.createdAt);
      const back = await readPlanFromEvents({ kafka: l.kafka, admin, codec: l.codec, config, partition: 0, planId, since });
      expect(back?.seq).toBe(expected.seq);
      expect(stateDigest(back!)).toBe(stateDigest(expected));
    }
    // the lookup itself lands past the 'behind' plan's first event: what the read falls back from
    const topic = l.topics.events;
    const behind = w.states.get('behind')!;
    const at = (await admin.fetchTopicOffsetsByTimestamp(topic, behind.createdAt! - 60_000)).find((o) => o.partition === 0)!.offset;
    const firstOffset = (await readAll(l.kafka, topic)).find((r) => r.key?.toString() === eventKey('behind', 1))!.offset;
    expect(BigInt(at)).toBeGreaterThan(BigInt(firstOffset));
  });
});
