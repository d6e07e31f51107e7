// `plan-ledger migrate --to-prefix <new> --partitions N` on the real stack: a ledger of 3 partitions with
// finished plans, a plan whose input is stored by reference, and a plan waiting for approval is copied to
// a new prefix of 7 partitions. Every plan lands on its new partition (hash(planId) % 7) with the same
// events (ids, hashes, order), verifies there, and the new prefix is live: an executor on it runs the
// waiting plan once approved. The command refuses while executors still run, and refuses a target that
// already holds events. A tool's live stream records are left on the old prefix and counted.
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { configToEnv, loadConfig, topicNames, type LedgerConfig } from '../../src/config.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { randomPrefix, testAdmin, testConfig, testKafka } from '../support/helpers.js';
import { ownsPartitions, spawnExecutor } from '../support/processes.js';

let effects: EffectsService;
beforeAll(async () => {
  effects = await new EffectsService().start();
});
afterAll(() => effects.stop());

function migrate(config: LedgerConfig, args: string[]) {
  const r = spawnSync(process.execPath, ['bin/plan-ledger.js', 'migrate', ...args], { env: { ...process.env, ...configToEnv(config) }, encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const items = (n: number, tool = 'effect') => Array.from({ length: n }, (_, i) => ({ id: `s${i}`, title: `step ${i}`, why: 'migrated', tool, input: { i }, dependsOn: i ? [`s${i - 1}`] : [] }));

describe('plan-ledger migrate', () => {
  it('copies every plan to a prefix with another partition count, verifies it there, and the new prefix runs', { timeout: 300_000 }, async () => {
    const from = testConfig({ partitions: 3 });
    const env = { EFFECTS_URL: effects.url };
    const a = spawnExecutor(from, { label: 'mig-A', env });
    await a.waitForLog(ownsPartitions);
    const ledger = await connectLedger(from);
    const finished: string[] = [];
    let waiting: string;
    let large: string;
    let narrated: string;
    try {
      for (let i = 0; i < 6; i++) {
        const { planId } = await ledger.createPlan({ planId: `mig-${from.topicPrefix}-${i}`, goal: `plan ${i}`, mode: 'execute', items: items(3) });
        finished.push(planId);
      }
      // An input past the inline limit is stored by reference in the blobs topic.
      large = (await ledger.createPlan({ planId: `mig-${from.topicPrefix}-large`, goal: 'large input', mode: 'execute', items: [{ id: 'big', title: 'big', why: 'input by reference', tool: 'noop', input: { text: 'x'.repeat(100_000) } }] })).planId;
      // A tool's live output on the plan-streams topic: left on the old prefix (not copied, by design).
      narrated = (await ledger.createPlan({ planId: `mig-${from.topicPrefix}-narrated`, goal: 'streams', mode: 'execute', items: [{ id: 'tell', title: 'tell', why: 'live output', tool: 'narrator', input: { lines: 5 } }] })).planId;
      waiting = (await ledger.createPlan({ planId: `mig-${from.topicPrefix}-waiting`, goal: 'waits for approval', mode: 'propose', items: items(2) })).planId;
      await ledger.propose(waiting);
      for (const id of [...finished, large, narrated]) await ledger.waitFor(id, 'completed', { timeoutMs: 60_000 });
    } finally {
      await ledger.close();
    }
    const all = [...finished, large, narrated, waiting];
    const toPrefix = randomPrefix('mig');

    // Refused while an executor still runs on the source prefix: nothing is created.
    const busy = migrate(from, ['--to-prefix', toPrefix, '--partitions', '7']);
    expect(busy.status).toBe(1);
    expect(busy.stderr).toMatch(/executor\(s\) still run on prefix/);
    const admin = await testAdmin(testKafka(from));
    expect((await admin.listTopics()).filter((t) => t.startsWith(`${toPrefix}.`))).toEqual([]);

    a.kill('SIGTERM');
    expect((await a.exited).code).toBe(0);
    // The human report (--json has the same fields; exit 0 only when every plan verifies and equals the old one).
    const r = migrate(from, ['--to-prefix', toPrefix, '--partitions', '7']);
    expect(r.status, r.stderr).toBe(0);
    const line = new RegExp(`^migrated ${from.topicPrefix} \\(3 partitions\\) → ${toPrefix} \\(7 partitions\\): (\\d+) event records, (\\d+) payload chunks, (\\d+) plans verified$`, 'm').exec(r.stdout);
    expect(line, r.stdout).not.toBeNull();
    const report = { events: Number(line![1]), blobs: Number(line![2]), plans: Number(line![3]) };
    expect(report.plans).toBe(all.length);
    expect(report.blobs).toBeGreaterThan(0);
    // The tool's 5 progress records and its end marker are left on the old prefix, and said so.
    expect(r.stdout).toContain(`\n  not copied: 6 live-stream records of ${from.topicPrefix}.plan-streams (output of attempts that ran before the copy; their results are in the events; cursors of the old prefix do not resume on the new one)\n`);

    const to = loadConfig({ ...from, topicPrefix: toPrefix, partitions: 7 });
    const names = topicNames(toPrefix);
    const meta = await admin.fetchTopicMetadata([names.commands, names.events, names.snapshots, names.blobs]);
    expect(meta.map((t) => t.partitions.length)).toEqual([7, 7, 7, 7]);

    // Same events, same order, each plan on its new partition.
    const oldLedger = await connectLedger(from);
    const newLedger = await connectLedger(to);
    try {
      let events = 0;
      for (const planId of all) {
        const before = await oldLedger.planEvents(planId);
        const after = await newLedger.planEvents(planId);
        events += before.length;
        expect(after.map((x) => [x.event.eventId, x.event.seq, x.event.hash])).toEqual(before.map((x) => [x.event.eventId, x.event.seq, x.event.hash]));
        expect(new Set(after.map((x) => x.partition))).toEqual(new Set([partitionFor(planId, 7)]));
        const v = await newLedger.verify(planId);
        expect(v.ok, planId).toBe(true);
        expect(v.stateDigest).toBe((await oldLedger.verify(planId)).stateDigest);
      }
      expect(report.events).toBeGreaterThanOrEqual(events);
      // The old stream is still there; the new prefix's starts empty.
      const kinds = async (l: typeof oldLedger) => {
        const out: string[] = [];
        for await (const c of l.stream(narrated, { follow: false })) out.push(c.kind === 'progress' ? `line ${(c.data as { line: number }).line}` : `${c.kind} ${c.end}`);
        return out;
      };
      expect(await kinds(oldLedger)).toEqual(['line 1', 'line 2', 'line 3', 'line 4', 'line 5', 'end final']);
      expect(await kinds(newLedger)).toEqual([]);
      // The input stored by reference reads back whole from the new prefix.
      expect((await newLedger.getPlan(large))?.items.big?.inputJson).toBe(JSON.stringify({ text: 'x'.repeat(100_000) }));
      expect(new Set(all.map((id) => partitionFor(id, 7))).size).toBeGreaterThan(1);

      // The new prefix is live: an executor on it restores the plans and runs the waiting one once approved.
      const b = spawnExecutor(to, { label: 'mig-B', env });
      await b.waitForLog(ownsPartitions);
      const w = await newLedger.getPlan(waiting);
      expect(w?.status).toBe('proposed');
      await newLedger.approve(waiting, w!.digest, { by: 'operator' });
      const done = await newLedger.waitFor(waiting, 'completed', { timeoutMs: 60_000 });
      expect(Object.values(done.items).map((it) => it.status)).toEqual(['completed', 'completed']);
      expect([...effects.effects.keys()].filter((k) => k.startsWith(`${waiting}/`)).sort()).toEqual([`${waiting}/s0/1`, `${waiting}/s1/1`]);
      // The finished plans ran once, before the migration; nothing ran them again.
      for (const id of finished) expect(effects.calls.filter((c) => c.key.startsWith(`${id}/`))).toHaveLength(3);
      b.kill('SIGTERM');
      await b.exited;
    } finally {
      await oldLedger.close();
      await newLedger.close();
    }

    // A target that already holds events is refused.
    const again = migrate(from, ['--to-prefix', toPrefix, '--partitions', '7']);
    expect(again.status).toBe(1);
    expect(again.stderr).toMatch(/already holds events/);
    // Bad input is a usage error.
    expect(migrate(from, ['--to-prefix', from.topicPrefix, '--partitions', '7']).status).toBe(2);
    expect(migrate(from, ['--to-prefix', randomPrefix('mig'), '--partitions', '0']).status).toBe(2);
  });
});
