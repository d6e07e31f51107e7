// The numbered cases of issue 9, each against the real broker with an executor in a child process: each
// bad input or bad tool ends in a recorded outcome, no attempt key is invoked twice, and the same
// partition serves a normal plan afterwards (the time it took goes to test-results/hostile.json).
import { afterAll, describe, expect, it } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { endingOfError, endingOfPlan, hostileStack, maxInvocationsPerAttempt, probe, recordResults, type CaseRow, type HostileStack } from './support.js';

const rows: CaseRow[] = [];
afterAll(() => recordResults('issue-9 regressions (test/hostile/issue-9.e2e.test.ts)', rows));

const once = { maxAttempts: 1, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 };

/** Probes the plan's partition, records the row, and returns the probe. */
async function after(s: HostileStack, name: string, planId: string, ending: CaseRow['ending']) {
  const partition = partitionFor(planId, s.config.partitions);
  const p = await probe(s, partition);
  rows.push({ name, partition, ending, nextPlanMs: p.ms, ...(p.error ? { probeError: p.error } : {}) });
  return p;
}

/** Every plan of the prefix verifies (hash chains, seqs, snapshots). */
async function verifyAll(s: HostileStack): Promise<string[]> {
  return (await s.ledger.verify({ all: true })).filter((v) => !v.ok).map((v) => `${v.planId}: ${JSON.stringify(v.firstBroken)}`);
}

