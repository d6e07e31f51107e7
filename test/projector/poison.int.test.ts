// Poison records on the events topic: dead-lettered with the original bytes and the cause, the plan
// stalled, the service healthy, every other plan unaffected — also across a restart.
import { describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { partitionFor } from '../../src/kafka/index.js';
import { readDeadLetters } from '../../src/projection/index.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { cleanup, commands, items, LedgerWriter, testLedger, type TestLedger } from './support.js';

async function projector(config: ReturnType<typeof testConfig>): Promise<ProjectorHandle> {
  const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false });
  cleanup(() => p.stop());
  return p;
}

async function deadLetters(l: TestLedger) {
  const all = [];
  for (let partition = 0; partition < l.config.partitions; partition++) {
    all.push(...(await readDeadLetters({ kafka: l.kafka, topic: l.topics.dlq, partition })).map((d) => ({ ...d, partition })));
  }
  return all;
}

describe('projector poison records', () => {
  it('dead-letters undecodable and inapplicable records, stalls only their plans, stays healthy, and remembers after a restart', async () => {
    const config = testConfig();
    const ledger = await testLedger(config);
    const writer = new LedgerWriter(ledger);
    const plans = ['garbage', 'unknown-id', 'command', 'gap', 'healthy'];
    await writer.run(plans.map((id) => commands.create(id, items(3))));
    await writer.run(plans.map((id) => commands.intent(id, 'it-0')));

    const p = await projector(config);
    await waitFor(async () => (await p.caughtUp()) && p.stateDigests().size === 5, { message: 'five plans projected' });

    // garbage bytes; a valid header with schema id 999999; a command on the events topic; an event with a seq gap.
    const garbage = Buffer.from('definitely not avro \u0001\u0002', 'utf8');
    const nextEvent = writer.decide([commands.commit('unknown-id', 'it-0', 1)])[0]!;
    const unknownId = Buffer.concat([Buffer.from([0, 0x00, 0x0f, 0x42, 0x3f]), ledger.codec.encodeEvent(nextEvent).subarray(5)]);
    const command = ledger.codec.encodeCommand({ commandId: 'cmd-x', planId: 'command', issuedAt: 0, actor: 'rogue', correlationId: 'x', type: 'CancelPlan', data: { reason: 'rogue' } });
    const [gapCommit, gapSettle] = writer.decide([commands.commit('gap', 'it-0', 1), commands.settle('gap', 'it-0')]);
    await writer.appendRaw('garbage', 6, garbage);
    await writer.appendRaw('unknown-id', 6, unknownId);
    await writer.appendRaw('command', 6, command);
    await writer.append([gapSettle!]); // seq 7 without seq 6: evolve refuses it
    void gapCommit;

    await waitFor(() => plans.slice(0, 4).every((id) => p.plan(id)?.stalled), { timeoutMs: 30_000, message: 'four plans stalled' });
    const stalled = Object.fromEntries(plans.slice(0, 4).map((id) => [id, p.plan(id)!.stalled!]));
    expect(stalled['garbage']).toMatchObject({ code: 'SCHEMA', reason: 'bad_magic' });
    expect(stalled['unknown-id']).toMatchObject({ code: 'SCHEMA', reason: 'unknown_schema_id' });
    expect(stalled['command']).toMatchObject({ code: 'SCHEMA', reason: 'wrong_schema' });
    expect(stalled['gap']).toMatchObject({ code: 'INVALID_EVENT', reason: 'seq_gap', seq: 7 });
    for (const id of plans.slice(0, 4)) expect(p.plan(id)!.state!.seq).toBe(5); // not advanced past the hole

    const letters = await waitFor(async () => {
      const d = await deadLetters(ledger);
      return d.length === 4 ? d : undefined;
    }, { message: 'four DLQ records' });
    const byKey = new Map(letters.map((d) => [d.key!.toString(), d]));
    expect(byKey.get('garbage:6')!.value).toEqual(garbage);
    expect(byKey.get('unknown-id:6')!.value).toEqual(unknownId);
    expect(byKey.get('command:6')!.value).toEqual(command);
    expect(byKey.get('gap:7')!.value).toEqual(ledger.codec.encodeEvent(gapSettle!));
    for (const [key, d] of byKey) {
      const planId = key.slice(0, key.lastIndexOf(':'));
      expect(d.partition).toBe(partitionFor(planId, config.partitions));
      expect(d.cause).toMatchObject({ sourceTopic: ledger.topics.events, sourcePartition: d.partition, code: stalled[planId]!.code, reason: stalled[planId]!.reason });
      expect(d.cause!.sourceOffset).toBe(stalled[planId]!.offset);
      expect(d.cause!.message.length).toBeGreaterThan(10);
    }

    // Healthy service, metrics count the DLQ records, the healthy plan keeps going.
    const health = await fetch(`${p.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', dlqRecords: 4 });
    const metrics = await (await fetch(`${p.url}/metrics`)).text();
    const dlqTotal = [...metrics.matchAll(/^plan_ledger_projector_dlq_records_total\{[^}]*\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
    expect(dlqTotal).toBe(4);
    expect(metrics).toMatch(/plan_ledger_projector_plans\{status="stalled"\} 4/);

    await writer.run([commands.commit('healthy', 'it-0', 1), commands.settle('healthy', 'it-0'), commands.intent('healthy', 'it-1')]);
    await writer.append(writer.decide([commands.intent('gap', 'it-1')])); // after the hole: held back, not applied
    await waitFor(() => p.plan('healthy')?.state?.seq === 8, { message: 'healthy plan advanced' });
    await waitFor(() => p.plan('gap')?.stalled?.heldEvents === 1, { message: 'event after the hole held' });
    expect(p.plan('gap')!.state!.seq).toBe(5);

    // Restart: the stalls come back from the DLQ, nothing is dead-lettered twice.
    await p.stop();
    const again = await projector(config);
    await waitFor(async () => (await again.caughtUp()) && again.plan('healthy')?.state?.seq === 8, { message: 'restarted projector caught up' });
    for (const id of plans.slice(0, 4)) expect(again.plan(id)?.stalled).toMatchObject({ code: stalled[id]!.code, reason: stalled[id]!.reason, offset: stalled[id]!.offset });
    expect(again.plan('garbage')!.state!.seq).toBe(5);
    expect(await deadLetters(ledger)).toHaveLength(4);
  });
});
