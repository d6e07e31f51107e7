// Sequential transactions of one 200-byte record, the shape of an executor's chain step, by what the
// executor does about kafkajs's waits: the first retry of CONCURRENT_TRANSACTIONS (kafkajs retries it after
// `initialRetryTime`), one producer or two taking turns, and — with `--cache` — the transaction
// coordinator remembered instead of looked up before every AddPartitionsToTxn and EndTxn
// (src/kafka/coordinator-cache.ts). Variants alternate over rounds; medians of ms per transaction.
//
//   npx tsx bench/tx-retry.ts            kafkajs as it comes
//   npx tsx bench/tx-retry.ts --cache    with the coordinator cache
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { randomBytes } from 'node:crypto';
import { installCoordinatorCache } from '../src/kafka/coordinator-cache.js';

const cache = process.argv.includes('--cache');
if (cache) installCoordinatorCache();
const brokers = (process.env.PLAN_LEDGER_BROKERS ?? '127.0.0.1:9092').split(',');
const kafka = new Kafka({ clientId: 'tx-retry', brokers, logLevel: logLevel.NOTHING });
const topic = `txb-${randomBytes(3).toString('hex')}`;
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
const n = Number(process.env.N ?? 200);
const rounds = Number(process.env.ROUNDS ?? 3);
const variants = [
  { producers: 1, initialRetryTime: 20 },
  { producers: 1, initialRetryTime: 2 },
  { producers: 2, initialRetryTime: 2 },
];
const samples = new Map<string, number[]>();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
for (let r = 0; r < rounds; r++) {
  for (const v of r % 2 ? [...variants].reverse() : variants) {
    const ps: Producer[] = [];
    for (let j = 0; j < v.producers; j++) {
      const p = kafka.producer({ transactionalId: `${topic}-${randomBytes(3).toString('hex')}`, idempotent: true, maxInFlightRequests: 1, retry: { initialRetryTime: v.initialRetryTime, maxRetryTime: 2000, retries: 40 } });
      await p.connect();
      ps.push(p);
    }
    for (let i = 0; i < 6; i++) {
      const tx = await ps[i % v.producers]!.transaction();
      await tx.send({ topic, messages: [{ value: 'warm' }] });
      await tx.commit();
    }
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const tx = await ps[i % v.producers]!.transaction();
      await tx.send({ topic, messages: [{ value: 'x'.repeat(200) }] });
      await tx.commit();
    }
    const key = `producers=${v.producers} initialRetryTime=${v.initialRetryTime}`;
    samples.set(key, [...(samples.get(key) ?? []), (performance.now() - t0) / n]);
    for (const p of ps) await p.disconnect();
  }
}
await admin.deleteTopics({ topics: [topic] });
await admin.disconnect();
console.log(JSON.stringify({ coordinatorCache: cache, transactions: n, rounds, msPerTransaction: Object.fromEntries([...samples].map(([k, xs]) => [k, Number(median(xs).toFixed(2))])) }, null, 1));
