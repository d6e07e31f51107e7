// plan-ledger as an MCP server: `plan-ledger mcp` as a child process on stdio, spoken to by the official
// TypeScript MCP client; an in-process executor runs the plans; the real broker and registry.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
    const { config } = await ledgerWithExecutor();
    const env = Object.fromEntries(Object.entries({ ...process.env, ...configToEnv(config) }).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const transport = new StdioClientTransport({ command: process.execPath, args: ['bin/plan-ledger.js', 'mcp', '--by', 'agent-007'], env, stderr: 'pipe' });
    const client = new Client({ name: 'test-client', version: '1.0.0' });
    await client.connect(transport);
    onTestFinished(() => client.close());

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['plan_add_items', 'plan_approve', 'plan_audit', 'plan_create', 'plan_list', 'plan_propose', 'plan_show', 'plan_verify', 'plan_wait']);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe('object');
      expect(t.outputSchema?.type).toBe('object');
    }
    const createSchema = tools.find((t) => t.name === 'plan_create')!.inputSchema as { properties: Record<string, unknown>; required: string[] };
    expect(Object.keys(createSchema.properties).sort()).toEqual(['goal', 'items', 'labels', 'mode', 'planId']);

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
    const planId = created.planId as string;

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
    expect((await reader.listTools()).tools).toHaveLength(9);
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
});
