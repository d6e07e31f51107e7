// A `ledger.stream` reader in a process of its own, for the test of a reader that never reads
// (test/streams/kill.e2e.test.ts): it takes the first chunk of a plan's stream and then stops pulling,
// printing its memory as a JSON line for each `sample` read on stdin; on `resume` it reads on to the turn's
// `final` marker and prints what it got (chunks, text bytes, the text's SHA-256, whether seq was contiguous).
// Config from PLAN_LEDGER_* in the environment; the plan id is the first argument.
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { connectLedger } from '../../src/client/index.js';

const planId = process.argv[2]!;
const ledger = await connectLedger();
const it = ledger.stream(planId)[Symbol.asyncIterator]();
const first = await it.next();
if (first.done) throw new Error('the stream ended before its first chunk');
const hash = createHash('sha256');
let bytes = 0;
let chunks = 0;
let lastSeq = 0;
let contiguous = true;
const take = (c: NonNullable<typeof first.value>) => {
  chunks++;
  if (c.kind !== 'end') {
    contiguous &&= c.seq === lastSeq + 1;
    lastSeq = c.seq;
  }
  if (c.kind === 'text') {
    hash.update(c.text!);
    bytes += Buffer.byteLength(c.text!);
  }
};
take(first.value);
const memory = () => {
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers };
};
process.stdout.write(`${JSON.stringify({ ready: true, ...memory() })}\n`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'sample') {
    (globalThis as { gc?: () => void }).gc?.();
    process.stdout.write(`${JSON.stringify(memory())}\n`);
  } else if (line === 'resume') {
    for (let r = await it.next(); !r.done; r = await it.next()) {
      take(r.value);
      if (r.value.kind === 'end' && r.value.itemId === 'turn-1') break;
    }
    await it.return?.(undefined);
    process.stdout.write(`${JSON.stringify({ chunks, bytes, sha256: hash.digest('hex'), contiguous })}\n`);
    break;
  }
}
await ledger.close();
