import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { PlanTraces } from '../executor/tracing.js';
import type { LogRecord, OutRecord } from '../src/kafka/index.js';
import type { PlanCommand } from '../src/plan/index.js';
import { tracerProviderFromEnv } from '../src/telemetry.js';
import { contextFromTraceparent, spanContextFromTraceparent, traceHeaders, tracingRequested } from '../src/trace-context.js';

function inMemory() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  return { exporter, tracer: provider.getTracer('plan-ledger'), provider };
}

const message = (headers: LogRecord['headers'] = {}): LogRecord => ({ topic: 'commands', partition: 0, key: Buffer.from('p'), value: Buffer.from('x'), offset: '7', timestamp: '0', headers });
const create = { type: 'CreatePlan', planId: 'p-1', commandId: 'c-1' } as PlanCommand;
const VALID = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracingRequested (OTEL_* variables)', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'console, otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, false],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }, false],
    [{ OTEL_SERVICE_NAME: 'only-a-name' }, false],
  ])('%j → %s', async (env, on) => {
    expect(tracingRequested(env)).toBe(on);
    const t = tracerProviderFromEnv('x', env);
    expect(t !== undefined).toBe(on);
    await t?.shutdown();
  });
});

describe('PlanTraces', () => {
  it('off (no tracer): no span objects, the same record array back, no client header', () => {
    const t = new PlanTraces(undefined, 'ex');
    t.seed(new Map([['p-1', VALID]]));
    const msgs: OutRecord[] = [{ key: 'p-1:1', value: Buffer.from('e') }];
    expect(t.command(message())).toBeUndefined();
    expect(t.attempt({ planId: 'p-1', itemId: 'a', attempt: 1, idempotencyKey: 'p-1/a/1', tool: 't', recovering: false })).toBeUndefined();
    expect(t.get('p-1')).toBeUndefined();
    expect(t.withHeaders('p-1', msgs)).toBe(msgs);
    expect(traceHeaders()).toEqual({}); // no active span
  });

  it('a malformed client traceparent (hostile header) starts a new trace; the command is still traced and the plan gets that trace', async () => {
    const { exporter, tracer } = inMemory();
    const t = new PlanTraces(tracer, 'ex');
    for (const bad of ['garbage', '00-00000000000000000000000000000000-b7ad6b7169203331-01', `${VALID}-extra`, 'x'.repeat(10_000)]) {
      expect(spanContextFromTraceparent(bad)).toBeUndefined();
      const c = t.command(message({ traceparent: bad }))!;
      c.start(create);
      c.accepted(create.planId);
      await c.end(Promise.resolve());
    }
    {
      const spans = exporter.getFinishedSpans();
      expect(spans).toHaveLength(4);
      // The first started the plan's trace; the next ones (no valid client context) continue it.
      const first = spans[0]!;
      expect(first.parentSpanContext).toBeUndefined();
      for (const s of spans.slice(1)) expect(s.parentSpanContext?.spanId).toBe(first.spanContext().spanId);
      expect(t.get('p-1')).toBe(`00-${first.spanContext().traceId}-${first.spanContext().spanId}-01`);
      expect(spans.map((s) => s.attributes['plan_ledger.outcome'])).toEqual(['accepted', 'accepted', 'accepted', 'accepted']);
    }
  });

  it("a client trace that is not the plan's: the command span continues the client's and links the plan's", async () => {
    const { exporter, tracer } = inMemory();
    const t = new PlanTraces(tracer, 'ex');
    t.seed(new Map([['p-1', VALID]]));
    const client = '00-11111111111111111111111111111111-2222222222222222-01';
    const c = t.command(message({ traceparent: client }))!;
    c.start({ ...create, type: 'CancelPlan' } as PlanCommand);
    c.rejected('PLAN_FINISHED');
    await c.end(Promise.resolve());
    const [span] = exporter.getFinishedSpans();
    expect(span!.spanContext().traceId).toBe('11111111111111111111111111111111');
    expect(span!.parentSpanContext?.spanId).toBe('2222222222222222');
    expect(span!.links.map((l) => l.context.spanId)).toEqual(['b7ad6b7169203331']);
    expect(span!.attributes).toMatchObject({ 'plan_ledger.outcome': 'rejected', 'plan_ledger.rejection_code': 'PLAN_FINISHED', 'plan_ledger.command.type': 'CancelPlan' });
    expect(t.get('p-1')).toBe(VALID); // a later command does not move the plan's trace
  });

  it('an undecodable command: a dead-lettered span with the reason; an append that fails ends the span with the error', async () => {
    const { exporter, tracer } = inMemory();
    const t = new PlanTraces(tracer, 'ex');
    const dl = t.command(message())!;
    dl.deadLettered('undecodable', 'SCHEMA');
    await dl.end(Promise.resolve());
    const failing = t.command(message())!;
    failing.start(create);
    failing.accepted(create.planId);
    await expect(failing.end(Promise.reject(new Error('broker gone')))).rejects.toThrow('broker gone');
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => [s.attributes['plan_ledger.outcome'], s.attributes['plan_ledger.dlq_reason'], s.status.code])).toEqual([
      ['dead_lettered', 'undecodable', 2],
      ['not_appended', undefined, 2],
    ]);
  });

  it('the plan\'s event records carry its traceparent; tombstones do not', () => {
    const { tracer } = inMemory();
    const t = new PlanTraces(tracer, 'ex');
    t.seed(new Map([['p-1', VALID]]));
    const input: OutRecord[] = [
      { key: 'p-1:1', value: Buffer.from('e'), headers: { other: 'kept' } },
      { key: 'p-1:2', value: null },
    ];
    const out = t.withHeaders('p-1', input);
    expect(out.map((m) => m.headers)).toEqual([{ other: 'kept', traceparent: VALID }, undefined]);
    // The event's bytes (what its hash covers) are the very same buffer: the header is beside it.
    expect(out[0]!.value).toBe(input[0]!.value);
    expect(out.map((m) => m.key)).toEqual(['p-1:1', 'p-1:2']);
    expect(t.withHeaders('p-2', [{ key: 'p-2:1', value: Buffer.from('e') }])[0]!.headers).toBeUndefined();
  });

  it('contextFromTraceparent without a header is the root context', () => {
    expect(spanContextFromTraceparent(undefined)).toBeUndefined();
    expect(contextFromTraceparent(undefined)).toBeDefined();
  });
});
