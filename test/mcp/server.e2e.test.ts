// plan-ledger as an MCP server: `plan-ledger mcp` as a child process on stdio, spoken to by the official
// TypeScript MCP client; an in-process executor runs the plans; the real broker and registry.
import { describe, expect, it, onTestFinished } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { configToEnv } from '../../src/config.js';
import { ledgerWithExecutor } from '../executor/support.js';

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
});
