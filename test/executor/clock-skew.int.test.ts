// Clock skew against the real broker and registry (docs/concepts/item-protocol.md#clocks): a plan with a
// retry and a wait is started by an executor whose clock runs 5 min ahead and finished by one 5 min behind
// (and the reverse). The retry and the wait's timeout recorded on the first clock are due on the second at
// min(recorded time, first seen + full delay): the clock behind is never held back by the 10 minutes, the
// clock ahead is early by its skew. Every event is read once and the chain verifies; each tool effect
// happens once per attempt; the plan is read whole by the client (planEvents, verify, getPlan, before and
// after a projector snapshotted it, so also by record timestamp), by an owner's dormant reload and by the
// projector; each record's timestamp is its event's time on the clock that wrote it.
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor, type ExecutorHandle } from '../../executor/index.js';
import { firstEventAt, readPlanFromEvents } from '../../executor/plan-reload.js';
import { startProjector } from '../../projector/index.js';
import { connectLedger, type Ledger } from '../../src/client/index.js';
import { createCodec } from '../../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { evolveAll, stateDigest, verifyChain, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import type { ItemInput } from '../../src/plan-input.js';
import { defineTool, RetryableError } from '../../src/tools.js';
import { noop } from '../fixtures/tools.js';
import { readAll, testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';

const MIN5 = 5 * 60_000;
const BACKOFF_MS = 30_000;
const WAIT_MS = 20_000;
/** Slack for a timer firing after the owner's restore and look (never a bound on the test's own duration). */
const MARGIN_MS = 5_000;

/** Every tool call, by idempotency key: one effect per attempt. */
const calls: Array<{ key: string; itemId: string; attempt: number }> = [];
/** Fails retryably until attempt `succeedOn`. */
const counted = defineTool({
  name: 'counted',
  run(input: { succeedOn: number }, ctx) {
    calls.push({ key: ctx.idempotencyKey, itemId: ctx.itemId, attempt: ctx.attempt });
    if (ctx.attempt < input.succeedOn) throw new RetryableError(`attempt ${ctx.attempt} fails`);
    return { attempt: ctx.attempt };
  },
});

async function executor(config: LedgerConfig, executorId: string, clockOffsetMs: number): Promise<ExecutorHandle> {
  const e = await startExecutor({ tools: [counted, noop], config, executorId, clockOffsetMs, concurrency: 4, logger: testLogger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
  onTestFinished(() => e.stop());
  await e.started;
  return e;
}

async function skewOf(e: ExecutorHandle): Promise<number | undefined> {
  const m = /^plan_ledger_clock_skew_ms (-?\d+)$/m.exec(await e.metrics());
  return m ? Number(m[1]) : undefined;
}

const items: ItemInput[] = [
  { id: 'charge', title: 'charge', why: 'fails once, retried after 30 s', tool: 'counted', input: { succeedOn: 2 }, retry: { maxAttempts: 2, initialBackoffMs: BACKOFF_MS, backoffMultiplier: 1, maxBackoffMs: BACKOFF_MS } },
  { id: 'answer', title: 'the customer answers', why: 'times out once', wait: { signal: 'reply', timeoutMs: WAIT_MS, prompt: 'address?' }, retry: { maxAttempts: 2, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } },
  { id: 'ship', title: 'ship', why: 'after both', tool: 'counted', input: { succeedOn: 1 }, dependsOn: ['charge', 'answer'] },
];

async function eventsOf(ledger: Ledger, planId: string): Promise<PlanEvent[]> {
  const events = (await ledger.planEvents(planId)).map((r) => r.event);
  expect(verifyChain(events).ok).toBe(true);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events;
}

/**
 * Owner A (clock `first`) creates the plan and records charge's retry and answer's wait; it stops; owner B
 * (clock `second`) takes the plan over and finishes it. Returns what the assertions need.
 */
async function handOver(first: number, second: number) {
  const config = testConfig({ partitions: 1 });
  const a = await executor(config, 'skew-A', first);
  const ledger = await connectLedger(config);
  onTestFinished(() => ledger.close());
  const { planId } = await ledger.createPlan({ goal: 'charge, hear back, ship', mode: 'execute', items });
  await ledger.waitFor(planId, (s) => s.items['charge']?.status === 'pending' && s.items['charge'].retryAt !== null && s.items['answer']?.status === 'in_progress', { timeoutMs: 30_000 });
  const skewA = await skewOf(a);
  await a.stop();

  const takeoverFrom = Date.now() + second; // on B's clock: B sees nothing before this
  const b = await executor(config, 'skew-B', second);
  const takenOver = Date.now() + second; // B restored the plan by now
  // answer's second attempt (waiting anew after the timeout): signal it, and the plan completes
  await ledger.waitFor(planId, (s) => s.items['answer']?.attempts.length === 2, { timeoutMs: 60_000 });
  await ledger.signal(planId, 'reply', { address: '1 Main St' }, { signalId: `reply-${planId}` });
  const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
  const skewB = await waitFor(async () => skewOf(b), { timeoutMs: 10_000, message: 'B measured its skew' });
  return { config, ledger, planId, done, b, skewA, skewB, takeoverFrom, takenOver };
}

/** Every way the plan is read gives the same whole plan. */
async function readWhole(config: LedgerConfig, ledger: Ledger, planId: string, done: PlanState): Promise<PlanEvent[]> {
  const events = await eventsOf(ledger, planId);
  expect(events).toHaveLength(done.seq);
  expect(stateDigest(evolveAll(undefined, events)!)).toBe(stateDigest(done));
  expect((await ledger.verify(planId)).ok).toBe(true);
  // each record's timestamp is its event's occurredAt: the time on the clock of the owner that wrote it
  const kafka = testKafka(config);
  const records = (await readAll(kafka, topicNames(config.topicPrefix).events)).filter((r) => r.key?.toString().startsWith(`${planId}:`));
  expect(records.map((r) => r.timestamp)).toEqual(events.map((e) => String(e.occurredAt)));
  // an owner's dormant reload, located by the record timestamp of the plan's first event
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const reloaded = await readPlanFromEvents({ kafka, admin, codec, config, partition: 0, planId, since: firstEventAt(done) });
    expect(stateDigest(reloaded!)).toBe(stateDigest(done));
  } finally {
    await admin.disconnect();
  }
  // the projector; then the client again, now locating the plan by its snapshot's createdAt (record timestamp)
  const p = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 200, defaultMetrics: false });
  try {
    await waitFor(async () => (await p.caughtUp()) && p.stateDigests().get(planId) === stateDigest(done), { timeoutMs: 45_000, message: 'the projector holds the whole plan' });
  } finally {
    await p.stop();
  }
  const fresh = await connectLedger(config);
  try {
    expect((await fresh.planEvents(planId)).map((r) => r.event)).toEqual(events);
    expect(stateDigest((await fresh.getPlan(planId, { payloads: 'reference' }))!)).toBe(stateDigest(done));
    expect((await fresh.verify(planId)).ok).toBe(true);
  } finally {
    await fresh.close();
  }
  return events;
}

