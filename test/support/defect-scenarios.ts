// Two scenarios that a Kafka client must get right for the ledger, written against a few plain operations
// so that any client can be driven through them: test/kafka/client-defects.e2e.test.ts runs them on the
// ledger's port; a small script can run them on another client (kafkajs) for comparison.
//
// - overlappingAbortedTransactions: two transactional writers interleave their records on one partition
//   and both abort, then a third commits; a read_committed reader must return exactly the committed records.
// - transactionsThroughLeaderKills: transactions that each write one record to every partition while the
//   brokers leading them are killed (-9) and restarted; every commit that succeeded must be in the log
//   exactly once, every failed transaction not at all (or, if its commit's answer was lost, everywhere).

/** A record to write in a scenario: always to a chosen partition. */
export interface ScenarioRecord {
  readonly partition: number;
  readonly key: string;
  readonly value: string;
}

/** A record as a scenario reader saw it. */
export interface SeenRecord {
  readonly partition: number;
  readonly offset: string;
  readonly key: string | null;
  readonly value: string | null;
}

export interface ScenarioTransaction {
  /** Writes records in the transaction; resolves once they are acknowledged. */
  send(topic: string, records: readonly ScenarioRecord[]): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

/** A connected transactional writer (connecting fenced every older writer of its id). */
export interface ScenarioWriter {
  begin(): Promise<ScenarioTransaction>;
  close(): Promise<void>;
}

export type OpenWriter = (transactionalId: string) => Promise<ScenarioWriter>;

/** A read_committed reader of one partition (a ranged read, a live tail, a group member, ...). */
export interface ScenarioReader {
  readonly name: string;
  /**
   * The records of the partition at offsets from `from` up to `end` (exclusive), once the reader has read
   * that far: past `end`, or up to `lastRecord` (the last committed record before `end`) for a reader that
   * only sees records, not transaction markers.
   */
  read(from: string, end: string, lastRecord: string): Promise<SeenRecord[]>;
}

export interface ReaderCounts {
  /** Committed records returned, over every round. */
  committed: number;
  /** Records of aborted transactions returned (must be 0). */
  aborted: number;
  /** Committed records not returned (must be 0). */
  missing: number;
  /** Records returned more than once (must be 0). */
  duplicates: number;
  /** Reads that failed (threw): their round counts as wrong, its records as missing. */
  errors: number;
  /** Rounds whose records were not exactly the committed ones, in order. */
  wrongRounds: number[];
}

export interface OverlapReport {
  readonly rounds: number;
  readonly committedPerRound: number;
  readonly readers: Record<string, ReaderCounts>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Rounds of: writer A and writer B (two transactional ids) open transactions on the same partition at
 * the same time and interleave their sends (A, B, A, B); both abort; writer C commits `committedPerRound`
 * records. After each round every reader reads the round's range; what it returns must be exactly C's
 * records, in order. `endOffset` is the partition's last stable offset.
 */
export async function overlappingAbortedTransactions(o: {
  topic: string;
  partition: number;
  rounds: number;
  committedPerRound: number;
  /** Transactional ids of A, B and C (fresh ones per run). */
  ids: readonly [string, string, string];
  openWriter: OpenWriter;
  endOffset: () => Promise<string>;
  readers: readonly ScenarioReader[];
  log?: (line: string) => void;
}): Promise<OverlapReport> {
  const [a, b, c] = await Promise.all(o.ids.map((id) => o.openWriter(id)));
  const counts: Record<string, ReaderCounts> = Object.fromEntries(o.readers.map((r) => [r.name, { committed: 0, aborted: 0, missing: 0, duplicates: 0, errors: 0, wrongRounds: [] }]));
  const rec = (round: number, who: string, i: number): ScenarioRecord => ({ partition: o.partition, key: `r${round}`, value: `r${round}:${who}:${i}` });
  try {
    for (let round = 0; round < o.rounds; round++) {
      const start = BigInt(await o.endOffset());
      const ta = await a!.begin();
      const tb = await b!.begin();
      await ta.send(o.topic, [rec(round, 'A', 0)]);
      await tb.send(o.topic, [rec(round, 'B', 0)]);
      await ta.send(o.topic, [rec(round, 'A', 1)]);
      await tb.send(o.topic, [rec(round, 'B', 1)]);
      await ta.abort();
      await tb.abort();
      const tc = await c!.begin();
      const committed = Array.from({ length: o.committedPerRound }, (_, i) => rec(round, 'C', i));
      await tc.send(o.topic, committed);
      await tc.commit();

      // 4 aborted records, 2 abort markers, the committed records and their marker. The commit marker
      // may land a moment after commit() returns: wait until the stable end is past it.
      const least = start + BigInt(o.committedPerRound + 7);
      const deadline = Date.now() + 30_000;
      let end = BigInt(await o.endOffset());
      while (end < least) {
        if (Date.now() > deadline) throw new Error(`round ${round}: the stable end stayed at ${end}, below ${least}`);
        await sleep(20);
        end = BigInt(await o.endOffset());
      }
      const expected = committed.map((r) => r.value);
      for (const reader of o.readers) {
        const n = counts[reader.name]!;
        let seen: SeenRecord[];
        try {
          seen = (await reader.read(start.toString(), end.toString(), (end - 2n).toString())).filter((r) => BigInt(r.offset) >= start && BigInt(r.offset) < end);
        } catch (e) {
          n.errors++;
          n.missing += expected.length;
          n.wrongRounds.push(round);
          o.log?.(`round ${round} ${reader.name}: the read failed: ${(e as Error).message}`);
          continue;
        }
        const values = seen.map((r) => r.value ?? '');
        const inRound = values.filter((v) => v.startsWith(`r${round}:`));
        const ofC = inRound.filter((v) => v.includes(':C:'));
        n.aborted += inRound.filter((v) => v.includes(':A:') || v.includes(':B:')).length;
        n.committed += new Set(ofC).size;
        n.duplicates += ofC.length - new Set(ofC).size;
        n.missing += expected.filter((v) => !ofC.includes(v)).length;
        if (JSON.stringify(values) !== JSON.stringify(expected)) {
          n.wrongRounds.push(round);
          o.log?.(`round ${round} ${reader.name}: ${JSON.stringify(values)}`);
        }
      }
    }
  } finally {
    for (const w of [a, b, c]) await w?.close().catch(() => {});
  }
  return { rounds: o.rounds, committedPerRound: o.committedPerRound, readers: counts };
}

export interface KillReport {
  /** Transactions attempted (each a unique number, never retried under the same number). */
  readonly transactions: number;
  /** Transactions whose commit succeeded. */
  readonly committed: number;
  /** Transactions that failed (send, commit or abort threw). */
  readonly failed: number;
  /** Failed transactions whose records are in the log on every partition, once: the commit's answer was lost. */
  readonly inDoubt: number;
  /** Committed (or in-doubt) records in the log more than once (must be 0). */
  readonly duplicates: number;
  /** Records of committed transactions not in the log (must be 0). */
  readonly missing: number;
  /** Transactions in the log on some partitions but not others (must be 0). */
  readonly torn: number;
  /** Times the writer was opened again (fencing its predecessor) after a failure. */
  readonly reopened: number;
  readonly kills: number;
}

/**
 * Transactions, one after another, each writing one record `tx-<n>` to every partition of `topic`, run
 * while `chaos` kills and restarts brokers; they go on until `chaos` has finished and at least
 * `minTransactions` were attempted. A failed transaction is aborted (or its writer replaced by a new one
 * of the same id, which fences it) and never retried under its number. Then every partition is read
 * (read_committed) and each number counted per partition.
 */
export async function transactionsThroughLeaderKills(o: {
  topic: string;
  partitions: number;
  minTransactions: number;
  transactionalId: string;
  openWriter: OpenWriter;
  /** Kills and restarts brokers; resolves with the number of kills. */
  chaos: () => Promise<number>;
  /** Every record of a partition to its stable end, read_committed. */
  readPartition: (partition: number) => Promise<SeenRecord[]>;
  /** Pause between transactions, so they spread over the chaos (default 20 ms). */
  pauseMs?: number;
  /** How long opening a writer may keep failing (brokers down) before the scenario gives up. */
  openTimeoutMs?: number;
  log?: (line: string) => void;
}): Promise<KillReport> {
  const openTimeout = o.openTimeoutMs ?? 120_000;
  const open = async (): Promise<ScenarioWriter> => {
    const deadline = Date.now() + openTimeout;
    for (;;) {
      try {
        return await o.openWriter(o.transactionalId);
      } catch (e) {
        if (Date.now() > deadline) throw e;
        o.log?.(`opening the writer failed, again in 1 s: ${(e as Error).message}`);
        await sleep(1000);
      }
    }
  };
  const committed = new Set<number>();
  const failed = new Set<number>();
  let reopened = 0;
  let chaosDone = false;
  let chaosError: unknown;
  const chaos = o
    .chaos()
    .then((k) => k)
    .catch((e: unknown) => {
      chaosError = e;
      return 0;
    })
    .finally(() => (chaosDone = true));

  let writer = await open();
  let n = 0;
  try {
    while (!chaosDone || n < o.minTransactions) {
      const number = n++;
      let tx: ScenarioTransaction | undefined;
      try {
        tx = await writer.begin();
        await tx.send(o.topic, Array.from({ length: o.partitions }, (_, p) => ({ partition: p, key: `tx-${number}`, value: `tx-${number}` })));
        await tx.commit();
        committed.add(number);
      } catch (e) {
        failed.add(number);
        o.log?.(`transaction ${number} failed: ${(e as Error).message}`);
        let aborted = false;
        if (tx) aborted = await tx.abort().then(() => true, () => false);
        if (!aborted) {
          // The writer may be in a fatal state: a new one of the same id fences it and aborts what it left open.
          await writer.close().catch(() => {});
          writer = await open();
          reopened++;
        }
      }
      if (o.pauseMs !== 0) await sleep(o.pauseMs ?? 20);
    }
  } finally {
    await writer.close().catch(() => {});
  }
  const kills = await chaos;
  if (chaosError) throw chaosError;

  // n → count, per partition.
  const perPartition: Array<Map<number, number>> = [];
  for (let p = 0; p < o.partitions; p++) {
    const counts = new Map<number, number>();
    for (const r of await o.readPartition(p)) {
      const m = /^tx-(\d+)$/.exec(r.value ?? '');
      if (m) counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
    }
    perPartition.push(counts);
  }
  let duplicates = 0;
  let missing = 0;
  let torn = 0;
  let inDoubt = 0;
  for (let t = 0; t < n; t++) {
    const seen = perPartition.map((c) => c.get(t) ?? 0);
    duplicates += seen.reduce((s, x) => s + Math.max(0, x - 1), 0);
    if (committed.has(t)) {
      missing += seen.filter((x) => x === 0).length;
    } else if (seen.some((x) => x > 0)) {
      if (seen.every((x) => x > 0)) inDoubt++;
      else torn++;
    }
  }
  const report: KillReport = { transactions: n, committed: committed.size, failed: failed.size, inDoubt, duplicates, missing, torn, reopened, kills };
  o.log?.(JSON.stringify(report));
  return report;
}
