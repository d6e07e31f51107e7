// `plan-ledger fork` as a child process against the real stack: a failed plan forked at its failed item
// with `--set item.input=@file` completes on a spawned executor; hostile `--at` and `--set` values exit 2
// with the field named, an unknown plan 3; the fork's audit names its origin and `show` of the source lists it.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startProjector } from '../../projector/index.js';
import { LedgerLog } from '../../src/audit/log.js';
import { connectLedger } from '../../src/client/index.js';
import { PlanIndex } from '../../src/client/plan-index.js';
import { partitionFor } from '../../src/kafka/index.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { ownsPartitions, runCli, spawnExecutor } from '../support/processes.js';

const cli = runCli;

describe('plan-ledger fork', () => {
  it('forks a failed plan at its failed item with a new input; hostile values are coded', async () => {
    const config = testConfig({ partitions: 1 });
    const exec = spawnExecutor(config, { label: 'fork-cli-exec' });
    await exec.waitForLog(ownsPartitions, 60_000);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({
        goal: 'charge order 42',
        mode: 'execute',
        items: [
          { id: 'fetch', title: 'fetch', why: 'first', tool: 'noop', input: { order: 42 } },
          { id: 'charge', title: 'charge', why: 'fails until fixed', tool: 'flaky', input: { succeedOn: 9 }, retry: { maxAttempts: 1 }, dependsOn: ['fetch'] },
        ],
      });
      const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
      const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-fork-'));
      const file = join(dir, 'charge.json');
      writeFileSync(file, '{"succeedOn":1}');

      const r = await cli(config, ['fork', planId, '--at', 'charge', '--set', `charge.input=@${file}`, '--id', `${planId}-fix`, '--json']);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const out = JSON.parse(r.stdout) as { planId: string; inherited: number; forkedFrom: { planId: string; seq: number; chainHead: string } };
      expect(out).toMatchObject({ planId: `${planId}-fix`, inherited: 1, forkedFrom: { planId } });
      const done = await ledger.waitFor(out.planId, 'completed', { timeoutMs: 30_000 });
      expect(done.items['fetch']!.outputJson).toBe(failed.items['fetch']!.outputJson);

      for (const [args, code, message] of [
        [['--at', '0'], 2, /at must be a seq/],
        [['--at', '-5'], 2, /has no item -5/], // a valid item id, not a seq
        [['--at', 'a b'], 2, /at must be a seq/],
        [['--at', '123456789'], 2, /past its head/],
        [['--at', 'ghost'], 2, /has no item ghost/],
        [['--at', 'charge', '--set', 'charge=1'], 2, /--set must be <item>\.input=/],
        [['--at', 'charge', '--set', 'fetch.input={}'], 2, /its output is inherited/],
        [['--at', 'charge', '--set', 'charge.input=@/nonexistent/x.json'], 2, /cannot read/],
        [['--at', 'charge', '--set', 'charge.input={bad'], 2, /not JSON/],
      ] as const) {
        const bad = await cli(config, ['fork', planId, ...args]);
        expect(bad.code, args.join(' ')).toBe(code);
        expect(bad.stderr, args.join(' ')).toMatch(message);
      }
      expect((await cli(config, ['fork', `${planId}-nope`, '--at', '1'])).code).toBe(3);
      expect((await cli(config, ['fork', planId])).code).toBe(2); // --at is required

      const audit = await cli(config, ['audit', out.planId, '--json']);
      expect(audit.code).toBe(0);
      const rows = audit.stdout
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { kind: string; type?: string; outcome?: string | null; itemId?: string | null })
        .filter((row) => row.kind === 'event');
      expect(rows[0]).toMatchObject({ type: 'PlanCreated', outcome: `forked:${planId}@${out.forkedFrom.seq}` });
      expect(rows.filter((row) => row.type === 'ItemInherited').map((row) => [row.itemId, row.outcome])).toEqual([['fetch', 'inherited']]);
      const shown = await cli(config, ['show', out.planId]);
      expect(shown.stdout).toContain(`forked  from ${planId} at seq ${out.forkedFrom.seq} (hash ${out.forkedFrom.chainHead})`);
      // The other way: the source lists its fork, from the projector's index. With no projector yet, show says
      // it cannot list them (it would have to read the whole log); with one, it lists the fork.
      expect((await cli(config, ['show', planId])).stdout).toContain(`forks   not listed: no projector has covered partition 0 of prefix "${config.topicPrefix}" yet`);
      expect(JSON.parse((await cli(config, ['show', planId, '--json'])).stdout)).toMatchObject({ forks: null, forksTotal: null });
      const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false });
      onTestFinished(() => projector.stop());
      const listed = await waitFor(
        async () => {
          const shown = await cli(config, ['show', planId]);
          return shown.stdout.includes(`forks   ${planId}-fix (completed)`) ? shown : null;
        },
        { timeoutMs: 60_000, message: 'show lists the fork once the projector has indexed the partition' },
      );
      expect(listed.code).toBe(0);
      const sourceJson = JSON.parse((await cli(config, ['show', planId, '--json'])).stdout) as { forks: unknown; forksTotal: number };
      expect(sourceJson).toMatchObject({ forks: [{ planId: `${planId}-fix`, status: 'completed', goal: 'charge order 42' }], forksTotal: 1 });
      expect((await cli(config, ['audit', planId])).stdout).toContain(`forks   ${planId}-fix (completed)`);
      expect((await cli(config, ['verify', planId])).code).toBe(0);
      exec.kill('SIGTERM');
    } finally {
      await ledger.close();
    }
  }, 180_000);

  it('a running projector gives every partition a watermark, an empty one too: the forks hint shows only while it is true', async () => {
    // Three partitions and one plan: two of them never get an event.
    const config = testConfig({ partitions: 3 });
    const exec = spawnExecutor(config, { label: 'forks-hint-exec' });
    await exec.waitForLog(ownsPartitions, 60_000);
    const ledger = await connectLedger(config);
    try {
      const { planId } = await ledger.createPlan({ goal: 'one plan', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'one item', tool: 'noop' }] });
      await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
      const hint = `forks   not listed: no projector has covered any of the 3 partitions of prefix "${config.topicPrefix}" yet`;
      expect((await cli(config, ['show', planId])).stdout).toContain(hint);

      const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false });
      onTestFinished(() => projector.stop());
      const shown = await waitFor(
        async () => {
          const r = await cli(config, ['show', planId]);
          return r.code === 0 && !r.stdout.includes('forks   ') ? r : null;
        },
        { timeoutMs: 60_000, message: 'show has no forks hint once the projector has watermarked every partition' },
      );
      expect(shown.stderr).toBe('');
      expect(JSON.parse((await cli(config, ['show', planId, '--json'])).stdout)).toMatchObject({ forks: [], forksTotal: 0 });
      const audit = await cli(config, ['audit', planId]);
      expect(audit.code).toBe(0);
      expect(audit.stdout).not.toContain('forks   ');

      // What the index reads: each partition covered up to its end (the plan's last event, then the marker
      // of its transaction), an empty one up to -1 (readers start at 0).
      const home = partitionFor(planId, 3);
      const last = BigInt((await ledger.planEvents(planId)).at(-1)!.offset);
      const log = await LedgerLog.open(config, testLogger);
      const index = new PlanIndex(log.kafka, log.admin, log.codec, log.config, testLogger);
      try {
        await index.sync();
        const ends = new Map((await log.admin.fetchTopicOffsets(log.names.events)).map((o) => [o.partition, BigInt(o.high)]));
        expect([0, 1, 2].map((p) => ends.get(p)! > 0n)).toEqual([0, 1, 2].map((p) => p === home));
        expect(ends.get(home)! > last).toBe(true);
        expect([0, 1, 2].map((p) => index.watermark(p))).toEqual([0, 1, 2].map((p) => String(ends.get(p)! - 1n)));
      } finally {
        await index.close();
        await log.close();
      }
      exec.kill('SIGTERM');
    } finally {
      await ledger.close();
    }
  }, 180_000);
});
