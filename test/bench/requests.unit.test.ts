// bench/lib/requests.ts on log lines as librdkafka's protocol debug context writes them through pino.
import { describe, expect, it } from 'vitest';
import { countSent, requestCounter, requestsPerStep } from '../../bench/lib/requests.js';

// Real lines (librdkafka 2.15.1, PLAN_LEDGER_KAFKA_DEBUG=protocol, an admin connecting and listing topics).
const line = (fac: string, msg: string) => JSON.stringify({ level: 10, time: 1796409073858, pid: 15072, hostname: 'vm', name: 'plan-ledger', component: 'kafka', fac, msg: `[thrd:127.0.0.1:9092/bootstrap]: 127.0.0.1:9092/bootstrap: ${msg}` });
const LOG = [
  line('SEND', 'Sent ApiVersionRequest (v3, 85 bytes @ 0, CorrId 1)'),
  line('RECV', 'Received ApiVersionResponse (v3, 661 bytes, CorrId 1, rtt 0.42ms)'),
  line('SEND', 'Sent MetadataRequest (v13, 36 bytes @ 0, CorrId 2)'),
  line('RECV', 'Received MetadataResponse (v13, 57 bytes, CorrId 2, rtt 0.27ms)'),
  line('SEND', 'Sent MetadataRequest (v13, 39 bytes @ 0, CorrId 3)'),
].join('\n');

describe('bench Kafka request counts', () => {
  it('counts the requests sent by type, not the responses', () => {
    const into: Record<string, number> = { Metadata: 1 };
    countSent(LOG, into);
    expect(into).toEqual({ ApiVersion: 1, Metadata: 3 });
  });

  it('counts what is written to its stream', async () => {
    const { stream, counts } = requestCounter();
    await new Promise<void>((r) => stream.write(`${LOG}\n`, () => r()));
    await new Promise<void>((r) => stream.write(line('SEND', 'Sent ProduceRequest (v9, 1234 bytes @ 0, CorrId 5)'), () => r()));
    expect(counts).toEqual({ ApiVersion: 1, Metadata: 2, Produce: 1 });
  });

  it('gives requests per step between two snapshots, most frequent first, types with none left out', () => {
    const perStep = requestsPerStep({ Produce: 10, Fetch: 100, Metadata: 3 }, { Produce: 50, Fetch: 160, Metadata: 3, EndTxn: 20 }, 40);
    expect(perStep).toEqual({ Fetch: 1.5, Produce: 1, EndTxn: 0.5 });
    expect(Object.keys(perStep)).toEqual(['Fetch', 'Produce', 'EndTxn']);
    expect(requestsPerStep({}, { AddPartitionsToTxn: 1 }, 3)).toEqual({ AddPartitionsToTxn: 0.333 });
  });
});
