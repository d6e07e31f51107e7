// What `show`, the API and MCP call an item's output, and the forks line of `show` and `audit` with a
// projector running: one plan, one set-up, every surface.
import { describe, expect, it, onTestFinished } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { startProjector } from '../../projector/index.js';
import { configToEnv } from '../../src/config.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { ledgerWithExecutor } from '../executor/support.js';
import { testLogger, waitFor } from '../support/helpers.js';
import { runCli } from '../support/processes.js';

describe("an item's output is outputJson in every surface", () => {
  it('library, show --json, the HTTP API and MCP (output kept there as a deprecated alias); show and audit list forks, not the hint, with a projector running', async () => {
    const { config, ledger } = await ledgerWithExecutor();
    const { planId } = await ledger.createPlan({ goal: 'one output', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'echoes its input', tool: 'noop', input: { n: 7 } }] });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    const output = '{"echo":{"n":7}}';

    // The library: PlanState's items (and their attempts) carry the JSON text.
    const s = (await ledger.getPlan(planId))!;
    expect(s.items.a!.outputJson).toBe(output);
    expect(s.items.a!.attempts.map((a) => a.outputJson)).toEqual([output]);
    expect('output' in s.items.a!).toBe(false);

    // show --json: the same state, the same name.
    const shown = await runCli(config, ['show', planId, '--json']);
    expect(shown.code).toBe(0);
    const json = JSON.parse(shown.stdout) as { items: Record<string, Record<string, unknown>> };
    expect(json.items.a).toMatchObject({ inputJson: '{"n":7}', outputJson: output });
    expect('output' in json.items.a!).toBe(false);

    // The HTTP API, from a projector; with it running, every partition gets a watermark, the two this plan
    // does not use too, and show and audit list the forks (none) instead of the hint.
    const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: 'item-output-token', watermarkIntervalMs: 300, defaultMetrics: false });
    onTestFinished(() => projector.stop());
    const api = await waitFor(
      async () => {
        const res = await fetch(`${projector.url}/api/plans/${planId}`, { headers: { authorization: 'Bearer item-output-token' } });
        return res.ok ? ((await res.json()) as { state: { items: Record<string, Record<string, unknown>> } }) : null;
      },
      { timeoutMs: 30_000, message: 'the projector serves the plan' },
    );
    expect(api.state.items.a).toMatchObject({ inputJson: '{"n":7}', outputJson: output });
    expect('output' in api.state.items.a!).toBe(false);
    const page = (await (await fetch(`${projector.url}/api/plans/${planId}/items`, { headers: { authorization: 'Bearer item-output-token' } })).json()) as { items: Record<string, unknown>[] };
    expect(page.items.map((it) => [it.id, it.inputJson, it.outputJson, 'output' in it])).toEqual([['a', '{"n":7}', output, false]]);
    expect(new Set([0, 1, 2].map((p) => p === partitionFor(planId, 3)))).toEqual(new Set([true, false]));
    const text = await waitFor(
      async () => {
        const r = await runCli(config, ['show', planId]);
        return r.code === 0 && !r.stdout.includes('not listed') ? r.stdout : null;
      },
      { timeoutMs: 30_000, message: 'show stops printing the forks hint once the projector has watermarked every partition' },
    );
    expect(text).not.toContain('forks   ');
    const audit = await runCli(config, ['audit', planId]);
    expect(audit.code).toBe(0);
    expect(audit.stdout).not.toContain('forks   ');

    // MCP (plan-ledger mcp over stdio, the official client): outputJson, and the parsed output as before.
    const env = Object.fromEntries(Object.entries({ ...process.env, ...configToEnv(config) }).filter((e): e is [string, string] => typeof e[1] === 'string'));
    const client = new Client({ name: 'item-output-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: ['bin/plan-ledger.js', 'mcp'], env, stderr: 'pipe' }));
    onTestFinished(() => client.close());
    const showTool = (await client.listTools()).tools.find((t) => t.name === 'plan_show')!;
    const itemSchema = (showTool.outputSchema as unknown as { properties: { items: { items: { properties: Record<string, { description?: string }>; required: string[] } } } }).properties.items.items;
    expect(itemSchema.required).toContain('outputJson');
    expect(itemSchema.properties.output!.description).toMatch(/^deprecated: outputJson parsed/);
    const viaMcp = await client.callTool({ name: 'plan_show', arguments: { planId } });
    expect(viaMcp.isError ?? false).toBe(false);
    expect((viaMcp.structuredContent as { items: unknown[] }).items).toEqual([
      { id: 'a', title: 'a', tool: 'noop', status: 'completed', dependsOn: [], attempts: 1, outputJson: output, output: { echo: { n: 7 } }, error: null },
    ]);
  });
});
