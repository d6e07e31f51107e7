import { topicNames, type LedgerConfig } from '../config.js';
import { LedgerError } from '../errors.js';
import { kafkaErrorName } from './client.js';
import { MAX_RECORD_BYTES, type LedgerAdmin, type TopicSpec } from './port.js';
import { STREAM_RETENTION_BYTES, STREAM_RETENTION_MS } from '../streams/records.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/** `segment.ms` of `<prefix>.plan-keys`: a segment rolls (and becomes cleanable) at the first write this long after it opened. */
export const PLAN_KEYS_SEGMENT_MS = 1000;

/** `segment.ms` of `<prefix>.plan-executors`: the heartbeats a reader reads past are at most this many minutes' worth. */
export const EXECUTORS_SEGMENT_MS = 10 * 60 * 1000;

/**
 * `<prefix>.ledger-audit`: erasure records (JSON `PlanErased`, key planId), written by the owning executor
 * in the erasure's transaction. One partition, the delete policy and no time retention, so the fact of an
 * erasure outlives the plan's compacted events.
 */
export function auditTopic(prefix: string): string {
  return `${prefix}.ledger-audit`;
}

/**
 * The plan topics (docs/design.md#topics-and-ownership): co-partitioned commands/events/snapshots/archive, events compacted with no
 * time retention (their keys are unique, so compaction removes only exact re-sends and erasures);
 * plus the single-partition ledger-audit topic, which must exist before an executor's erasure
 * transaction writes to it, and the single-partition plan-executors topic (who runs, with which tools).
 */
export function planTopicSpecs(config: LedgerConfig): TopicSpec[] {
  const t = topicNames(config.topicPrefix);
  const base = { numPartitions: config.partitions, replicationFactor: config.replicationFactor };
  // With three or more replicas an append needs two in sync (acks=all), so one broker can fail without
  // losing an accepted event or stopping writes; below that the broker's default applies.
  const durability: Record<string, string> = config.replicationFactor >= 3 ? { 'min.insync.replicas': '2' } : {};
  // The record limit is set, not inherited from the broker's default, so writers know it without asking.
  const limit = { 'max.message.bytes': String(MAX_RECORD_BYTES) };
  const entries = (o: Record<string, string>) => Object.entries({ ...limit, ...o, ...durability }).map(([name, value]) => ({ name, value }));
  return [
    { topic: t.commands, ...base, configEntries: entries({ 'cleanup.policy': 'delete', 'retention.ms': String(7 * DAY_MS) }) },
    { topic: t.events, ...base, configEntries: entries({ 'cleanup.policy': 'compact', 'retention.ms': '-1', 'min.compaction.lag.ms': '0' }) },
    // Live plans only: a finished plan's snapshot moves to the archive and leaves a tombstone here, which
    // the cleaner removes with the old values; so what a new owner reads follows the live set, not history.
    {
      topic: t.snapshots,
      ...base,
      configEntries: entries({
        'cleanup.policy': 'compact',
        'retention.ms': '-1',
        'segment.ms': String(60 * 60 * 1000),
        'min.cleanable.dirty.ratio': '0.1',
        'delete.retention.ms': String(10 * 60 * 1000),
      }),
    },
    { topic: t.archive, ...base, configEntries: entries({ 'cleanup.policy': 'compact', 'retention.ms': '-1' }) },
    // Large payloads by reference: content-addressed chunks keyed `planId:sha256:index`, on the plan's partition.
    { topic: t.blobs, ...base, configEntries: entries({ 'cleanup.policy': 'compact', 'retention.ms': '-1' }) },
    // Per-plan data keys (wrapped by the master key), key planId: erasure writes a tombstone. Compacted
    // promptly so a destroyed key's old record leaves the log within seconds of the next write after it.
    {
      topic: t.planKeys,
      ...base,
      configEntries: entries({
        'cleanup.policy': 'compact',
        'retention.ms': '-1',
        'segment.ms': String(PLAN_KEYS_SEGMENT_MS),
        'min.cleanable.dirty.ratio': '0.01',
        'min.compaction.lag.ms': '0',
        'max.compaction.lag.ms': String(PLAN_KEYS_SEGMENT_MS),
        'delete.retention.ms': '1000',
      }),
    },
    // Who runs: each executor's announcement (key `announce:<id>`) and heartbeat (key `heartbeat:<id>`), JSON
    // (src/executors/announcement.ts). One partition: every reader reads all of it. Compacted: one record per
    // key survives, and a clean stop's tombstones leave it within the cleaner's next run. Segments roll every
    // 10 minutes so the heartbeats a reader reads past stay few; the broker stamps each record
    // (LogAppendTime), so a heartbeat's age is measured against one clock, the broker's.
    {
      topic: t.planExecutors,
      numPartitions: 1,
      replicationFactor: config.replicationFactor,
      configEntries: entries({
        'cleanup.policy': 'compact',
        'retention.ms': '-1',
        'segment.ms': String(EXECUTORS_SEGMENT_MS),
        'min.cleanable.dirty.ratio': '0.1',
        'delete.retention.ms': String(60 * 60 * 1000),
        'message.timestamp.type': 'LogAppendTime',
      }),
    },
    // Live output of running attempts (agent turns' text, tools' progress), keyed `planId/item/attempt/run/seq`
    // on the plan's partition: a view, bounded in time and bytes per partition (docs/reference/limits.md). The
    // keys are unique, so compaction removes only an erasure's tombstones and the records they cover.
    {
      topic: t.streams,
      ...base,
      configEntries: entries({
        'cleanup.policy': 'compact,delete',
        'retention.ms': String(STREAM_RETENTION_MS),
        'retention.bytes': String(STREAM_RETENTION_BYTES),
        'segment.bytes': String(64 * 1024 * 1024),
        'segment.ms': String(60 * 60 * 1000),
        'min.compaction.lag.ms': '0',
        'delete.retention.ms': String(60 * 1000),
      }),
    },
    { topic: t.dlq, ...base, configEntries: entries({ 'cleanup.policy': 'delete', 'retention.ms': String(30 * DAY_MS) }) },
    { topic: auditTopic(config.topicPrefix), numPartitions: 1, replicationFactor: config.replicationFactor, configEntries: entries({ 'cleanup.policy': 'delete', 'retention.ms': '-1' }) },
  ];
}

