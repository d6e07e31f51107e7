import { topicNames, type LedgerConfig } from '../config.js';
import type { KafkaClient, LedgerAdmin, ReadStats } from '../kafka/index.js';
import { AnnouncementFold, type ExecutorList } from './announcement.js';

export interface ReadExecutorsOptions {
  /** Hold every executor's heartbeat to this age (ms) instead of three of its own intervals. */
  readonly staleAfterMs?: number;
  /** The reader's clock (default Date.now). */
  readonly now?: () => number;
  /** Give up reading after this long (default 15 s). */
  readonly timeoutMs?: number;
  /** Asks the admin whether the topic exists first (a cluster whose plan topics predate it has none). */
  readonly admin?: LedgerAdmin;
  readonly stats?: ReadStats;
}

/**
 * The executors announced on `<prefix>.plan-executors`, read to its end now (one partition, compacted:
 * the latest announcement and heartbeat of each executor, plus the heartbeats since the last cleaning).
 * A record that cannot be taken is listed in `invalid` with the reason, never thrown.
 */
export async function readExecutors(kafka: KafkaClient, config: LedgerConfig, opts: ReadExecutorsOptions = {}): Promise<ExecutorList> {
  const topic = topicNames(config.topicPrefix).planExecutors;
  const fold = new AnnouncementFold();
  const exists = opts.admin === undefined || (await opts.admin.listTopics()).includes(topic);
  if (exists) {
    await kafka.readToEnd({
      topic,
      timeoutMs: opts.timeoutMs ?? 15_000,
      ...(opts.stats ? { stats: opts.stats } : {}),
      onRecords: (records) => {
        for (const r of records) fold.add(r);
      },
    });
  }
  const staleAfter = opts.staleAfterMs !== undefined ? { staleAfterMs: opts.staleAfterMs } : {};
  return fold.list((opts.now ?? Date.now)(), topic, staleAfter);
}
