// Live streams against the real broker and registry, one in-process executor for the file (one partition,
// so every plan here shares it): a scripted streaming model (the AI SDK's MockLanguageModelV3 and
// simulateReadableStream) whose deltas a `ledger.stream` reader gets before the turn is recorded, a reader
// that stops and resumes from its cursor, a tool's progress, and the bad inputs: 10 MB of text, 100,000
// tiny deltas, a reader that stops reading, a stream that never ends, a garbage cursor and an erased plan's cursor.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { DefaultChatTransport, readUIMessageStream, simulateReadableStream } from 'ai';
import { gated } from '../support/model-streams.js';
import { MockLanguageModelV3 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent, summarizeAgentRun, type TurnOutput } from '../../src/agent/index.js';
import { planUICursor, planUIMessageStream, planUIMessageStreamResponse, type PlanUIChunk, type PlanUIMessage } from '../../src/streams/ui.js';
import { connectLedger, type Ledger, type StreamChunk } from '../../src/client/index.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { isLedgerError } from '../../src/errors.js';
import { startExecutor, type ExecutorHandle } from '../../executor/executor.js';
import { startProjector } from '../../projector/index.js';
import { defineTool } from '../../src/tools.js';
import { createKafka } from '../../src/kafka/index.js';
import { call, response, scriptedModel, streamParts, text, turnOf, wordDeltas } from '../agent/script.js';
import { readAll, testConfig, testLogger, waitFor } from '../support/helpers.js';

const WORDS = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') + '.';

const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 5, text: 5, reasoning: 0 } };
const textParts = (deltas: Iterable<string>): LanguageModelV3StreamPart[] => {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 't' }];
  for (const delta of deltas) parts.push({ type: 'text-delta', id: 't', delta });
  parts.push({ type: 'text-end', id: 't' }, { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage });
  return parts;
};

let release!: () => void;
const gate = new Promise<void>((r) => (release = r));
const parts = streamParts(response([text(WORDS)], { in: 10, out: 5 }));
const half = parts.findIndex((p) => p.type === 'text-delta' && p.delta.includes('word20'));

const live = defineAgent({ name: 'live', model: new MockLanguageModelV3({ doStream: async () => ({ stream: gated(parts.slice(0, half), gate, parts.slice(half)) }) }), tools: [] });
// Paced past the coalescing linger (25 ms): about one record per word.
const chatty = defineAgent({ name: 'chatty', model: scriptedModel([response([text(WORDS)], { in: 10, out: 5 })], { chunkDelayInMs: 30 }), tools: [] });
const healthy = defineAgent({ name: 'healthy', model: scriptedModel(async () => response([text('all good')], { in: 5, out: 2 })), tools: [] });
const TEN_MB = 'x'.repeat(999) + '\n';
const huge = defineAgent({ name: 'huge', model: new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks: textParts(Array.from({ length: 10_000 }, () => TEN_MB)), initialDelayInMs: null, chunkDelayInMs: null }) }) }), tools: [] });
// The AI SDK's streamText itself spends ~50 µs per part (100,000 one-character deltas: 4.8 s, 200,000: 10.1 s
// through fullStream with nothing else running), so a million here would be a minute or more of the SDK's time;
// the million is coalesced in test/streams/streams.unit.test.ts, and this runs a tenth of it end to end.
const TINY_DELTAS = 100_000;
const tiny = defineAgent({
  name: 'tiny',
  model: new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks: textParts((function* () { for (let i = 0; i < TINY_DELTAS; i++) yield String.fromCharCode(97 + (i % 26)); })()), initialDelayInMs: null, chunkDelayInMs: null }) }) }),
  tools: [],
  turnTimeoutMs: 60_000,
});
const endless = defineAgent({
  name: 'endless',
  model: new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        start(c) {
          c.enqueue({ type: 'stream-start', warnings: [] });
          c.enqueue({ type: 'text-start', id: 't' });
        },
        async pull(c) {
          await new Promise((r) => setTimeout(r, 20));
          c.enqueue({ type: 'text-delta', id: 't', delta: 'and on ' });
        },
      }),
    }),
  }),
  tools: [],
  turnTimeoutMs: 1500,
  turnRetry: { maxAttempts: 1 },
});
// The AI SDK UI adapter's run: a first turn that says something and looks an order up, a second that
// answers in forty words and is held half-way until `releaseUi`.
let releaseUi!: () => void;
const uiGate = new Promise<void>((r) => (releaseUi = r));
const UI_FIRST = 'Let me look order 42 up.';
const uiAnswer = streamParts(response([text(WORDS)], { in: 20, out: 40 }));
const uiHalf = uiAnswer.findIndex((p) => p.type === 'text-delta' && p.delta.includes('word20'));
const uiModel = new MockLanguageModelV3({
  doStream: async (options) =>
    turnOf(options) === 1
      ? { stream: simulateReadableStream({ chunks: streamParts(response([text(UI_FIRST), call('c1', 'lookup', { orderId: '42' })], { in: 10, out: 8 })), initialDelayInMs: null, chunkDelayInMs: 30 }) }
      : { stream: gated(uiAnswer.slice(0, uiHalf), uiGate, uiAnswer.slice(uiHalf)) },
});
const lookup = defineAgentTool({ name: 'lookup', description: 'Look an order up', inputSchema: z.object({ orderId: z.string() }), run: ({ orderId }) => ({ orderId, returnedCents: 1299 }) });
const uiAgent = defineAgent({ name: 'ui', model: uiModel, tools: [lookup] });
// Says two words and then nothing more, until its turn is aborted (the plan erased under it).
const hanging = defineAgent({
  name: 'hanging',
  model: new MockLanguageModelV3({
    doStream: async () => ({
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        start(c) {
          for (const p of textParts(['hello ', 'there']).slice(0, 4)) c.enqueue(p);
        },
        pull: () => new Promise<void>(() => {}),
      }),
    }),
  }),
  tools: [],
  turnTimeoutMs: 120_000,
});
const pager = defineTool({
  name: 'pager',
  async run(input: { pages: number }, ctx) {
    for (let page = 1; page <= input.pages; page++) await ctx.stream.write({ page, of: input.pages });
    return { read: input.pages };
  },
});

