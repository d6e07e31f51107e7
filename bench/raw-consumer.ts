// A raw kafkajs group member for the failover / handover baselines: prints one JSON line per assignment
// and per consumed record; on SIGTERM it leaves the group (disconnect) and exits.
import { Kafka, logLevel } from 'kafkajs';

const [brokers, topic, groupId, label, session, heartbeat] = process.argv.slice(2) as [string, string, string, string, string, string];
const kafka = new Kafka({ brokers: brokers.split(','), clientId: label, logLevel: logLevel.NOTHING });
const consumer = kafka.consumer({ groupId, sessionTimeout: Number(session), heartbeatInterval: Number(heartbeat), maxWaitTimeInMs: 100 });
consumer.on(consumer.events.GROUP_JOIN, (e) => console.log(JSON.stringify({ msg: 'assignment', partitions: e.payload.memberAssignment[topic] ?? [] })));
await consumer.connect();
await consumer.subscribe({ topic, fromBeginning: false });
await consumer.run({
  eachMessage: async ({ message }) => {
    console.log(JSON.stringify({ msg: 'consumed', offset: message.offset, at: Date.now() }));
  },
});
process.once('SIGTERM', () => {
  void consumer.disconnect().finally(() => {
    console.log(JSON.stringify({ msg: 'stopped', at: Date.now() }));
    process.exit(0);
  });
});
