// A raw group member (the Kafka port's, no ledger on top) for the failover / handover baselines: prints one
// JSON line per assignment change (the partitions it holds now) and per consumed record; on SIGTERM it
// leaves the group and exits. The cluster comes from the PLAN_LEDGER_* environment.
import { loadConfig } from '../src/config.js';
import { createKafka } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';

const [topic, groupId, label, session, heartbeat] = process.argv.slice(2) as [string, string, string, string, string];
const kafka = createKafka(loadConfig({ clientId: label }), silentLogger(), undefined, 'service');
const held = new Set<number>();
const assignment = () => console.log(JSON.stringify({ msg: 'assignment', partitions: [...held].sort((a, b) => a - b) }));
const member = await kafka.join({
  groupId,
  topic,
  sessionTimeoutMs: Number(session),
  heartbeatIntervalMs: Number(heartbeat),
  rebalanceTimeoutMs: Number(session),
  onAssigned: (ps) => {
    for (const p of ps) held.add(p);
    assignment();
  },
  onRevoked: (ps) => {
    for (const p of ps) held.delete(p);
    assignment();
  },
  onRecords: async (_p, records) => {
    for (const r of records) console.log(JSON.stringify({ msg: 'consumed', offset: r.offset, at: Date.now() }));
    return undefined;
  },
});
process.once('SIGTERM', () => {
  void member.close().finally(() => {
    console.log(JSON.stringify({ msg: 'stopped', at: Date.now() }));
    process.exit(0);
  });
});
