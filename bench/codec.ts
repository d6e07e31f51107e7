/**
 * Codec throughput: encode and decode ops/s of the ledger codec vs raw avsc (`toBuffer`/`fromBuffer` of
 * the same Avro records, no framing, no mapping) vs `JSON.stringify`/`JSON.parse` of the same domain
 * events, plus the schema-walking avro-mapping.ts path the codec replaces. A realistic mix: ItemAdded
 * (with inputJson), IntentRecorded, ResultCommitted (with outputJson), ItemCompleted.
 *
 * Needs the local stack (`plan-ledger stack up`) for the registry. Run: `npm run bench -- codec [--quick]`.
 * Writes bench/results/codec.json: codec vs raw avsc, encode and decode ratios both.
 */
import { randomBytes } from 'node:crypto';
import avsc from 'avsc';
import { loadConfig } from '../src/config.js';
import { createCodec } from '../src/codec/index.js';
import { canonicalJson, fromAvroEvent, planEventSchema, sealEvent, toAvroEvent, type PlanEvent, type UnsealedEvent } from '../src/plan/index.js';
import { benchArgs, median, metric, paired, writeResult } from './lib/harness.js';

const args = benchArgs();
const PLANS = 250; // 4 events per plan item below -> 1000 distinct events per pass
const PASSES = Number(process.env.PASSES ?? (args.quick ? 20 : 40)); // passes over the events per measurement

const hex = (n: number) => randomBytes(n).toString('hex');

/** One item's life, as the executor writes it: added, intent, result, completed. */
function mix(): PlanEvent[] {
  const events: PlanEvent[] = [];
  for (let p = 0; p < PLANS; p++) {
    const planId = `plan-${hex(6)}`;
    let prevHash = '0'.repeat(64);
    let seq = 0;
    const itemId = `fetch-invoices-${p}`;
    const meta = (causationId: string): Omit<UnsealedEvent, 'type' | 'data'> => {
      seq += 1;
      return { eventId: `${planId}:${seq}`, planId, seq, occurredAt: 1_760_000_000_000 + seq * 37, actor: `executor-${p % 4}`, causationId, correlationId: `corr-${planId}`, prevHash, schemaVersion: 1 };
    };
    const add = (body: Pick<PlanEvent, 'type' | 'data'>, causationId: string) => {
      const e = sealEvent({ ...meta(causationId), ...body } as UnsealedEvent);
      prevHash = e.hash;
      events.push(e);
    };
    const input = { account: `acct-${p}`, months: ['2025-01', '2025-02', '2025-03'], filters: { status: 'open', minAmount: 100 + p }, note: 'Fetch every open invoice of the quarter for the reconciliation step.' };
    add(
      {
        type: 'ItemAdded',
        data: {
          item: { id: itemId, title: 'Fetch open invoices', why: 'The reconciliation needs every open invoice of the quarter', dependsOn: p % 2 ? [`setup-${p}`] : [], tool: 'http.get', inputJson: canonicalJson(input), retry: { maxAttempts: 3, initialBackoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 10_000 } },
          followUpOf: null,
        },
      } as Pick<PlanEvent, 'type' | 'data'>,
      `cmd-${hex(8)}`,
    );
    add({ type: 'IntentRecorded', data: { itemId, attempt: 1, idempotencyKey: `${planId}/${itemId}/1`, executorId: `executor-${p % 4}`, fencingToken: 17 } } as Pick<PlanEvent, 'type' | 'data'>, `intent-${hex(8)}`);
    const output = { invoices: Array.from({ length: 5 }, (_, i) => ({ id: `inv-${p}-${i}`, amount: 1000 + i * 17.5, currency: 'EUR', due: `2025-0${(i % 3) + 1}-28` })), total: 5262.5, fetchedAt: 1_760_000_000_000 };
    add(
      { type: 'ResultCommitted', data: { itemId, attempt: 1, outcome: 'succeeded', outputJson: canonicalJson(output), error: null, durationMs: 212, executorId: `executor-${p % 4}`, followUpIds: [] } } as Pick<PlanEvent, 'type' | 'data'>,
      `result-${hex(8)}`,
    );
    add({ type: 'ItemCompleted', data: { itemId, attempt: 1 } } as Pick<PlanEvent, 'type' | 'data'>, `settle-${hex(8)}`);
  }
  return events;
}

interface Contender {
  name: string;
  encode(): void;
  decode(): Promise<void> | void;
}

function opsPerSec(ops: number, ms: number): number {
  return Math.round((ops / ms) * 1000);
}