let config: LedgerConfig;
let executor: ExecutorHandle;
let ledger: Ledger;
beforeAll(async () => {
  config = testConfig({ partitions: 1 });
  executor = await startExecutor({ tools: [...agentTools(live, chatty, healthy, huge, tiny, endless, uiAgent, hanging), pager], config, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500, logger: testLogger });
  ledger = await connectLedger(config);
  await executor.started;
});
afterAll(async () => {
  await ledger?.close();
  await executor?.stop();
});

/** Reads a plan's stream until `until` says so (or fails after the timeout), returning the chunks. */
async function readUntil(planId: string, until: (c: StreamChunk, all: StreamChunk[]) => boolean, opts: { from?: string; timeoutMs?: number } = {}): Promise<StreamChunk[]> {
  const out: StreamChunk[] = [];
  const signal = AbortSignal.timeout(opts.timeoutMs ?? 60_000);
  for await (const c of ledger.stream(planId, { ...(opts.from ? { from: opts.from } : {}), signal })) {
    out.push(c);
    if (until(c, out)) return out;
  }
  throw new Error(`the stream of ${planId} ended after ${out.length} chunks without the awaited one`);
}
const isFinal = (itemId: string) => (c: StreamChunk) => c.kind === 'end' && c.itemId === itemId && c.end === 'final';
const textOf = (chunks: StreamChunk[]) => chunks.filter((c) => c.kind === 'text').map((c) => c.text).join('');

async function healthyCompletes(): Promise<void> {
  const { planId } = await runAgent(ledger, { agent: healthy, goal: 'are you there?' });
  const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
  expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: 'all good' });
}

