// The streams benchmark's baseline producer (bench/streams.ts), in its own process: the same deltas as the
// agent's turns over a plain Kafka produce (the Kafka port's idempotent writer, acks=all, one record per
// delta, no ledger). Round R: after a second (the reader is open), K samples 200 ms apart, each one record
// `lat|R|i|<emit time>`; then a burst: `burst|R|0|<emit time>` and BURST records `burst|R|j|word `, each sent
// as it comes (not awaited one by one; the client batches). Prints {"msg":"done"} once all are acknowledged.
// Args: topic, round, K, BURST. Config from PLAN_LEDGER_*.
import { loadConfig } from '../../src/config.js';
import { createKafka } from '../../src/kafka/index.js';
import { silentLogger } from '../../src/logging.js';

const [topic, round, k, burst] = process.argv.slice(2) as [string, string, string, string];
const now = () => performance.timeOrigin + performance.now();
const kafka = createKafka(loadConfig(), silentLogger(), 'bench-raw-producer');
const writer = kafka.writer();
await writer.connect();
await new Promise((r) => setTimeout(r, 1000));
for (let i = 0; i < Number(k); i++) {
  await writer.send(topic, [{ key: `raw/${round}`, value: `lat|${round}|${i}|${now().toFixed(3)}`, partition: 0 }]);
  await new Promise((r) => setTimeout(r, 200));
}
const pending: Array<Promise<unknown>> = [writer.send(topic, [{ key: `raw/${round}`, value: `burst|${round}|0|${now().toFixed(3)}`, partition: 0 }])];
for (let j = 1; j <= Number(burst); j++) pending.push(writer.send(topic, [{ key: `raw/${round}`, value: `burst|${round}|${j}|word `, partition: 0 }]));
await Promise.all(pending);
console.log(JSON.stringify({ msg: 'done', at: Date.now() }));
await writer.disconnect();
await kafka.close();
process.exit(0);
