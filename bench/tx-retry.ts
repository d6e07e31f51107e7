// How long a transaction waits for CONCURRENT_TRANSACTIONS after the previous commit, by kafkajs retry
// setting: sequential transactions of one record + offsets, the shape of an executor's chain step.
import { Kafka, logLevel } from 'kafkajs';
import { randomBytes } from 'node:crypto';

const brokers = (process.env.PLAN_LEDGER_BROKERS ?? '127.0.0.1:9092').split(',');
const kafka = new Kafka({ clientId: 'tx-retry', brokers, logLevel: logLevel.NOTHING });
const topic = `txb-${randomBytes(3).toString('hex')}`;
const admin = kafka.admin();
await admin.connect();
await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
const n = Number(process.env.N ?? 100);
const out: Record<string, number> = {};
for (const initialRetryTime of [20, 5, 2, 20, 5, 2]) {
  const producer = kafka.producer({ transactionalId: `${topic}-${initialRetryTime}-${randomBytes(2).toString('hex')}`, idempotent: true, maxInFlightRequests: 1, retry: { initialRetryTime, maxRetryTime: 2000, retries: 40 } });
  await producer.connect();
  for (let i = 0; i < 5; i++) {
    const tx = await producer.transaction();
    await tx.send({ topic, messages: [{ value: 'warm' }] });
    await tx.commit();
  }
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const tx = await producer.transaction();
    await tx.send({ topic, messages: [{ value: 'x'.repeat(200) }] });
    await tx.commit();
  }
  const ms = (performance.now() - t0) / n;
  out[`initialRetryTime=${initialRetryTime}`] = Math.min(out[`initialRetryTime=${initialRetryTime}`] ?? Infinity, ms);
  await producer.disconnect();
}
await admin.deleteTopics({ topics: [topic] });
await admin.disconnect();
console.log(JSON.stringify(out, null, 1));