describe('live streams (in-process executor, real broker and registry)', () => {
  it('a reader gets a turn\'s deltas before its result is recorded, in order, and their text is the recorded text', async () => {
    const { planId } = await runAgent(ledger, { agent: live, goal: 'say forty words' });
    const reader = ledger.stream(planId)[Symbol.asyncIterator]();
    const early: StreamChunk[] = [];
    while (!textOf(early).includes('word19')) {
      const n = await reader.next();
      if (n.done) throw new Error('stream ended');
      early.push(n.value);
    }
    // The model is held half-way: the turn has an intent and no result.
    const midway = await ledger.getPlan(planId);
    expect(midway?.items['turn-1']?.status).toBe('in_progress');
    expect(midway?.items['turn-1']?.attempts.map((a) => a.outcome ?? null)).toEqual([null]);
    expect(textOf(early)).toBe(wordDeltas(WORDS).slice(0, 20).join(''));
    release();
    const rest: StreamChunk[] = [];
    for (let n = await reader.next(); !n.done; n = await reader.next()) {
      rest.push(n.value);
      if (isFinal('turn-1')(n.value)) break;
    }
    await reader.return?.();
    const all = [...early, ...rest];
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    const out = JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput;
    expect(out.text).toBe(WORDS);
    expect(textOf(all)).toBe(out.text);
    // One run, seq 1..n without a gap, the usage before the end marker, which is last.
    expect(new Set(all.map((c) => `${c.itemId}/${c.attempt}/${c.run}`)).size).toBe(1);
    expect(all.map((c) => c.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.map((c) => c.kind).slice(-2)).toEqual(['usage', 'end']);
    expect(all.at(-2)?.usage).toEqual({ inputTokens: 10, outputTokens: 5, totalTokens: 15 });
    expect(all.at(-1)).toMatchObject({ kind: 'end', end: 'final', planId, itemId: 'turn-1', attempt: 1 });
  });

  it('a reader that stops and resumes from its cursor misses nothing and sees nothing twice; a tool\'s progress streams too', async () => {
    const { planId } = await runAgent(ledger, { agent: chatty, goal: 'say forty words' });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    const whole = await readUntil(planId, isFinal('turn-1'));
    const first = await readUntil(planId, (_c, all) => all.length === 3);
    const second = await readUntil(planId, (_c, all) => all.length === 2, { from: first.at(-1)!.cursor });
    const third = await readUntil(planId, isFinal('turn-1'), { from: second.at(-1)!.cursor });
    const resumed = [...first, ...second, ...third];
    const id = (c: StreamChunk) => `${c.itemId}/${c.attempt}/${c.run}/${c.kind}/${c.seq}`;
    expect(resumed.length).toBe(whole.length);
    expect(new Set(resumed.map(id)).size).toBe(resumed.length);
    expect(resumed.map(id)).toEqual(whole.map(id));
    expect(textOf(resumed)).toBe(WORDS);
    expect(whole.length).toBeGreaterThanOrEqual(20);
    expect(resumed.map((c) => c.cursor)).toEqual(whole.map((c) => c.cursor));

    const pages = await ledger.createPlan({ goal: 'read pages', mode: 'execute', items: [{ id: 'read', title: 'Read', why: 'test', tool: 'pager', input: { pages: 5 } }] });
    const progress = await readUntil(pages.planId, isFinal('read'));
    expect(progress.map((c) => (c.kind === 'progress' ? c.data : c.end))).toEqual([{ page: 1, of: 5 }, { page: 2, of: 5 }, { page: 3, of: 5 }, { page: 4, of: 5 }, { page: 5, of: 5 }, 'final']);
  });

  it('10 MB of text: the stream stops at the recorded 1 MiB and equals the recorded (cut) text; 100,000 one-character deltas are a few records', async () => {
    const { planId } = await runAgent(ledger, { agent: huge, goal: 'say everything' });
    const chunks = await readUntil(planId, isFinal('turn-1'), { timeoutMs: 120_000 });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    const out = JSON.parse(done.items['turn-1']!.outputJson!) as TurnOutput;
    expect(out).toMatchObject({ textBytes: 10_000_000, textTruncated: true });
    expect(Buffer.byteLength(out.text)).toBe(1024 * 1024);
    expect(textOf(chunks)).toBe(out.text);
    const texts = chunks.filter((c) => c.kind === 'text');
    expect(texts.length).toBe(64); // 1 MiB in 16 KiB records
    await healthyCompletes();

    const t0 = Date.now();
    const many = await runAgent(ledger, { agent: tiny, goal: 'one letter at a time' });
    const manyChunks = await readUntil(many.planId, isFinal('turn-1'), { timeoutMs: 150_000 });
    const ms = Date.now() - t0;
    const manyDone = await ledger.waitFor(many.planId, 'completed', { timeoutMs: 60_000 });
    const manyText = (JSON.parse(manyDone.items['turn-1']!.outputJson!) as TurnOutput).text;
    expect(manyText.length).toBe(TINY_DELTAS);
    expect(textOf(manyChunks)).toBe(manyText);
    const records = manyChunks.filter((c) => c.kind === 'text').length;
    expect(records).toBeLessThanOrEqual(Math.ceil(TINY_DELTAS / (16 * 1024)) + Math.ceil(ms / 25));
    console.log(`[streams] ${TINY_DELTAS} one-character deltas: ${records} text records, ${ms} ms from run to final marker read`);
    await healthyCompletes();
  }, 300_000);

  it('a reader that takes one chunk and then never reads holds nothing up: the writer finishes, other plans complete, and the reader resumed later gets every chunk once, in order', async () => {
    const PAGES = 2_000;
    const { planId } = await ledger.createPlan({ goal: 'read many pages', mode: 'execute', items: [{ id: 'read', title: 'Read', why: 'test', tool: 'pager', input: { pages: PAGES } }] });
    const stalled = ledger.stream(planId)[Symbol.asyncIterator]();
    const first = await stalled.next();
    expect(first.value).toMatchObject({ kind: 'progress', data: { page: 1, of: PAGES } });
    // The reader is not read from now on: the plan and another on the same partition complete regardless.
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(JSON.parse(done.items['read']!.outputJson!)).toEqual({ read: PAGES });
    await healthyCompletes();
    const rest: StreamChunk[] = [];
    for (let r = await stalled.next(); !r.done; r = await stalled.next()) {
      rest.push(r.value);
      if (isFinal('read')(r.value)) break;
    }
    await stalled.return?.(undefined);
    const pages = [first.value as StreamChunk, ...rest].filter((c) => c.kind === 'progress').map((c) => (c.data as { page: number }).page);
    expect(pages).toEqual(Array.from({ length: PAGES }, (_, i) => i + 1));
    expect(rest.at(-1)).toMatchObject({ kind: 'end', end: 'final', itemId: 'read' });
  }, 180_000);

  it('a stream that never ends is ended by the turn timeout: TIMEOUT recorded, the stream marked abandoned, other plans complete', async () => {
    const { planId } = await runAgent(ledger, { agent: endless, goal: 'never stop' });
    const chunks = await readUntil(planId, (c) => c.kind === 'end');
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
    expect(failed.items['turn-1']!.attempts.map((a) => [a.outcome, a.error?.code])).toEqual([['failed_retryable', 'TIMEOUT']]);
    expect(chunks.at(-1)).toMatchObject({ kind: 'end', end: 'abandoned', itemId: 'turn-1', attempt: 1 });
    expect(chunks.at(-1)!.reason).toMatch(/^failed_retryable: TIMEOUT/);
    expect(textOf(chunks)).toMatch(/^(and on )+$/);
    await healthyCompletes();
  });

  it('a garbage cursor is VALIDATION; an erased plan\'s cursor is NOT_FOUND and its stream records are tombstoned', async () => {
    const { planId } = await runAgent(ledger, { agent: healthy, goal: 'short' });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    const chunks = await readUntil(planId, isFinal('turn-1'));
    const first = async (from: string) => {
      try {
        for await (const c of ledger.stream(planId, { from })) return c;
        return 'ended';
      } catch (e) {
        return isLedgerError(e) ? `${e.code}: ${e.message}` : String(e);
      }
    };
    expect(await first('garbage')).toMatch(/^VALIDATION: from: "garbage" is not a stream cursor/);
    expect(await first(chunks[0]!.cursor.replace(/\.[0-9a-f]{8}$/, '.00000000'))).toMatch(/^VALIDATION: .*another plan/);

    await ledger.erase(planId, { by: 'test', reason: 'gdpr' });
    expect(await first(chunks[0]!.cursor)).toMatch(/^NOT_FOUND: plan .* not found \(unknown or erased\)/);
    // The sweep tombstones every stream record of the plan.
    const kafka = createKafka(config, testLogger, 'test-streams');
    try {
      const topic = topicNames(config.topicPrefix).streams;
      const mine = async () => (await readAll(kafka, topic)).filter((r) => r.key?.toString().startsWith(`${planId}/`));
      const swept = await waitFor(async () => {
        const rs = await mine();
        const tombstoned = new Set(rs.filter((r) => r.value === null).map((r) => r.key!.toString()));
        const written = new Set(rs.filter((r) => r.value !== null).map((r) => r.key!.toString()));
        return written.size > 0 && [...written].every((k) => tombstoned.has(k)) ? { written: written.size, tombstoned: tombstoned.size } : undefined;
      }, { timeoutMs: 30_000, message: 'the stream records of the erased plan tombstoned' });
      expect(swept.tombstoned).toBe(swept.written);
      expect(swept.written).toBe(chunks.length);
    } finally {
      await kafka.close();
    }
    await healthyCompletes();
  });

  it("the projector's SSE route: one event per chunk with its cursor as id; Last-Event-ID resumes after it; a bad cursor is an error event", async () => {
    const { planId } = await runAgent(ledger, { agent: healthy, goal: 'over http' });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: 'sse-test-token', groupId: `${config.topicPrefix}.projector-sse`, defaultMetrics: false });
    /** SSE messages (event, id, data) until `until` says so; the wire format split by blank lines. */
    const events = async (query: string, headers: Record<string, string>, until: (e: { event: string; id?: string; data: string }) => boolean) => {
      const ac = new AbortController();
      const res = await fetch(`${projector.url}/api/plans/${planId}/stream${query}`, { headers: { authorization: 'Bearer sse-test-token', ...headers }, signal: ac.signal });
      if (res.headers.get('content-type') !== 'text/event-stream') throw new Error(`${res.status}: ${await res.text()}`);
      const out: Array<{ event: string; id?: string; data: string }> = [];
      let buf = '';
      const decoder = new TextDecoder();
      try {
        for await (const bytes of res.body!) {
          buf += decoder.decode(bytes as Uint8Array, { stream: true });
          let i: number;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i);
            buf = buf.slice(i + 2);
            const fields = Object.fromEntries(block.split('\n').filter((l) => l && !l.startsWith(':')).map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)]));
            if (fields.event === undefined) continue;
            const e = { event: fields.event, ...(fields.id !== undefined ? { id: fields.id } : {}), data: fields.data ?? '' };
            out.push(e);
            if (until(e)) return out;
          }
        }
        return out;
      } finally {
        ac.abort();
      }
    };
    try {
      const finalOf = (e: { event: string; data: string }) => e.event === 'error' || (e.event === 'chunk' && (JSON.parse(e.data) as StreamChunk).end === 'final');
      const all = await events('', {}, finalOf);
      const chunks = all.map((e) => JSON.parse(e.data) as StreamChunk);
      expect(chunks.map((c) => c.kind)).toEqual(['text', 'usage', 'end']);
      expect(all.map((e) => e.id)).toEqual(chunks.map((c) => c.cursor));
      expect(textOf(chunks)).toBe('all good');
      const resumed = await events('', { 'last-event-id': all[0]!.id! }, finalOf);
      expect(resumed.map((e) => e.id)).toEqual(all.slice(1).map((e) => e.id));
      const fromQuery = await events(`?from=${encodeURIComponent(all[1]!.id!)}`, {}, finalOf);
      expect(fromQuery.map((e) => e.id)).toEqual(all.slice(2).map((e) => e.id));
      const bad = await events('?from=garbage', {}, () => true);
      expect(bad).toHaveLength(1);
      expect(bad[0]!.event).toBe('error');
      expect(JSON.parse(bad[0]!.data)).toMatchObject({ code: 'VALIDATION' });
    } finally {
      await projector.stop();
    }
  });
});

