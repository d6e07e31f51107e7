// The short chaos run (`npm run chaos -- --short`) as a test: a private 3-broker stack, three executor
// processes and a projector under random kill -9 (now and then two executors at once) / SIGTERM / SIGSTOP
// faults and network partitions (an executor cut off from the brokers while it runs), one broker kill, one
// broker killed while a partition's leadership moves, one registry restart and one projector kill. The
// report must show every promise kept: no lost work, no duplicated effect, no repeated call but a
// recovery's, equal rebuilds, intact chains, a DLQ of deliberate poison only, no zombie event in the log
// (none of a fenced owner's), no aborted record shown to a reader, and a second reader that agrees. Once
// for each fixed seed of SHORT_SEEDS (schedules that once went wrong) and once for a random seed, which the
// test's name prints: `npm run chaos -- --short --seed N` repeats its schedule.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { randomSeed, runChaos, SHORT_RUN, SHORT_SEEDS, type ChaosReport } from '../../chaos/chaos.js';

const seeds = [...SHORT_SEEDS.map((s) => ({ seed: s.seed, kind: 'fixed' })), { seed: randomSeed(), kind: 'random' }];

describe('chaos (short)', () => {
  it.each(seeds)('seed $seed ($kind): keeps every promise under random executor, broker and registry faults', async ({ seed }) => {
    const outDir = mkdtempSync(join(tmpdir(), 'plan-ledger-chaos-'));
    const stackDir = mkdtempSync(join(tmpdir(), 'plan-ledger-chaos-stack-'));
    const report = await runChaos({ ...SHORT_RUN, seed, outDir, stackDir, label: 'ci-short', log: () => {} });
    rmSync(stackDir, { recursive: true, force: true }); // runChaos wiped its data; the report and logs stay in outDir
    // The report on disk is the one returned.
    expect(JSON.parse(readFileSync(join(outDir, 'ci-short.json'), 'utf8')) as ChaosReport).toEqual(report);
    // On failure the message carries what the report says, since the report's folder stays on the machine that ran it.
    expect(report.problems, JSON.stringify({ seed: report.seed, faults: report.faultList, submissions: report.submissions.failures, outcomes: report.plans.wrongOutcome.slice(0, 10) })).toEqual([]);
    expect(report.lost).toBe(0);
    expect(report.duplicates).toBe(0);
    expect(report.effects.unexplainedKeys).toEqual([]);
    expect(report.plans.wrongOutcome).toEqual([]);
    expect(report.plans.completed + report.plans.failed).toBe(20);
    expect(report.plans.failed).toBe(report.plans.expectedFailed);
    expect(report.rebuilds.digestsEqual).toBe(true);
    expect(report.chains.broken).toEqual([]);
    expect(report.chains.verified).toBe(report.plans.root + report.plans.child);
    expect(report.dlq).toMatchObject({ records: 3, poisonSent: 3, onlyPoison: true });
    expect(report.fencing.zombieAppendsVisible).toBe(0);
    expect(report.fencing.lateEvents).toBe(0);
    expect(report.resends).toMatchObject({ keys: 0, identical: 0, differing: [] });
    expect(report.aborted).toMatchObject({ visible: 0, examples: [] });
    expect(report.submissions).toMatchObject({ failed: 0, rawErrors: 0 });
    expect(report.seed).toBe(seed);
    expect(report.submissions.calls).toBe(20);
    expect(report.faults.brokerKills).toBe(1);
    expect(report.faults.leaderMoveKills).toBe(1);
    expect(report.faultList.filter((f) => f.kind === 'leader-move-kill').every((f) => f.recoveredMs !== null)).toBe(true);
    // At least one network partition: its partitions taken over while it was cut off, and it owned
    // partitions again after the heal.
    expect(report.faults.networkPartitions).toBeGreaterThanOrEqual(1);
    expect(report.networkPartitions).toHaveLength(report.faults.networkPartitions);
    for (const n of report.networkPartitions) {
      expect(n.partitions.length).toBeGreaterThan(0); // only an executor that owns partitions is cut off
      expect(n.takenOverBeforeHeal).toBe(true);
      expect(n.rejoinedMs).not.toBeNull();
      expect(n.cutMs).toBeGreaterThan(6000);
    }
    // Executors 5 minutes ahead and 5 minutes behind wrote events, and every check above held.
    expect(report.stack.clockSkewMs).toBe(300_000);
    expect(report.skewedRecords.ahead).toBeGreaterThan(0);
    expect(report.skewedRecords.behind).toBeGreaterThan(0);
    expect(report.faults.registryRestarts).toBe(1);
    expect(report.faults.kill9 + report.faults.sigterm + report.faults.freeze).toBeGreaterThan(0);
    expect(report.faults.projectorKills).toBe(1);
    expect(report.faults.kill9Pairs).toBeGreaterThanOrEqual(1);
    expect(report.recoveries.projectorBackMs).toHaveLength(1);
    expect(report.recoveries.unrecovered).toBe(0);
    // Each tool call repeated under a key is a recovery's; the second reader (Python, no shared code) agrees.
    expect(report.repeats.unexplained).toEqual([]);
    expect(report.independent).toMatchObject({ ran: true, error: null, agrees: true, findingsByKind: {} });
    expect([report.independent.plans, report.independent.chainsOk]).toEqual([report.plans.root + report.plans.child, report.plans.root + report.plans.child]);
  }, 900_000);
});
