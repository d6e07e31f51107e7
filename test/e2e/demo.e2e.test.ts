// The project's main job: `plan-ledger demo` runs end to end — two executors, one killed mid-payment,
// exactly one refund, a verified ledger — and exits 0 well within two minutes.
import { spawn } from 'node:child_process';
import { describe, expect, inject, it } from 'vitest';
import { expectKillAndReplay } from '../support/demo-output.js';

describe('plan-ledger demo', () => {
  it('kills the paying executor mid-call and still refunds exactly once', async () => {
    const t0 = Date.now();
    const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, ['bin/plan-ledger.js', 'demo'], {
        env: { ...process.env, PLAN_LEDGER_BROKERS: inject('brokers'), PLAN_LEDGER_REGISTRY_URL: inject('registryUrl'), PLAN_LEDGER_HTTP_PORT: '0', NO_COLOR: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (c: Buffer) => (out += c.toString()));
      p.stderr.on('data', (c: Buffer) => (err += c.toString()));
      p.on('close', (c) => resolve({ code: c, stdout: out, stderr: err }));
    });
    const seconds = (Date.now() - t0) / 1000;
    expect(code, `${stdout}\n${stderr}`).toBe(0);
    expect(seconds).toBeLessThan(120);

    // The plan and its digest were shown, then approved at that digest.
    const digest = /^digest {2}([0-9a-f]{64})/m.exec(stdout)?.[1];
    expect(digest).toBeDefined();
    expect(stdout).toMatch(new RegExp(`alice\\s+approves digest ${digest}`));

    // The executor that called the payment service was killed during the call; the other one repeated
    // the call with the same key and got the original refund back.
    const { victim, survivor } = expectKillAndReplay(stdout);

    // Each line of the run is printed once: the takeover once (it was printed twice, once per
    // 'partition restored' log line of the survivor), and no progress line repeats.
    expect(stdout.match(new RegExp(`${survivor}\\s+took partition \\d+ over after the session timeout`, 'g'))).toHaveLength(1);
    const progress = stdout.split('\n').filter((l) => /^\[\s*[\d.]+s\]/.test(l)).map((l) => l.replace(/^\[\s*[\d.]+s\]\s*/, ''));
    expect(progress.length).toBeGreaterThan(10);
    expect(progress.filter((l, i) => progress.indexOf(l) !== i)).toEqual([]);

    // Exactly one refund; the ledger verifies; the audit shows who did what.
    expect(stdout).toMatch(/refunds performed\s+1\s+rf_0001\s+119\.40 EUR\s+key …\/refund-payment\/1/);
    expect(stdout).toMatch(/^OK {2}plan plan-\S+: \d+ events/m);
    expect(stdout).toMatch(/ok\s+chain\s+hash chain intact/);
    expect(stdout).toMatch(/ok\s+snapshots\s+\d+ snapshots? agree|ok\s+snapshots\s+no snapshots/);
    expect(stdout).toMatch(new RegExp(`IntentRecorded\\s+${victim}\\s+refund-payment#1`));
    expect(stdout).toMatch(new RegExp(`ResultCommitted\\s+${survivor}\\s+refund-payment#1\\s+…/refund-payment/1\\s+succeeded`));
    expect(stdout).toMatch(/completed; executor-[AB] was killed mid-payment; exactly 1 refund; verify OK/);
    expect(stdout).toMatch(/dashboard\s+http:\/\/127\.0\.0\.1:\d+\/#plan-/);
    expect(stdout).toContain('demo OK');
  });
});
