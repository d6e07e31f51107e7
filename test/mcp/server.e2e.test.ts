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
import { configToEnv } from '../../src/config.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { freePortBlock, waitFor } from '../support/helpers.js';

type Structured = Record<string, unknown>;

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
    const { config, ledger } = await ledgerWithExecutor();
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
