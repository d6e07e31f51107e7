// Hostile records written raw straight onto the commands and events topics: garbage bytes
// (fast-check), an unknown schema id (magic byte + 999999), a known id with bytes of another schema, a
// truncated Avro record, an oversized record, a command misrouted to another partition. The property for
// each: a DLQ record carrying its cause headers (or, for the oversized one, Kafka's own refusal); the
// same partition then serves a normal plan (executor in a child process; the projector projects it too),
// time recorded in test-results/hostile.json; no attempt key invoked twice.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { isLedgerError } from '../../src/errors.js';
import { eventKey, partitionFor } from '../../src/kafka/index.js';
import type { PlanCommand, PlanEvent } from '../../src/plan/index.js';
import { testLogger, waitFor } from '../support/helpers.js';
import { cleanup } from '../projector/support.js';
import { CAUSE_HEADERS, deadLetterOf, hostileStack, maxInvocationsPerAttempt, planIdOn, recordResults, runCases, violations, type CaseRow, type Ending, type HostileStack } from './support.js';

const SEED = 90_003;
const rows: CaseRow[] = [];
let extra: Record<string, unknown> = {};
afterAll(() => recordResults('raw records (test/hostile/records.e2e.test.ts)', rows, extra));

function withSchemaId(id: number, rest: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt8(0, 0);
  header.writeUInt32BE(id, 1);
  return Buffer.concat([header, rest]);
}

const createCommand = (planId: string): PlanCommand =>
  ({ type: 'CreatePlan', commandId: `c-${planId}`, planId, issuedAt: 1, actor: 'hostile', correlationId: `c-${planId}`, data: { goal: 'raw', mode: 'execute', labels: {}, parent: null, items: [] } }) as unknown as PlanCommand;

interface RawCase {
  readonly name: string;
  readonly topic: 'commands' | 'events';
  readonly key: string;
  readonly partition: number;
  readonly value: Buffer;
}

/** Produces the record; the ending is its DLQ record (cause headers checked) or the broker's refusal. */
async function endingOfRecord(s: HostileStack, c: RawCase): Promise<Ending> {
  const topic = c.topic === 'commands' ? s.topics.commands : s.topics.events;
  let offset: string;
  try {
    const [delivered] = await s.writer.send(topic, [{ key: c.key, value: c.value, partition: c.partition }]);
    offset = delivered!.offset;
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    // The broker's refusal, or the client's own before sending (its limit is the topics' max.message.bytes).
    return /larger than the max message size|message size too large|MSG_SIZE_TOO_LARGE/i.test(msg) ? { kind: 'broker', message: msg } : { kind: 'violation', message: `produce failed: ${msg}` };
  }
  try {
    const d = await deadLetterOf(s, { topic, partition: c.partition, offset });
    const missing = CAUSE_HEADERS.filter((h) => !d.headers[h]);
    if (missing.length) return { kind: 'violation', message: `DLQ record without ${missing.join(', ')}` };
    if (d.value === null || !d.value.equals(c.value)) return { kind: 'violation', message: 'DLQ record does not carry the original value' };
    return { kind: 'dlq', code: d.headers['error-code']!, reason: d.headers['error-reason']! };
  } catch (e) {
    return { kind: 'violation', message: `no DLQ record: ${(e as Error).message}`.slice(0, 300) };
  }
}

/** Each stack gets a projector (it dead-letters poison on the events topic). */
const projectors = new WeakMap<HostileStack, ProjectorHandle>();
async function stackWithProjector(): Promise<HostileStack> {
  const s = await hostileStack();
  const projector = await startProjector({ config: s.config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 500, defaultMetrics: false });
  cleanup(() => projector.stop());
  projectors.set(s, projector);
  return s;
}

type RecordMaker = (s: HostileStack, planId: string) => Buffer;
interface RecordCase {
  readonly name: string;
  readonly topic: 'commands' | 'events';
  readonly partition: number;
  readonly planId: string;
  readonly value: RecordMaker;
}

