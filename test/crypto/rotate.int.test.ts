// Master key rotation against the real broker: data keys re-wrapped by the new master key open the same
// payloads; an erased plan's key stays destroyed; the previous key still unwraps during the roll.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { topicNames } from '../../src/config.js';
import { openPayload, parseEnvelope, PlanKeyring, rewrapPlanKeys, sealPayload } from '../../src/crypto/index.js';
import { ensurePlanTopics } from '../../src/kafka/index.js';
import { testAdmin, testConfig, testKafka } from '../support/helpers.js';

describe('master key rotation', () => {
  it('re-wraps every live key; payloads sealed before open with the new master key; erased keys stay destroyed', async () => {
    const config = testConfig();
    const kafka = testKafka(config);
    const admin = await testAdmin(kafka);
    await ensurePlanTopics(admin, config);
    const topic = topicNames(config.topicPrefix).planKeys;
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const ring = (master: Buffer, previous?: Buffer) => new PlanKeyring({ kafka, topic, partitions: config.partitions, master, ...(previous ? { previous: [previous] } : {}) });
    const writer = kafka.writer();
    await writer.connect();
    const before = ring(oldKey);
    const plans = ['plan-a', 'plan-b', 'plan-c'];
    const sealed = new Map<string, string>();
    for (const p of plans) {
      const { key, message } = await before.create(p);
      await writer.send(topic, [message!]);
      sealed.set(p, sealPayload(key, p, `{"secret":"${p}"}`));
    }
    await writer.send(topic, [before.tombstone('plan-c')]);

    // During the roll, a process with the new key and the previous one reads both kinds of record.
    expect((await ring(newKey, oldKey).lookup('plan-a')).key).toBeDefined();
    expect((await ring(newKey).lookup('plan-a')).key).toBeUndefined();

    const r = await rewrapPlanKeys({ kafka, topic, from: [oldKey], to: newKey });
    expect(r).toEqual({ rewrapped: 2, current: 0, unreadable: [], erasedMeanwhile: [] });
    const after = ring(newKey);
    for (const p of ['plan-a', 'plan-b']) {
      const { key } = await after.lookup(p);
      expect(openPayload(key!, p, parseEnvelope(sealed.get(p)!)!)).toBe(`{"secret":"${p}"}`);
    }
    expect(await after.lookup('plan-c')).toMatchObject({ key: undefined, destroyed: true });
    // A second run has nothing to do.
    expect(await rewrapPlanKeys({ kafka, topic, from: [oldKey], to: newKey })).toEqual({ rewrapped: 0, current: 2, unreadable: [], erasedMeanwhile: [] });
    await writer.disconnect();
    for (const t of await admin.listTopics()) if (t.startsWith(`${config.topicPrefix}.`)) admin.track(t);
  });
});