/** A fetch-style route handler (what `export const GET` is in a Next.js app) served over HTTP at `/api/chat/:id/stream`. */
async function serveRoute(handler: (request: Request, id: string) => Promise<Response>): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const m = /^\/api\/chat\/([^/?]+)\/stream(?:\?.*)?$/.exec(req.url ?? '');
    if (!m) return void res.writeHead(404).end();
    const aborted = new AbortController();
    res.on('close', () => aborted.abort());
    void handler(new Request(`http://${req.headers.host}${req.url}`, { signal: aborted.signal }), decodeURIComponent(m[1]!)).then((response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers));
      if (!response.body) return void res.end();
      const body = Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>);
      res.on('close', () => body.destroy());
      body.pipe(res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * One resume request as `useChat` makes it (the AI SDK's DefaultChatTransport, `GET /api/chat/<id>/stream`,
 * `?from=` added by `prepareReconnectToStreamRequest`), read with the AI SDK's readUIMessageStream until it
 * ends or `until` says so; the chunks are the transport's (parsed and checked against the SDK's schema).
 */
async function resumeRequest(url: string, planId: string, opts: { from?: string; message?: PlanUIMessage; until?: (m: PlanUIMessage) => boolean } = {}) {
  const ac = new AbortController();
  const transport = new DefaultChatTransport<PlanUIMessage>({
    api: `${url}/api/chat`,
    prepareReconnectToStreamRequest: ({ id }) => ({ api: `${url}/api/chat/${encodeURIComponent(id)}/stream${opts.from !== undefined ? `?from=${encodeURIComponent(opts.from)}` : ''}` }),
  });
  const stream = await transport.reconnectToStream({ chatId: planId, abortSignal: ac.signal });
  if (stream === null) throw new Error('204: nothing to resume');
  const [raw, forUi] = stream.tee();
  const chunks: PlanUIChunk[] = [];
  const collecting = (async () => {
    const reader = raw.getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value as PlanUIChunk);
  })().catch(() => {});
  let message: PlanUIMessage | undefined;
  const errors: string[] = [];
  for await (const m of readUIMessageStream<PlanUIMessage>({ stream: forUi, ...(opts.message ? { message: opts.message } : {}), onError: (e) => errors.push(String(e)) })) {
    message = m;
    if (opts.until?.(m)) break;
  }
  ac.abort();
  await collecting;
  return { message: message!, chunks, errors };
}
const uiText = (m: PlanUIMessage) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
const uiCursors = (chunks: PlanUIChunk[]) => chunks.flatMap((c) => (c.type === 'message-metadata' && c.messageMetadata.cursor !== undefined ? [c.messageMetadata.cursor] : []));
const uiDeltas = (chunks: PlanUIChunk[]) => chunks.flatMap((c) => (c.type === 'text-delta' ? [c.delta] : [])).join('');

