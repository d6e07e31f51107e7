// `plan-ledger demo --agent` end to end: a support agent (scripted AI SDK test model) refunds an order, the
// executor running the refund is killed mid-call, the other one resumes it; one refund, each turn asked once.
import { spawn } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';

describe('plan-ledger demo --agent', () => {
  it('kills the refunding executor mid-call; one refund, the model asked once per turn, the ledger verifies', async () => {
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, ['bin/plan-ledger.js', 'demo', '--agent'], {
        env: { ...process.env, PLAN_LEDGER_BROKERS: inject('brokers'), PLAN_LEDGER_REGISTRY_URL: inject('registryUrl'), NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (c: Buffer) => (out += c.toString()));
      p.stderr.on('data', (c: Buffer) => (err += c.toString()));
      p.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(stdout).toMatch(/executor-A +pid \d+, owns partitions [\d,]+, runs agent "support": model demo\/scripted-support-model, tools lookup_order \(MCP, demo\/shop-mcp.ts\) and refund/);
    expect(stdout).toMatch(/turn-1\.call-0 +lookup_order \{"orderId":"A-1042"\}, intent by executor-[AB]/);
    expect(stdout).toMatch(/turn-2 +completed: "1 × mechanical keyboard and 1 × wireless mouse came back: 113\.50 EUR to refund\."/);
    // The turn's words appear as the model says them: streamed lines before the turn's completion line,
    // and together its recorded text.
    const lines = stdout.split('\n');
    const completedAt = lines.findIndex((l) => /turn-2 +completed: /.test(l));
    const said = lines.flatMap((l, i) => {
      const m = /^\[ *[\d.]+s\] turn-2 +says (".*")$/.exec(l);
      return m ? [{ i, text: JSON.parse(m[1]!) as string }] : [];
    });
    expect(said.length).toBeGreaterThanOrEqual(2);
    expect(said[0]!.i).toBeLessThan(completedAt);
    expect(said.map((s) => s.text).join('')).toBe('1 × mechanical keyboard and 1 × wireless mouse came back: 113.50 EUR to refund.');
    const call = /(executor-[AB]) \(pid (\d+)\) calls POST \/refunds, key …\/turn-2\.call-0\/1: refund performed/.exec(stdout);
    expect(call).not.toBeNull();
    const [, victim, pid] = call!;
    expect(stdout).toContain(`SIGKILL          ${victim} (pid ${pid}) while the agent's refund call is in flight`);
    const survivor = victim === 'executor-A' ? 'executor-B' : 'executor-A';
    expect(stdout).toMatch(new RegExp(`${survivor} \\(pid \\d+\\) calls POST /refunds, key …/turn-2\\.call-0/1: key seen before`));
    expect(stdout).toMatch(/model calls {9}3 for 3 recorded turns: turn 1 by executor-[AB], turn 2 by executor-[AB], turn 3 by executor-[AB]/);
    expect(stdout).toMatch(/refunds performed {3}1 {3}rf_0001 {2}113\.50 EUR/);
    expect(stdout).toContain('agent   support   finished answer   turns 3   tokens 1110 in / 82 out / 1192 total   model scripted-support-model');
    expect(stdout).toContain('answer: Refunded 113.50 EUR (rf_0001) on order A-1042.');
    expect(stdout).toMatch(/the model was asked 3 times for 3 turns; exactly 1 refund; verify OK/);
    expect(stdout).toContain('demo OK');
  });
});