function recordCases(P: number): RecordCase[] {
  const aCommand = (s: HostileStack, planId: string) => s.codec.encodeCommand(createCommand(planId));
  const anEvent = (s: HostileStack, planId: string): Buffer => {
    const e = { type: 'PlanCreated', eventId: `${planId}:1`, planId, seq: 1, occurredAt: 1, actor: 'hostile', causationId: 'c', correlationId: 'c', prevHash: '0'.repeat(64), hash: '0'.repeat(64), schemaVersion: 1, data: { goal: 'g', mode: 'execute', labels: {}, parent: null } };
    return s.codec.encodeEvent(e as unknown as PlanEvent);
  };
  const cases: RecordCase[] = [];
  // At least one byte: librdkafka's Node binding hands a zero-length value to the reader as null, so an
  // empty record is a tombstone to every reader (the erasure tests cover tombstones), not garbage.
  const garbage = fc.sample(fc.tuple(fc.oneof(fc.uint8Array({ minLength: 1, maxLength: 40 }), fc.uint8Array({ minLength: 200, maxLength: 3000, size: 'max' })), fc.integer({ min: 0, max: P - 1 }), fc.constantFrom<'commands' | 'events'>('commands', 'events')), { numRuns: 8, seed: SEED });
  garbage.forEach(([bytes, partition, topic], i) => {
    cases.push({ name: `${topic}: ${bytes.length} garbage bytes`, topic, partition, planId: planIdOn(partition, P, `raw-garbage-${i}`), value: () => Buffer.from(bytes) });
  });
  for (const topic of ['commands', 'events'] as const) {
    const makers: Array<[string, RecordMaker]> = [
      ['unknown schema id 999999', (s, id) => withSchemaId(999_999, aCommand(s, id).subarray(5))],
      ['known id, bytes of another schema', (s, id) => (topic === 'commands' ? withSchemaId(s.codec.schemaIds.command, anEvent(s, id).subarray(5)) : withSchemaId(s.codec.schemaIds.event, aCommand(s, id).subarray(5)))],
      ['truncated Avro record', (s, id) => (topic === 'commands' ? aCommand(s, id) : anEvent(s, id)).subarray(0, 20)],
      ['oversized record (2 MiB)', () => Buffer.alloc(2 * 1024 * 1024, 7)],
    ];
    for (const [label, value] of makers) {
      const partition = cases.length % P;
      cases.push({ name: `${topic}: ${label}`, topic, partition, planId: planIdOn(partition, P, `raw-${topic}-${label.split(' ')[0]}`), value });
    }
  }
  const misrouted = 'raw-misrouted';
  cases.push({ name: 'commands: a CreatePlan on another partition', topic: 'commands', partition: (partitionFor(misrouted, P) + 1) % P, planId: misrouted, value: aCommand });
  return cases;
}

describe('hostile records on the commands and events topics', () => {
  it('every raw record ends in the DLQ with its cause (or is refused by the broker), and its partition serves the next plan', { timeout: 900_000 }, async () => {
    const P = 3;
    const cases = recordCases(P);
    const stacks = await runCases(cases, rows, stackWithProjector, async (s, c) => {
      expect(s.config.partitions).toBe(P);
      const ending = await endingOfRecord(s, { name: c.name, topic: c.topic, partition: c.partition, key: c.topic === 'events' ? eventKey(c.planId, 1) : c.planId, value: c.value(s, c.planId) });
      return { ending, partition: c.partition };
    });
    // The projector kept projecting: the probe plans of the last stack are in its read model.
    const last = stacks.at(-1)!;
    const projector = projectors.get(last)!;
    const probes = [...last.effects.calls.map((c) => c.itemId.split('/')[0]!)].filter((id) => id.startsWith('probe-'));
    expect(probes.length).toBeGreaterThan(0);
    await waitFor(
      async () => {
        // (Not `caughtUp()`: after an executor's transaction the partition end is its commit marker, which
        // the consumer never delivers, so the projector's next offset stays one short of it.)
        const missing = probes.filter((id) => projector.plan(id)?.state?.status !== 'completed');
        if (missing.length === 0) return true;
        throw new Error(JSON.stringify({ missing, partitions: projector.service.partitions() })); // shown when it times out
      },
      { timeoutMs: 30_000, message: 'the projector projected every probe plan of the last stack' },
    );
    const misroutedRow = rows.find((r) => r.name.startsWith('commands: a CreatePlan on another partition'))!;
    expect(misroutedRow.ending).toMatchObject({ kind: 'dlq', reason: 'misrouted' });
    expect(await last.ledger.getPlan('raw-misrouted')).toBeUndefined();
    const invocations = maxInvocationsPerAttempt(...stacks.map((s) => s.effects));
    // verify --all: the plans poisoned on the events topic are reported broken (it detects them); every
    // other plan (probes, plans the commands created) verifies.
    const poisoned = new Set(cases.filter((c) => c.topic === 'events').map((c) => c.planId));
    const verify: Array<{ planId: string; ok: boolean } | { error: string }> = [];
    for (const s of stacks) {
      try {
        // Bounded: a verify that does not come back is a finding, not a hung test.
        const all = await Promise.race([
          s.ledger.verify({ all: true }),
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error('verify --all did not return within 60 s')), 60_000).unref()),
        ]);
        verify.push(...all.map((v) => ({ planId: v.planId, ok: v.ok })));
      } catch (e) {
        verify.push({ error: `${isLedgerError(e) ? e.code : 'not a LedgerError'}: ${(e as Error).message}`.slice(0, 300) });
      }
    }
    extra = { seed: SEED, stacks: stacks.length, maxInvocationsPerAttempt: invocations, verify: verify.filter((v) => !('ok' in v) || !v.ok) };
    expect(verify.filter((v) => !('ok' in v) || (!v.ok && !poisoned.has(v.planId)))).toEqual([]);
    expect(verify.filter((v) => 'ok' in v && v.ok && v.planId.startsWith('probe-')).length).toBeGreaterThan(0);
    expect(violations(rows)).toEqual([]);
    expect(invocations.max).toBe(1);
  });
});
