// Kill -9 of the executor in the middle of a streaming turn (child processes, real broker and registry): the
// reader sees the killed run's partial stream, the `superseded` marker the new owner writes, the new run's
// stream and its `final` marker; the new run's text equals the recorded response, and the turn recorded
// before the kill has one run and no second stream. And a reader (a process of its own) that stops pulling
// while four turns stream 6 MiB each through its partition: its memory stays within a bound, the executor
// and the other readers go on, and resumed it gets its turn's 6 MiB once, in order.
import { spawn as spawnProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { runAgent, type TurnOutput } from '../../src/agent/index.js';
import { readUIMessageStream } from 'ai';
import { connectLedger, type StreamChunk } from '../../src/client/index.js';
import { planUIMessageStream, type PlanUIMessage } from '../../src/streams/ui.js';
import { configToEnv } from '../../src/config.js';
import { MEGA_TEXT_BYTES, megaText, TURN1_TEXT, TURN2_TEXT } from '../fixtures/stream-agent-tools.js';
import { testConfig, waitFor } from '../support/helpers.js';
import { ownsPartitions, spawnExecutor } from '../support/processes.js';

describe('a streaming turn across kill -9 of its executor', () => {
  it('the partial run is marked superseded, the re-run streams the recorded text, the recorded turn streams once', async () => {
    const config = testConfig({ partitions: 1 });
    const eventsFile = join(mkdtempSync(join(tmpdir(), 'stream-kill-')), 'events.jsonl');
    const events = () => (existsSync(eventsFile) ? readFileSync(eventsFile, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { label: string; kind: string; turn: number }) : []);
    const spawn = (label: string, env: Record<string, string> = {}) => spawnExecutor(config, { label, tools: 'test/fixtures/stream-agent-tools.ts', env: { STREAM_EVENTS_FILE: eventsFile, ...env } });

    const a = spawn('exec-A', { STREAM_HANG_TURN2_AFTER: '20' });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await runAgent(ledger, { agent: 'streamer', goal: 'talk', maxTurns: 4 });
      const chunks: StreamChunk[] = [];
      const stop = new AbortController();
      const reading = (async () => {
        for await (const c of ledger.stream(planId, { signal: stop.signal })) {
          chunks.push(c);
          if (c.kind === 'end' && c.itemId === 'turn-2' && c.end === 'final') return;
        }
      })();
      const textOf = (cs: StreamChunk[]) => cs.filter((c) => c.kind === 'text').map((c) => c.text).join('');
      // A is held after 20 words of turn 2, and the reader has them: kill it there.
      await waitFor(() => events().some((e) => e.label === 'exec-A' && e.kind === 'hang'), { timeoutMs: 60_000, message: 'exec-A held in turn 2' });
      const partialA = await waitFor(() => {
        const t = textOf(chunks.filter((c) => c.itemId === 'turn-2'));
        return t.includes('w19') ? t : undefined;
      }, { timeoutMs: 10_000, message: 'the reader has turn 2 up to w19' });
      a.kill('SIGKILL');
      expect((await a.exited).signal).toBe('SIGKILL');

      const b = spawn('exec-B');
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 90_000 });
      await Promise.race([reading, new Promise((_, rej) => setTimeout(() => rej(new Error('no final marker for turn 2')), 15_000))]);
      stop.abort();
      b.kill('SIGTERM');

      expect(events().filter((e) => e.kind === 'ask').map((e) => [e.label, e.turn])).toEqual([
        ['exec-A', 1],
        ['exec-A', 2],
        ['exec-B', 2],
      ]);
      const turn1 = chunks.filter((c) => c.itemId === 'turn-1');
      const turn2 = chunks.filter((c) => c.itemId === 'turn-2');
      // Turn 1 was recorded before the kill: one run, its text the recorded text, one final marker, no second stream.
      expect(new Set(turn1.map((c) => c.run)).size).toBe(1);
      expect(turn1.filter((c) => c.kind === 'end').map((c) => c.end)).toEqual(['final']);
      expect(textOf(turn1)).toBe((JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput).text);
      expect(textOf(turn1)).toBe(TURN1_TEXT);
      expect(turn1.filter((c) => c.kind === 'tool-call').map((c) => [c.toolCallId, c.toolName])).toEqual([['n1', 'note']]);

      // Turn 2: A's run (partial, no end of its own), then B's superseded marker, then B's run and final.
      const runs = [...new Set(turn2.map((c) => c.run))];
      expect(runs).toHaveLength(2);
      const [runA, runB] = runs as [number, number];
      expect(runB).toBeGreaterThan(runA);
      const marker = turn2.findIndex((c) => c.kind === 'end' && c.end === 'superseded');
      expect(marker).toBeGreaterThan(0);
      expect(turn2[marker]).toMatchObject({ run: runB, attempt: 1 });
      expect(turn2.slice(0, marker).every((c) => c.run === runA && c.kind === 'text')).toBe(true);
      expect(turn2.slice(marker + 1).every((c) => c.run === runB)).toBe(true);
      expect(textOf(turn2.slice(0, marker))).toBe(partialA);
      expect(TURN2_TEXT.startsWith(partialA)).toBe(true);
      const recorded = (JSON.parse(done.items['turn-2']!.outputJson!) as TurnOutput).text;
      expect(recorded).toBe(TURN2_TEXT);
      expect(textOf(turn2.slice(marker + 1))).toBe(recorded);
      expect(turn2.at(-1)).toMatchObject({ kind: 'end', end: 'final', run: runB });
      expect(done.items['turn-2']!.attempts).toHaveLength(1); // recovered with the same key, not a second attempt

      // The same run through the AI SDK UI adapter, read with the SDK's readUIMessageStream: A's partial text is
      // a part of its own, ended and marked superseded; B's run is the recorded text; the run finished.
      let message: PlanUIMessage | undefined;
      for await (const m of readUIMessageStream<PlanUIMessage>({ stream: await planUIMessageStream(ledger, planId), terminateOnError: true })) message = m;
      expect(message!.parts.flatMap((p) => (p.type === 'text' ? [[p.text, p.state]] : []))).toEqual([
        [TURN1_TEXT, 'done'],
        [partialA, 'done'],
        [recorded, 'done'],
      ]);
      expect(message!.parts.flatMap((p) => (p.type === 'data-attempt-end' ? [p.data] : []))).toEqual([{ itemId: 'turn-2', attempt: 1, run: runA, end: 'superseded', reason: `re-run by a new owner (run ${runB})` }]);
      expect(message!.metadata).toMatchObject({ planId, status: 'completed' });
    } finally {
      await ledger.close();
    }
  });

  it('a reader that never reads while turns stream megabytes: its buffer stays bounded, the executor and other readers go on, resumed it misses nothing', async () => {
    const config = testConfig({ partitions: 1 });
    const ex = spawnExecutor(config, { label: 'exec-mega', tools: 'test/fixtures/stream-agent-tools.ts' });
    await ex.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    const expected = sha(megaText());
    try {
      const a = await runAgent(ledger, { agent: 'mega', goal: 'say it all' });
      const reader = spawnProcess(process.execPath, ['--expose-gc', '--import', 'tsx', 'test/streams/stalled-reader.mts', a.planId], { env: { ...process.env, ...configToEnv(config) }, stdio: ['pipe', 'pipe', 'inherit'] });
      const exited = new Promise((r) => reader.once('exit', r));
      const lines = createInterface({ input: reader.stdout })[Symbol.asyncIterator]();
      const next = async () => JSON.parse((await lines.next()).value as string) as Record<string, number | string | boolean>;
      type Memory = { rss: number; heapUsed: number; external: number; arrayBuffers: number };
      const sample = async () => {
        reader.stdin.write('sample\n');
        return (await next()) as unknown as Memory;
      };
      try {
        expect(await next()).toMatchObject({ ready: true }); // it has its first chunk and reads no more
        const base = await sample();
        // Three more turns of 6 MiB on the same partition, each read whole by a reader here, while it stalls.
        const others = await Promise.all(
          [1, 2, 3].map(async (n) => {
            const { planId } = await runAgent(ledger, { agent: 'mega', goal: `say it all, ${n}` });
            const hash = createHash('sha256');
            let bytes = 0;
            for await (const c of ledger.stream(planId, { signal: AbortSignal.timeout(120_000) })) {
              if (c.kind === 'text') {
                hash.update(c.text!);
                bytes += Buffer.byteLength(c.text!);
              }
              if (c.kind === 'end' && c.end === 'final') break;
            }
            return { planId, bytes, sha256: hash.digest('hex') };
          }),
        );
        expect(others.map((o) => [o.bytes, o.sha256])).toEqual([1, 2, 3].map(() => [MEGA_TEXT_BYTES, expected]));
        for (const id of [a.planId, ...others.map((o) => o.planId)]) {
          const done = await ledger.waitFor(id, 'completed', { timeoutMs: 120_000 });
          expect(sha((JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput).text)).toBe(expected);
        }
        // 24 MiB went through the partition; the stalled reader holds what it fetched ahead (1 MiB) and one batch.
        const after = [await sample(), await sample()];
        const grew = (k: keyof Memory) => Math.max(...after.map((m) => m[k])) - base[k];
        console.log(`[streams] a reader that did not read while 24 MiB streamed through its partition grew rss ${(grew('rss') / 2 ** 20).toFixed(1)} MiB, heap ${(grew('heapUsed') / 2 ** 20).toFixed(1)} MiB, external ${(grew('external') / 2 ** 20).toFixed(1)} MiB`);
        expect(grew('rss')).toBeLessThan(12 * 2 ** 20);
        expect(grew('heapUsed') + grew('external')).toBeLessThan(8 * 2 ** 20);
        // Resumed, it gets its turn's 6 MiB once, in order, and the final marker.
        reader.stdin.write('resume\n');
        expect(await next()).toMatchObject({ bytes: MEGA_TEXT_BYTES, sha256: expected, contiguous: true });
      } finally {
        reader.kill('SIGKILL');
        await exited;
      }
    } finally {
      await ledger.close();
    }
  }, 300_000);
});
