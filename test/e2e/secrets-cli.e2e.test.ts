// The CLI shows secret fields as "[secret]": a plan file with `secret:` paths run as a child process, then
// show, audit, replay --state and tail, for a plaintext plan (redaction is the only protection there) and
// for an encrypted one (decrypted with the master key, then redacted; envelopes without it).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { defineTool } from '../../src/tools.js';
import { testAdmin, testConfig, testKafka, testLogger } from '../support/helpers.js';
import { runCli, type CliResult } from '../support/processes.js';

describe('CLI output redacts secret fields', () => {
  it('show, audit, replay --state and tail never print a secret field, with or without encryption', async () => {
    const config = testConfig();
    const master = randomBytes(32);
    const marker = `MARKER-${randomBytes(6).toString('hex')}`;
    // The same paths apply to the input and the output: the output carries the card where the input did.
    const echo = defineTool({ name: 'echo', run: async (input: { card: unknown }) => ({ card: input.card, ok: true }) });
    const executor = await startExecutor({ tools: [echo], config, logger: testLogger, masterKey: master, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => executor.stop());
    await executor.started;
    const dir = mkdtempSync(join(tmpdir(), 'secrets-cli-'));
    const file = join(dir, 'plan.json');
    writeFileSync(file, JSON.stringify({ goal: 'pay', items: [{ id: 'pay', tool: 'echo', input: { card: { number: marker, cvc: '123' } }, secret: ['card.number'] }] }));

    const cli = (args: string[], key: boolean): Promise<CliResult> => runCli(config, args, { PLAN_LEDGER_MASTER_KEY: key ? master.toString('base64') : undefined });

    for (const encrypted of [false, true]) {
      const ran = await cli(['run', file, '--wait', '--json'], encrypted);
      expect(ran.code, ran.stderr).toBe(0);
      const planId = (JSON.parse(ran.stdout) as { planId: string }).planId;
      const outputs: Record<string, string> = {};
      for (const args of [['show', planId, '--json'], ['show', planId], ['audit', planId, '--json'], ['replay', planId, '--state', '--json'], ['tail', planId, '--json']]) {
        const r = await cli(args, encrypted);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(0);
        expect(r.stdout, args.join(' ')).not.toContain(marker);
        outputs[args.join(' ')] = r.stdout;
      }
      const shown = JSON.parse(outputs[`show ${planId} --json`]!) as { items: Record<string, { inputJson: string; outputJson: string }> };
      // Decrypted (with the key) or plaintext: the rest of the input reads; the secret field does not.
      expect(JSON.parse(shown.items['pay']!.inputJson)).toEqual({ card: { cvc: '123', number: '[secret]' } });
      expect(JSON.parse(shown.items['pay']!.outputJson)).toEqual({ card: { cvc: '123', number: '[secret]' }, ok: true });
      if (encrypted) {
        // Without the master key the CLI shows the envelopes.
        const raw = await cli(['show', planId, '--json'], false);
        const items = (JSON.parse(raw.stdout) as { items: Record<string, { inputJson: string }> }).items;
        expect(items['pay']!.inputJson.startsWith('{"$enc":')).toBe(true);
        expect(raw.stdout).not.toContain(marker);
      } else {
        expect(outputs[`replay ${planId} --state --json`]).toContain('[secret]');
      }
    }
    const admin = await testAdmin(testKafka(config));
    for (const t of await admin.listTopics()) if (t.startsWith(`${config.topicPrefix}.`)) admin.track(t);
  }, 240_000);
});
