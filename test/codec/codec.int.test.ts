// The codec against the real registry (Apicurio, Confluent API, BACKWARD): round trips, ids cached with
// no registry call after warm-up, the resolver path for ids seen for the first time, every poison-record
// reason from real bytes, registry outages as UNAVAILABLE, and schema evolution.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildType } from '../../src/codec/avro.js';
import { createCodec, type CodecOptions, type LedgerCodec, type PlanSnapshot } from '../../src/codec/index.js';
import { isLedgerError, type LedgerError } from '../../src/errors.js';
import { readFileSync } from 'node:fs';
import { canonicalJson, commandTypes, evolveAll, planEventSchema, verifyChain, type PlanCommand, type PlanEvent } from '../../src/plan/index.js';
import { scenarioArb, simulate } from '../plan/arbitraries.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { registryProxy } from './registry-proxy.js';

type SchemaJson = { fields: { name: string; type: unknown }[] };

function codecFor(config: { registryUrl: string; topicPrefix: string }, extra: Partial<CodecOptions> = {}): Promise<LedgerCodec> {
  return createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix, logger: testLogger, ...extra });
}

/** Plans simulated from fixed seeds: every event type the domain produces, and the commands behind them. */
function history(): { events: PlanEvent[]; commands: PlanCommand[] } {
  const events: PlanEvent[] = [];
  const commands: PlanCommand[] = [];
  fc.sample(scenarioArb('plan-codec'), { seed: 7, numRuns: 12 }).forEach((scenario, i) => {
    const sim = simulate({ ...scenario, planId: `plan-codec-${i}` });
    events.push(...sim.events);
    for (const s of sim.steps) if ((commandTypes as readonly string[]).includes(s.command.type)) commands.push(s.command as PlanCommand);
  });
  return { events, commands };
}

function snapshot(i: number): PlanSnapshot {
  return { planId: `plan-${i}`, partition: i % 3, seq: 10 + i, eventsOffset: 1000 + i, stateDigest: `d${i}`, stateJson: `{"seq":${10 + i}}`, schemaVersion: 1, takenAt: 1_700_000_000_000 + i };
}

/** PlanEvent v2: ItemAdded gains an optional `note` (BACKWARD compatible). */
function eventSchemaWithNote(): SchemaJson {
  const v2 = structuredClone(planEventSchema) as unknown as SchemaJson;
  const payload = v2.fields.find((f) => f.name === 'payload')!.type as { name: string; fields: unknown[] }[];
  payload.find((b) => b.name === 'ItemAdded')!.fields.push({ name: 'note', type: ['null', 'string'], default: null });
  return v2;
}

/** PlanEvent v2: a new event type appended to the payload union (BACKWARD compatible). */
function eventSchemaWithArchived(): SchemaJson {
  const v2 = structuredClone(planEventSchema) as unknown as SchemaJson;
  (v2.fields.find((f) => f.name === 'payload')!.type as unknown[]).push({
    type: 'record',
    name: 'ItemArchived',
    namespace: 'planledger',
    fields: [
      { name: 'itemId', type: 'string' },
      { name: 'archivedBy', type: 'string' },
    ],
  });
  return v2;
}

async function rejection(p: Promise<unknown>): Promise<LedgerError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!isLedgerError(e)) throw new Error(`expected a LedgerError, got ${String(e)}`);
  return e;
}

const withHeader = (id: number, body: Buffer) => {
  const b = Buffer.alloc(5 + body.length);
  b.writeInt32BE(id, 1);
  body.copy(b, 5);
  return b;
};