describe('the AI SDK UI adapter (useChat\'s resume request against the real stack)', () => {
  it('shows a running turn\'s words live, resumes from the message\'s cursor with nothing missed or twice, replays a finished run, and names a bad cursor or an erased plan', async () => {
    let open = 0;
    // The route as an app writes it; the ledger reads it opens are counted, to see a disconnect close them.
    const counted = {
      getPlan: ledger.getPlan.bind(ledger),
      waitFor: ledger.waitFor.bind(ledger),
      stream: (planId: string, opts?: Parameters<Ledger['stream']>[1]) => {
        const it = ledger.stream(planId, opts);
        open++;
        return (async function* () {
          try {
            yield* it;
          } finally {
            open--;
          }
        })();
      },
    };
    const route = await serveRoute((request, id) => planUIMessageStreamResponse(counted, id, { request }));
    try {
      const { planId } = await runAgent(ledger, { agent: uiAgent, goal: 'what came back on order 42?' });
      // A first page: reads until the second turn's twentieth word shows, while that turn is unrecorded.
      const first = await resumeRequest(route.url, planId, { until: (m) => uiText(m).includes('word19') });
      const midway = await ledger.getPlan(planId);
      expect(midway?.items['turn-2']?.status).toBe('in_progress');
      expect(midway?.items['turn-2']?.attempts.map((a) => a.outcome ?? null)).toEqual([null]);
      expect(first.message.id).toBe(planId);
      expect(first.errors).toEqual([]);
      expect(uiText(first.message)).toBe(UI_FIRST + wordDeltas(WORDS).slice(0, 20).join(''));
      expect(first.message.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ toolName: 'lookup', toolCallId: 'c1', state: 'output-available', input: { orderId: '42' }, output: { orderId: '42', returnedCents: 1299 } });
      // The page is reloaded: its request is gone, and so are the ledger reads it held.
      await waitFor(async () => (open === 0 ? true : undefined), { timeoutMs: 15_000, message: 'the ledger reads of a closed request closed' });
      // Where the page's message is up to: its text never runs ahead of this cursor.
      const cursor = planUICursor(first.message)!;
      const seen = first.chunks.slice(0, first.chunks.findIndex((c) => c.type === 'message-metadata' && c.messageMetadata.cursor === cursor) + 1);
      expect(uiDeltas(seen)).toBe(uiText(first.message));

      // The reloaded page resumes from the cursor its message carries; the model goes on.
      releaseUi();
      const second = await resumeRequest(route.url, planId, { from: cursor, message: first.message });
      const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
      const recorded = ['turn-1', 'turn-2'].map((id) => (JSON.parse(done.items[id]!.outputJson!) as TurnOutput).text);
      expect(recorded).toEqual([UI_FIRST, WORDS]);
      expect(second.errors).toEqual([]);
      expect(uiText(second.message)).toBe(recorded.join(''));
      expect(second.message.metadata).toMatchObject({ planId, status: 'completed' });
      expect(second.chunks.at(-1)).toMatchObject({ type: 'finish', finishReason: 'stop' });

      // A whole replay of the finished run: the same chunks as the two requests together, none twice.
      const replay = await resumeRequest(route.url, planId);
      expect(replay.errors).toEqual([]);
      const cursors = uiCursors(replay.chunks);
      expect([...uiCursors(seen), ...uiCursors(second.chunks)]).toEqual(cursors);
      expect(new Set(cursors).size).toBe(cursors.length);
      expect(uiDeltas(seen) + uiDeltas(second.chunks)).toBe(uiDeltas(replay.chunks));
      expect(uiDeltas(replay.chunks)).toBe(recorded.join(''));
      // Text parts equal to the recorded texts, one step per turn, the tool call with its input and output.
      expect(replay.message.id).toBe(planId);
      expect(replay.message.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []))).toEqual(recorded);
      expect(replay.message.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'dynamic-tool', 'step-start', 'text']);
      expect(replay.message.parts[2]).toMatchObject({ type: 'dynamic-tool', toolName: 'lookup', state: 'output-available', input: { orderId: '42' }, output: { orderId: '42', returnedCents: 1299 } });
      expect(replay.message.metadata).toMatchObject({ planId, status: 'completed', cursor: cursors.at(-1) });
      expect(replay.chunks[0]).toMatchObject({ type: 'start', messageId: planId });
      // A client that holds the whole run asks to resume after its last cursor: 204, nothing to resume.
      await expect(resumeRequest(route.url, planId, { from: planUICursor(replay.message)! })).rejects.toThrow('204: nothing to resume');

      // Bad requests: one line naming what is wrong, as the error useChat shows.
      const failure = (from: string | undefined, id = planId) => resumeRequest(route.url, id, from === undefined ? {} : { from }).then(() => 'answered', (e: Error) => e.message);
      expect(await failure('garbage')).toMatch(/^VALIDATION: from: "garbage" is not a stream cursor/);
      expect(await failure(undefined, 'no-such-plan')).toMatch(/^NOT_FOUND: plan no-such-plan not found \(unknown or erased\)/);
      await ledger.erase(planId, { by: 'test', reason: 'gdpr' });
      expect(await failure(cursor)).toMatch(/^NOT_FOUND: plan .* not found \(unknown or erased\)/);
      await waitFor(async () => (open === 0 ? true : undefined), { timeoutMs: 15_000, message: 'every ledger read closed' });
    } finally {
      await route.close();
    }
  });

  it('a plan erased while its run streams ends the UI stream with an error chunk naming it; the partition serves on', async () => {
    const { planId } = await runAgent(ledger, { agent: hanging, goal: 'say hello and hang' });
    const errors: string[] = [];
    let last: PlanUIMessage | undefined;
    let erased = false;
    for await (const m of readUIMessageStream<PlanUIMessage>({ stream: await planUIMessageStream(ledger, planId, { signal: AbortSignal.timeout(60_000) }), onError: (e) => errors.push((e as Error).message) })) {
      last = m;
      if (!erased && uiText(m) === 'hello there') {
        erased = true;
        await ledger.erase(planId, { by: 'test', reason: 'gone mid-turn', force: true });
      }
    }
    expect(uiText(last!)).toBe('hello there');
    expect(errors).toEqual([expect.stringMatching(/^NOT_FOUND: plan .* was erased: its stream is gone$/)]);
    await healthyCompletes();
  });
});
