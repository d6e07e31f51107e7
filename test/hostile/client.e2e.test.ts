// Hostile commands through the library client (connectLedger), against the real stack with an executor
// in a child process. The property for every generated case: it ends in one of the endings listed for it
// (test/hostile/commands.ts `client`): a valid command completes; an invalid one is a CommandRejected or a
// LedgerError with one of the listed codes, or is accepted and fails with a listed code — an invalid
// command that completes, or any code not listed, is a violation; the same
// partition then serves a normal plan (time recorded in test-results/hostile.json); no attempt key is
// invoked twice; and every plan verifies at the end.
import { afterAll, describe, expect, it } from 'vitest';
import type { CreatePlanInput } from '../../src/client/index.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { sampleCommands, type HostileCommand } from './commands.js';
import { endingOfError, endingOfPlan, hostileStack, judge, maxInvocationsPerAttempt, recordResults, runCases, violations, type CaseRow, type Ending, type HostileStack } from './support.js';

const SEED = 90_001;
const rows: CaseRow[] = [];
let extra: Record<string, unknown> = {};
afterAll(() => recordResults('library client (test/hostile/client.e2e.test.ts)', rows, extra));

async function endingOf(s: HostileStack, c: HostileCommand): Promise<Ending> {
  const { __twice, ...input } = c.input as Record<string, unknown> & { __twice?: boolean };
  const create = () => s.ledger.createPlan({ ...(input as unknown as CreatePlanInput), planId: c.planId }, { timeoutMs: 15_000 });
  try {
    await create();
    if (__twice) await create();
  } catch (e) {
    return endingOfError(e);
  }
  // A plan of 10,000 items runs 10,000 tool calls: its time to end grows with its size.
  const items = Array.isArray(input['items']) ? input['items'].length : 0;
  return endingOfPlan(s, c.planId, 30_000 + 15 * items);
}

describe('hostile commands through the library client', () => {
  it('every generated command ends in a recorded outcome and its partition serves the next plan', { timeout: 900_000 }, async () => {
    const cases = sampleCommands(2, SEED);
    expect(cases.length).toBe(34);
    const stacks = await runCases(cases, rows, () => hostileStack(), async (s, c) => {
      const ending = judge(await endingOf(s, c), c.client);
      return { ending, partition: partitionFor(c.planId, s.config.partitions) };
    });
    const invocations = maxInvocationsPerAttempt(...stacks.map((s) => s.effects));
    const broken: string[] = [];
    for (const s of stacks) broken.push(...(await s.ledger.verify({ all: true })).filter((v) => !v.ok).map((v) => v.planId));
    extra = { seed: SEED, stacks: stacks.length, maxInvocationsPerAttempt: invocations, verifyAllBroken: broken };
    expect(violations(rows)).toEqual([]);
    expect(invocations.max).toBe(1);
    expect(broken).toEqual([]);
  });
});
