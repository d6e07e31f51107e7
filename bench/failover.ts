// Failover and graceful handover of a partition's owner, vs a raw consumer group (the Kafka port's group
// member, librdkafka) with the same session and heartbeat settings, in the same run.
//
//   npm run bench -- failover [--quick] [--rounds 5]    kill -9 of the owner
//   npm run bench -- handover [--quick] [--rounds 5]    SIGTERM of the owner (executor.stop(): running
//                                                       items finish, no half transaction, the group is left)
//   ... [--group-protocol classic|consumer]             the group protocol of both sides (default
//                                                       PLAN_LEDGER_GROUP_PROTOCOL's)
//
// Both run on the bench's own one-broker stack (bench/lib/private-stack.ts), whatever the protocol: its
// broker's group.consumer.* settings give the consumer protocol the same session timeout and heartbeat
// interval the classic members ask for, so the two protocols are measured on the same stack settings.
//
// plan-ledger: two executors (`startExecutor`, bench/procs/executor.ts) on a one-partition ledger (so the
// owner is certain), session timeout 6 s, heartbeat 0.5 s; the owner runs a long chain of no-op items.
// Clock: from the signal to the owner → the survivor's first appended event (its executorId as actor),
// seen by a read_committed tail. Today's takeover includes fencing (InitProducerId of the owner's
// transactional id) and the restore read. Baseline: two raw group members in one group
// (bench/raw-consumer.ts, same session/heartbeat), a writer sending a record every 10 ms; from the
// signal to the owner → the survivor's first consumed record.
// Each round: a fresh standby joins (the group is Stable with two members), then the owner is signalled;
// the survivor is the next round's owner. Writes bench/results/failover.json or handover.json.
import { fileURLToPath } from 'node:url';
import { connectLedger } from '../src/client/index.js';
import { createCodec } from '../src/codec/index.js';
import { configToEnv, topicNames, type LedgerConfig } from '../src/config.js';
import type { LedgerAdmin } from '../src/kafka/index.js';
import { setting } from '../src/settings.js';
import { benchArgs, metric, paired, sleep, until, writeResult } from './lib/harness.js';
import { benchConfig, benchKafka, spawnJson, spawnTs, type Proc } from './lib/ledger.js';
import { privateStack } from './lib/private-stack.js';

const SESSION = 6000;
const HEARTBEAT = 500;
const handover = process.argv.includes('--handover');
const args = benchArgs(['group-protocol']);
const protocol = args.options['group-protocol'] ?? setting('PLAN_LEDGER_GROUP_PROTOCOL');
if (protocol !== 'classic' && protocol !== 'consumer') {
  console.error(`${handover ? 'handover' : 'failover'}: --group-protocol must be classic or consumer, got ${protocol}`);
  process.exit(2);
}
/** The consumer protocol's session and heartbeat are the broker's: the same as the classic members ask for. */
const BROKER_SETTINGS = {
  'group.consumer.session.timeout.ms': String(SESSION),
  'group.consumer.min.session.timeout.ms': String(SESSION),
  'group.consumer.heartbeat.interval.ms': String(HEARTBEAT),
  'group.consumer.min.heartbeat.interval.ms': String(HEARTBEAT),
};
const signal: NodeJS.Signals = handover ? 'SIGTERM' : 'SIGKILL';
const name = handover ? 'handover' : 'failover';

async function stableWith(admin: LedgerAdmin, group: string, members: number): Promise<void> {
  await until(async () => {
    const d = (await admin.describeGroups([group]))[0];
    return d && d.state === 'Stable' && d.members.length === members ? true : undefined;
  }, 120_000, `group ${group} stable with ${members} members`, 100);
}

const owns = (p: Proc) => {
  const last = [...p.lines].reverse().find((l) => l.msg === 'owned' || l.msg === 'assignment') as { partitions?: number[] } | undefined;
  return last?.partitions?.includes(0) === true;
};

/** Exactly one of the two owns the partition; if the rebalance gave it to the newcomer, roles swap. */
async function certain(pair: Pair): Promise<void> {
  await until(() => (owns(pair.owner) !== owns(pair.standby!) ? true : undefined), 60_000, 'one owner');
  if (owns(pair.standby!)) [pair.owner, pair.standby] = [pair.standby!, pair.owner];
}

