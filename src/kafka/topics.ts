import kafkajs, { type Admin, type ITopicConfig } from 'kafkajs';
import { topicNames, type LedgerConfig } from '../config.js';
import { LedgerError } from '../errors.js';
import { fetchTopicOffsetsRetrying } from './log-reader.js';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * `<prefix>.ledger-audit`: erasure records (JSON `PlanErased`, key planId), written by the owning executor
 * in the erasure's transaction. One partition, the delete policy and no time retention, so the fact of an
 * erasure outlives the plan's compacted events.
 */
export function auditTopic(prefix: string): string {
  return `${prefix}.ledger-audit`;
}

/**
 * The plan topics (DESIGN §3): co-partitioned commands/events/snapshots/archive, events compacted with no
 * time retention (their keys are unique, so compaction removes only exact re-sends and erasures);
 * plus the single-partition ledger-audit topic, which must exist before an executor's erasure
 * transaction writes to it.
 */
export function planTopicSpecs(config: LedgerConfig): ITopicConfig[] {
  const t = topicNames(config.topicPrefix);
  const base = { numPartitions: config.partitions, replicationFactor: config.replicationFactor };
  // With three or more replicas an append needs two in sync (acks=all), so one broker can fail without
  // losing an accepted event or stopping writes; below that the broker's default applies.
  const durability: Record<string, string> = config.replicationFactor >= 3 ? { 'min.insync.replicas': '2' } : {};
  const entries = (o: Record<string, string>) => Object.entries({ ...o, ...durability }).map(([name, value]) => ({ name, value }));
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
    { topic: t.dlq, ...base, configEntries: entries({ 'cleanup.policy': 'delete', 'retention.ms': String(30 * DAY_MS) }) },
    { topic: auditTopic(config.topicPrefix), numPartitions: 1, replicationFactor: config.replicationFactor, configEntries: entries({ 'cleanup.policy': 'delete', 'retention.ms': '-1' }) },
  ];
}

/**
 * Creates the plan topics when missing and checks existing ones: a partition count that differs from
 * the config would break co-partitioning, so it is an error rather than a silent surprise.
 */
export async function ensurePlanTopics(admin: Admin, config: LedgerConfig): Promise<void> {
  const specs = planTopicSpecs(config);
  await ensureTopics(admin, specs);
}

export async function ensureTopics(admin: Admin, specs: ITopicConfig[]): Promise<void> {
  const existing = new Set(await admin.listTopics());
  const missing = specs.filter((s) => !existing.has(s.topic));
  if (missing.length) {
    try {
      await admin.createTopics({ topics: missing, waitForLeaders: true });
    } catch (e) {
      const refused = ((e as { errors?: Array<{ type?: string; topic?: string }> }).errors ?? []).filter((x) => x.type === 'TOPIC_AUTHORIZATION_FAILED');
      if (refused.length) {
        // A principal under ACLs may not create topics (SECURITY.md): say which are missing and who makes them.
        throw new LedgerError(
          'FORBIDDEN',
          `topics ${refused.map((x) => x.topic).join(', ')} do not exist and Kafka does not let this principal create them: create them as an admin (on the local SASL stack: plan-ledger stack acls --prefix <prefix>)`,
          { topics: refused.map((x) => x.topic) },
          { cause: e },
        );
      }
      // Another process may have created them between list and create.
      if (!(e instanceof Error && /already exists/i.test(e.message))) throw e;
    }
    // Leaders in the metadata do not mean the partitions are served yet: under load a first ListOffsets or
    // produce right after creation can meet UNKNOWN_TOPIC_OR_PARTITION. Wait until each answers.
    for (const t of missing) await fetchTopicOffsetsRetrying(admin, t.topic);
  }
  const meta = await admin.fetchTopicMetadata({ topics: specs.map((s) => s.topic) });
  for (const spec of specs) {
    const t = meta.topics.find((m) => m.name === spec.topic);
    if (spec.numPartitions !== undefined && spec.numPartitions > 0 && t && t.partitions.length !== spec.numPartitions) {
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

/** Switches a compacted topic to {@link promptCompactionConfig}. The cleaner only cleans closed segments: keep writing to roll them. */
export async function compactPromptly(admin: Admin, topic: string): Promise<void> {
  await admin.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configEntries: promptCompactionConfig() }] });
}

/** Reads a topic's effective configuration values. */
export async function describeTopicConfig(admin: Admin, topic: string, names: string[]): Promise<Record<string, string>> {
  const r = await admin.describeConfigs({
    includeSynonyms: false,
    resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: names }],
  });
  return Object.fromEntries((r.resources[0]?.configEntries ?? []).map((c) => [c.configName, c.configValue]));
}
