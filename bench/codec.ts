/**
 * Codec throughput: encode and decode ops/s of the ledger codec vs raw avsc (`toBuffer`/`fromBuffer` of
 * the same Avro records, no framing, no mapping) vs `JSON.stringify`/`JSON.parse` of the same domain
 * events, plus the schema-walking avro-mapping.ts path the codec replaces. A realistic mix: ItemAdded
 * (with inputJson), IntentRecorded, ResultCommitted (with outputJson), ItemCompleted.
 *
 * Needs the local stack (`plan-ledger stack up`) for the registry. Run: `npx tsx bench/codec.ts`.
 * Writes bench/results/codec.json.
 */
import { randomBytes } from 'node:crypto';
import avsc from 'avsc';
import { loadConfig } from '../src/config.js';
import { createCodec } from '../src/codec/index.js';
import { canonicalJson, fromAvroEvent, planEventSchema, sealEvent, toAvroEvent, type PlanEvent, type UnsealedEvent } from '../src/plan/index.js';
import { machine, median, writeResults } from './common.js';

const ROUNDS = Number(process.env.ROUNDS ?? 9);
const PLANS = 250; // 4 events per plan item below -> 1000 distinct events per pass
const PASSES = Number(process.env.PASSES ?? 20); // passes over the events per measurement

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

  // Warm-up (JIT), then rounds; contenders interleaved inside a round so drift hits all alike.
  for (const c of contenders) {
    await time(c.encode);
    await time(c.decode);
  }
  const samples = new Map(contenders.map((c) => [c.name, { encode: [] as number[], decode: [] as number[] }]));
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of contenders) {
      samples.get(c.name)!.encode.push(opsPerSec(n * PASSES, await time(c.encode)));
      samples.get(c.name)!.decode.push(opsPerSec(n * PASSES, await time(c.decode)));
    }
  }
  if (sink === 0) throw new Error('unreachable');

  const results = Object.fromEntries(
    [...samples].map(([name, s]) => [name, { encodeOpsPerSec: median(s.encode), decodeOpsPerSec: median(s.decode), encodeRounds: s.encode, decodeRounds: s.decode }]),
  );
  const avscR = results['avsc']!;
  const ratio = (name: string) => ({
    encode: Number((results[name]!.encodeOpsPerSec / avscR.encodeOpsPerSec).toFixed(3)),
    decode: Number((results[name]!.decodeOpsPerSec / avscR.decodeOpsPerSec).toFixed(3)),
  });
  // The same ratio taken within each round (codec and avsc measured back to back), then the median: less
  // sensitive to other load on the machine than the ratio of the two medians.
  const paired = (name: string) => {
    const a = samples.get(name)!;
    const b = samples.get('avsc')!;
    return {
      encode: Number(median(a.encode.map((x, i) => x / b.encode[i]!)).toFixed(3)),
      decode: Number(median(a.decode.map((x, i) => x / b.decode[i]!)).toFixed(3)),
    };
  };
  const avg = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const out = {
    bench: 'codec',
    machine: machine(),
    setup: {
      rounds: ROUNDS,
      opsPerRound: n * PASSES,
      events: n,
      mix: { ItemAdded: PLANS, IntentRecorded: PLANS, ResultCommitted: PLANS, ItemCompleted: PLANS },
      avgBytes: { codec: avg(framed.map((b) => b.length)), avsc: avg(rawBodies.map((b) => b.length)), json: avg(jsonTexts.map((t) => Buffer.byteLength(t))) },
      note: 'codec decode awaits each value (as a consumer does); avsc and avro-mapping decode the Avro body without the 5-byte header; json works on strings',
    },
    results,
    ratioToAvsc: { codec: ratio('codec'), json: ratio('json'), 'avro-mapping': ratio('avro-mapping') },
    pairedRatioToAvsc: { codec: paired('codec'), json: paired('json'), 'avro-mapping': paired('avro-mapping') },
    aim: 'codec >= 0.9x raw avsc',
  };
  writeResults(new URL('./results/codec.json', import.meta.url).pathname, out);

  const row = (name: string) => {
    const r = results[name]!;
    const q = name === 'avsc' ? { encode: 1, decode: 1 } : ratio(name);
    return `${name.padEnd(13)} ${String(r.encodeOpsPerSec).padStart(10)} ${q.encode.toFixed(2).padStart(6)}x ${String(r.decodeOpsPerSec).padStart(10)} ${q.decode.toFixed(2).padStart(6)}x`;
  };
  console.log(`\n${n * PASSES} ops per round, median of ${ROUNDS} rounds, ${out.machine.cpus} cpus, node ${out.machine.node}`);
  console.log(`${'path'.padEnd(13)} ${'encode/s'.padStart(10)} ${'vs avsc'.padStart(7)} ${'decode/s'.padStart(10)} ${'vs avsc'.padStart(7)}`);
  for (const name of ['codec', 'avsc', 'json', 'avro-mapping']) console.log(row(name));
  const pc = paired('codec');
  console.log(`codec vs avsc, median of per-round ratios: encode ${pc.encode.toFixed(2)}x, decode ${pc.decode.toFixed(2)}x`);
  console.log(`avg bytes: codec ${out.setup.avgBytes.codec}, avsc ${out.setup.avgBytes.avsc}, json ${out.setup.avgBytes.json}`);
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