interface Pair {
  owner: Proc;
  standby?: Proc;
  round(): Promise<number>;
  close(): Promise<void>;
}

async function ledgerPair(config: LedgerConfig): Promise<Pair> {
  const env = { ...configToEnv(config), PLAN_LEDGER_GROUP_PROTOCOL: protocol, PLAN_LEDGER_SESSION_TIMEOUT_MS: String(SESSION), PLAN_LEDGER_HEARTBEAT_INTERVAL_MS: String(HEARTBEAT), BENCH_CONCURRENCY: '4' };
  const script = fileURLToPath(new URL('./procs/executor.ts', import.meta.url));
  let n = 0;
  const start = (standby: boolean) => {
    const id = `${name}-ex-${++n}`;
    return spawnTs(script, id, { ...env, BENCH_EXECUTOR_ID: id, BENCH_STANDBY: standby ? '1' : '0' });
  };
  const ledger = await connectLedger(config);
  const kafka = benchKafka(config, 'fo');
  const admin = kafka.admin();
  await admin.connect();
  const group = topicNames(config.topicPrefix).executorsGroup;
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  // Every appended event's actor and the time it was seen (the survivor's first after the signal counts).
  const seen: Array<{ actor: string; at: number }> = [];
  const after = (actor: string, from: number, t: number) => seen.slice(from).find((x) => x.actor === actor && x.at >= t)?.at;
  const events = topicNames(config.topicPrefix).events;
  const watch = await kafka.tail({
    topic: events,
    onRecords: async (_p, records) => {
      for (const r of records) {
        if (!r.value) continue;
        const e = await codec.decodeEvent(r.value);
        seen.push({ actor: e.actor, at: Date.now() });
      }
    },
  });
  // From the end: only what is appended from now on.
  for (const o of await admin.fetchTopicOffsets(events)) await watch.add(o.partition, o.high);
  const pair: Pair = {
    owner: start(false),
    async round() {
      pair.standby ??= start(true);
      await stableWith(admin, group, 2);
      await certain(pair);
      // The owner is busy: a long chain (a new one each round) keeps it appending.
      await ledger.createPlan({
        goal: name,
        mode: 'execute',
        items: Array.from({ length: 1000 }, (_, i) => ({ id: `s${i}`, title: `s${i}`, why: 'keep the owner busy', tool: 'noop', dependsOn: i ? [`s${i - 1}`] : [] })),
      });
      const mark = seen.length;
      // The owner lines lag the group a little: whoever appends (and says it owns the partition) is the owner.
      await until(() => {
        if (owns(pair.standby!) && !owns(pair.owner)) [pair.owner, pair.standby] = [pair.standby!, pair.owner];
        return after(pair.owner.label, mark, 0);
      }, 180_000, 'the owner appending').catch((e: unknown) => {
        const owned = (p: Proc) => JSON.stringify(p.lines.filter((l) => l.msg === 'owned').map((l) => [l.partitions, l.seenAt]));
        throw new Error(`${(e as Error).message}; ${pair.owner.label} owned ${owned(pair.owner)}, ${pair.standby!.label} owned ${owned(pair.standby!)}`);
      });
      const survivor = pair.standby!;
      const from = seen.length;
      const t0 = Date.now();
      pair.owner.p.kill(signal);
      const at = await until(() => after(survivor.label, from, t0), 120_000, `${survivor.label}'s first event`);
      seen.splice(0, from);
      await pair.owner.exited;
      pair.owner = survivor;
      pair.standby = undefined;
      return at - t0;
    },
    async close() {
      await watch.close();
      for (const p of [pair.owner, pair.standby]) if (p) p.p.kill('SIGKILL');
      await ledger.close();
      await admin.disconnect();
      await kafka.close();
    },
  };
  await until(() => (owns(pair.owner) ? true : undefined), 120_000, 'the first executor to own the partition');
  await until(() => pair.owner.lines.find((l) => l.msg === 'ready'), 120_000, 'the first executor ready');
  return pair;
}

