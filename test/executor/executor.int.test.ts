import { describe, expect, it, onTestFinished } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { topicNames } from '../../src/config.js';
import { createCodec } from '../../src/codec/index.js';
import { auditTopic, eventKey, partitionFor } from '../../src/kafka/index.js';
import { stateDigest, verifyChain } from '../../src/plan/index.js';
import { startExecutor } from '../../executor/index.js';
import { tools } from '../fixtures/tools.js';
import { closeAfter, readAll, testKafka } from '../support/helpers.js';
import { chainOfItems, ledgerWithExecutor } from './support.js';

describe('executor (in-process, real broker and registry)', () => {
  it('runs a 20-item plan with dependencies to completion in execute mode, in dependency order', async () => {
    const { ledger } = await ledgerWithExecutor();
    const items = chainOfItems(20);
    const { planId } = await ledger.createPlan({ goal: 'twenty steps', mode: 'execute', items });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.itemOrder).toHaveLength(20);
    expect(Object.values(done.items).every((i) => i.status === 'completed' && i.attempts.length === 1)).toBe(true);
    expect(JSON.parse(done.items['item-07']!.outputJson!)).toEqual({ echo: { i: 7 } });

    const records = await ledger.planEvents(planId);
    const events = records.map((r) => r.event);
    expect(verifyChain(events).ok).toBe(true);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    // Every item: intent, result, completion — in that order, and never before its dependencies completed.
    const completedAt = new Map(events.filter((e) => e.type === 'ItemCompleted').map((e) => [(e.data as { itemId: string }).itemId, e.seq]));
    for (const item of items) {
      const intent = events.find((e) => e.type === 'IntentRecorded' && e.data.itemId === item.id)!;
      for (const dep of item.dependsOn) expect(intent.seq).toBeGreaterThan(completedAt.get(dep)!);
    }
    expect(events.at(-1)?.type).toBe('PlanCompleted');
    expect(events.filter((e) => e.type === 'IntentRecorded')).toHaveLength(20);
  });

  it('runs a propose-mode plan only after approval of the current digest; a stale digest is rejected', async () => {
    const { ledger } = await ledgerWithExecutor();
    const { planId } = await ledger.createPlan({ goal: 'reviewed work', mode: 'propose', items: chainOfItems(5) });
    const { digest } = await ledger.propose(planId);
    expect(digest).toMatch(/^[0-9a-f]{64}$/);

    const stale = await ledger.approve(planId, 'f'.repeat(64), { by: 'mallory' }).catch((e: unknown) => e);
    expect(isLedgerError(stale, 'REJECTED')).toBe(true);
    expect((stale as { details: { rejection: string } }).details.rejection).toBe('STALE_DIGEST');

    const before = await ledger.getPlan(planId);
    expect(before?.status).toBe('proposed');
    expect(Object.values(before!.items).every((i) => i.attempts.length === 0)).toBe(true);

    await ledger.approve(planId, digest, { by: 'alice' });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.approvals.map((a) => [a.decision, a.by, a.digest])).toEqual([['approved', 'alice', digest]]);
  });

  it('retries with backoff up to maxAttempts, and fails a terminal error without retry', async () => {
    const { ledger } = await ledgerWithExecutor();
    const { planId } = await ledger.createPlan({
      goal: 'flaky work',
      mode: 'execute',
      items: [
        { id: 'flaky-ok', title: 'succeeds on attempt 3', why: 'retry test', tool: 'flaky', input: { succeedOn: 3 }, retry: { maxAttempts: 3, initialBackoffMs: 50, backoffMultiplier: 2, maxBackoffMs: 1000 } },
        { id: 'flaky-bad', title: 'never within budget', why: 'retry test', tool: 'flaky', input: { succeedOn: 9 }, retry: { maxAttempts: 2, initialBackoffMs: 50, backoffMultiplier: 2, maxBackoffMs: 1000 } },
        { id: 'fatal', title: 'terminal', why: 'terminal test', tool: 'fatal', input: {}, retry: { maxAttempts: 5, initialBackoffMs: 50, backoffMultiplier: 2, maxBackoffMs: 1000 } },
      ],
    });
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 60_000 });
    expect(failed.items['flaky-ok']!.status).toBe('completed');
    expect(failed.items['flaky-ok']!.attempts.map((a) => a.outcome)).toEqual(['failed_retryable', 'failed_retryable', 'succeeded']);
    expect(failed.items['flaky-bad']!.status).toBe('failed');
    expect(failed.items['flaky-bad']!.attempts).toHaveLength(2);
    expect(failed.items['flaky-bad']!.failure?.reason).toBe('retries_exhausted');
    expect(failed.items.fatal!.attempts).toHaveLength(1);
    expect(failed.items.fatal!.failure?.reason).toBe('terminal');
    expect(failed.items.fatal!.failure?.error?.code).toBe('NOPE');

    // The backoff was honoured: the second attempt began no sooner than 50 ms after the first finished.
    const a = failed.items['flaky-ok']!.attempts;
    expect(a[1]!.startedAt - a[0]!.finishedAt!).toBeGreaterThanOrEqual(50);
    expect(a[2]!.startedAt - a[1]!.finishedAt!).toBeGreaterThanOrEqual(100);
  });

  it('adds follow-up items returned by a tool and completes a delegated child plan', async () => {
    const { ledger } = await ledgerWithExecutor();
    const { planId } = await ledger.createPlan({
      goal: 'dynamic',
      mode: 'execute',
      items: [
        { id: 'plan-more', title: 'planner', why: 'decides the rest', tool: 'planner', input: { count: 3 } },
        { id: 'delegate', title: 'delegate', why: 'a sub-agent does it', tool: 'delegator', input: {} },
      ],
    });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.itemOrder).toEqual(['plan-more', 'delegate', 'follow-0', 'follow-1', 'follow-2']);
    expect(done.items['follow-1']!.followUpOf).toBe('plan-more');
    const childId = done.items.delegate!.attempts[0]!.childPlanId!;
    expect(childId).toBe(`${planId}.delegate.1`);
    expect(JSON.parse(done.items.delegate!.outputJson!)).toEqual({ c1: { echo: { c: 1 } }, c2: { echo: { c: 2 } } });
    const child = await ledger.getPlan(childId);
    expect(child?.status).toBe('completed');
    expect(child?.parent).toEqual({ planId, itemId: 'delegate' });
  });

  it('a buggy delegation (a child item that is not an object, one without an id, a label that is not a string) fails its item INVALID_DELEGATION after one invocation; no child exists, and the partition serves the next plan', async () => {
    const { ledger } = await ledgerWithExecutor();
    const cases = [
      { input: { items: ['not an item'] }, message: /^the child plan cannot be created: delegate\.items\[0\]: expected an object$/ },
      { input: { items: [{ title: 'no id', why: 'a child item without an id', tool: 'noop' }] }, message: /^the child plan cannot be created: its CreatePlan cannot be encoded: .*items\.0\.id$/ },
      { input: { labels: { team: 42 } }, message: /^the child plan cannot be created: its CreatePlan cannot be encoded/ },
    ];
    const planIds: string[] = [];
    for (const c of cases) {
      const { planId } = await ledger.createPlan({ goal: 'a buggy hand-off', mode: 'execute', items: [{ id: 'delegate', title: 'delegate', why: 'a sub-agent with a bug', tool: 'delegator', input: c.input }] });
      planIds.push(planId);
      const done = await ledger.waitFor(planId, 'failed', { timeoutMs: 60_000 });
      const attempts = done.items.delegate!.attempts;
      expect(attempts.map((a) => [a.outcome, a.error?.code, a.childPlanId])).toEqual([['failed_terminal', 'INVALID_DELEGATION', null]]);
      expect(attempts[0]!.error!.message).toMatch(c.message);
      expect(await ledger.getPlan(`${planId}.delegate.1`)).toBeUndefined();
    }
    // The same partition (and executor) goes on: a good delegation on the plan's heels completes.
    const { planId } = await ledger.createPlan({ goal: 'a good hand-off', mode: 'execute', items: [{ id: 'delegate', title: 'delegate', why: 'a sub-agent', tool: 'delegator', input: {} }] });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(planIds).toHaveLength(3);
  });

  it('surfaces a rejected command as an error with its code', async () => {
    const { ledger } = await ledgerWithExecutor();
    const err = await ledger
      .createPlan({ goal: 'bad', mode: 'execute', items: [{ id: 'a', title: 'a', why: 'x', tool: 'noop', dependsOn: ['missing'] }] })
      .catch((e: unknown) => e);
    expect(isLedgerError(err, 'REJECTED')).toBe(true);
    expect((err as { details: { rejection: string } }).details.rejection).toBe('UNKNOWN_DEPENDENCY');
    const notFound = await ledger.approve('no-such-plan', 'a'.repeat(64)).catch((e: unknown) => e);
    expect((notFound as { details: { rejection: string } }).details.rejection).toBe('PLAN_NOT_FOUND');
  });

  it('dead-letters an undecodable and a misrouted command with the cause, and keeps serving the partition', async () => {
    const { ledger, config } = await ledgerWithExecutor();
    const kafka = testKafka(config);
    const t = topicNames(config.topicPrefix);
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
    const writer = closeAfter(kafka.writer());
    await writer.connect();
    const planId = 'misrouted-plan';
    const wrong = (partitionFor(planId, config.partitions) + 1) % config.partitions;
    const misrouted = codec.encodeCommand({
      type: 'CreatePlan', commandId: 'c-misrouted', planId, issuedAt: 1, actor: 'test', correlationId: 'c-misrouted',
      data: { goal: 'x', mode: 'execute', labels: {}, parent: null, items: [] },
    });
    await writer.send(t.commands, [
      { key: 'garbage', value: Buffer.from('definitely not avro'), partition: 0 },
      { key: planId, value: misrouted, partition: wrong },
    ]);
    // The partitions keep working: a plan created afterwards completes.
    const { planId: ok } = await ledger.createPlan({ goal: 'after the poison', mode: 'execute', items: chainOfItems(2) });
    await ledger.waitFor(ok, 'completed', { timeoutMs: 30_000 });

    const dlq = await readAll(kafka, t.dlq);
    const byKey = Object.fromEntries(dlq.map((r) => [r.key?.toString(), r.headers]));
    expect(Object.keys(byKey).sort()).toEqual(['garbage', planId]);
    expect(byKey.garbage).toMatchObject({ 'source-topic': t.commands, 'source-partition': '0', 'error-code': 'SCHEMA', 'error-reason': 'bad_magic' });
    expect(byKey[planId]).toMatchObject({ 'source-partition': String(wrong), 'error-reason': 'misrouted' });
    expect(byKey[planId]!['error-message']).toContain(`its partition is ${partitionFor(planId, config.partitions)}`);
    expect(dlq.find((r) => r.key?.toString() === 'garbage')?.value?.toString()).toBe('definitely not avro');
    expect(await ledger.getPlan(planId)).toBeUndefined();
  });

  it('erases a plan through its owner: refused while running without force, done with force in one transaction; the owner forgets it', async () => {
    const { ledger, executor, config } = await ledgerWithExecutor();
    const kafka = testKafka(config);
    const t = topicNames(config.topicPrefix);
    // Attempt 1 fails and the retry waits ten minutes: the plan stays running.
    const { planId } = await ledger.createPlan({
      goal: 'to be erased',
      mode: 'execute',
      items: [{ id: 'x', title: 'x', why: 'keeps the plan running', tool: 'flaky', input: { succeedOn: 99 }, retry: { maxAttempts: 5, initialBackoffMs: 600_000, backoffMultiplier: 1, maxBackoffMs: 600_000 } }],
    });
    await ledger.waitFor(planId, (s) => s.seq >= 5, { timeoutMs: 30_000 });

    const refused = await ledger.erase(planId, { by: 'dpo' }).catch((e: unknown) => e);
    expect(isLedgerError(refused, 'REJECTED')).toBe(true);
    expect((refused as { details: { rejection: string } }).details.rejection).toBe('INVALID_STATE');
    expect((refused as Error).message).toBe(`ErasePlan rejected: INVALID_STATE: plan ${planId} is running; erase --force to erase it anyway`);
    expect(executor.planState(planId)?.status).toBe('running');

    const before = (await ledger.getPlan(planId))!;
    expect(before.rejections.map((r) => r.commandType)).toEqual(['ErasePlan']);
    const erased = await ledger.erase(planId, { by: 'dpo', reason: 'GDPR request 481', force: true });
    expect(erased.events).toEqual([]);
    expect(erased.erasure).toMatchObject({
      type: 'PlanErased', planId, commandId: erased.commandId, by: 'dpo', reason: 'GDPR request 481', forced: true, statusAtErasure: 'running',
      partition: partitionFor(planId, config.partitions), events: before.seq, lastSeq: before.seq, chainHead: before.lastHash,
      stateDigest: stateDigest(before), executorId: executor.executorId, tombstones: { events: before.seq, snapshots: 1 },
    });
    expect(executor.planState(planId)).toBeUndefined();
    expect(await ledger.getPlan(planId)).toBeUndefined();

    // The erased id is unknown now: PLAN_NOT_FOUND for a command, and for a second erasure.
    for (const again of [() => ledger.cancel(planId), () => ledger.erase(planId, { force: true })]) {
      const e = await again().catch((x: unknown) => x);
      expect((e as { details: { rejection: string } }).details.rejection).toBe('PLAN_NOT_FOUND');
    }
    expect(await ledger.getPlan(planId)).toBeUndefined();
    expect(executor.planState(planId)).toBeUndefined();

    // The partition: a tombstone for every key planId:1..seq, each key's last record is a tombstone (the
    // rejections above were tombstoned in their own transaction), nothing past the erased seq.
    const partition = partitionFor(planId, config.partitions);
    const last = new Map<string, Buffer | null>();
    for (const r of await readAll(kafka, t.events, [partition])) last.set(r.key!.toString(), r.value);
    const keys = [...last.keys()].filter((k) => k.startsWith(`${planId}:`));
    expect(keys.sort()).toEqual(Array.from({ length: before.seq }, (_, i) => eventKey(planId, i + 1)).sort());
    expect(keys.every((k) => last.get(k) === null)).toBe(true);
    const snapshots = await readAll(kafka, t.snapshots, [partition]);
    expect(snapshots.filter((r) => r.key?.toString() === planId).at(-1)?.value).toBeNull();
    const audit = await readAll(kafka, auditTopic(config.topicPrefix));
    expect(audit.map((r) => JSON.parse(r.value!.toString()) as { commandId: string }).map((r) => r.commandId)).toEqual([erased.commandId]);

    // CreatePlan starts the id afresh, from seq 1.
    const again = await ledger.createPlan({ planId, goal: 'a new plan under the erased id', mode: 'execute', items: chainOfItems(2) });
    expect(again.events[0]).toMatchObject({ type: 'PlanCreated', seq: 1 });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    expect(verifyChain((await ledger.planEvents(planId)).map((r) => r.event)).ok).toBe(true);

    // A new owner restores from the log: the erased plan is gone, the new one is intact, nothing stalls.
    await executor.stop();
    const next = await startExecutor({ tools, config, concurrency: 8, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => next.stop());
    await next.started;
    expect(next.planState(planId)).toEqual(done);
    const { planId: other } = await ledger.createPlan({ goal: 'erased when completed', mode: 'execute', items: chainOfItems(1) });
    await ledger.waitFor(other, 'completed', { timeoutMs: 30_000 });
    const plain = await ledger.erase(other, { by: 'dpo' });
    expect(plain.erasure).toMatchObject({ forced: false, statusAtErasure: 'completed', executorId: next.executorId });
    expect(next.planState(other)).toBeUndefined();
  });
});
