// plan-ledger as an MCP server: `plan-ledger mcp` as a child process on stdio, spoken to by the official
// TypeScript MCP client; an in-process executor runs the plans; the real broker and registry.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, runAgent, type TurnOutput } from '../../src/agent/index.js';
import { configToEnv } from '../../src/config.js';
import { call, response, streamParts, text, turnOf, wordDeltas } from '../agent/script.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { tools } from '../fixtures/tools.js';
import { freePortBlock, waitFor } from '../support/helpers.js';

type Structured = Record<string, unknown>;

// A run whose turns stream, for plan_wait's progress: the first turn waits for `releaseTalk`, says a
// sentence and looks an order up; the second says forty words, 30 ms apart. `flood` says 1 MiB at once.
const WORDS = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') + '.';
let releaseTalk!: () => void;
const talkGate = new Promise<void>((r) => (releaseTalk = r));
const talker = defineAgent({
  name: 'talker',
  model: new MockLanguageModelV3({
    doStream: async (options) => {
      if (turnOf(options) === 1) await talkGate;
      const reply = turnOf(options) === 1 ? response([text('Looking order 42 up.'), call('c1', 'lookup', { orderId: '42' })]) : response([text(WORDS)]);
      return { stream: simulateReadableStream({ chunks: streamParts(reply), initialDelayInMs: null, chunkDelayInMs: 30 }) };
    },
  }),
  tools: [defineAgentTool({ name: 'lookup', description: 'Look an order up', inputSchema: z.object({ orderId: z.string() }), run: ({ orderId }) => ({ orderId }) })],
});
const MIB = 1024 * 1024;
const flood = defineAgent({
  name: 'flood',
  model: new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks: streamParts(response([text('y'.repeat(MIB))])), initialDelayInMs: null, chunkDelayInMs: null }) }) }),
  tools: [],
});