async function rawPair(config: LedgerConfig): Promise<Pair> {
  const kafka = benchKafka(config, 'fo-raw');
  const admin = kafka.admin();
  await admin.connect();
  const topic = `${config.topicPrefix}.raw-records`;
  await admin.createTopics([{ topic, numPartitions: 1, replicationFactor: config.replicationFactor }]);
  const group = `${config.topicPrefix}.raw-group`;
  let n = 0;
  const start = () => {
    const label = `raw-${++n}`;
    return spawnJson(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./raw-consumer.ts', import.meta.url)), topic, group, label, String(SESSION), String(HEARTBEAT)], label, { ...configToEnv(config), PLAN_LEDGER_GROUP_PROTOCOL: protocol });
  };
  const producer = kafka.writer();
  await producer.connect();
  let producing = true;
  const pump = (async () => {
    while (producing) {
      await producer.send(topic, [{ value: String(Date.now()), partition: 0 }]);
      await sleep(10);
    }
  })();
  const pair: Pair = {
    owner: start(),
    async round() {
      pair.standby ??= start();
      await stableWith(admin, group, 2);
      await certain(pair);
      const mark = Date.now();
      await until(() => {
        if (owns(pair.standby!) && !owns(pair.owner)) [pair.owner, pair.standby] = [pair.standby!, pair.owner];
        return pair.owner.lines.find((l) => l.msg === 'consumed' && l.seenAt >= mark);
      }, 60_000, 'the raw owner consuming');
      const survivor = pair.standby!;
      const t0 = Date.now();
      pair.owner.p.kill(signal);
      const first = await until(() => survivor.lines.find((l) => l.msg === 'consumed' && l.seenAt >= t0), 120_000, `${survivor.label}'s first record`);
      await pair.owner.exited;
      pair.owner = survivor;
      pair.standby = undefined;
      return first.seenAt - t0;
    },
    async close() {
      producing = false;
      await pump;
      for (const p of [pair.owner, pair.standby]) if (p) p.p.kill('SIGKILL');
      await producer.disconnect();
      await admin.disconnect();
      await kafka.close();
    },
  };
  await until(() => (owns(pair.owner) ? true : undefined), 120_000, 'the first raw consumer to own the partition');
  return pair;
}

const stack = await privateStack(name, BROKER_SETTINGS);
const config = benchConfig(name, { partitions: 1, brokers: stack.brokers, registryUrl: stack.registryUrl, replicationFactor: stack.replicationFactor });
let ledgerSide: Pair | undefined;
let rawSide: Pair | undefined;
try {
  ledgerSide = await ledgerPair(config);
  rawSide = await rawPair(config);
  const [l, r] = [ledgerSide, rawSide];
  const rounds = await paired({
    rounds: args.rounds,
    warmup: args.quick ? 0 : 1,
    label: `${name} `,
    subject: async () => ({ ms: await l.round() }),
    baseline: async () => ({ ms: await r.round() }),
  });
  writeResult({
    name,
    title: handover ? 'Graceful handover (SIGTERM of the owner) → the new owner’s first event, vs a raw consumer group' : 'Failover (kill -9 of the owner) → the survivor’s first event, vs a raw consumer group with the same timeouts',
    quick: args.quick,
    settings: { signal, groupProtocol: protocol, stack: 'the bench\'s own one-broker stack', brokerSettings: BROKER_SETTINGS, sessionTimeoutMs: SESSION, heartbeatIntervalMs: HEARTBEAT, partitions: 1, rounds: args.rounds, warmupRounds: args.quick ? 0 : 1 },
    metrics: [metric(rounds, { key: 'ms', label: handover ? 'graceful handover' : 'failover after kill -9', unit: 'ms', better: 'lower', baselineLabel: 'raw consumer group, same session/heartbeat', ...(handover ? {} : { aim: '≤ 1.1×' }) })],
    rounds,
    notes: [
      handover
        ? 'The owner’s stop lets running items finish and leaves the group, so the survivor is assigned at once; it then fences, restores and appends.'
        : 'Dominated by the session timeout on both sides; the executor adds fencing (InitProducerId), the restore read and one transaction.',
      ...(args.quick ? ['Quick runs skip the warm-up round (each round is a fresh process taking over anyway).'] : []),
    ],
  });
} finally {
  await ledgerSide?.close();
  await rawSide?.close();
  await stack.down();
}
process.exit(0);
