// `plan-ledger migrate --to-prefix <new> --partitions N`: moves a ledger to topics with another partition
// count. A plan's partition is fixed by its id (hash(planId) % P), so a new count re-maps plans: the only
// safe way is to copy every plan's events, in order, to a new prefix whose topics have the new count, then
// verify each plan's hash chain there. docs/guides/partitions-and-migration.md says when and how.
import { LedgerLog } from '../src/audit/log.js';
import { verifyAll } from '../src/audit/live.js';
import type { PlanVerification } from '../src/audit/verify.js';
import { codecFromConfig, type LedgerCodec } from '../src/codec/index.js';
import { loadConfig, topicNames, type LedgerConfig } from '../src/config.js';
import { LedgerError } from '../src/errors.js';
import { createKafka, ensurePlanTopics, parseEventKey, partitionFor, type LedgerAdmin, type LogRecord, type OutRecord, type RecordWriter } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { cliLogger } from './connect.js';
import { ensureKafkaClient } from './native-addon.js';
import { json, out } from './output.js';

export interface MigrateOptions {
  /** The ledger to copy (its prefix and connection). */
  readonly from: LedgerConfig;
  /** Prefix of the new topics; they must not hold events yet. */
  readonly toPrefix: string;
  /** Partition count of the new topics. */
  readonly partitions: number;
  readonly logger: Logger;
  /** Copy even though executors are still members of the source's group (their later events are not copied). */
  readonly force?: boolean;
  readonly onProgress?: (copied: number, total: number) => void;
}

/** One plan whose copy does not verify, or verifies to something else than its source. */
export interface MigrationMismatch {
  readonly planId: string;
  readonly reason: string;
}

export interface MigrationReport {
  readonly fromPrefix: string;
  readonly toPrefix: string;
  readonly fromPartitions: number;
  readonly toPartitions: number;
  /** Event records copied (tombstones included). */
  readonly events: number;
  /** Payload chunk records copied from the blobs topic. */
  readonly blobs: number;
  /** Plans verified on the new topics (seq, hash chain, head and state digest equal to the source's). */
  readonly plans: number;
  /**
   * Records of `<prefix>.plan-streams` left on the old prefix, not copied: live output of attempts that
   * ran before the copy, whose results the events hold (docs/guides/partitions-and-migration.md says why).
   */
  readonly streamRecordsNotCopied: number;
  readonly mismatches: readonly MigrationMismatch[];
  readonly ok: boolean;
}

/** Largest produce request the copy sends (under the broker's default 1 MiB batch limit). */
const MAX_SEND_BYTES = 512 * 1024;

async function partitionCount(admin: LedgerAdmin, topic: string): Promise<number> {
  const meta = await admin.fetchTopicMetadata([topic]);
  return meta[0]?.partitions.length ?? 0;
}

async function hasRecords(admin: LedgerAdmin, topic: string): Promise<boolean> {
  if (!(await admin.listTopics()).includes(topic)) return false;
  return (await admin.fetchTopicOffsets(topic)).some((o) => BigInt(o.high) > BigInt(o.low));
}

/**
 * Refuses to copy a ledger that is still changing: executors in its group (their later events would be
 * left behind), or commands the executors have not decided yet (they would be lost with the old prefix).
 */
async function assertQuiet(admin: LedgerAdmin, from: LedgerConfig, force: boolean): Promise<void> {
  const group = `${from.topicPrefix}.executors`;
  const described = (await admin.describeGroups([group]))[0];
  if (!force && described && described.members.length > 0) {
    throw new LedgerError('CONFLICT', `${described.members.length} executor(s) still run on prefix "${from.topicPrefix}" (group ${group}): stop them first, so no event is written after the copy (or pass --force)`, { group });
  }
  const commands = topicNames(from.topicPrefix).commands;
  if (!(await admin.listTopics()).includes(commands)) return;
  const ends = await admin.fetchTopicOffsets(commands);
  const committed = await admin.fetchOffsets(group, commands);
  let pending = 0n;
  for (const o of ends) {
    const c = committed.find((x) => x.partition === o.partition)?.offset;
    const from = c === undefined || BigInt(c) < 0n ? BigInt(o.low) : BigInt(c);
    if (BigInt(o.high) > from) pending += BigInt(o.high) - from;
  }
  if (!force && pending > 0n) {
    throw new LedgerError('CONFLICT', `${pending} command record(s) on ${commands} were not decided yet: run the executors until they are (or pass --force to leave them behind)`, { pending: Number(pending) });
  }
}

