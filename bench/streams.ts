// Live streams: how soon a remote `ledger.stream` reader sees a model's first token, and how many deltas a
// second one partition carries, beside the same deltas over a plain Kafka produce/consume, in the same run.
//
//   npm run bench -- streams [--quick] [--rounds 5] [--turns 10] [--burst 20000]
//
// plan-ledger: an executor in its own process (bench/procs/stream-executor.ts) runs an agent whose model
// (the AI SDK's MockLanguageModelV3, asked with streamText) says `t=<emit time>;` at the start of each turn,
// then 8 words 20 ms apart (a model's pace);
// this process reads the plan's stream with `ledger.stream` and takes, for each of K turns, receive time −
// emit time (the clock is the machine's; both processes read it with performance.timeOrigin + now()). The
// last turn says BURST one-word deltas as fast as the AI SDK hands them over: deltas/s = BURST ÷ (last text
// received − first emitted). One partition. What the path adds: the AI SDK's streamText, the writer's
// coalescing (a record 25 ms after its first delta, at most 16 KiB), JSON records, the reader's filter.
// Baseline: a producer process (bench/procs/raw-stream-producer.ts) sends the same samples and the same
// BURST deltas, one record each, with the Kafka port's idempotent writer; this process reads them with a
// raw read_committed tail. Same K, same BURST, same rounds.
import { fileURLToPath } from 'node:url';
import { runAgent } from '../src/agent/index.js';
import { connectLedger } from '../src/client/index.js';
import { configToEnv } from '../src/config.js';
import { benchArgs, median, metric, paired, quantile, until, writeResult } from './lib/harness.js';
import { benchConfig, benchKafka, dropTopics, spawnJson, spawnTs, stopProc, waitLine } from './lib/ledger.js';

const args = benchArgs(['turns', 'burst']);
const K = Number(args.options.turns ?? (args.quick ? 5 : 10));
const BURST = Number(args.options.burst ?? (args.quick ? 5_000 : 20_000));
const DELTA = 'word ';
const now = () => performance.timeOrigin + performance.now();

const config = benchConfig('streams', { partitions: 1 });
const ledger = await connectLedger(config);
const executor = spawnTs(fileURLToPath(new URL('./procs/stream-executor.ts', import.meta.url)), 'executor', { ...configToEnv(config), BENCH_STREAM_TURNS: String(K), BENCH_STREAM_BURST: String(BURST) });
const rawTopic = `${config.topicPrefix}.raw-deltas`;
const rawKafka = benchKafka(config);
const all = { subject: [] as number[], baseline: [] as number[] };

/** What the raw tail saw, by round. */
interface RawRound {
  lat: number[];
  burstStart?: number;
  burstCount: number;
  burstLast?: number;
}
const rawRounds = new Map<string, RawRound>();
const rawRound = (r: string) => rawRounds.get(r) ?? (rawRounds.set(r, { lat: [], burstCount: 0 }), rawRounds.get(r)!);