describe('codec against the real registry', () => {
  it('registers the three subjects idempotently and round-trips events, commands and snapshots', async () => {
    const config = testConfig();
    const codec = await codecFor(config);
    const again = await codecFor(config);
    expect(again.schemaIds).toEqual(codec.schemaIds);
    expect(new Set(Object.values(codec.schemaIds)).size).toBe(3);
    expect(codec.subjects).toEqual({
      event: `${config.topicPrefix}.plan-events-value`,
      command: `${config.topicPrefix}.plan-commands-value`,
      snapshot: `${config.topicPrefix}.plan-snapshots-value`,
    });

    const { events, commands } = history();
    expect(new Set(events.map((e) => e.type)).size).toBeGreaterThanOrEqual(10);
    const decoded: PlanEvent[] = [];
    for (const e of events) {
      const bytes = codec.encodeEvent(e);
      expect(bytes[0]).toBe(0);
      expect(bytes.readInt32BE(1)).toBe(codec.schemaIds.event);
      const d = await again.decodeEvent(bytes); // another instance: same ids, no resolver
      expect(canonicalJson(d)).toBe(canonicalJson(e));
      decoded.push(d);
    }
    for (const plan of new Set(events.map((e) => e.planId))) {
      expect(verifyChain(decoded.filter((e) => e.planId === plan))).toMatchObject({ ok: true });
    }
    expect(commands.length).toBeGreaterThan(20);
    for (const c of commands) expect(canonicalJson(await codec.decodeCommand(codec.encodeCommand(c)))).toBe(canonicalJson(c));
    for (let i = 0; i < 5; i++) expect(await codec.decodeSnapshot(codec.encodeSnapshot(snapshot(i)))).toStrictEqual(snapshot(i));

    const schema = await codec.schemaFor(codec.schemaIds.event);
    expect(schema).toEqual(planEventSchema);
    expect(Object.isFrozen(schema)).toBe(true);
  });

  it('sets BACKWARD on a new subject, refuses a subject someone set otherwise naming it, and takes a caller\'s SchemaRegistry client', async () => {
    const config = testConfig();
    const codec = await codecFor(config);
    const configOf = async (subject: string) => (await (await fetch(`${config.registryUrl}/config/${encodeURIComponent(subject)}`)).json()) as { compatibilityLevel?: string };
    for (const subject of Object.values(codec.subjects)) expect((await configOf(subject)).compatibilityLevel).toBe('BACKWARD');

    // Another tool set the events subject's rule to NONE: the ledger does not register under a rule it did not choose.
    const events = codec.subjects.event;
    const put = await fetch(`${config.registryUrl}/config/${encodeURIComponent(events)}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ compatibility: 'NONE' }) });
    expect(put.status).toBe(200);
    expect((await configOf(events)).compatibilityLevel).toBe('NONE');
    const refused = await rejection(codecFor(config));
    expect(refused.code).toBe('SCHEMA');
    expect(refused.details).toMatchObject({ reason: 'incompatible', subject: events });
    expect(refused.message).toContain('BACKWARD != NONE');

    // A caller's own client (the library's class) is used through its REST client: same ids.
    const { SchemaRegistry } = await import('@kafkajs/confluent-schema-registry');
    const fresh = testConfig();
    const own = await createCodec({ registryUrl: fresh.registryUrl, topicPrefix: fresh.topicPrefix, registry: new SchemaRegistry({ host: fresh.registryUrl }) });
    const plain = await codecFor(fresh);
    expect(own.schemaIds).toEqual(plain.schemaIds);
  });

  it('lets several processes register the same new subjects at once (executors starting together)', async () => {
    // Each of the four sees a "first registration" and sets the subject's compatibility rule; the
    // registry refuses all but one of those rule writes with 409 — the codec must still come up. The
    // race does not happen every time, so a few fresh prefixes.
    for (let round = 0; round < 6; round++) {
      const config = testConfig();
      const codecs = await Promise.all(Array.from({ length: 4 }, () => createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix })));
      const ids = codecs.map((c) => c.schemaIds);
      expect(ids.every((x) => x.event === ids[0]!.event && x.command === ids[0]!.command && x.snapshot === ids[0]!.snapshot)).toBe(true);
      expect(ids[0]!.event).toBeGreaterThan(0);
    }
  });

  it('makes no registry call after warm-up; a new writer id is fetched once and read through a resolver', async () => {
    const config = testConfig();
    const proxy = await registryProxy(config.registryUrl);
    const codec = await codecFor({ ...config, registryUrl: proxy.url });
    expect(proxy.requests.length).toBeGreaterThanOrEqual(3); // the registrations went through the proxy
    proxy.requests.length = 0;

    const { events, commands } = history();
    for (let round = 0; round < 3; round++) {
      for (const e of events) expect((await codec.decodeEvent(codec.encodeEvent(e))).seq).toBe(e.seq);
      for (const c of commands) expect((await codec.decodeCommand(codec.encodeCommand(c))).commandId).toBe(c.commandId);
      expect((await codec.decodeSnapshot(codec.encodeSnapshot(snapshot(round)))).seq).toBe(10 + round);
    }
    // A command on the events topic is judged from the codec's own ids: no call either.
    const wrong = await rejection(codec.decodeEvent(codec.encodeCommand(commands[0]!)));
    expect(wrong.details['reason']).toBe('wrong_schema');
    for (const id of Object.values(codec.schemaIds)) await codec.schemaFor(id);
    expect(proxy.requests).toEqual([]);

    // Another instance writes with a schema version this one has never seen (v2: ItemAdded.note).
    const v2 = await codecFor(config, { schemas: { event: eventSchemaWithNote() } });
    expect(v2.schemaIds.event).not.toBe(codec.schemaIds.event);
    const added = events.find((e) => e.type === 'ItemAdded')!;
    const bytes = v2.encodeEvent({ ...added, data: { ...added.data, note: 'from v2' } } as PlanEvent);
    const concurrent = await Promise.all(Array.from({ length: 20 }, () => codec.decodeEvent(bytes)));
    for (let i = 0; i < 20; i++) concurrent.push(await codec.decodeEvent(bytes));
    for (const d of concurrent) expect(d).toStrictEqual(concurrent[0]);
    expect(canonicalJson(concurrent[0])).toBe(canonicalJson(added)); // v1 reader: the new field is skipped
    expect(proxy.requests).toEqual([`GET ${new URL(proxy.url).pathname}/schemas/ids/${v2.schemaIds.event}`]);
    // schemaFor gives the registry's text of the writer schema (Apicurio drops redundant namespaces):
    // the same schema (Parsing Canonical Form) with its attributes, e.g. the enum default, kept.
    const fetched = await codec.schemaFor(v2.schemaIds.event);
    expect(buildType(fetched).fingerprint().equals(buildType(eventSchemaWithNote()).fingerprint())).toBe(true);
    expect(JSON.stringify(fetched)).toContain('"default":"INVALID_STATE"');
    expect(proxy.requests).toHaveLength(1);
  });

  it('turns every kind of poison record into a SCHEMA error with its reason, and keeps decoding good ones', async () => {
    const config = testConfig();
    const codec = await codecFor(config);
    const { events, commands } = history();
    const good = codec.encodeEvent(events[1]!);
    const magic1 = Buffer.from(good);
    magic1[0] = 1;
    const archivedWriter = await codecFor(config, { schemas: { event: eventSchemaWithArchived() } });
    const archived = archivedWriter.encodeEvent({ ...events[1]!, type: 'ItemArchived', data: { itemId: 'i0', archivedBy: 'ops' } } as unknown as PlanEvent);
    const knownFromV2 = archivedWriter.encodeEvent(events[1]!);

    const cases: Array<[string, Buffer, (b: Buffer) => Promise<unknown>, string]> = [
      ['garbage', Buffer.from('definitely not avro'), (b) => codec.decodeEvent(b), 'bad_magic'],
      ['magic byte 1', magic1, (b) => codec.decodeEvent(b), 'bad_magic'],
      ['three bytes', Buffer.from([0, 0, 0]), (b) => codec.decodeEvent(b), 'too_short'],
      ['empty', Buffer.alloc(0), (b) => codec.decodeCommand(b), 'too_short'],
      ['schema id 999999', withHeader(999999, good.subarray(5)), (b) => codec.decodeEvent(b), 'unknown_schema_id'],
      ['a command on the events topic', codec.encodeCommand(commands[0]!), (b) => codec.decodeEvent(b), 'wrong_schema'],
      ['an event on the snapshots topic', good, (b) => codec.decodeSnapshot(b), 'wrong_schema'],
      ['truncated Avro', good.subarray(0, good.length - 3), (b) => codec.decodeEvent(b), 'corrupt'],
      ['trailing bytes', Buffer.concat([good, Buffer.from([1, 2])]), (b) => codec.decodeEvent(b), 'corrupt'],
      ['a negative string length', withHeader(codec.schemaIds.snapshot, Buffer.from([0x03, 0x41])), (b) => codec.decodeSnapshot(b), 'corrupt'],
      ['garbage body with a valid id', withHeader(codec.schemaIds.event, Buffer.from([0x02, 0x41, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x7e])), (b) => codec.decodeEvent(b), 'corrupt'],
      ['an array block larger than the record', withHeader(codec.schemaIds.event, Buffer.from([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 26, 0, 0xfe, 0xff, 0xff, 0xff, 0x07])), (b) => codec.decodeEvent(b), 'corrupt'],
      ['a newer writer\'s event type', archived, (b) => codec.decodeEvent(b), 'unknown_branch'],
    ];
    for (const [label, bytes, decode, reason] of cases) {
      const e = await rejection(decode(bytes));
      expect(e.code, label).toBe('SCHEMA');
      expect(e.details['reason'], `${label}: ${e.message}`).toBe(reason);
    }
    const unknownBranch = await rejection(codec.decodeEvent(archived));
    expect(unknownBranch.details).toMatchObject({ type: 'ItemArchived' });
    const unknownId = await rejection(codec.decodeEvent(withHeader(999999, good.subarray(5))));
    expect(unknownId.details).toMatchObject({ schemaId: 999999, status: 404 });

    // Nothing was poisoned: good records of both writers still decode.
    expect(canonicalJson(await codec.decodeEvent(good))).toBe(canonicalJson(events[1]));
    expect(canonicalJson(await codec.decodeEvent(knownFromV2))).toBe(canonicalJson(events[1]));
  });

  // Registering is idempotent, so a registration the registry never answers is asked again, twice at most:
  // one that is answered the second time succeeds; a registry that never answers ends in UNAVAILABLE after
  // three asks per subject, not in a wait without end.
  it('asks a registration the registry never answered again, three times at most, then fails UNAVAILABLE', async () => {
    const config = testConfig();
    const silent = await registryProxy(config.registryUrl);
    silent.mode = 'hang';
    const never = await rejection(codecFor({ ...config, registryUrl: silent.url }, { registryTimeoutMs: 300 }));
    expect(never.code).toBe('UNAVAILABLE');
    expect(never.message).toMatch(/did not answer registering/);
    // Each ask's first request hangs, so each ask is one request naming the subject.
    const failed = /registering (\S+) within/.exec(never.message)![1]!;
    expect(silent.requests.filter((r) => r.includes(failed))).toHaveLength(3);

    const late = await registryProxy(config.registryUrl);
    late.mode = 'hang';
    const started = codecFor({ ...config, registryUrl: late.url }, { registryTimeoutMs: 1_000 });
    await waitFor(() => late.requests.length > 0, { message: 'the first registration reached the registry' });
    late.mode = 'pass'; // the first asks stay unanswered; the asks after them are answered
    const codec = await started;
    expect(codec.schemaIds.event).toBeGreaterThan(0);
  });

  it('reports an unreachable or failing registry as UNAVAILABLE (retry), and decodes once it is back', async () => {
    const config = testConfig();
    const down = await rejection(codecFor({ ...config, registryUrl: 'http://127.0.0.1:1/apis/ccompat/v7' }));
    expect(down.code).toBe('UNAVAILABLE');
    expect(down.message).toMatch(/127\.0\.0\.1:1/);
    expect(down.cause).toBeDefined();

    const proxy = await registryProxy(config.registryUrl);
    const codec = await codecFor({ ...config, registryUrl: proxy.url }, { registryTimeoutMs: 2_000 });
    const writer = await codecFor(config, { schemas: { event: eventSchemaWithNote() } });
    const [first] = history().events;
    const bytes = writer.encodeEvent(first!);

    for (const mode of ['reset', 'error503', 'hang'] as const) {
      proxy.mode = mode;
      const e = await rejection(codec.decodeEvent(bytes));
      expect(e.code, `${mode}: ${e.message}`).toBe('UNAVAILABLE');
      expect(isLedgerError(e, 'SCHEMA')).toBe(false);
    }
    proxy.mode = 'pass';
    expect(canonicalJson(await codec.decodeEvent(bytes))).toBe(canonicalJson(first));
  });
});

describe('schema evolution under BACKWARD', () => {
  it('accepts an optional field, resolves v1 and v2 records both ways, and refuses a required field naming the subject', async () => {
    const config = testConfig();
    const v1 = await codecFor(config);
    const v2 = await codecFor(config, { schemas: { event: eventSchemaWithNote() } });
    expect(v2.schemaIds.event).not.toBe(v1.schemaIds.event);
    expect(v2.schemaIds.command).toBe(v1.schemaIds.command);

    const { events } = history();
    const added = events.find((e) => e.type === 'ItemAdded')!;
    // v1 record, v2 reader: the default fills the new field.
    const readByV2 = await v2.decodeEvent(v1.encodeEvent(added));
    expect(readByV2.data).toStrictEqual({ ...added.data, note: null });
    // v2 record, v1 reader: the new field is skipped.
    const withNote = { ...added, data: { ...added.data, note: 'added in v2' } } as PlanEvent;
    expect(await v2.decodeEvent(v2.encodeEvent(withNote))).toStrictEqual(await v2.decodeEvent(v2.encodeEvent(withNote)));
    expect(canonicalJson(await v1.decodeEvent(v2.encodeEvent(withNote)))).toBe(canonicalJson(added));
    // Other types read identically either way.
    for (const e of events.slice(0, 40)) {
      if (e.type === 'ItemAdded') continue;
      expect(canonicalJson(await v2.decodeEvent(v1.encodeEvent(e)))).toBe(canonicalJson(e));
      expect(canonicalJson(await v1.decodeEvent(v2.encodeEvent(e)))).toBe(canonicalJson(e));
    }

    const v3 = eventSchemaWithNote();
    const payload = v3.fields.find((f) => f.name === 'payload')!.type as { name: string; fields: unknown[] }[];
    payload.find((b) => b.name === 'ItemAdded')!.fields.push({ name: 'priority', type: 'int' });
    const refused = await rejection(codecFor(config, { schemas: { event: v3 } }));
    expect(refused.code).toBe('SCHEMA');
    expect(refused.details).toMatchObject({ reason: 'incompatible', subject: `${config.topicPrefix}.plan-events-value` });
    expect(refused.message).toContain(`${config.topicPrefix}.plan-events-value`);
  });

  it('the contract before approval policies (v1) and today\'s register in order on one subject; v1 bytes decode, verify and replay to the pinned digest', async () => {
    const v1log = JSON.parse(readFileSync(new URL('../fixtures/v1-plan-log.json', import.meta.url), 'utf8')) as { schema: object; plans: { planId: string; avro: string[] }[] };
    const config = testConfig();
    const old = await codecFor(config, { schemas: { event: v1log.schema } });
    const today = await codecFor(config); // PlanCreated/PlanProposed.policy, ApprovalRecorded, two RejectionCode symbols: accepted as BACKWARD
    expect(today.schemaIds.event).not.toBe(old.schemaIds.event);
    const plan = v1log.plans.find((p) => p.planId === 'golden-exec')!;
    // Exactly what a v1 executor wrote: the v1 schema id and the v1 Avro body.
    const events = await Promise.all(plan.avro.map((b64) => today.decodeEvent(withHeader(old.schemaIds.event, Buffer.from(b64, 'base64')))));
    expect(events.map((e) => e.type)).toEqual(['PlanCreated', 'ItemAdded', 'ItemAdded']);
    expect(events[0]!.type === 'PlanCreated' && events[0]!.data.policy).toBeNull();
    expect(verifyChain(events)).toEqual({ ok: true, head: '2fccfe359ae73592253ad463260869adc7fd071519ef45d1c2ad956e36234473', seq: 3 });
    expect(evolveAll(undefined, events)!.digest).toBe('229f922dc7b593c2f021934bbba798f66faf12da7ae2fca503a1d5c3005eef17');
  });
});
