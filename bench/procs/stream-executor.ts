// A plan-ledger executor for the streams benchmark (bench/streams.ts), in its own process: it serves the
// agent `streamer`, whose model (the AI SDK's MockLanguageModelV3) answers in real time. Turns 1..K say
// `t=<emit time>;` first (epoch ms, the clock the reading process shares) and 8 words 20 ms apart, then call `next`
// (a no-op tool); turn K+1 says `t=<emit time>;` then BENCH_STREAM_BURST one-word deltas as fast as the AI
// SDK takes them, and answers. Turn 1 waits a second first (the reader is open by then). Prints
// `{"msg":"ready"}` once it owns its partitions; stops on SIGTERM.
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { startExecutor } from '../../index.js';
import { agentTools, defineAgent, defineAgentTool } from '../../src/agent/index.js';
import { silentLogger } from '../../src/logging.js';

const K = Number(process.env.BENCH_STREAM_TURNS ?? 10);
const BURST = Number(process.env.BENCH_STREAM_BURST ?? 20_000);
export const DELTA = 'word ';
const now = () => performance.timeOrigin + performance.now();
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

const model = new MockLanguageModelV3({
  doStream: async ({ prompt }) => {
    const turn = prompt.filter((m) => m.role === 'assistant').length + 1;
    const last = turn > K;
    let sent = 0;
    const stream = new ReadableStream<LanguageModelV3StreamPart>({
      async start(c) {
        if (turn === 1) await new Promise((r) => setTimeout(r, 1000));
        c.enqueue({ type: 'stream-start', warnings: [] });
        c.enqueue({ type: 'text-start', id: 't' });
        c.enqueue({ type: 'text-delta', id: 't', delta: `t=${now().toFixed(3)};` });
      },
      async pull(c) {
        if (sent < (last ? BURST : 8)) {
          sent++;
          if (!last) await new Promise((r) => setTimeout(r, 20)); // a model's pace, about 50 tokens/s
          return c.enqueue({ type: 'text-delta', id: 't', delta: DELTA });
        }
        c.enqueue({ type: 'text-end', id: 't' });
        if (!last) c.enqueue({ type: 'tool-call', toolCallId: `n${turn}`, toolName: 'next', input: '{}' });
        c.enqueue({ type: 'finish', finishReason: { unified: last ? 'stop' : 'tool-calls', raw: undefined }, usage });
        c.close();
      },
    });
    return { stream };
  },
});
const next = defineAgentTool({ name: 'next', description: 'go on', inputSchema: z.object({}), run: () => ({ ok: true }) });
const agent = defineAgent({ name: 'streamer', model, tools: [next], maxTurns: K + 1, maxTextBytes: 8 * 1024 * 1024, turnTimeoutMs: 300_000 });
const executor = await startExecutor({ tools: agentTools(agent), concurrency: 4, logger: silentLogger() });
await executor.started;
console.log(JSON.stringify({ msg: 'ready', at: Date.now() }));
process.once('SIGTERM', () => {
  void executor.stop().then(() => process.exit(0));
});