async function time(f: () => Promise<void> | void): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const config = loadConfig({ topicPrefix: `bench-codec-${hex(4)}` });
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const events = mix();
  const n = events.length;

  // Raw avsc on the same Avro records: the same schema and options as the codec ('auto' unions), the
  // payload already wrapped, no header, no mapping; avsc's default record classes on decode.
  const raw = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: 'auto' });
  // Fresh literals in field order (no deleted keys), so avsc writes from fast-mode objects.
  const avroRecords = events.map((e) => ({
    eventId: e.eventId, planId: e.planId, seq: e.seq, occurredAt: e.occurredAt, actor: e.actor, causationId: e.causationId,
    correlationId: e.correlationId, prevHash: e.prevHash, hash: e.hash, schemaVersion: e.schemaVersion,
    payload: { [`planledger.${e.type}`]: e.data },
  }));
  const rawBodies = avroRecords.map((r) => raw.toBuffer(r));
  // The schema-walking mapping of src/plan/avro-mapping.ts (wrapUnions: true), framed like the codec.
  const wrapped = avsc.Type.forSchema(planEventSchema as unknown as avsc.Schema, { wrapUnions: true });
  const framed = events.map((e) => codec.encodeEvent(e));
  const jsonTexts = events.map((e) => JSON.stringify(e));

  // Sanity: all paths agree on the bytes and the values.
  for (let i = 0; i < n; i++) {
    if (!framed[i]!.subarray(5).equals(rawBodies[i]!)) throw new Error(`codec and raw avsc bytes differ at ${i}`);
    if (!wrapped.toBuffer(toAvroEvent(events[i]!)).equals(rawBodies[i]!)) throw new Error(`avro-mapping bytes differ at ${i}`);
    if (canonicalJson(await codec.decodeEvent(framed[i]!)) !== canonicalJson(events[i])) throw new Error(`codec round trip differs at ${i}`);
  }

  let sink = 0;
  const contenders: Contender[] = [
    {
      name: 'codec',
      encode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += codec.encodeEvent(events[i]!).length;
      },
      decode: async () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += (await codec.decodeEvent(framed[i]!)).seq;
      },
    },
    {
      name: 'avsc',
      encode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += raw.toBuffer(avroRecords[i]).length;
      },
      decode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += (raw.fromBuffer(rawBodies[i]!) as { seq: number }).seq;
      },
    },
    {
      name: 'json',
      encode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += JSON.stringify(events[i]).length;
      },
      decode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += (JSON.parse(jsonTexts[i]!) as PlanEvent).seq;
      },
    },
    {
      name: 'avro-mapping',
      encode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += wrapped.toBuffer(toAvroEvent(events[i]!)).length;
      },
      decode: () => {
        for (let k = 0; k < PASSES; k++) for (let i = 0; i < n; i++) sink += fromAvroEvent(wrapped.fromBuffer(rawBodies[i]!)).seq;
      },
    },
  ];

  const measure = async (c: Contender) => ({ encode: opsPerSec(n * PASSES, await time(c.encode)), decode: opsPerSec(n * PASSES, await time(c.decode)) });
  const byName = (name: string) => contenders.find((c) => c.name === name)!;
  // Codec vs raw avsc: paired rounds (alternating which goes first) after a warm-up of both.
  const rounds = await paired({ rounds: args.rounds, warmup: 2, label: 'codec ', subject: () => measure(byName('codec')), baseline: () => measure(byName('avsc')) });
  // The other paths, for reference (same warm-up, same number of rounds, after the pair).
  const others: Record<string, { encode: number[]; decode: number[] }> = {};
  for (const name of ['json', 'avro-mapping']) {
    await measure(byName(name));
    others[name] = { encode: [], decode: [] };
    for (let r = 0; r < args.rounds; r++) {
      const m = await measure(byName(name));
      others[name].encode.push(m.encode);
      others[name].decode.push(m.decode);
    }
  }
  if (sink === 0) throw new Error('unreachable');
  const avg = (xs: number[]) => Math.round(xs.reduce((x, y) => x + y, 0) / xs.length);
  writeResult({
    name: 'codec',
    title: 'Codec (Confluent framing + payload mapping + avsc) vs raw avsc on the same Avro records',
    quick: args.quick,
    settings: { rounds: args.rounds, opsPerMeasurement: n * PASSES, events: n, mix: { ItemAdded: PLANS, IntentRecorded: PLANS, ResultCommitted: PLANS, ItemCompleted: PLANS } },
    metrics: [
      metric(rounds, { key: 'encode', label: 'encode', unit: 'ops/s', better: 'higher', baselineLabel: 'raw avsc toBuffer', aim: '≥ 0.9×' }),
      metric(rounds, { key: 'decode', label: 'decode', unit: 'ops/s', better: 'higher', baselineLabel: 'raw avsc fromBuffer', aim: '≥ 0.9×' }),
    ],
    rounds,
    notes: ['Both ratios are reported: encode and decode. Codec decode awaits each value, as a consumer does; avsc decodes the Avro body without the 5-byte header.'],
    extra: {
      avgBytes: { codec: avg(framed.map((x) => x.length)), avsc: avg(rawBodies.map((x) => x.length)), json: avg(jsonTexts.map((t) => Buffer.byteLength(t))) },
      others: Object.fromEntries(Object.entries(others).map(([k, v]) => [k, { encodeOpsPerSec: median(v.encode), decodeOpsPerSec: median(v.decode), encodeRounds: v.encode, decodeRounds: v.decode }])),
    },
  });
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
