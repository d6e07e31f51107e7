// The CLI on an agent run: `plan-ledger agent` starts it (the model lives in the executor process), and
// `show` and `audit` print its usage totals and turns.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { turnToolName, type AgentRunSummary } from '../../src/agent/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testConfig } from '../support/helpers.js';
import { ownsPartitions, runCli, spawnExecutor } from '../support/processes.js';

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

const cli = runCli;

describe('plan-ledger agent, show and audit on an agent run (processes, real broker and registry)', () => {
  it('starts a run by name, waits for it, and shows its turns and token totals', async () => {
    const config = testConfig({ partitions: 1 });
    const ex = spawnExecutor(config, { label: 'exec-cli', tools: 'test/fixtures/agent-tools.ts', env: { EFFECTS_URL: effects.url } });
    await ex.waitForLog(ownsPartitions);

    const started = await cli(config, ['agent', 'support', '--goal', 'Refund the order that cost 12.00', '--wait', '--json']);
    expect(started.stderr).toBe('');
    expect(started.code).toBe(0);
    const r = JSON.parse(started.stdout) as { planId: string; status: string; run: AgentRunSummary };
    expect(r.status).toBe('completed');
    expect(r.run).toMatchObject({ agent: 'support', finished: 'answer', answer: 'Refunded 12.00 on order A.', totals: { inputTokens: 240, outputTokens: 30, totalTokens: 270, turns: 3 }, unread: 0 });
    expect(r.run.turns.map((t) => [t.itemId, t.toolCalls])).toEqual([
      ['turn-1', 2],
      ['turn-2', 1],
      ['turn-3', 0],
    ]);

    const show = await cli(config, ['show', r.planId]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain('agent   support   finished answer   turns 3   tokens 240 in / 30 out / 270 total   model mock-model-id');
    expect(show.stdout).toMatch(/turn-2\.call-0\s+completed\s+refund\s+turn-2\s+1\s+exec-cli\s+refund \(turn 2\)/);

    const audit = await cli(config, ['audit', r.planId]);
    expect(audit.code).toBe(0);
    const turnLines = audit.stdout.split('\n').filter((l) => /^ {2}turn-\d /.test(l));
    expect(turnLines).toEqual([
      '  turn-1  mock-model-id  tool-calls  50 in / 10 out  2 tool calls',
      '  turn-2  mock-model-id  tool-calls  80 in / 12 out  1 tool call',
      '  turn-3  mock-model-id  stop  110 in / 8 out  0 tool calls  finished answer',
    ]);
    expect(audit.stdout).toContain('turn-2.call-0#1');
    expect([...effects.effects.keys()].filter((k) => k.startsWith(`${r.planId}/`))).toHaveLength(3);
    ex.kill('SIGTERM');
  });

  it('without --wait says how to follow the run; a run that fails says why under agent --wait', async () => {
    const config = testConfig({ partitions: 1 });
    const ex = spawnExecutor(config, { label: 'exec-cli-2', tools: 'test/fixtures/agent-tools.ts', env: { EFFECTS_URL: effects.url } });
    await ex.waitForLog(ownsPartitions);

    const started = await cli(config, ['agent', 'support', '--goal', 'Refund the order that cost 12.00']);
    expect(started.code, started.stderr).toBe(0);
    const planId = /^started agent run (\S+) \(first turn turn-1\)\n/.exec(started.stdout)![1]!;
    expect(started.stdout.split('\n')[1]).toBe(`follow it with: plan-ledger wait ${planId}   (or plan-ledger tail ${planId} --follow)`);
    expect((await cli(config, ['wait', planId, '--timeout', '120000'])).stdout).toMatch(new RegExp(`^plan ${planId} completed at seq \\d+\n$`));

    // No executor has an agent by that name: the CLI warns first (the executors' announcements), and its
    // first turn's tool is unknown.
    const unknown = await cli(config, ['agent', 'nosuch', '--goal', 'anything', '--wait']);
    expect(unknown.code).toBe(1);
    const [warning, ended] = unknown.stderr.trimEnd().split('\n');
    expect(warning).toMatch(/^plan-ledger: warning: tool "agent:nosuch" is served by no live executor \(live: exec-cli-2 serves agent:support, /);
    const failedId = /^plan-ledger: agent run (\S+) ended failed: see plan-ledger audit/.exec(ended!)![1]!;
    expect(unknown.stdout.split('\n').slice(0, 2)).toEqual([
      `agent run ${failedId} failed at seq 6`,
      `failed  item turn-1 (attempt 1, terminal): UNKNOWN_TOOL: no tool named "${turnToolName('nosuch')}" is registered with executor exec-cli-2`,
    ]);
    ex.kill('SIGTERM');
  });
});
