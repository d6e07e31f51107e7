// Kafka requests a process sends, by type, counted from librdkafka's protocol debug lines
// (PLAN_LEDGER_KAFKA_DEBUG=protocol, logged at pino's trace level): bench/procs/executor.ts counts its
// own, bench/peer.ts the client's.
import { Writable } from 'node:stream';

/** librdkafka's protocol debug line of a request it sent: `... Sent ProduceRequest (v9, 1234 bytes @ 0, CorrId 5)`. */
const SENT = /\bSent (\w+)Request \(/;

/** Adds the requests sent in a chunk of log text (one line each) to `into`. */
export function countSent(text: string, into: Record<string, number>): void {
  for (const line of text.split('\n')) {
    const m = SENT.exec(line);
    if (m) into[m[1]!] = (into[m[1]!] ?? 0) + 1;
  }
}

/** A log destination that only counts the requests sent; `counts` grows as lines arrive. */
export function requestCounter(): { stream: Writable; counts: Record<string, number> } {
  const counts: Record<string, number> = {};
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      countSent(chunk.toString(), counts);
      done();
    },
  });
  return { stream, counts };
}

/** Requests per step by type between two snapshots of the counts, most frequent first (3 decimals). */
export function requestsPerStep(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>, steps: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([k, v]) => [k, v - (before[k] ?? 0)] as const)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => [k, Math.round((v / steps) * 1000) / 1000]),
  );
}