describe('plan-ledger mcp (stdio, the official MCP client)', () => {
  it('lists its tools with schemas; a plan created, proposed, approved and waited for through MCP runs and verifies', async () => {
    const { config, ledger } = await ledgerWithExecutor();
    const env = Object.fromEntries(Object.entries({ ...process.env, ...configToEnv(config) }).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const transport = new StdioClientTransport({ command: process.execPath, args: ['bin/plan-ledger.js', 'mcp', '--by', 'agent-007'], env, stderr: 'pipe' });
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(transport);
    onTestFinished(() => client.close());

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['plan_add_items', 'plan_approve', 'plan_audit', 'plan_create', 'plan_fork', 'plan_list', 'plan_propose', 'plan_show', 'plan_signal', 'plan_verify', 'plan_wait']);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.type).toBe('object');
    }
    const createSchema = tools.find((t) => t.name === 'plan_create')!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(createSchema.properties).sort()).toEqual(['goal', 'items', 'labels', 'mode', 'planId', 'strictTools']);

    const callOk = async (name: string, args: Record<string, unknown>): Promise<Structured> => {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError ?? false, JSON.stringify(r.content)).toBe(false);
      return r.structuredContent as Structured;
    };

    const created = await callOk('plan_create', {
      goal: 'two steps through MCP',
      mode: 'propose',
      labels: { via: 'mcp' },
      items: [
        { id: 'a', title: 'first', why: 'start', tool: 'noop', input: { n: 1 } },
        { id: 'b', title: 'second', why: 'after a', tool: 'noop', input: { n: 2 }, dependsOn: ['a'] },
      ],
    });
    expect(created.status).toBe('draft');
    // The executor serves noop and has announced itself: nothing to warn about.
    expect(created.warnings).toEqual([]);
    expect(created.unservedTools).toEqual([]);
    const planId = created.planId as string;

    // A misspelt tool: a warning naming it and the live executor; strict, a refusal with nothing sent.
    const misspelt = { goal: 'a typo', mode: 'propose', items: [{ id: 'a', title: 'look up', why: 'the order', tool: 'lookup_ordr' }] };
    const warned = await callOk('plan_create', misspelt);
    expect(warned.unservedTools).toEqual(['lookup_ordr']);
    expect(warned.warnings).toEqual([expect.stringMatching(/^tool "lookup_ordr" is served by no live executor \(live: \S+ serves .*noop/)]);
    const refused = await client.callTool({ name: 'plan_create', arguments: { ...misspelt, strictTools: true } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toMatch(/UNSERVED_TOOL: .*tool \\"lookup_ordr\\" is served by no live executor/);

    const { digest } = await callOk('plan_propose', { planId });
    const stale = await client.callTool({ name: 'plan_approve', arguments: { planId, digest: 'f'.repeat(64) } });
    expect(stale.isError).toBe(true);
    expect(JSON.stringify(stale.content)).toContain('REJECTED STALE_DIGEST');

    await callOk('plan_approve', { planId, digest, by: 'alice' });
    const done = await callOk('plan_wait', { planId, timeoutMs: 60_000 });
    expect(done.status).toBe('completed');
    expect((done.items as Array<{ id: string; output: unknown }>).map((i) => [i.id, i.output])).toEqual([
      ['a', { echo: { n: 1 } }],
      ['b', { echo: { n: 2 } }],
    ]);

    const verified = await callOk('plan_verify', { planId });
    expect(verified.ok).toBe(true);
    expect((verified.checks as Array<{ ok: boolean }>).every((c) => c.ok)).toBe(true);

    const audit = await callOk('plan_audit', { planId });
    const rows = audit.rows as Array<{ type: string; actor: string; idempotencyKey: string | null }>;
    expect(rows[0]).toMatchObject({ type: 'PlanCreated', actor: 'agent-007' });
    expect(rows.at(-1)?.type).toBe('PlanCompleted');
    expect(rows.filter((r) => r.type === 'IntentRecorded').map((r) => r.idempotencyKey)).toEqual([`${planId}/a/1`, `${planId}/b/1`]);

    const listed = await callOk('plan_list', { label: 'via:mcp' });
    expect((listed.plans as Array<{ planId: string; status: string }>).map((p) => [p.planId, p.status])).toEqual([[planId, 'completed']]);

    const resource = await client.readResource({ uri: `plan://${planId}` });
    expect(JSON.parse((resource.contents[0] as { text: string }).text)).toMatchObject({ planId, status: 'completed', digest });

    const missing = await client.callTool({ name: 'plan_show', arguments: { planId: 'plan-nope' } });
    expect(missing.isError).toBe(true);
    expect(JSON.stringify(missing.content)).toContain('NOT_FOUND');

    // A wait item created through MCP, answered through plan_signal; then a fork of the plan at its last item.
    const waiting = await callOk('plan_create', {
      goal: 'ask, then act',
      mode: 'execute',
      items: [
        { id: 'ask', title: 'ask the operator', why: 'a person decides', wait: { signal: 'go', prompt: 'Go ahead?' } },
        { id: 'act', title: 'act', why: 'once told to', tool: 'noop', dependsOn: ['ask'] },
      ],
    });
    const askPlan = waiting.planId as string;
    await callOk('plan_wait', { planId: askPlan, status: 'running' });
    await ledger.waitFor(askPlan, (st) => st.items['ask']?.status === 'in_progress', { timeoutMs: 30_000 });
    const wrongName = await client.callTool({ name: 'plan_signal', arguments: { planId: askPlan, name: 'stop', data: {} } });
    expect([wrongName.isError, JSON.stringify(wrongName.content).includes('NOT_WAITING')]).toEqual([true, true]);
    const signalled = await callOk('plan_signal', { planId: askPlan, name: 'go', data: { go: true }, signalId: 'mcp-1' });
    expect(signalled.events).toEqual(['ItemSignalled', 'ItemCompleted']);
    const twice = await client.callTool({ name: 'plan_signal', arguments: { planId: askPlan, name: 'go', data: { go: false }, signalId: 'mcp-1' } });
    expect([twice.isError, JSON.stringify(twice.content).includes('DUPLICATE_SIGNAL')]).toEqual([true, true]);
    expect((await callOk('plan_wait', { planId: askPlan })).status).toBe('completed');
    const forked = await callOk('plan_fork', { planId: askPlan, at: 'act', newPlanId: `${askPlan}-again` });
    expect(forked).toMatchObject({ planId: `${askPlan}-again`, forkedFrom: { planId: askPlan } });
    const again = await callOk('plan_wait', { planId: `${askPlan}-again` });
    expect(again.status).toBe('completed');
    expect((again.items as Array<{ id: string; output: unknown }>).find((i) => i.id === 'ask')!.output).toEqual({ go: true });
    expect((await ledger.planEvents(askPlan)).filter((r) => r.event.type === 'ItemSignalled').map((r) => r.event.actor)).toEqual(['agent-007']);
  });

  it("plan_wait with a progressToken: items completed of the total, and a running turn's text as it streams, bounded in rate and size", async () => {
    const { config, ledger } = await ledgerWithExecutor({ tools: [...tools, ...agentTools(talker, flood)] });
    const env = Object.fromEntries(Object.entries({ ...process.env, ...configToEnv(config) }).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const client = new Client({ name: 'progress-client', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: ['bin/plan-ledger.js', 'mcp'], env, stderr: 'pipe' }));
    onTestFinished(() => client.close());
    const waitWithProgress = async (planId: string, onFirst?: () => void) => {
      const notes: Array<{ progress: number; total?: number; message?: string }> = [];
      const r = await client.callTool({ name: 'plan_wait', arguments: { planId, timeoutMs: 120_000 } }, undefined, {
        onprogress: (p) => {
          notes.push(p);
          if (notes.length === 1) onFirst?.();
        },
        timeout: 130_000,
      });
      expect(r.isError ?? false, JSON.stringify(r.content)).toBe(false);
      return { result: r.structuredContent as Structured, notes };
    };
    /** The text notifications of an item: what each kept, and the characters each said it left out. */
    const textOf = (notes: Array<{ message?: string }>, itemId: string) =>
      notes.flatMap((n) => {
        const m = new RegExp(`^${itemId.replace(/\./g, '\\.')}: (?:\\[… (\\d+) characters\\] )?([\\s\\S]*)$`).exec(n.message ?? '');
        return m ? [{ skipped: Number(m[1] ?? 0), kept: m[2]! }] : [];
      });

    // The model is held until the wait has sent its first notification: everything it says comes after.
    const { planId } = await runAgent(ledger, { agent: talker, goal: 'what is on order 42?' });
    const { result, notes } = await waitWithProgress(planId, releaseTalk);
    expect(result.status).toBe('completed');
    const finished = await ledger.getPlan(planId);
    const recorded = (id: string) => (JSON.parse(finished!.items[id]!.outputJson!) as TurnOutput).text;
    // progress rises with every notification; the last is every item completed.
    expect(notes.filter((n, i) => i > 0 && !(n.progress > notes[i - 1]!.progress))).toEqual([]);
    expect(notes.at(-1)).toEqual({ progress: 3, total: 3, message: '3/3 items completed (plan completed)' });
    expect(notes[0]).toMatchObject({ progress: 0, total: 1, message: '0/1 items completed (plan running)' });
    // The counts between, in order: texts do not hold them back (counts and texts take turns).
    const done = notes.flatMap((n) => (/^(\d+)\/\d+ items completed/.exec(n.message ?? '') ? [Number(n.message!.split('/')[0])] : []));
    expect(done.filter((d, i) => i > 0 && d < done[i - 1]!)).toEqual([]);
    // Each turn's text, as it streamed: all of it, once, in order; a notification carries one or more of the
    // stream's records, never part of one (so never more notifications than records, however the time goes).
    const records = new Map<string, number>();
    for await (const c of ledger.stream(planId, { follow: false })) if (c.kind === 'text') records.set(c.itemId, (records.get(c.itemId) ?? 0) + 1);
    for (const [turn, said] of [['turn-1', 'Looking order 42 up.'], ['turn-2', WORDS]] as const) {
      const texts = textOf(notes, turn);
      expect(recorded(turn)).toBe(said);
      expect(texts.map((t) => t.kept).join('')).toBe(said);
      expect(texts.every((t) => t.skipped === 0)).toBe(true);
      expect(texts.length).toBeGreaterThanOrEqual(1);
      expect(texts.length).toBeLessThanOrEqual(records.get(turn)!);
      expect(records.get(turn)!).toBeLessThanOrEqual(wordDeltas(said).length);
    }

    // 1 MiB said at once: each notification carries at most 2,048 characters and counts what it left out.
    const big = await runAgent(ledger, { agent: flood, goal: 'say a lot' });
    const floodWait = await waitWithProgress(big.planId);
    expect(floodWait.result.status).toBe('completed');
    const texts = textOf(floodWait.notes, 'turn-1');
    expect(texts.length).toBeGreaterThanOrEqual(1);
    expect(texts.every((t) => t.kept.length <= 2048 && /^y+$/.test(t.kept))).toBe(true);
    expect(texts.reduce((n, t) => n + t.kept.length + t.skipped, 0)).toBe(MIB);
    expect(texts.some((t) => t.skipped > 0)).toBe(true);
    expect(floodWait.notes.every((n) => (n.message ?? '').length <= 2048 + 40)).toBe(true);
    // Without a progressToken the wait answers as before, with no notification.
    expect(((await client.callTool({ name: 'plan_wait', arguments: { planId: big.planId } })).structuredContent as Structured).status).toBe('completed');
  });

  it('a careless or hostile client gets a coded error for each bad call, and the server keeps serving', async () => {
    const { config } = await ledgerWithExecutor();
    const env = Object.fromEntries(Object.entries({ ...process.env, ...configToEnv(config) }).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const transport = new StdioClientTransport({ command: process.execPath, args: ['bin/plan-ledger.js', 'mcp'], env, stderr: 'pipe' });
    const client = new Client({ name: 'hostile-client', version: '1.0.0' });
    await client.connect(transport);
    onTestFinished(() => client.close());
    const failure = async (name: string, args: Record<string, unknown>): Promise<string> => {
      try {
        const r = await client.callTool({ name, arguments: args });
        expect(r.isError, `${name} ${JSON.stringify(args).slice(0, 100)}`).toBe(true);
        return JSON.stringify(r.content);
      } catch (e) {
        return (e as Error).message; // refused by the SDK before the tool ran (unknown tool, schema)
      }
    };
    let deep: unknown = 1;
    for (let i = 0; i < 1500; i++) deep = { d: deep };

    expect(await failure('plan_destroy', { planId: 'x' })).toMatch(/plan_destroy/);
    expect(await failure('plan_create', { goal: 'no items', mode: 'execute', items: 'all of them' })).toMatch(/items/);
    expect(await failure('plan_create', { goal: 'bad mode', mode: 'yolo', items: [] })).toMatch(/mode/);
    expect(await failure('plan_create', { goal: 'neither tool nor wait', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'a' }] })).toMatch(/tool/);
    expect(await failure('plan_create', { goal: 'x'.repeat(2_000_000), mode: 'execute', items: [{ id: 'a', title: 'a', why: 'a', tool: 'noop' }] })).toMatch(/VALIDATION|goal|too|limit/i);
    expect(await failure('plan_wait', { planId: 'plan-nope', timeoutMs: 10 ** 12 })).toMatch(/timeoutMs/);
    expect(await failure('plan_fork', { planId: 'plan-nope', at: 'x' })).toMatch(/NOT_FOUND/);
    expect(await failure('plan_signal', { planId: 'plan-nope', name: 'go' })).toMatch(/NOT_FOUND|PLAN_NOT_FOUND/);

    // 1,500 levels of input are stored and run (no nesting limit is designed below 2,000).
    const deepPlan = await client.callTool({ name: 'plan_create', arguments: { goal: 'deep', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'a', tool: 'noop', input: deep }] } });
    expect(deepPlan.isError ?? false, JSON.stringify(deepPlan.content).slice(0, 300)).toBe(false);
    expect(((await client.callTool({ name: 'plan_wait', arguments: { planId: (deepPlan.structuredContent as Structured).planId as string } })).structuredContent as Structured).status).toBe('completed');

    // Still serving: a plan created after all that runs.
    const ok = await client.callTool({ name: 'plan_create', arguments: { goal: 'after the storm', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'a', tool: 'noop' }] } });
    expect(ok.isError ?? false, JSON.stringify(ok.content)).toBe(false);
    const done = await client.callTool({ name: 'plan_wait', arguments: { planId: (ok.structuredContent as Structured).planId as string } });
    expect((done.structuredContent as Structured).status).toBe('completed');
  });

  it('--http serves Streamable HTTP behind the API tokens: none is refused, a read token cannot send commands, a write token\'s principal is the actor', async () => {
    const { config, ledger } = await ledgerWithExecutor({ tools: [...tools, ...agentTools(flood)] });
    const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-mcp-'));
    const tokensFile = join(dir, 'tokens.jsonl');
    const alice = 'alice-token-0123456789abcdef';
    const grafana = 'grafana-token-0123456789abcdef';
    writeFileSync(tokensFile, `${JSON.stringify({ token: alice, principal: 'alice', scopes: ['read', 'write'] })}\n${JSON.stringify({ token: grafana, principal: 'grafana', scopes: ['read'] })}\n`);
    const port = await freePortBlock(1);
    const proc = spawn(process.execPath, ['bin/plan-ledger.js', 'mcp', '--http', String(port)], { env: { ...process.env, ...configToEnv(config), PLAN_LEDGER_API_TOKENS_FILE: tokensFile }, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise((r) => proc.once('exit', r));
    onTestFinished(async () => {
      proc.kill('SIGKILL');
      await exited;
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await waitFor(() => stdout.includes('Streamable HTTP on'), { timeoutMs: 30_000, message: `mcp --http listening (${stderr})` });
    expect(stdout).toContain(`http://127.0.0.1:${port}/mcp (2 API tokens)`);

    const connect = async (token: string | null) => {
      const client = new Client({ name: 'http-client', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`), token ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : undefined);
      await client.connect(transport);
      onTestFinished(() => client.close());
      return client;
    };
    await expect(connect(null)).rejects.toThrow(/401|missing bearer token/);
    await expect(connect('not-a-configured-token-at-all')).rejects.toThrow(/403|wrong API token/);

    const reader = await connect(grafana);
    expect((await reader.listTools()).tools).toHaveLength(11);
    const refused = await reader.callTool({ name: 'plan_create', arguments: { goal: 'nope', mode: 'execute', items: [{ id: 'x', title: 'x', why: 'x', tool: 'noop' }] } });
    expect(refused.isError).toBe(true);
    expect(JSON.stringify(refused.content)).toContain('FORBIDDEN: grafana may read but not send commands');

    const writer = await connect(alice);
    const created = await writer.callTool({ name: 'plan_create', arguments: { goal: 'over HTTP', mode: 'execute', items: [{ id: 'x', title: 'x', why: 'over http', tool: 'noop', input: { via: 'http' } }] } });
    expect(created.isError ?? false, JSON.stringify(created.content)).toBe(false);
    const planId = (created.structuredContent as { planId: string }).planId;
    const waited = await reader.callTool({ name: 'plan_wait', arguments: { planId, timeoutMs: 60_000 } });
    expect((waited.structuredContent as { status: string }).status).toBe('completed');
    const events = await ledger.planEvents(planId);
    expect(events[0]!.event).toMatchObject({ type: 'PlanCreated', actor: 'alice' });

    // Progress over HTTP: the answer becomes an event stream. A client that goes away mid-wait ends its wait.
    const held = await writer.callTool({ name: 'plan_create', arguments: { goal: 'never answered', mode: 'execute', items: [{ id: 'ask', title: 'ask', why: 'no one answers', wait: { signal: 'go' } }] } });
    const heldPlan = (held.structuredContent as { planId: string }).planId;
    const leaving = new AbortController();
    const notes: Array<{ progress: number; total?: number; message?: string }> = [];
    const gone = reader.callTool({ name: 'plan_wait', arguments: { planId: heldPlan, timeoutMs: 600_000 } }, undefined, { signal: leaving.signal, onprogress: (p) => void (notes.push(p), leaving.abort()) });
    await expect(gone).rejects.toThrow(/abort/i);
    expect(notes).toEqual([{ progress: 0, total: 1, message: '0/1 items completed (plan running)' }]);

    // A client that asks for progress and never reads, while a turn streams 1 MiB: what the server sends it is
    // bounded by the notifications' rate and size, not by the stream (read afterwards: a few KiB); meanwhile
    // another client is served.
    const big = await runAgent(ledger, { agent: flood, goal: 'say a lot' });
    const { connect: connectSocket } = await import('node:net');
    const socket = connectSocket(port, '127.0.0.1');
    socket.pause();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'plan_wait', arguments: { planId: big.planId }, _meta: { progressToken: 'never-read' } } });
    socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${grafana}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    const another = await writer.callTool({ name: 'plan_create', arguments: { goal: 'meanwhile', mode: 'execute', items: [{ id: 'x', title: 'x', why: 'served meanwhile', tool: 'noop' }] } });
    const meanwhile = await reader.callTool({ name: 'plan_wait', arguments: { planId: (another.structuredContent as { planId: string }).planId, timeoutMs: 60_000 } });
    expect((meanwhile.structuredContent as { status: string }).status).toBe('completed');
    await ledger.waitFor(big.planId, 'completed', { timeoutMs: 60_000 });
    let received = '';
    socket.on('data', (c: Buffer) => (received += c.toString('utf8')));
    socket.resume();
    await waitFor(() => received.includes('"id":7'), { timeoutMs: 30_000, message: 'the never-read wait answered' });
    socket.destroy();
    // The answer itself carries the turn's recorded 1 MiB (the plan's view); the notifications are what is bounded.
    const progressEvents = received.split('\n\n').filter((e) => e.includes('"notifications/progress"'));
    const progressBytes = progressEvents.reduce((n, e) => n + Buffer.byteLength(e), 0);
    expect(progressEvents.length).toBeGreaterThanOrEqual(2);
    expect(received).toContain('"status":"completed"');
    expect(progressBytes).toBeLessThan(MIB / 32);
    console.log(`[mcp] a client that did not read while 1 MiB streamed was sent ${progressBytes} bytes in ${progressEvents.length} progress notifications`);
  });

  it('a raw JSON-RPC line no JavaScript client can build (input nested 10,000 levels) is a coded error; the next call is served', async () => {
    const { config } = await ledgerWithExecutor();
    const env = Object.fromEntries(Object.entries({ ...process.env, ...configToEnv(config) }).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const server = spawn(process.execPath, ['bin/plan-ledger.js', 'mcp'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    onTestFinished(() => void server.kill('SIGTERM'));
    const replies = new Map<number, Record<string, unknown>>();
    createInterface({ input: server.stdout }).on('line', (line) => {
      const m = JSON.parse(line) as { id?: number };
      if (typeof m.id === 'number') replies.set(m.id, m as Record<string, unknown>);
    });
    const reply = async (id: number) => {
      await waitFor(() => replies.has(id), { timeoutMs: 30_000, message: `reply ${id}` });
      return replies.get(id)!;
    };
    const send = (line: string) => server.stdin.write(`${line}\n`);
    send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
    await reply(1);
    send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    // Built as text: JSON.stringify overflows the stack on it.
    const deep = `${'{"d":'.repeat(10_000)}1${'}'.repeat(10_000)}`;
    send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"plan_create","arguments":{"goal":"deep","mode":"execute","items":[{"id":"a","title":"a","why":"a","tool":"noop","input":${deep}}]}}}`);
    const refused = (await reply(2)) as { result?: { isError?: boolean; content?: unknown }; error?: unknown };
    expect(refused.error ?? refused.result?.isError, JSON.stringify(refused).slice(0, 300)).toBeTruthy();
    expect(JSON.stringify(refused)).toMatch(/VALIDATION/);
    send(JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'plan_create', arguments: { goal: 'next', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'a', tool: 'noop' }] } } }));
    const next = (await reply(3)) as { result: { isError?: boolean; structuredContent: { planId: string } } };
    expect(next.result.isError ?? false).toBe(false);
    send(JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'plan_wait', arguments: { planId: next.result.structuredContent.planId } } }));
    expect(((await reply(4)) as { result: { structuredContent: { status: string } } }).result.structuredContent.status).toBe('completed');
  });
});
