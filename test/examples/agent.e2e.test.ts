import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { configToEnv } from '../../src/config.js';
import { summarizeAgentRun } from '../../src/agent/index.js';
import { testConfig } from '../support/helpers.js';
import { ownsPartitions, runCli, spawnExecutor } from '../support/processes.js';

/** Runs the command the README gives, `npx tsx examples/agent/run.ts`, against the test's stack. */
function runExample(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const merged: NodeJS.ProcessEnv = { ...process.env, ...env, NO_COLOR: '1' };
  // As a person's shell would start it: the example sets the Kafka client's thread pool itself.
  delete merged.UV_THREADPOOL_SIZE;
  return new Promise((resolve) => {
    const p = spawn('npx', ['tsx', 'examples/agent/run.ts'], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('examples/agent', () => {
  it('runs the warehouse agent on the stack: 4 model turns, 3 tool calls (one over MCP), the answer, and how to follow it; served by plan-ledger executor too, which SIGTERM ends', async () => {
    const config = testConfig();
    const r = await runExample({ ...configToEnv(config), PLAN_LEDGER_TOPIC_PREFIX: config.topicPrefix });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const planId = /^plan\s+(\S+)$/.exec(lines.find((l) => l.startsWith('plan '))!)![1]!;
    expect(lines[0]).toBe(`stack     ${config.brokers.join(',')}  topics ${config.topicPrefix}.*`);
    // Each turn's text and the calls it asked for, each call with its result, in the order they completed.
    expect(lines.filter((l) => /^turn \d/.test(l))).toEqual([
      'turn 1    "First the order: what does it need?"  (120 in / 20 out tokens)',
      'turn 2    "Order 7 needs 3 × SKU-42; is there enough stock?"  (210 in / 24 out tokens)',
      'turn 3    "12 available in Lyon: reserving 3."  (260 in / 22 out tokens)',
      'turn 4    "Reserved 3 × SKU-42 for order 7 (res-1): it can ship today."  (320 in / 19 out tokens)',
    ]);
    expect(lines.filter((l) => l.startsWith('  call ')).map((l) => l.replace(/\s+\(item .*$/, ''))).toEqual([
      '  call    lookup_order {"orderId":"7"} -> {"customer":"Grace Hopper","orderId":"7","qty":3,"sku":"SKU-42"}',
      '  call    check_stock {"sku":"SKU-42"} -> {"available":12,"sku":"SKU-42","warehouse":"Lyon"}',
      '  call    reserve_stock {"orderId":"7","qty":3,"sku":"SKU-42"} -> {"orderId":"7","qty":3,"reservationId":"res-1","sku":"SKU-42"}',
    ]);
    expect(r.stdout).toContain('result    plan completed, finished: answer, 4 turns, 3 tool calls, 995 tokens\n');
    expect(r.stdout).toContain('answer    Reserved 3 × SKU-42 for order 7 (res-1): it can ship today.\n');
    expect(r.stdout).toContain(`follow    PLAN_LEDGER_TOPIC_PREFIX=${config.topicPrefix} npx plan-ledger show ${planId}`);
    expect(r.stdout).toContain(`audit     PLAN_LEDGER_TOPIC_PREFIX=${config.topicPrefix} npx plan-ledger audit ${planId}`);

    // What the ledger recorded, read back by another client after the example's process ended.
    const ledger = await connectLedger(config);
    try {
      const s = (await ledger.getPlan(planId))!;
      expect(s.status).toBe('completed');
      expect(s.itemOrder.map((id) => [id, s.items[id]!.tool, s.items[id]!.status, s.items[id]!.attempts.length])).toEqual([
        ['turn-1', 'agent:warehouse', 'completed', 1],
        ['turn-1.call-0', 'lookup_order', 'completed', 1],
        ['turn-2', 'agent:warehouse', 'completed', 1],
        ['turn-2.call-0', 'check_stock', 'completed', 1],
        ['turn-3', 'agent:warehouse', 'completed', 1],
        ['turn-3.call-0', 'reserve_stock', 'completed', 1],
        ['turn-4', 'agent:warehouse', 'completed', 1],
      ]);
      // The MCP tool's output is the server's answer as it gave it.
      expect(JSON.parse(s.items['turn-2.call-0']!.outputJson!)).toEqual({
        result: { content: [{ type: 'text', text: '{"sku":"SKU-42","available":12,"warehouse":"Lyon"}' }], structuredContent: { sku: 'SKU-42', available: 12, warehouse: 'Lyon' } },
      });
      expect(JSON.parse(s.items['turn-3.call-0']!.outputJson!)).toEqual({ result: { reservationId: 'res-1', orderId: '7', sku: 'SKU-42', qty: 3 } });
      const run = summarizeAgentRun(s)!;
      expect(run).toMatchObject({ agent: 'warehouse', finished: 'answer', answer: 'Reserved 3 × SKU-42 for order 7 (res-1): it can ship today.' });
      expect(run.turns.map((t) => [t.modelId, t.toolCalls, t.usage.inputTokens, t.usage.outputTokens])).toEqual([
        ['scripted-warehouse-model', 1, 120, 20],
        ['scripted-warehouse-model', 1, 210, 24],
        ['scripted-warehouse-model', 1, 260, 22],
        ['scripted-warehouse-model', 0, 320, 19],
      ]);
      expect(run.totals).toMatchObject({ inputTokens: 910, outputTokens: 85, totalTokens: 995, turns: 4 });
      expect((await ledger.verify(planId)).ok).toBe(true);
    } finally {
      await ledger.close();
    }

    // The same agent served by its own process, as the agents guide says: `plan-ledger executor --tools
    // examples/agent/agent.ts`, a run started by `plan-ledger agent warehouse`; SIGTERM then ends the
    // executor although the tools module holds the MCP server's pipe open.
    const exec = spawnExecutor(config, { label: 'example-agent-exec', tools: 'examples/agent/agent.ts' });
    await exec.waitForLog(ownsPartitions, 60_000);
    const viaCli = await runCli(config, ['agent', 'warehouse', '--goal', 'Can order 7 ship today?', '--wait']);
    expect(viaCli.code).toBe(0);
    expect(viaCli.stdout).toContain('finished answer   turns 4   tokens 910 in / 85 out / 995 total   model scripted-warehouse-model');
    expect(viaCli.stdout).toContain('Reserved 3 × SKU-42 for order 7 (res-1): it can ship today.');
    const stopAsked = Date.now();
    exec.kill('SIGTERM');
    expect(await exec.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopAsked).toBeLessThan(15_000);
    expect(exec.logs.some((l) => l.msg === 'executor stopped')).toBe(true);
  });
});
