// An MCP client in another language: the Python `mcp` SDK (installed by .ci/run) drives `plan-ledger mcp`
// over stdio (test/mcp/python_client.py); an in-process executor runs the plan it creates.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { configToEnv } from '../../src/config.js';
import { setting } from '../../src/settings.js';
import { ledgerWithExecutor } from '../executor/support.js';

describe('plan-ledger mcp from the Python MCP client', () => {
  it('lists the tools, creates a plan that runs, waits for it and verifies it', async () => {
    const { config, ledger } = await ledgerWithExecutor();
    const python = setting('PLAN_LEDGER_PYTHON');
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(python, ['test/mcp/python_client.py'], { env: { ...process.env, ...configToEnv(config), NODE: process.execPath }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      p.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    const seen = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { tools: string[]; withOutputSchema: string[]; planId: string; status: string; outputs: Record<string, unknown>; verified: boolean };
    const names = ['plan_add_items', 'plan_approve', 'plan_audit', 'plan_create', 'plan_fork', 'plan_list', 'plan_propose', 'plan_show', 'plan_signal', 'plan_verify', 'plan_wait'];
    expect(seen.tools).toEqual(names);
    expect(seen.withOutputSchema).toEqual(names);
    expect(seen.status).toBe('completed');
    expect(seen.outputs).toEqual({ one: { echo: { lang: 'python' } }, two: { echo: { n: 2 } } });
    expect(seen.verified).toBe(true);
    const plan = await ledger.getPlan(seen.planId);
    expect(plan).toMatchObject({ status: 'completed', labels: { via: 'python' } });
    const events = await ledger.planEvents(seen.planId);
    expect(events[0]!.event).toMatchObject({ type: 'PlanCreated', actor: 'python-agent' });
  });
});
