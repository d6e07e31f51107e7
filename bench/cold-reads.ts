// API latency of a cold plan vs a hot one in the projector (issue 13).
//
//   npm run bench -- cold-reads [--quick] [--rounds 5] [--plans 40] [--per-round 20]
//
// An in-process executor (a no-op tool) and projector on the local stack. `plans` plans of 10 items run to
// completion; the projector's cache of finished plans is tiny (0.02 MiB), so all but about three go cold once
// their snapshots are archived: listed from a summary, read from their archived snapshot on demand.
// Timed: GET /api/plans/:id (full detail with the state and its digest) of a cold plan (a different one on
// each call, so no call is served by a previous one) vs of a hot finished plan of the same shape. Each
// answer's stateDigest is checked against the ledger's own read before timing. Paired rounds, alternating
// order; per round the median of `per-round` calls.
import { performance } from 'node:perf_hooks';
import { startExecutor } from '../executor/index.js';
import { startProjector } from '../projector/index.js';
import { connectLedger } from '../src/client/index.js';
import { topicNames } from '../src/config.js';
import { silentLogger } from '../src/logging.js';
import { stateDigest } from '../src/plan/index.js';
import { defineTool } from '../src/tools.js';
import { benchArgs, median, metric, paired, until, writeResult } from './lib/harness.js';
import { benchConfig, dropTopics } from './lib/ledger.js';

const args = benchArgs(['plans', 'per-round']);
const plans = Number(args.options.plans ?? (args.quick ? 24 : 40));
const perRound = Number(args.options['per-round'] ?? 20);
const CACHE_MIB = 0.02;
const TOKEN = 'bench-cold-reads-token-0123456789';
const logger = silentLogger();

const config = benchConfig('cold-reads', { partitions: 2 });
const noop = defineTool({ name: 'noop', run: (input: unknown) => ({ echo: input ?? null }) });
const executor = await startExecutor({ tools: [noop], config, concurrency: 8, logger });
const projector = await startProjector({ config, logger, port: 0, apiToken: TOKEN, watermarkIntervalMs: 300, defaultMetrics: false, cacheMib: CACHE_MIB });
const ledger = await connectLedger(config, { logger });
try {
  await executor.started;
  const items = Array.from({ length: 10 }, (_, i) => ({ id: `it-${i}`, title: `step ${i}`, why: 'cold-read benchmark', tool: 'noop', input: { i }, dependsOn: i ? [`it-${i - 1}`] : [] }));
  const ids: string[] = [];
  for (let i = 0; i < plans; i++) ids.push((await ledger.createPlan({ goal: `plan ${i}`, mode: 'execute', items })).planId);
  for (const id of ids) await ledger.waitFor(id, 'completed', { timeoutMs: 120_000 });
  const model = projector.service.model;
  await until(() => (model.cold.size >= plans - 4 ? true : undefined), 120_000, 'finished plans gone cold').catch((e: unknown) => {
    console.error({ cold: model.cold.size, hot: ids.filter((id) => projector.plan(id) !== undefined).length, finishedBytes: model.finishedBytes, statuses: ids.map((id) => projector.plan(id)?.state?.status ?? 'cold') });
    throw e;
  });
  const cold = ids.filter((id) => model.cold.has(id));
  const hot = ids.filter((id) => !model.cold.has(id) && projector.plan(id) !== undefined);
  if (hot.length === 0) throw new Error('no hot finished plan left to compare with');

  const read = async (planId: string) => {
    const res = await fetch(`${projector.url}/api/plans/${planId}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    if (res.status !== 200) throw new Error(`GET ${planId}: ${res.status}`);
    return (await res.json()) as { stateDigest: string };
  };
  // Exact first: a cold read and a hot read answer what the ledger itself reads.
  for (const id of [...cold.slice(0, 3), ...hot]) {
    const want = stateDigest((await ledger.getPlan(id))!);
    if ((await read(id)).stateDigest !== want) throw new Error(`projector read of ${id} differs from the ledger's`);
  }
  let next = 0;
  const timed = async (pick: () => string) => {
    const ms: number[] = [];
    for (let i = 0; i < perRound; i++) {
      const id = pick();
      const t0 = performance.now();
      await read(id);
      ms.push(performance.now() - t0);
      if (!model.cold.has(id) && cold.includes(id)) throw new Error(`${id} was loaded back by a read`);
    }
    return median(ms);
  };
  const rounds = await paired({
    rounds: args.rounds,
    warmup: 1,
    label: 'cold-reads ',
    subject: async () => ({ getPlanMs: await timed(() => cold[next++ % cold.length]!) }),
    baseline: async () => ({ getPlanMs: await timed(() => hot[next++ % hot.length]!) }),
  });
  writeResult({
    name: 'cold-reads',
    title: `Projector API: a cold plan (read from its archived snapshot) vs a hot one, ${plans} finished plans of 10 items, cache ${CACHE_MIB} MiB`,
    quick: args.quick,
    settings: { plans, itemsPerPlan: 10, cacheMib: CACHE_MIB, partitions: 2, rounds: args.rounds, perRound, cold: cold.length, hot: hot.length },
    metrics: [
      metric(rounds, { key: 'getPlanMs', label: 'GET /api/plans/:id', unit: 'ms', better: 'lower', subjectLabel: 'cold plan', baselineLabel: 'hot plan' }),
    ],
    rounds,
    notes: [
      'A cold read is one fetch of the plan\'s archive record at its known offset (a consumer assigned to that offset), a decode and a digest check; the hot read serialises the state from memory.',
      'Every answer timed was checked against the ledger\'s own getPlan digest before the rounds.',
    ],
  });
} finally {
  await ledger.close().catch(() => {});
  await projector.stop().catch(() => {});
  await executor.stop().catch(() => {});
  await dropTopics(config, [topicNames(config.topicPrefix).blobs]).catch(() => {});
}
process.exit(0);