/**
 * Creates the plan topics when missing and checks existing ones: a partition count that differs from
 * the config would break co-partitioning, so it is an error rather than a silent surprise.
 */
export async function ensurePlanTopics(admin: LedgerAdmin, config: LedgerConfig): Promise<void> {
  await ensureTopics(admin, planTopicSpecs(config));
}

export async function ensureTopics(admin: LedgerAdmin, specs: readonly TopicSpec[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length) {
    try {
      await admin.createTopics(missing);
    } catch (e) {
      if (kafkaErrorName(e) === 'TOPIC_AUTHORIZATION_FAILED' || kafkaErrorName(e) === 'CLUSTER_AUTHORIZATION_FAILED') {
        // A principal under ACLs may not create topics (SECURITY.md): say which are missing and who makes them.
        const topics = missing.map((m) => m.topic).sort();
        throw new LedgerError(
          'FORBIDDEN',
          `topics ${topics.join(', ')} do not exist and Kafka does not let this principal create them: create them as an admin (on the local SASL stack: plan-ledger stack acls --prefix <prefix>)`,
          { topics },
          { cause: e },
        );
      }
      throw e;
    }
  }
  const meta = await admin.fetchTopicMetadata(specs.map((s) => s.topic));
  for (const spec of specs) {
    const t = meta.find((m) => m.name === spec.topic);
    if (spec.numPartitions > 0 && t && t.partitions.length !== spec.numPartitions) {
      throw new LedgerError(
        'CONFLICT',
        `topic ${spec.topic} has ${t.partitions.length} partitions but the config says ${spec.numPartitions}; plan topics must be co-partitioned`,
        { topic: spec.topic },
      );
    }
  }
}

/**
 * Cleaner settings under which a compacted topic is cleaned within a second or so (tests and benchmarks
 * that need compaction to have run), the policy included: AlterConfigs replaces a topic's whole config.
 */
export function promptCompactionConfig(): Array<{ name: string; value: string }> {
  return [
    { name: 'cleanup.policy', value: 'compact' },
    { name: 'retention.ms', value: '-1' },
    { name: 'min.compaction.lag.ms', value: '0' },
    { name: 'segment.ms', value: '100' },
    { name: 'min.cleanable.dirty.ratio', value: '0.01' },
    { name: 'delete.retention.ms', value: '100' },
  ];
}
