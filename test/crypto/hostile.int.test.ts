// Hostile and mixed input around payload encryption, against the real stack: a forged envelope from a
// client without the master key fails its item terminally without running the tool; plaintext plans keep
// running (and stay plaintext) on an executor that has a key; an encrypted plan on the same partition
// completes after both; a payload copied into another plan does not open there.
import { randomBytes } from 'node:crypto';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { connectLedger } from '../../src/client/index.js';
import { parseEnvelope } from '../../src/crypto/index.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { defineTool } from '../../src/tools.js';
import { testAdmin, testConfig, testKafka, testLogger } from '../support/helpers.js';

describe('encryption and hostile payloads (real stack)', () => {
  it('forged or foreign envelopes fail terminally without invoking the tool; plaintext and encrypted plans run side by side', async () => {
    const master = randomBytes(32);
    const config = testConfig();
    const calls: unknown[] = [];
    const echo = defineTool({
      name: 'echo',
      async run(input: unknown) {
        calls.push(input);
        return { echoed: input };
      },
    });
    const executor = await startExecutor({ tools: [echo], config, logger: testLogger, masterKey: master, concurrency: 4, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    const withKey = await connectLedger(config, { masterKey: master });
    onTestFinished(() => withKey.close());
    const without = await connectLedger(config);
    onTestFinished(() => without.close());
    await executor.started;

    // All on one partition: the partition must serve the next plan after the hostile ones.
    const base = `hp-${randomBytes(3).toString('hex')}`;
    const ids: string[] = [];
    for (let i = 0; ids.length < 4; i++) if (partitionFor(`${base}-${i}`, config.partitions) === 0) ids.push(`${base}-${i}`);
    const [forgedId, foreignId, plainId, sealedId] = ids as [string, string, string, string];

    const forged = '{"$enc":{"ct":"AAAA","iv":"AAAAAAAAAAAAAAAA","tag":"AAAAAAAAAAAAAAAAAAAAAA==","v":1}}';
    await without.createPlan({ planId: forgedId, goal: 'forged', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'w', tool: 'echo', input: JSON.parse(forged) as unknown }] });
    const f = await without.waitFor(forgedId, (s) => s.items['a']?.status === 'failed', { timeoutMs: 60_000 });
    expect(f.items['a']!.failure?.error?.code).toBe('PAYLOAD_UNREADABLE');

    // An envelope sealed for another plan (copied from the sealed plan's log) does not open in this one.
    const { planId: donor } = await withKey.createPlan({ goal: 'donor', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'w', tool: 'echo', input: { n: 1 } }] });
    await withKey.waitFor(donor, 'completed', { timeoutMs: 60_000 });
    const donorInput = (await withKey.getPlan(donor, { payloads: 'reference' }))!.items['a']!.inputJson;
    expect(parseEnvelope(donorInput)).toBeDefined();
    // This plan has a key of its own (propose mode: it waits while the copied envelope is added to it).
    await withKey.createPlan({ planId: foreignId, goal: 'foreign', mode: 'propose', items: [{ id: 'a', title: 'a', why: 'w', tool: 'echo', input: {} }] });
    await without.addItems(foreignId, [{ id: 'b', title: 'b', why: 'w', tool: 'echo', input: JSON.parse(donorInput) as unknown }]);
    const { digest } = await withKey.propose(foreignId);
    await withKey.approve(foreignId, digest, { by: 'ops' });
    const foreign = await withKey.waitFor(foreignId, (s) => s.items['b']?.status === 'failed', { timeoutMs: 60_000 });
    expect(foreign.items['b']!.failure?.error?.code).toBe('PAYLOAD_UNREADABLE');

    // A plaintext plan on an executor with a key: runs, and stays plaintext in the log.
    await without.createPlan({ planId: plainId, goal: 'plain', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'w', tool: 'echo', input: { plain: true } }] });
    await without.waitFor(plainId, 'completed', { timeoutMs: 60_000 });
    const plainRaw = (await without.getPlan(plainId, { payloads: 'reference' }))!;
    expect(plainRaw.items['a']!.inputJson).toBe('{"plain":true}');
    expect(plainRaw.items['a']!.outputJson).toBe('{"echoed":{"plain":true}}');

    // An encrypted plan on the same partition, after all of that: sealed in the log, readable with the key.
    await withKey.createPlan({ planId: sealedId, goal: 'sealed', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'w', tool: 'echo', input: { sealed: 1 } }] });
    const sealed = await withKey.waitFor(sealedId, 'completed', { timeoutMs: 60_000 });
    expect(sealed.items['a']!.outputJson).toBe('{"echoed":{"sealed":1}}');
    const sealedRaw = (await withKey.getPlan(sealedId, { payloads: 'reference' }))!;
    expect(parseEnvelope(sealedRaw.items['a']!.inputJson)).toBeDefined();
    expect(parseEnvelope(sealedRaw.items['a']!.outputJson)).toBeDefined();
    // A reader without the master key sees the envelopes, not the values.
    expect((await without.getPlan(sealedId))!.items['a']!.outputJson).toBe(sealedRaw.items['a']!.outputJson);

    // The tool ran for the readable inputs only: never for the forged or the foreign envelope.
    expect(calls).toEqual([{ n: 1 }, {}, { plain: true }, { sealed: 1 }]);
    const admin = await testAdmin(testKafka(config));
    for (const t of await admin.listTopics()) if (t.startsWith(`${config.topicPrefix}.`)) admin.track(t);
  }, 180_000);
});
