// Executor benchmarks (not tests). Needs a broker and registry: PLAN_LEDGER_BROKERS/REGISTRY_URL or
// `npx plan-ledger stack up`. Run: npx tsx bench/executor.ts [--rounds 3] [--plans 50] [--items 20]
// Writes bench/results/executor.json.
//
// 1. Throughput of the full item protocol (intent → no-op tool → result → settle, three appends per
//    item, group-committed) vs raw kafkajs transactional produce of the same number of events, in
//    transactions of the same average size, in the same run.
// 2. Sequential latency: one plan whose items each depend on the previous one.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { connectLedger } from '../src/client/index.js';
import { loadConfig, topicNames } from '../src/config.js';
import { createKafka } from '../src/kafka/client.js';
import { ensurePlanTopics } from '../src/kafka/topics.js';
import { silentLogger } from '../src/logging.js';
import { defineTool } from '../src/tools.js';
import { startExecutor } from '../executor/index.js';
import { machine, median, writeResults } from './common.js';

const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' }, plans: { type: 'string', default: '50' }, items: { type: 'string', default: '20' }, chain: { type: 'string', default: '50' }, concurrency: { type: 'string', default: '20' } } });
const rounds = Number(values.rounds);
const plans = Number(values.plans);
const itemsPerPlan = Number(values.items);
const chain = Number(values.chain);
const concurrency = Number(values.concurrency);

const noop = defineTool({ name: 'noop', run: () => ({ ok: true }) });
const logger = silentLogger();

async function protocolRound() {
  const config = loadConfig({ topicPrefix: `bench-${randomBytes(4).toString('hex')}`, partitions: 6 });
  const executor = await startExecutor({ tools: [noop], config, concurrency, logger });
  const ledger = await connectLedger(config);
  await executor.started;
  // Warm-up: registry ids, producers, coordinators.
  const warm = await ledger.createPlan({ goal: 'warm-up', mode: 'execute', items: [{ id: 'w', title: 'w', why: 'warm-up', tool: 'noop' }] });
  await ledger.waitFor(warm.planId, 'completed');
  const before = executor.stats();

  const t0 = performance.now();
  const ids = await Promise.all(
    Array.from({ length: plans }, (_, p) =>
      ledger.createPlan({
        goal: `bench plan ${p}`,
        mode: 'execute',
        items: Array.from({ length: itemsPerPlan }, (_, i) => ({ id: `i${i}`, title: `item ${i}`, why: 'benchmark', tool: 'noop', input: { i } })),
      }).then((r) => r.planId),
    ),
  );
  // Completion as the owning executor sees it (in memory, after its transaction committed); asking the
  // log through 50 readers would measure consumer-group joins, not the protocol.
  const deadline = Date.now() + 300_000;
  while (!ids.every((id) => executor.planState(id)?.status === 'completed')) {
    if (Date.now() > deadline) throw new Error('plans did not complete');
    await new Promise((r) => setTimeout(r, 5));
  }
  const seconds = (performance.now() - t0) / 1000;
  const after = executor.stats();
  const events = after.events - before.events;
  const transactions = after.transactions - before.transactions;

  // Sequential: a chain of items, each waiting for the previous one.
  const c = await ledger.createPlan({
    goal: 'chain',
    mode: 'execute',
    items: Array.from({ length: chain }, (_, i) => ({ id: `c${i}`, title: `c${i}`, why: 'chain', tool: 'noop', dependsOn: i ? [`c${i - 1}`] : [] })),
  });
  while (executor.planState(c.planId)?.status !== 'completed') await new Promise((r) => setTimeout(r, 5));
  const done = executor.planState(c.planId)!;
  const first = done.items.c0!.attempts[0]!.startedAt;
  const last = done.items[`c${chain - 1}`]!;
  const lastDone = last.attempts[0]!.finishedAt!;
  // Per step: from one item's intent to the next item's intent (the full protocol of one item).
  const msPerStep = (last.attempts[0]!.startedAt - first) / (chain - 1);

  await ledger.close();
  await executor.stop();
  return { config, seconds, items: plans * itemsPerPlan, events, transactions, msPerStep, chainMs: lastDone - first };
}

