// The executor's announcement on <prefix>.plan-executors (src/executors/announcement.ts): what it serves at
// start, a heartbeat with its partitions every interval and at every change of them, tombstones at a clean
// stop. Best effort by design: a write that fails is logged and the next heartbeat tries again; nothing here
// holds up a command, an item or the stop for longer than its bound.
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { topicNames, type LedgerConfig } from '../src/config.js';
import { announcementRecord, heartbeatRecord, stopRecords } from '../src/executors/index.js';
import type { KafkaClient, OutRecord, RecordWriter } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { packageRoot } from '../src/package-root.js';

/** How long one announcement write may take before it is given up (the next heartbeat writes anew). */
const WRITE_BOUND_MS = 10_000;
/** How long the stop's tombstones may take: a broker that is down does not hold the stop. */
const STOP_BOUND_MS = 3_000;

let version: string | undefined;
function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}

export interface AnnouncerOptions {
  readonly kafka: KafkaClient;
  readonly config: LedgerConfig;
  readonly executorId: string;
  readonly tools: readonly string[];
  readonly heartbeatMs: number;
  readonly logger: Logger;
  /** The partitions the executor owns now. */
  readonly partitions: () => number[];
  readonly now?: () => number;
}

export class Announcer {
  private writer: RecordWriter | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly topic: string;
  private stopped = false;
  /** One write at a time, in order: a heartbeat never overtakes the announcement or the tombstones. */
  private chain: Promise<void> = Promise.resolve();
  private failures = 0;

  constructor(private readonly o: AnnouncerOptions) {
    this.topic = topicNames(o.config.topicPrefix).planExecutors;
  }

  /** Connects and writes the announcement and a first heartbeat; a failure is logged, never thrown. */
  async start(): Promise<void> {
    const now = this.o.now ?? Date.now;
    const { key, value, announcement } = announcementRecord({
      executorId: this.o.executorId,
      version: packageVersion(),
      host: hostname(),
      pid: process.pid,
      startedAt: new Date(now()).toISOString(),
      heartbeatMs: this.o.heartbeatMs,
      tools: this.o.tools,
    });
    if (announcement.toolsOmitted > 0) {
      this.o.logger.warn({ listed: announcement.tools.length, omitted: announcement.toolsOmitted }, 'the announcement lists the tools that fit its bound; the rest are counted, not named');
    }
    this.writer = this.o.kafka.writer();
    try {
      await bounded(this.writer.connect(), WRITE_BOUND_MS, 'connecting the announcement writer');
    } catch (e) {
      this.o.logger.warn({ err: e }, 'the announcement writer could not connect; the executor runs unannounced until it can');
    }
    this.enqueue([{ key, value }, this.heartbeat()], 'announcement');
    this.timer = setInterval(() => this.beat(), this.o.heartbeatMs);
    this.timer.unref();
    await this.chain;
  }

  /** A heartbeat now (the partitions changed). */
  beat(): void {
    if (this.stopped || this.writer === undefined) return;
    this.enqueue([this.heartbeat()], 'heartbeat');
  }

  private heartbeat(): OutRecord {
    return heartbeatRecord(this.o.executorId, (this.o.now ?? Date.now)(), this.o.partitions());
  }

  private enqueue(records: OutRecord[], what: string, bound = WRITE_BOUND_MS): Promise<void> {
    const writer = this.writer;
    if (writer === undefined) return this.chain;
    this.chain = this.chain.then(async () => {
      try {
        await bounded(writer.send(this.topic, records), bound, `writing the executor's ${what}`);
        if (this.failures > 0) this.o.logger.info({ after: this.failures }, 'executor announcement written again');
        this.failures = 0;
      } catch (e) {
        this.failures += 1;
        // Once per streak, then every tenth: an outage does not flood the log.
        if (this.failures === 1 || this.failures % 10 === 0) this.o.logger.warn({ err: e, what, failures: this.failures }, 'executor announcement not written; the next heartbeat tries again');
      }
    });
    return this.chain;
  }

  /** Stops the heartbeats and writes the tombstones (bounded), then closes the writer. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.timer);
    if (this.writer === undefined) return;
    // Bounded as a whole: a heartbeat still queued before the tombstones does not stretch the stop.
    await bounded(this.enqueue(stopRecords(this.o.executorId), 'tombstones', STOP_BOUND_MS), STOP_BOUND_MS, "writing the executor's tombstones").catch((e: unknown) =>
      this.o.logger.warn({ err: e }, 'executor tombstones not written; readers will count it stale instead'),
    );
    await bounded(this.writer.disconnect(), STOP_BOUND_MS, 'closing the announcement writer').catch(() => {});
  }
}

function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