/** The retry scheduled and the wait started by A, the retry and the timeout decided by B after the takeover. */
function milestones(events: PlanEvent[]) {
  const scheduled = events.find((e) => e.type === 'ItemRetryScheduled' && e.data.itemId === 'charge' && !e.data.manual)!;
  const retried = events.find((e) => e.type === 'IntentRecorded' && e.data.itemId === 'charge' && e.data.attempt === 2)!;
  const waited = events.find((e) => e.type === 'WaitStarted' && e.data.attempt === 1)!;
  const timedOut = events.find((e) => e.type === 'ResultCommitted' && e.data.itemId === 'answer' && e.data.attempt === 1)!;
  expect([scheduled.actor, waited.actor, retried.actor, timedOut.actor]).toEqual(['skew-A', 'skew-A', 'skew-B', 'skew-B']);
  return { scheduled, retried, waited, timedOut };
}

function effectsOf(planId: string) {
  const mine = calls.filter((c) => c.key.includes(planId));
  expect(new Set(mine.map((c) => c.key)).size).toBe(mine.length); // one call per attempt key
  return mine.map((c) => `${c.itemId}#${c.attempt}`).sort();
}

describe('clock skew between owners (real broker and registry)', () => {
  it('ahead 5 min, then behind 5 min: the retry and the timeout come their full delay after the takeover, not 10 min later', { timeout: 240_000 }, async () => {
    const { config, ledger, planId, done, skewA, skewB, takeoverFrom, takenOver } = await handOver(MIN5, -MIN5);
    const events = await readWhole(config, ledger, planId, done);
    expect(effectsOf(planId)).toEqual(['charge#1', 'charge#2', 'ship#1']);
    const { scheduled, retried, waited, timedOut } = milestones(events);
    expect(timedOut).toMatchObject({ data: { outcome: 'failed_retryable', error: { code: 'WAIT_TIMEOUT' } } });
    if (scheduled.type !== 'ItemRetryScheduled' || waited.type !== 'WaitStarted') throw new Error('unreachable');
    // B's clock is 10 min behind A's: the recorded times are 10 min ahead of B's now
    expect(scheduled.data.retryAt - retried.occurredAt).toBeGreaterThan(2 * MIN5 - BACKOFF_MS - MARGIN_MS);
    expect(waited.data.deadline! - timedOut.occurredAt).toBeGreaterThan(2 * MIN5 - WAIT_MS - MARGIN_MS);
    // ...and B ran them their full delay after it took over (never sooner; late only by a timer's slack)
    expect(retried.occurredAt).toBeGreaterThanOrEqual(takeoverFrom + BACKOFF_MS);
    expect(retried.occurredAt).toBeLessThanOrEqual(takenOver + BACKOFF_MS + MARGIN_MS);
    expect(timedOut.occurredAt).toBeGreaterThanOrEqual(takeoverFrom + WAIT_MS);
    expect(timedOut.occurredAt).toBeLessThanOrEqual(takenOver + WAIT_MS + MARGIN_MS);
    // both seen in the same look after the restore: 10 s apart, as their delays are
    expect(Math.abs(retried.occurredAt - timedOut.occurredAt - (BACKOFF_MS - WAIT_MS))).toBeLessThanOrEqual(2_000);
    // each executor measured its clock against the client's commands
    expect(skewA).toBeGreaterThanOrEqual(MIN5 - 1_000);
    expect(skewA).toBeLessThanOrEqual(MIN5 + 5_000);
    expect(skewB).toBeGreaterThanOrEqual(-MIN5 - 1_000);
    expect(skewB).toBeLessThanOrEqual(-MIN5 + 5_000);
  });

  it('behind 5 min, then ahead 5 min: the retry and the timeout are due at once (early by the skew), each once', { timeout: 240_000 }, async () => {
    const { config, ledger, planId, done, takenOver } = await handOver(-MIN5, MIN5);
    const events = await readWhole(config, ledger, planId, done);
    expect(effectsOf(planId)).toEqual(['charge#1', 'charge#2', 'ship#1']);
    const { scheduled, retried, waited, timedOut } = milestones(events);
    if (scheduled.type !== 'ItemRetryScheduled' || waited.type !== 'WaitStarted') throw new Error('unreachable');
    // on B's clock the recorded times had passed: never before them, and at once after the takeover
    expect(retried.occurredAt).toBeGreaterThanOrEqual(scheduled.data.retryAt);
    expect(timedOut.occurredAt).toBeGreaterThanOrEqual(waited.data.deadline!);
    expect(retried.occurredAt).toBeLessThanOrEqual(takenOver + MARGIN_MS);
    expect(timedOut.occurredAt).toBeLessThanOrEqual(takenOver + MARGIN_MS);
    // event times jump forward by the 10 min at the handover: seq and the hash chain order events, not their times
    expect(retried.occurredAt - scheduled.occurredAt).toBeGreaterThan(2 * MIN5 - MARGIN_MS);
  });
});