async function rawRound(config: ReturnType<typeof loadConfig>, events: number, perTx: number) {
  const kafka = createKafka(config, logger, 'bench-raw');
  const admin = kafka.admin();
  await admin.connect();
  const rawConfig = { ...config, topicPrefix: `${config.topicPrefix}-raw` };
  await ensurePlanTopics(admin, rawConfig);
  const topic = topicNames(rawConfig.topicPrefix).events;
  const payload = Buffer.alloc(180, 7); // about the size of an encoded protocol event
  const producers = await Promise.all(
    Array.from({ length: config.partitions }, async (_, p) => {
      const pr = kafka.producer({ transactionalId: `${rawConfig.topicPrefix}.raw.p${p}`, idempotent: true, maxInFlightRequests: 1 });
      await pr.connect();
      return pr;
    }),
  );
  const t0 = performance.now();
  await Promise.all(
    producers.map(async (pr, p) => {
      let left = Math.ceil(events / producers.length);
      let n = 0;
      while (left > 0) {
        const k = Math.min(perTx, left);
        const tx = await pr.transaction();
        await tx.send({ topic, acks: -1, messages: Array.from({ length: k }, () => ({ key: `k${p}:${n++}`, value: payload, partition: p })) });
        await tx.commit();
        left -= k;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(producers.map((pr) => pr.disconnect()));
  await admin.deleteTopics({ topics: Object.values(topicNames(rawConfig.topicPrefix)).filter((t) => t.includes('.plan-')) }).catch(() => {});
  await admin.disconnect();
  return { seconds };
}

type Row = { itemsPerSecond: number; protocolEventsPerSecond: number; rawEventsPerSecond: number; ratioToRaw: number; sequentialMsPerStep: number } & Record<string, number>;
const results: Row[] = [];
for (let r = 0; r < rounds; r++) {
  const proto = await protocolRound();
  const perTx = Math.max(1, Math.round(proto.events / Math.max(1, proto.transactions)));
  const raw = await rawRound(proto.config, proto.events, perTx);
  const row: Row = {
    items: proto.items,
    protocolSeconds: proto.seconds,
    itemsPerSecond: proto.items / proto.seconds,
    events: proto.events,
    transactions: proto.transactions,
    eventsPerTransaction: perTx,
    rawSeconds: raw.seconds,
    rawEventsPerSecond: proto.events / raw.seconds,
    protocolEventsPerSecond: proto.events / proto.seconds,
    ratioToRaw: raw.seconds / proto.seconds,
    sequentialMsPerStep: proto.msPerStep,
  };
  results.push(row);
  console.log(`round ${r + 1}: ${row.itemsPerSecond.toFixed(0)} items/s (${row.protocolEventsPerSecond.toFixed(0)} events/s, ${perTx} events/tx); raw ${row.rawEventsPerSecond.toFixed(0)} events/s; ratio ${row.ratioToRaw.toFixed(2)}; sequential ${row.sequentialMsPerStep.toFixed(1)} ms/step`);
}
const summary = {
  machine: machine(),
  settings: { rounds, plans, itemsPerPlan, chain, concurrency, partitions: 6 },
  median: {
    itemsPerSecond: median(results.map((r) => r.itemsPerSecond)),
    protocolEventsPerSecond: median(results.map((r) => r.protocolEventsPerSecond)),
    rawEventsPerSecond: median(results.map((r) => r.rawEventsPerSecond)),
    ratioToRaw: median(results.map((r) => r.ratioToRaw)),
    sequentialMsPerStep: median(results.map((r) => r.sequentialMsPerStep)),
  },
  rounds: results,
};
console.table(summary.median);
writeResults('bench/results/executor.json', summary);
process.exit(0);
