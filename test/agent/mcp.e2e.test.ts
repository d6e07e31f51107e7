// MCP servers' tools as ledger tools (mcpTools): the reference server @modelcontextprotocol/server-everything
// spoken to over stdio as a child process, an in-process executor, the real broker and registry.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { describe, expect, it, onTestFinished } from 'vitest';
import { agentTools, defineAgent, mcpTools, MCP_META, runAgent, summarizeAgentRun, type McpToolset } from '../../src/agent/index.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { freePortBlock, waitFor } from '../support/helpers.js';
import { call, lastToolResults, response, text, scriptedModel } from './script.js';

const everything = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-everything/dist/index.js');

async function everythingTools(): Promise<McpToolset> {
  const set = await mcpTools({ command: process.execPath, args: [everything, 'stdio'], name: 'everything' }, { include: ['echo', 'get-sum', 'trigger-long-running-operation'], timeoutMs: 30_000 });
  onTestFinished(() => set.close());
  return set;
}

describe('MCP tools as ledger tools (server-everything over stdio, real broker and registry)', () => {
  it('an agent calls the server\'s tools as items; the server\'s answers and its validation errors reach the model', async () => {
    const mcp = await everythingTools();
    expect(mcp.tools.map((t) => t.name).sort()).toEqual(['echo', 'get-sum', 'trigger-long-running-operation']);
    expect(mcp.tools.find((t) => t.name === 'echo')?.description).toMatch(/echo/i);
    const model = scriptedModel([response([text('Adding and echoing.'), call('s', 'get-sum', { a: 2, b: 3 }), call('bad', 'echo', {}), call('e', 'echo', { message: 'hi' })]), response([text('2 + 3 = 5.')])]);
    const agent = defineAgent({ name: 'mcp-user', model, tools: mcp.tools });
    const { ledger } = await ledgerWithExecutor({ tools: agentTools(agent) });
    const { planId } = await runAgent(ledger, { agent, goal: 'add 2 and 3', mode: 'execute' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });

    expect(done.itemOrder).toEqual(['turn-1', 'turn-1.call-0', 'turn-1.call-1', 'turn-1.call-2', 'turn-2']);
    const out = (id: string) => JSON.parse(done.items[id]!.outputJson!) as { result?: { content: Array<{ type: string; text: string }> }; error?: { code: string; message: string } };
    expect(out('turn-1.call-0').result?.content[0]?.text).toMatch(/\b5\b/);
    expect(out('turn-1.call-1').error).toMatchObject({ code: 'MCP_TOOL_ERROR' });
    expect(out('turn-1.call-1').error?.message).toMatch(/Invalid arguments for tool echo/);
    expect(out('turn-1.call-2').result?.content).toEqual([{ type: 'text', text: 'Echo: hi' }]);
    const seen = lastToolResults(model.doStreamCalls[1]!).map((r) => [r.toolCallId, (r.output as { type: string }).type]);
    expect(seen).toEqual([
      ['s', 'json'],
      ['bad', 'error-json'],
      ['e', 'json'],
    ]);
    expect(summarizeAgentRun(done)).toMatchObject({ finished: 'answer', answer: '2 + 3 = 5.' });
  });

  it('a server killed mid-call fails the attempt with MCP_UNAVAILABLE; the retry starts it again and completes', async () => {
    const mcp = await everythingTools();
    const { ledger } = await ledgerWithExecutor({ tools: mcp.ledgerTools });
    const firstPid = mcp.serverPid();
    expect(firstPid).toBeGreaterThan(0);
    const { planId } = await ledger.createPlan({
      goal: 'a long MCP operation',
      mode: 'execute',
      items: [{ id: 'long', title: 'long op', why: 'the server dies under it', tool: 'trigger-long-running-operation', input: { duration: 3, steps: 3 }, retry: { maxAttempts: 2, initialBackoffMs: 100 } }],
    });
    await waitFor(async () => (await ledger.getPlan(planId))?.items.long?.status === 'in_progress', { message: 'the call running' });
    process.kill(firstPid!, 'SIGKILL');
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    const attempts = done.items.long!.attempts;
    expect(attempts.map((a) => [a.outcome, a.error?.code ?? null])).toEqual([
      ['failed_retryable', 'MCP_UNAVAILABLE'],
      ['succeeded', null],
    ]);
    expect(attempts[0]!.error?.message).toMatch(/MCP server everything is gone/);
    expect(mcp.serverPid()).not.toBe(firstPid);
    expect(JSON.stringify(JSON.parse(done.items.long!.outputJson!))).toMatch(/completed/i);
  });

  it('each call carries the idempotency key, fencing token, plan and item in the request _meta', async () => {
    const meta = await mcpTools({ command: process.execPath, args: ['--import', 'tsx', 'test/fixtures/mcp-meta-server.ts'], name: 'meta-echo' });
    onTestFinished(() => meta.close());
    const { ledger } = await ledgerWithExecutor({ tools: meta.ledgerTools });
    const { planId } = await ledger.createPlan({ goal: 'who am I', mode: 'execute', items: [{ id: 'ask', title: 'ask', why: 'see the _meta', tool: 'whoami', input: { note: 'n1' } }] });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    const out = JSON.parse(done.items.ask!.outputJson!) as { content: Array<{ text: string }> };
    const said = JSON.parse(out.content[0]!.text) as { note: string; meta: Record<string, unknown> };
    expect(said.note).toBe('n1');
    expect(said.meta).toMatchObject({ [MCP_META.idempotencyKey]: `${planId}/ask/1`, [MCP_META.planId]: planId, [MCP_META.itemId]: 'ask' });
    expect(said.meta[MCP_META.fencingToken]).toBe(done.items.ask!.attempts[0]!.fencingToken);
    expect(done.items.ask!.attempts[0]!.fencingToken).toBeGreaterThan(0);
  });

  it('reaches a server over Streamable HTTP the same way', async () => {
    const port = await freePortBlock(1);
    const server = spawn(process.execPath, [everything, 'streamableHttp'], { env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    const exited = new Promise((r) => server.once('exit', r));
    onTestFinished(async () => {
      server.kill('SIGKILL');
      await exited;
    });
    let stderr = '';
    server.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    await waitFor(() => stderr.includes('listening on port'), { message: `server-everything listening (${stderr})` });
    const http = await mcpTools({ url: `http://127.0.0.1:${port}/mcp`, name: 'everything-http' }, { include: ['echo'], prefix: 'http_' });
    onTestFinished(() => http.close());
    expect(http.tools.map((t) => t.name)).toEqual(['http_echo']);
    const { ledger } = await ledgerWithExecutor({ tools: http.ledgerTools });
    const { planId } = await ledger.createPlan({ goal: 'echo over http', mode: 'execute', items: [{ id: 'e', title: 'echo', why: 'over http', tool: 'http_echo', input: { message: 'over http' } }] });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(JSON.parse(done.items.e!.outputJson!)).toEqual({ content: [{ type: 'text', text: 'Echo: over http' }] });
  });
});