describe('issue 9: never wedge, never loop', () => {
  it('(1) a tool that returns 300 KB: the item ends with a recorded outcome after one invocation', { timeout: 150_000 }, async () => {
    const s = await hostileStack();
    const planId = 'big-output-plan';
    await s.ledger.createPlan({ planId, goal: 'a tool with a large output', mode: 'execute', items: [{ id: 'big', title: 'big output', why: 'returns 300 KB', tool: 'big-output', input: { bytes: 300_000 } }] }, { timeoutMs: 20_000 });
    const ending = await endingOfPlan(s, planId, 30_000);
    const state = await s.ledger.getPlan(planId);
    const item = state?.items['big'];
    const invocations = s.effects.callsFor(`${planId}/big`).length;
    const p = await after(s, '300 KB tool output', planId, ending);
    // Large payloads go by reference: the item completes, and getPlan resolves its output.
    expect({ ending: ending.kind, status: item?.status, attempts: item?.attempts.length, invocations }).toEqual({ ending: 'plan', status: 'completed', attempts: 1, invocations: 1 });
    expect((JSON.parse(item!.outputJson!) as { blob: string }).blob).toHaveLength(300_000);
    expect(p).toMatchObject({ ok: true });
    expect(maxInvocationsPerAttempt(s.effects).max).toBe(1);
    expect(await verifyAll(s)).toEqual([]);
  });

  it('(2) a plan of 1,000 items with a ~900-byte why each runs to completion', { timeout: 300_000 }, async () => {
    const s = await hostileStack();
    const planId = 'thousand-items';
    const why = (i: number) => `item ${i}: ${'context for the item, as an agent writes it. '.repeat(20)}`.slice(0, 900);
    const items = Array.from({ length: 1000 }, (_, i) => ({ id: `i-${i}`, title: `step ${i}`, why: why(i), tool: 'counted', input: { i } }));
    expect(Buffer.byteLength(items[999]!.why)).toBe(900);
    const created = await s.ledger.createPlan({ planId, goal: 'a legal plan of the largest size', mode: 'execute', items }, { timeoutMs: 60_000 }).then(
      () => null,
      (e: unknown) => e,
    );
    const ending = created === null ? await endingOfPlan(s, planId, 180_000) : endingOfError(created);
    const state = await s.ledger.getPlan(planId);
    const p = await after(s, '1,000 items x 900-byte why', planId, ending);
    expect(created instanceof Error ? `${created.name}: ${created.message}` : 'created').toBe('created');
    expect(ending).toEqual({ kind: 'plan', status: 'completed', failedCodes: [] });
    expect(Object.values(state!.items).filter((i) => i.status === 'completed')).toHaveLength(1000);
    expect(s.effects.calls).toHaveLength(1000 + 1); // every item once, and the probe
    expect(maxInvocationsPerAttempt(s.effects).max).toBe(1);
    expect(p).toMatchObject({ ok: true });
    expect(await verifyAll(s)).toEqual([]);
  });

  // A 3 MiB input is no failure: it goes by reference (test/executor/never-wedge.int.test.ts). Past the
  // payload ceiling (64 MiB by default) createPlan refuses before anything is written.
  it('(3) createPlan with an input past the 64 MiB ceiling throws PAYLOAD_TOO_LARGE naming the field, before anything is appended', { timeout: 120_000 }, async () => {
    const s = await hostileStack();
    const planId = 'over-ceiling-input';
    const input = { text: 'y'.repeat(65 * 1024 * 1024) };
    const err = await s.ledger
      .createPlan({ planId, goal: 'an oversized input', mode: 'execute', items: [{ id: 'huge', title: 'huge input', why: 'input of 65 MiB', tool: 'counted', input }] }, { timeoutMs: 30_000 })
      .then(
        () => null,
        (e: unknown) => e,
      );
    const code = isLedgerError(err) ? err.code : `not a LedgerError: ${String(err)}`.slice(0, 300);
    const named = isLedgerError(err) ? `${err.message} ${JSON.stringify(err.details)}` : '';
    await after(s, 'createPlan with a 65 MiB input', planId, isLedgerError(err) ? { kind: 'error', code: err.code, message: err.message.slice(0, 300) } : { kind: 'violation', message: String(code) });
    expect(code).toBe('PAYLOAD_TOO_LARGE');
    expect(named).toMatch(/items\[0\]\.input|items\.0\.input/);
    expect(await s.ledger.getPlan(planId)).toBeUndefined();
    expect(await s.ledger.planEvents(planId)).toEqual([]);
    expect(s.effects.calls.filter((c) => c.itemId.startsWith(planId))).toEqual([]);
  });

  it('(4) a tool that never answers fails with TIMEOUT after its timeout, retries per policy, and frees its slot', { timeout: 150_000 }, async () => {
    // One slot: a tool that kept it would stop every other plan of the executor.
    const s = await hostileStack({ concurrency: 1 });
    const planId = 'never-answers';
    await s.ledger.createPlan(
      { planId, goal: 'a tool that hangs', mode: 'execute', items: [{ id: 'h', title: 'hangs', why: 'never answers', tool: 'hang', input: {}, retry: { maxAttempts: 2, initialBackoffMs: 50, backoffMultiplier: 1, maxBackoffMs: 50 } }] },
      { timeoutMs: 20_000 },
    );
    const ending = await endingOfPlan(s, planId, 40_000);
    const item = (await s.ledger.getPlan(planId))?.items['h'];
    const p = await after(s, 'a tool that never answers (timeoutMs 500, one slot)', planId, ending);
    expect(ending).toEqual({ kind: 'plan', status: 'failed', failedCodes: ['TIMEOUT'] });
    expect(item?.attempts.map((a) => [a.outcome, a.error?.code])).toEqual([
      ['failed_retryable', 'TIMEOUT'],
      ['failed_retryable', 'TIMEOUT'],
    ]);
    expect(item?.failure?.reason).toBe('retries_exhausted');
    for (const a of item!.attempts) expect(a.finishedAt! - a.startedAt).toBeGreaterThanOrEqual(500);
    expect(s.effects.callsFor(`${planId}/h`).map((c) => c.key)).toEqual([`${planId}/h/1`, `${planId}/h/2`]);
    // The slot is free again: a second plan runs on the one-slot executor.
    expect(p).toMatchObject({ ok: true });
    expect(maxInvocationsPerAttempt(s.effects).max).toBe(1);
  });

  it('(5) invalid follow-up items fail their item with a recorded code, and the partition keeps serving', { timeout: 170_000 }, async () => {
    const s = await hostileStack();
    const kinds = ['bad-id', 'cycle', 'non-json', 'duplicate', 'unknown-dep'] as const;
    const outcomes: Record<string, unknown> = {};
    for (const kind of kinds) {
      const planId = `follow-ups-${kind}`;
      await s.ledger.createPlan({ planId, goal: `follow-ups: ${kind}`, mode: 'execute', items: [{ id: 'planner', title: 'plans more', why: 'returns bad follow-ups', tool: 'bad-followups', input: { kind }, retry: once }] }, { timeoutMs: 20_000 });
      const ending = await endingOfPlan(s, planId, 20_000);
      const item = (await s.ledger.getPlan(planId))?.items['planner'];
      const p = await after(s, `invalid follow-ups: ${kind}`, planId, ending);
      outcomes[kind] = {
        ending: ending.kind,
        status: item?.status,
        code: typeof item?.failure?.error?.code === 'string' && item.failure.error.code.length > 0,
        invocations: s.effects.callsFor(`${planId}/planner`).length,
        served: p.ok,
      };
    }
    const expected = { ending: 'plan', status: 'failed', code: true, invocations: 1, served: true };
    expect(outcomes).toEqual(Object.fromEntries(kinds.map((k) => [k, expected])));
    expect(maxInvocationsPerAttempt(s.effects).max).toBe(1);
    expect(await verifyAll(s)).toEqual([]);
  });
});