/** Sends records in order, a few hundred KiB per request, waiting for each (so per-partition order holds). */
async function sendInOrder(writer: RecordWriter, topic: string, messages: OutRecord[]): Promise<void> {
  let batch: OutRecord[] = [];
  let bytes = 0;
  const flush = async () => {
    if (!batch.length) return;
    await writer.send(topic, batch);
    batch = [];
    bytes = 0;
  };
  for (const m of messages) {
    const size = (m.value instanceof Buffer ? m.value.length : 0) + 64;
    if (bytes + size > MAX_SEND_BYTES) await flush();
    batch.push(m);
    bytes += size;
  }
  await flush();
}

/**
 * An event record for the new topics: same key, timestamp (reads locate a plan's events and payload
 * chunks by it) and headers; the value decoded and encoded again under the new prefix's subject. A value
 * that does not decode is copied as it is, so the new ledger reports it exactly as the old one does.
 */
async function copyOfEvent(r: LogRecord, from: LedgerCodec, to: LedgerCodec, partitions: number): Promise<OutRecord> {
  const key = r.key?.toString('utf8') ?? '';
  const planId = parseEventKey(key)?.planId ?? key;
  let value: Buffer | null = r.value;
  if (value !== null) {
    try {
      value = to.encodeEvent(await from.decodeEvent(value));
    } catch {
      /* undecodable: copied as it is */
    }
  }
  return { key: r.key, value, headers: r.headers, timestamp: r.timestamp, partition: partitionFor(planId, partitions) };
}

/** A payload chunk keyed `planId:sha256:index` goes to its plan's new partition. */
function copyOfChunk(r: LogRecord, partitions: number): OutRecord {
  const key = r.key?.toString('utf8') ?? '';
  const parts = key.split(':');
  const planId = parts.length >= 3 ? parts.slice(0, -2).join(':') : key;
  return { key: r.key, value: r.value, headers: r.headers, timestamp: r.timestamp, partition: partitionFor(planId, partitions) };
}

async function verifications(config: LedgerConfig, logger: Logger): Promise<Map<string, PlanVerification>> {
  const log = await LedgerLog.open(config, logger);
  const out = new Map<string, PlanVerification>();
  try {
    await verifyAll(log, (v) => void out.set(v.planId, v));
  } finally {
    await log.close();
  }
  return out;
}

/**
 * Copies every plan's events (and their payload chunks) from `from`'s topics to new topics under
 * `toPrefix` with `partitions` partitions, each plan in its seq order on its new partition, then verifies
 * every plan on the new topics and compares it with the source: same events, chain head and state digest.
 * Snapshots, the archive, the DLQ, erasure records and live stream records are not copied: a projector on
 * the new prefix rebuilds snapshots from the events, and the old topics stay as they are until you delete them.
 *
 * @example
 * const report = await migratePrefix({ from: loadConfig(), toPrefix: 'ledger-v2', partitions: 24, logger });
 * if (!report.ok) console.error(report.mismatches);
 */
