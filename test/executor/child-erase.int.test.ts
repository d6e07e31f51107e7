// A child plan erased with --force before it finished settles the parent item it was delegated from:
// the erasure's transaction carries a ChildPlanFinished (failed, CHILD_ERASED) to the parent, under the
// commandId a finishing child uses, so a child that had finished already sends nothing new, and a
// duplicate ChildPlanFinished is a no-op for the parent.
import { describe, expect, it } from 'vitest';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { createCodec, type LedgerCodec } from '../../src/codec/index.js';
import { partitionFor, type KafkaClient, type LogRecord } from '../../src/kafka/index.js';
import { canonicalJson, type PlanCommand } from '../../src/plan/index.js';
import { defineTool, type FollowUpItem } from '../../src/tools.js';
import { tools } from '../fixtures/tools.js';
import { closeAfter, readAll, testAdmin, testKafka, waitFor } from '../support/helpers.js';
import { ledgerWithExecutor } from './support.js';

/** Idempotency keys of the `block` invocations running now. */
const blocking = new Set<string>();

/** Never returns: it waits until its invocation is aborted (the executor stops). */
const block = defineTool({
  name: 'block',
  run(_input: unknown, ctx) {
    blocking.add(ctx.idempotencyKey);
    return new Promise<never>((_, reject) => {
      const aborted = () => {
        blocking.delete(ctx.idempotencyKey);
        reject(new Error('aborted'));
      };
      if (ctx.signal.aborted) aborted();
      else ctx.signal.addEventListener('abort', aborted, { once: true });
    });
  },
});

/** Delegates its item to a child plan of the items in its input. */
const delegateTo = defineTool({
  name: 'delegate-to',
  run(input: { items: FollowUpItem[] }) {
    return { delegate: { goal: 'child work', items: input.items } };
  },
});

const testTools = [...tools, block, delegateTo];

function parentPlan(childItems: FollowUpItem[]) {
  return {
    goal: 'parent of a child plan',
    mode: 'execute' as const,
    items: [
      { id: 'delegate', title: 'delegate', why: 'a sub-agent does it', tool: 'delegate-to', input: { items: childItems } },
      { id: 'after', title: 'after', why: 'needs the delegated work', tool: 'noop', input: {}, dependsOn: ['delegate'] },
    ],
  };
}

/** Every record of one commands-topic partition, to the stable end (read_committed). */
function commandsOn(kafka: KafkaClient, config: LedgerConfig, partition: number): Promise<LogRecord[]> {
  return readAll(kafka, topicNames(config.topicPrefix).commands, [partition]);
}

/**
 * Produces a command (non-transactionally, as a redelivery would look) and waits until the executors'
 * group committed an offset past it, i.e. the owner decided it and everything before it.
 */
async function sendDecided(kafka: KafkaClient, config: LedgerConfig, codec: LedgerCodec, command: PlanCommand): Promise<void> {
  const t = topicNames(config.topicPrefix);
  const partition = partitionFor(command.planId, config.partitions);
  const writer = closeAfter(kafka.writer());
  await writer.connect();
  const [delivered] = await writer.send(t.commands, [{ key: command.planId, value: codec.encodeCommand(command), partition }]);
  const offset = BigInt(delivered!.offset);
  const admin = await testAdmin(kafka);
  await waitFor(
    async () => {
      const committed = (await admin.fetchOffsets(t.executorsGroup, t.commands)).find((p) => p.partition === partition)?.offset ?? '-1';
      return BigInt(committed) > offset;
    },
    { message: `the executors committed past offset ${offset} of partition ${partition}` },
  );
}

type ChildPlanFinished = Extract<PlanCommand, { type: 'ChildPlanFinished' }>;
const isChildFinished = (c: PlanCommand): c is ChildPlanFinished => c.type === 'ChildPlanFinished';

