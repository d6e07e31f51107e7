// Traces of a crash-and-resume run, exported in-process: a plan's command, its attempts and tool calls are
// one trace, continued from the client's span through the command record's `traceparent` header; an
// attempt abandoned by a released owner and resumed by another executor joins the same trace, because the
// new owner reads the plan's trace context back from the headers of its event records.
import { Writable } from 'node:stream';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { WRITER_HEADER } from '../../executor/appender.js';
import { connectLedger } from '../../src/client/index.js';
import { topicNames } from '../../src/config.js';
import { isLedgerError } from '../../src/errors.js';
import { readPlanRecords } from '../../src/kafka/index.js';
import { defineTool } from '../../src/tools.js';
import { tools as fixtureTools } from '../fixtures/tools.js';
import { startProjector } from '../../projector/index.js';
import { readAll, testConfig, testKafka, testLogger, waitFor } from '../support/helpers.js';

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
});
afterAll(() => {
  context.disable();
});

/** What the `hold` tool saw, per invocation. */
const seen: Array<{ key: string; recovering: boolean; traceparent: string | undefined }> = [];

const quick = defineTool({ name: 'quick', run: (input: unknown) => ({ echo: input ?? null }) });
/** The first invocation holds until its signal aborts (the owner is released); a recovering one returns. */
const hold = defineTool({
  name: 'hold',
  async run(_input: unknown, ctx) {
    seen.push({ key: ctx.idempotencyKey, recovering: ctx.recovering, traceparent: ctx.traceparent });
    if (ctx.recovering) return { done: true };
    await new Promise<void>((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true }));
    return { done: false };
  },
});

function capturingLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const attr = (s: ReadableSpan, k: string) => s.attributes[k];
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('tracing', () => {
  it.each([
    { name: 'from the event records it replays', snapshotted: false },
    { name: 'from the snapshot record (the projector snapshotted the plan and wrote a watermark in between)', snapshotted: true },
  ])('one trace per plan: client span → command → attempts (abandoned by one owner, resumed by the next) → tool calls; the next owner reads the trace context $name', async ({ snapshotted }) => {
    seen.length = 0;
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    onTestFinished(() => provider.shutdown());
    const config = testConfig({ partitions: 1 });
    const planId = 'traced-plan';

    const execA = await startExecutor({ tools: [quick, hold], config, tracerProvider: provider, executorId: 'trace-A', shutdownGraceMs: 1, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execA.stop());
    await execA.started;
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());

    // The client's own span: the command record carries its traceparent.
    const clientTracer = provider.getTracer('test-client');
    const clientSpan = clientTracer.startSpan('client.create');
    await context.with(trace.setSpan(context.active(), clientSpan), () =>
      ledger.createPlan({
        planId,
        goal: 'trace a crash and resume',
        mode: 'execute',
        items: [
          { id: 'a', title: 'a', why: 'runs first', tool: 'quick', input: { n: 1 } },
          { id: 'b', title: 'b', why: 'is abandoned, then resumed', tool: 'hold', dependsOn: ['a'] },
        ],
      }),
    );
    clientSpan.end();
    const traceId = clientSpan.spanContext().traceId;

    await waitFor(() => seen.length === 1, { message: 'the hold tool was invoked by trace-A' });
    await execA.stop(); // released mid-tool: the attempt is abandoned to the next owner
    if (snapshotted) {
      // The projector snapshots every plan and leaves a watermark past all of the plan's events: the next
      // owner replays none of them, and finds the plan's trace context on its snapshot record.
      const projector = await startProjector({ config, logger: testLogger, port: 0, apiToken: null, watermarkIntervalMs: 300, defaultMetrics: false });
      try {
        await waitFor(() => projector.caughtUp(), { timeoutMs: 45_000, message: 'projector caught up' });
      } finally {
        await projector.stop();
      }
    }

    const b = capturingLogger();
    const execB = await startExecutor({ tools: [quick, hold], config, tracerProvider: provider, executorId: 'trace-B', logger: b.logger, sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => execB.stop());
    await execB.started;
    const restored = b.lines.find((l) => l.msg === 'partition restored' && l.component === 'partition-owner');
    expect(restored).toMatchObject(snapshotted ? { fromSnapshot: 1, eventsReplayed: 0 } : { eventsReplayed: expect.any(Number) });
    if (!snapshotted) expect(restored!.eventsReplayed).toBeGreaterThan(5);
    await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });

    // A command after the plan finished, without a client span: its rejection continues the plan's trace.
    const refused = await ledger.retryItem(planId, 'a').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isLedgerError(refused, 'REJECTED')).toBe(true);
    await waitFor(() => exporter.getFinishedSpans().filter((s) => s.name === 'plan-ledger.command').length === 2, { message: 'the rejected command span ended' });
    await execB.stop();
    await provider.forceFlush();

    const spans = exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === 'plan-ledger');
    // Every span of the plan is in the client's trace.
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));

    const commands = spans.filter((s) => s.name === 'plan-ledger.command');
    expect(commands.map((s) => [attr(s, 'plan_ledger.command.type'), attr(s, 'plan_ledger.outcome'), attr(s, 'plan_ledger.rejection_code'), attr(s, 'plan_ledger.plan_id'), attr(s, 'plan_ledger.executor_id')])).toEqual([
      ['CreatePlan', 'accepted', undefined, planId, 'trace-A'],
      ['RetryItem', 'rejected', expect.any(String), planId, 'trace-B'],
    ]);
    const create = commands[0]!;
    expect(parentOf(create)).toBe(clientSpan.spanContext().spanId); // continued from the record header
    expect(parentOf(commands[1]!)).toBe(create.spanContext().spanId); // the plan's trace context, restored by trace-B

    const attempts = spans.filter((s) => s.name === 'plan-ledger.attempt');
    const row = (s: ReadableSpan) => [attr(s, 'plan_ledger.item_id'), attr(s, 'plan_ledger.idempotency_key'), attr(s, 'plan_ledger.attempt'), attr(s, 'plan_ledger.executor_id'), attr(s, 'plan_ledger.recovering'), attr(s, 'plan_ledger.outcome'), attr(s, 'plan_ledger.plan_trace')];
    expect(attempts.map(row)).toEqual([
      ['a', `${planId}/a/1`, 1, 'trace-A', false, 'succeeded', true],
      ['b', `${planId}/b/1`, 1, 'trace-A', false, 'abandoned', true],
      ['b', `${planId}/b/1`, 1, 'trace-B', true, 'succeeded', true],
    ]);
    for (const a of attempts) expect(parentOf(a)).toBe(create.spanContext().spanId);
    expect(attempts.map((s) => s.events.map((e) => e.name))).toEqual([['intent', 'result', 'complete'], ['intent'], ['intent', 'result', 'complete']]);

    // One tool span per invocation, named after the tool, child of its attempt; the tool saw its traceparent.
    const toolSpans = spans.filter((s) => s.name === 'quick' || s.name === 'hold');
    expect(toolSpans.map((s) => [s.name, parentOf(s), attr(s, 'plan_ledger.outcome')])).toEqual([
      ['quick', attempts[0]!.spanContext().spanId, 'succeeded'],
      ['hold', attempts[1]!.spanContext().spanId, 'abandoned'],
      ['hold', attempts[2]!.spanContext().spanId, 'succeeded'],
    ]);
    const holdSpans = toolSpans.filter((s) => s.name === 'hold');
    expect(seen).toEqual([
      { key: `${planId}/b/1`, recovering: false, traceparent: `00-${traceId}-${holdSpans[0]!.spanContext().spanId}-01` },
      { key: `${planId}/b/1`, recovering: true, traceparent: `00-${traceId}-${holdSpans[1]!.spanContext().spanId}-01` },
    ]);

    // Every event record of the plan carries the plan's trace context as a header — metadata outside the
    // event: the hash chain verifies, event by event, as without it.
    const kafka = testKafka(config);
    const records = await readPlanRecords({ kafka, topic: topicNames(config.topicPrefix).events, partition: 0, planId });
    const planTrace = `00-${traceId}-${create.spanContext().spanId}-01`;
    expect(records.length).toBeGreaterThan(8);
    expect(records.map((r) => r.headers.traceparent)).toEqual(records.map(() => planTrace));
    // And names the executor that wrote it (whose clock stamped it): A before the hand-over, B after.
    const writers = records.map((r) => r.headers[WRITER_HEADER]);
    expect(writers.every((w) => w === 'trace-A' || w === 'trace-B')).toBe(true);
    expect(writers.indexOf('trace-B')).toBeGreaterThan(writers.lastIndexOf('trace-A'));
    const verification = await ledger.verify(planId);
    expect(verification).toMatchObject({ planId, ok: true, events: records.length, firstBroken: null });
    if (snapshotted) {
      // The snapshot record the projector wrote carries the plan's trace context too.
      const snaps = await readAll(kafka, topicNames(config.topicPrefix).snapshots);
      const ofPlan = snaps.filter((r) => r.key?.toString() === planId && r.value !== null);
      expect(ofPlan.length).toBeGreaterThan(0);
      expect(ofPlan.map((r) => r.headers.traceparent)).toEqual(ofPlan.map(() => planTrace));
    }
  });

  it("a delegated child plan joins its parent's trace: the child's CreatePlan continues the delegating attempt", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    onTestFinished(() => provider.shutdown());
    const config = testConfig({ partitions: 2 });
    const exec = await startExecutor({ tools: fixtureTools, config, tracerProvider: provider, executorId: 'trace-D', sessionTimeoutMs: 6000, heartbeatIntervalMs: 500 });
    onTestFinished(() => exec.stop());
    await exec.started;
    const ledger = await connectLedger(config);
    onTestFinished(() => ledger.close());
    const planId = 'traced-parent';
    await ledger.createPlan({ planId, goal: 'delegate', mode: 'execute', items: [{ id: 'd', title: 'd', why: 'hands work to a child plan', tool: 'delegator' }] });
    await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    await waitFor(() => exporter.getFinishedSpans().filter((s) => s.name === 'plan-ledger.attempt').length === 3, { message: 'three attempt spans ended' });
    await exec.stop();

    const spans = exporter.getFinishedSpans();
    const childPlanId = `${planId}.d.1`;
    const commands = spans.filter((s) => s.name === 'plan-ledger.command');
    const parentCreate = commands.find((s) => attr(s, 'plan_ledger.plan_id') === planId && attr(s, 'plan_ledger.command.type') === 'CreatePlan')!;
    const childCreate = commands.find((s) => attr(s, 'plan_ledger.plan_id') === childPlanId && attr(s, 'plan_ledger.command.type') === 'CreatePlan')!;
    const delegating = spans.find((s) => s.name === 'plan-ledger.attempt' && attr(s, 'plan_ledger.idempotency_key') === `${planId}/d/1`)!;
    expect(attr(delegating, 'plan_ledger.outcome')).toBe('delegated');
    expect(parentOf(childCreate)).toBe(delegating.spanContext().spanId);
    const traceId = parentCreate.spanContext().traceId;
    expect(parentCreate.parentSpanContext).toBeUndefined(); // no client span: the plan's trace starts here
    const childAttempts = spans.filter((s) => s.name === 'plan-ledger.attempt' && String(attr(s, 'plan_ledger.plan_id')) === childPlanId);
    expect(childAttempts.map((s) => [attr(s, 'plan_ledger.idempotency_key'), attr(s, 'plan_ledger.outcome'), parentOf(s)])).toEqual([
      [`${childPlanId}/c1/1`, 'succeeded', childCreate.spanContext().spanId],
      [`${childPlanId}/c2/1`, 'succeeded', childCreate.spanContext().spanId],
    ]);
    // Every span of both plans (the ChildPlanFinished the parent receives included) is in one trace.
    expect(new Set(spans.map((s) => s.spanContext().traceId))).toEqual(new Set([traceId]));
  });
});