export async function migratePrefix(opts: MigrateOptions): Promise<MigrationReport> {
  const { from, logger } = opts;
  if (!Number.isInteger(opts.partitions) || opts.partitions < 1 || opts.partitions > 10_000) {
    throw new LedgerError('VALIDATION', `--partitions: expected an integer from 1 to 10000, got ${String(opts.partitions)}`, { field: 'partitions' });
  }
  if (opts.toPrefix === from.topicPrefix) throw new LedgerError('VALIDATION', '--to-prefix: must differ from the current prefix', { field: 'toPrefix' });
  const to = loadConfig({ ...from, topicPrefix: opts.toPrefix, partitions: opts.partitions });
  const src = topicNames(from.topicPrefix);
  const dst = topicNames(to.topicPrefix);
  const kafka = createKafka(from, logger, 'migrate');
  const admin = kafka.admin();
  const writer = kafka.writer();
  try {
    await admin.connect();
    if (!(await admin.listTopics()).includes(src.events)) throw new LedgerError('NOT_FOUND', `no ledger on prefix "${from.topicPrefix}" (${src.events} does not exist)`);
    const fromPartitions = await partitionCount(admin, src.events);
    if (await hasRecords(admin, dst.events)) throw new LedgerError('CONFLICT', `${dst.events} already holds events: migrate into a new prefix`, { topic: dst.events });
    await assertQuiet(admin, from, opts.force === true);
    await ensurePlanTopics(admin, to);
    const [fromCodec, toCodec] = await Promise.all([codecFromConfig(from, { logger }), codecFromConfig(to, { logger })]);
    await writer.connect();

    const total = (await admin.fetchTopicOffsets(src.events)).reduce((n, o) => n + Number(BigInt(o.high) - BigInt(o.low)), 0);
    let events = 0;
    // Partition by partition, in offset order: a plan lives on one source partition, so its events reach
    // its new partition in the order they were appended.
    for (let p = 0; p < fromPartitions; p++) {
      await kafka.readToEnd({
        topic: src.events,
        partitions: [p],
        onRecords: async (records) => {
          const messages: OutRecord[] = [];
          for (const r of records) messages.push(await copyOfEvent(r, fromCodec, toCodec, opts.partitions));
          await sendInOrder(writer, dst.events, messages);
          events += records.length;
          opts.onProgress?.(events, total);
        },
      });
    }
    let blobs = 0;
    if ((await admin.listTopics()).includes(src.blobs)) {
      await kafka.readToEnd({
        topic: src.blobs,
        onRecords: async (records) => {
          await sendInOrder(writer, dst.blobs, records.map((r) => copyOfChunk(r, opts.partitions)));
          blobs += records.length;
        },
      });
    }

    // Live stream records are not copied (why: docs/guides/partitions-and-migration.md); they are counted.
    let streamRecordsNotCopied = 0;
    if ((await admin.listTopics()).includes(src.streams)) {
      await kafka.readToEnd({ topic: src.streams, onRecords: (records) => void (streamRecordsNotCopied += records.filter((r) => r.value !== null).length) });
    }

    // Verify every plan on the new topics, and that it is the same plan as on the old ones.
    const [before, after] = [await verifications(from, logger), await verifications(to, logger)];
    const mismatches: MigrationMismatch[] = [];
    for (const [planId, v] of before) {
      const w = after.get(planId);
      if (!w) mismatches.push({ planId, reason: 'not found on the new topics' });
      else if (!w.ok && v.ok) mismatches.push({ planId, reason: `does not verify on the new topics: ${w.firstBroken?.reason ?? 'unknown'}` });
      else if (w.events !== v.events || w.head !== v.head || w.stateDigest !== v.stateDigest) {
        mismatches.push({ planId, reason: `differs: ${w.events} events, head ${w.head?.slice(0, 16)} on the new topics; ${v.events} events, head ${v.head?.slice(0, 16)} on the old` });
      }
    }
    for (const planId of after.keys()) if (!before.has(planId)) mismatches.push({ planId, reason: 'on the new topics only' });
    return { fromPrefix: from.topicPrefix, toPrefix: to.topicPrefix, fromPartitions, toPartitions: opts.partitions, events, blobs, plans: after.size, streamRecordsNotCopied, mismatches, ok: mismatches.length === 0 };
  } finally {
    await writer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
    await kafka.close();
  }
}

/** The `migrate` verb's action (registered in migrate-command.ts, which loads this module when it runs). */
export async function runMigrate(o: { toPrefix: string; partitions: number; force?: boolean; json?: boolean }): Promise<void> {
  const logger = cliLogger();
  const from = loadConfig();
  ensureKafkaClient();
  const report = await migratePrefix({
    from,
    toPrefix: o.toPrefix,
    partitions: o.partitions,
    logger,
    force: o.force === true,
    onProgress: o.json || !process.stderr.isTTY ? undefined : (n, total) => process.stderr.write(`\rcopied ${n} of ${total} event records`),
  });
  if (!o.json && process.stderr.isTTY) process.stderr.write('\n');
  if (o.json) json(report);
  else {
    out(`migrated ${report.fromPrefix} (${report.fromPartitions} partitions) → ${report.toPrefix} (${report.toPartitions} partitions): ${report.events} event records, ${report.blobs} payload chunks, ${report.plans} plans verified`);
    if (report.streamRecordsNotCopied > 0) {
      out(`  not copied: ${report.streamRecordsNotCopied} live-stream records of ${report.fromPrefix}.plan-streams (output of attempts that ran before the copy; their results are in the events; cursors of the old prefix do not resume on the new one)`);
    }
    for (const m of report.mismatches) out(`  ${m.planId}: ${m.reason}`);
  }
  if (!report.ok) throw new LedgerError('INTEGRITY', `${report.mismatches.length} plan(s) did not verify on the new topics`);
}