function duplicateChildFinished(parentPlanId: string, childPlanId: string, status: 'completed' | 'failed'): ChildPlanFinished {
  const commandId = `child-finished:${childPlanId}`;
  return {
    type: 'ChildPlanFinished',
    commandId,
    planId: parentPlanId,
    issuedAt: Date.now(),
    actor: 'test-redelivery',
    correlationId: commandId,
    data: {
      parentItemId: 'delegate',
      childPlanId,
      status,
      outputJson: status === 'completed' ? canonicalJson({ late: true }) : null,
      error: status === 'completed' ? null : { code: 'CHILD_FAILED', message: 'a late duplicate', detailsJson: null },
    },
  };
}

describe('erasing a delegated child plan (real broker and registry)', () => {
  it('force-erasing a running child fails the parent item with CHILD_ERASED in the erasure transaction; a duplicate ChildPlanFinished is a no-op', async () => {
    const { ledger, executor, config } = await ledgerWithExecutor({ tools: testTools, shutdownGraceMs: 200 });
    const kafka = testKafka(config);
    const t = topicNames(config.topicPrefix);
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });

    const { planId } = await ledger.createPlan(parentPlan([{ id: 'wait', title: 'wait', why: 'blocks until aborted', tool: 'block', input: {} }]));
    const childId = `${planId}.delegate.1`;
    await waitFor(() => blocking.has(`${childId}/wait/1`), { timeoutMs: 30_000, message: 'the child item is blocking in its tool' });
    const child = (await ledger.getPlan(childId))!;
    expect(child.status).toBe('running');
    expect(child.parent).toEqual({ planId, itemId: 'delegate' });
    expect(child.items.wait!.status).toBe('in_progress');
    const waiting = (await ledger.getPlan(planId))!;
    expect(waiting.status).toBe('running');
    expect(waiting.items.delegate!.status).toBe('in_progress');
    expect(waiting.items.delegate!.attempts.map((a) => a.childPlanId)).toEqual([childId]);

    const erased = await ledger.erase(childId, { by: 'dpo', reason: 'GDPR request 482', force: true });
    expect(erased.erasure).toMatchObject({
      type: 'PlanErased', planId: childId, commandId: erased.commandId, by: 'dpo', reason: 'GDPR request 482', forced: true, statusAtErasure: 'running',
      events: child.seq, lastSeq: child.seq, chainHead: child.lastHash, executorId: executor.executorId, tombstones: { events: child.seq, snapshots: 1 },
      parentNotified: { planId, itemId: 'delegate', commandId: `child-finished:${childId}` },
    });

    // The parent item fails terminally with the erasure as its error, and nothing else can progress.
    const failed = await ledger.waitFor(planId, 'failed', { timeoutMs: 30_000 });
    const error = {
      code: 'CHILD_ERASED',
      message: `child plan ${childId} was erased by dpo while running`,
      detailsJson: canonicalJson({ childPlanId: childId, erasedBy: 'dpo', erasureCommandId: erased.commandId, statusAtErasure: 'running' }),
    };
    expect(failed.items.delegate!.status).toBe('failed');
    expect(failed.items.delegate!.failure).toEqual({ reason: 'terminal', error });
    expect(failed.items.delegate!.attempts).toHaveLength(1);
    expect(failed.items.delegate!.attempts[0]).toMatchObject({ attempt: 1, childPlanId: childId, outcome: 'failed_terminal', error });
    expect(failed.items.after!.status).toBe('pending');
    expect(failed.items.after!.attempts).toEqual([]);
    expect(failed.appliedCommandIds).toHaveProperty([`child-finished:${childId}`]);
    const events = (await ledger.planEvents(planId)).map((r) => r.event);
    expect(events.slice(-3).map((e) => [e.type, e.causationId])).toEqual([
      ['ResultCommitted', `child-finished:${childId}`],
      ['ItemFailed', expect.stringMatching(/^settle:/)],
      ['PlanFailed', expect.stringMatching(/^settle:/)],
    ]);
    expect(events.at(-1)).toMatchObject({ type: 'PlanFailed', data: { failedItemIds: ['delegate'] } });
    expect(events.at(-3)).toMatchObject({ actor: executor.executorId, correlationId: erased.commandId });

    // The child is gone: no events for a read_committed reader, every one of its keys ends in a tombstone.
    expect(await ledger.planEvents(childId)).toEqual([]);
    expect(await ledger.getPlan(childId)).toBeUndefined();
    expect(executor.planState(childId)).toBeUndefined();
    const last = new Map<string, Buffer | null>();
    for (const r of await readAll(kafka, t.events, [partitionFor(childId, config.partitions)])) last.set(r.key!.toString(), r.value);
    const childKeys = [...last.keys()].filter((k) => k.startsWith(`${childId}:`));
    expect(childKeys).toHaveLength(child.seq);
    expect(childKeys.every((k) => last.get(k) === null)).toBe(true);

    // Exactly one ChildPlanFinished went to the parent, the erasure's.
    const sent = await Promise.all(
      (await commandsOn(kafka, config, partitionFor(planId, config.partitions))).map((r) => codec.decodeCommand(r.value!)),
    );
    const toParent = sent.filter(isChildFinished);
    expect(toParent).toHaveLength(1);
    expect(toParent[0]).toMatchObject({ commandId: `child-finished:${childId}`, planId, actor: executor.executorId, data: { parentItemId: 'delegate', childPlanId: childId, status: 'failed', outputJson: null, error } });

    // A redelivered ChildPlanFinished (even one claiming success) changes nothing: its id is applied.
    await sendDecided(kafka, config, codec, duplicateChildFinished(planId, childId, 'completed'));
    expect(executor.planState(planId)).toEqual(failed);
    expect((await ledger.getPlan(planId))!.seq).toBe(failed.seq);
  });

  it('erasing a child that already completed sends nothing: the parent stays completed at the same seq', async () => {
    const { ledger, executor, config } = await ledgerWithExecutor({ tools: testTools, shutdownGraceMs: 200 });
    const kafka = testKafka(config);
    const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });

    const { planId } = await ledger.createPlan(parentPlan([{ id: 'c1', title: 'child one', why: 'part of the parent item', tool: 'noop', input: { c: 1 } }]));
    const childId = `${planId}.delegate.1`;
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 30_000 });
    expect(done.items.delegate!.status).toBe('completed');
    expect(JSON.parse(done.items.delegate!.outputJson!)).toEqual({ c1: { echo: { c: 1 } } });
    expect((await ledger.getPlan(childId))?.status).toBe('completed');

    const erased = await ledger.erase(childId, { by: 'dpo', force: true });
    expect(erased.erasure).toMatchObject({ planId: childId, forced: false, statusAtErasure: 'completed' });
    expect(erased.erasure).not.toHaveProperty('parentNotified');
    expect(await ledger.getPlan(childId)).toBeUndefined();

    // A duplicate after the erasure: once the owner decided it, everything before it on the partition
    // (the erasure's transaction included) was decided and is readable.
    await sendDecided(kafka, config, codec, duplicateChildFinished(planId, childId, 'failed'));
    const sent = await Promise.all(
      (await commandsOn(kafka, config, partitionFor(planId, config.partitions))).map((r) => codec.decodeCommand(r.value!)),
    );
    // The completion's and the test's duplicate: nothing from the erasure.
    expect(sent.filter(isChildFinished).map((c) => [c.commandId, c.actor, c.data.status])).toEqual([
      [`child-finished:${childId}`, executor.executorId, 'completed'],
      [`child-finished:${childId}`, 'test-redelivery', 'failed'],
    ]);

    const after = (await ledger.getPlan(planId))!;
    expect(after.status).toBe('completed');
    expect(after.seq).toBe(done.seq);
    expect(after.lastHash).toBe(done.lastHash);
    expect(executor.planState(planId)).toEqual(done);
  });
});
