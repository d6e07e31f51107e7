// Sequential transactions of one 200-byte record, the shape of an executor's chain step, through the
// Kafka port's FencedWriter: one writer, or two taking turns (as a partition owner's two transactional
// ids do, so one transaction can start while the other's commit markers are written). Variants alternate
// over rounds; medians of ms per transaction.
//
//   npx tsx bench/tx-retry.ts            (PLAN_LEDGER_BROKERS, N=200 transactions, ROUNDS=3)
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config.js';
import { createKafka, type FencedWriter } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';

const config = loadConfig({ topicPrefix: `txb-${randomBytes(3).toString('hex')}`, clientId: 'tx-retry' });
const kafka = createKafka(config, silentLogger(), undefined, 'service');
const topic = `${config.topicPrefix}.tx`;
const admin = kafka.admin();
await admin.connect();
await admin.createTopics([{ topic, numPartitions: 1, replicationFactor: config.replicationFactor }]);
const n = Number(process.env.N ?? 200);
const rounds = Number(process.env.ROUNDS ?? 3);
const variants = [{ writers: 1 }, { writers: 2 }];
const samples = new Map<string, number[]>();
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const once = async (w: FencedWriter, value: string) => {
  const tx = await w.transaction();
  await tx.send(topic, [{ value, partition: 0 }]);
  await tx.commit();
};
for (let r = 0; r < rounds; r++) {
  for (const v of r % 2 ? [...variants].reverse() : variants) {
    const ws: FencedWriter[] = [];
    for (let j = 0; j < v.writers; j++) {
      const w = kafka.fencedWriter(`${topic}-${randomBytes(3).toString('hex')}`);
      await w.connect();
      ws.push(w);
    }
    for (let i = 0; i < 6; i++) await once(ws[i % v.writers]!, 'warm');
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await once(ws[i % v.writers]!, 'x'.repeat(200));
    const key = `writers=${v.writers}`;
    samples.set(key, [...(samples.get(key) ?? []), (performance.now() - t0) / n]);
    for (const w of ws) await w.disconnect();
  }
}
await admin.deleteTopics([topic]);
await admin.disconnect();
await kafka.close();
console.log(JSON.stringify({ transactions: n, rounds, msPerTransaction: Object.fromEntries([...samples].map(([k, xs]) => [k, Number(median(xs).toFixed(2))])) }, null, 1));