try {
  await waitLine(executor, 'ready', 120_000);
  const admin = rawKafka.admin();
  await admin.connect();
  await admin.createTopics([{ topic: rawTopic, numPartitions: 1, replicationFactor: config.replicationFactor }]);
  await admin.disconnect();
  const tail = await rawKafka.tail({
    topic: rawTopic,
    onRecords: (_p, records) => {
      const at = now();
      for (const r of records) {
        const [kind, round, i, rest] = (r.value?.toString('utf8') ?? '').split('|') as [string, string, string, string];
        const s = rawRound(round);
        if (kind === 'lat') s.lat.push(at - Number(rest));
        else if (i === '0') s.burstStart = Number(rest);
        else {
          s.burstCount++;
          s.burstLast = at;
        }
      }
    },
  });
  await tail.add(0, '0');

  let runs = 0;
  const subject = async () => {
    const { planId } = await runAgent(ledger, { agent: 'streamer', goal: `bench ${++runs}`, maxTurns: K + 1 });
    const lat: number[] = [];
    const first = new Set<string>();
    let burstStart = 0;
    let burstChars = 0;
    let burstLast = 0;
    const burstTurn = `turn-${K + 1}`;
    for await (const c of ledger.stream(planId, { signal: AbortSignal.timeout(300_000) })) {
      const at = now();
      if (c.kind === 'text' && c.text) {
        let text = c.text;
        if (!first.has(c.itemId)) {
          first.add(c.itemId);
          const m = /^t=(\d+\.\d+);/.exec(text);
          if (!m) throw new Error(`${c.itemId}: the first text does not start with its emit time`);
          text = text.slice(m[0].length);
          if (c.itemId === burstTurn) burstStart = Number(m[1]);
          else lat.push(at - Number(m[1]));
        }
        if (c.itemId === burstTurn) {
          burstChars += text.length;
          burstLast = at;
        }
      }
      if (c.kind === 'end' && c.itemId === burstTurn && c.end === 'final') break;
    }
    if (lat.length !== K || burstChars !== BURST * DELTA.length) throw new Error(`plan ${planId}: ${lat.length} of ${K} samples, ${burstChars / DELTA.length} of ${BURST} deltas`);
    all.subject.push(...lat);
    return { p50: median(lat), p99: quantile(lat, 0.99), deltasPerSec: BURST / ((burstLast - burstStart) / 1000) };
  };
  let rawRuns = 0;
  const baseline = async () => {
    const round = String(++rawRuns);
    const p = spawnJson(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./procs/raw-stream-producer.ts', import.meta.url)), rawTopic, round, String(K), String(BURST)], 'raw-producer', configToEnv(config));
    const s = await until(() => {
      const r = rawRounds.get(round);
      return r && r.burstCount === BURST && r.lat.length === K ? r : undefined;
    }, 300_000, `raw round ${round}`, 5);
    await stopProc(p);
    all.baseline.push(...s.lat);
    return { p50: median(s.lat), p99: quantile(s.lat, 0.99), deltasPerSec: BURST / ((s.burstLast! - s.burstStart!) / 1000) };
  };

  const rounds = await paired({ rounds: args.rounds, warmup: 1, label: 'streams ', subject, baseline });
  all.subject.splice(0, K); // the warm-up's
  all.baseline.splice(0, K);
  await tail.close();

  writeResult({
    name: 'streams',
    title: "A model's first token visible to a remote ledger.stream reader, and deltas/s per partition, vs the same deltas over plain Kafka produce/consume",
    quick: args.quick,
    settings: { turnsPerRound: K, burstDeltas: BURST, delta: DELTA, rounds: args.rounds, partitions: 1 },
    metrics: [
      metric(rounds, { key: 'p50', label: "model emits a turn's first token → a remote ledger.stream reader has it, p50", unit: 'ms', better: 'lower', baselineLabel: 'raw: one record produced (idempotent, acks all) → a read_committed tail has it' }),
      metric(rounds, { key: 'p99', label: `first token → remote reader, p99 of ${K}`, unit: 'ms', better: 'lower', baselineLabel: 'raw, same path' }),
      metric(rounds, { key: 'deltasPerSec', label: `deltas/s through one partition (${BURST.toLocaleString('en-US')} one-word deltas, emitted → read)`, unit: 'deltas/s', better: 'higher', baselineLabel: 'raw: one record per delta, produced as they come' }),
    ],
    rounds,
    notes: [
      "The ledger's first token waits for the writer's coalescing linger (25 ms) before it is sent: a record holds the deltas of 25 ms (at most 16 KiB); the turns' words come 20 ms apart, as a model's would, so the first record goes at the linger.",
      "The burst is bounded by the AI SDK's streamText (about 50 µs per part on this machine) before the ledger sees a delta; the raw side has no model.",
    ],
    extra: {
      pooled: {
        subject: { p50Ms: median(all.subject), p99Ms: quantile(all.subject, 0.99), samples: all.subject.length, how: 'ledger.stream, every sample of every round' },
        baseline: { p50Ms: median(all.baseline), p99Ms: quantile(all.baseline, 0.99), samples: all.baseline.length, how: 'raw, every sample of every round' },
      },
    },
  });
} finally {
  await rawKafka.close();
  await ledger.close();
  await stopProc(executor);
  await dropTopics(config, [rawTopic, `${config.topicPrefix}.plan-streams`, `${config.topicPrefix}.blobs`]);
}
process.exit(0);

