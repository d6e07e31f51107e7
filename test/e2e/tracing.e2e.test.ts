// `plan-ledger executor` with the standard OTEL_* variables sends its spans over OTLP/HTTP (JSON) to a
// receiver on a loopback port: the plan's command, attempts and tool calls, with the plan id and the
// idempotency keys as attributes, in one trace. Without OTEL_* nothing is sent (see the second case).
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectLedger } from '../../src/client/index.js';
import { EffectsService } from '../fixtures/effects-service.js';
import { testConfig } from '../support/helpers.js';
import { ownsPartitions, spawnExecutor } from '../support/processes.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: Array<{ key: string; value: OtlpValue }>;
}
interface OtlpBody {
  resourceSpans: Array<{ resource: { attributes: Array<{ key: string; value: OtlpValue }> }; scopeSpans: Array<{ scope: { name: string }; spans: OtlpSpan[] }> }>;
}

/** A minimal OTLP/HTTP receiver: keeps every request to /v1/traces (path, headers, parsed JSON body). */
class OtlpReceiver {
  readonly requests: Array<{ path: string; headers: IncomingHttpHeaders; body: OtlpBody }> = [];
  private server!: Server;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          this.requests.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpBody });
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } catch {
          res.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }

  spans(): Array<OtlpSpan & { service: string | undefined; scope: string; attrs: Record<string, string | number | boolean | undefined> }> {
    return this.requests.flatMap((q) =>
      q.body.resourceSpans.flatMap((rs) => {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue;
        return rs.scopeSpans.flatMap((ss) =>
          ss.spans.map((s) => ({
            ...s,
            service,
            scope: ss.scope.name,
            attrs: Object.fromEntries(s.attributes.map((a) => [a.key, a.value.stringValue ?? (a.value.intValue !== undefined ? Number(a.value.intValue) : a.value.boolValue)])),
          })),
        );
      }),
    );
  }
}

let receiver: OtlpReceiver;
let effects: EffectsService;
beforeAll(async () => {
  receiver = await new OtlpReceiver().start();
  effects = await new EffectsService().start();
});
afterAll(async () => {
  await receiver.stop();
  await effects.stop();
});

// `two` calls the effects service over HTTP with its ctx.traceparent as a header.
const items = [
  { id: 'one', title: 'one', why: 'first step', tool: 'noop', input: { n: 1 } },
  { id: 'two', title: 'two', why: 'second step', tool: 'effect', input: {}, dependsOn: ['one'] },
];

describe('OTLP/HTTP export from an executor process', () => {
  it('sends the plan\'s spans (command, attempts, tool calls) with plan id and idempotency keys, one trace', async () => {
    const config = testConfig({ partitions: 1 });
    const exec = spawnExecutor(config, {
      label: 'otel-exec',
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_SERVICE_NAME: 'plan-ledger-e2e',
        OTEL_BSP_SCHEDULE_DELAY: '200',
        EFFECTS_URL: effects.url,
      },
    });
    await exec.waitForLog(ownsPartitions);
    expect(exec.logs.some((l) => l.msg === 'tracing on' && l.fromEnv === true)).toBe(true);
    const ledger = await connectLedger(config);
    let planId: string;
    try {
      ({ planId } = await ledger.createPlan({ goal: 'traced over OTLP', mode: 'execute', items }));
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    } finally {
      await ledger.close();
    }
    exec.kill('SIGTERM'); // stopping flushes what is buffered
    expect(await exec.exited).toEqual({ code: 0, signal: null });

    const ours = receiver.spans().filter((s) => s.attrs['plan_ledger.plan_id'] === planId || s.attrs['plan_ledger.idempotency_key']?.toString().startsWith(`${planId}/`));
    expect(receiver.requests.length).toBeGreaterThan(0);
    for (const q of receiver.requests) {
      expect(q.path).toBe('/v1/traces');
      expect(q.headers['content-type']).toBe('application/json');
    }
    expect(new Set(ours.map((s) => s.service))).toEqual(new Set(['plan-ledger-e2e']));
    expect(new Set(ours.map((s) => s.scope))).toEqual(new Set(['plan-ledger']));
    expect(new Set(ours.map((s) => s.traceId)).size).toBe(1);

    const command = ours.filter((s) => s.name === 'plan-ledger.command');
    expect(command.map((s) => [s.attrs['plan_ledger.command.type'], s.attrs['plan_ledger.outcome'], s.attrs['plan_ledger.executor_id']])).toEqual([['CreatePlan', 'accepted', 'otel-exec']]);
    const attempts = ours.filter((s) => s.name === 'plan-ledger.attempt').sort((a, b) => String(a.attrs['plan_ledger.item_id']).localeCompare(String(b.attrs['plan_ledger.item_id'])));
    expect(attempts.map((s) => [s.attrs['plan_ledger.idempotency_key'], s.attrs['plan_ledger.attempt'], s.attrs['plan_ledger.executor_id'], s.attrs['plan_ledger.outcome'], s.parentSpanId])).toEqual([
      [`${planId}/one/1`, 1, 'otel-exec', 'succeeded', command[0]!.spanId],
      [`${planId}/two/1`, 1, 'otel-exec', 'succeeded', command[0]!.spanId],
    ]);
    const tools = ours.filter((s) => s.name === 'noop' || s.name === 'effect').sort((a, b) => a.name.localeCompare(b.name));
    expect(tools.map((s) => [s.name, s.parentSpanId])).toEqual([
      ['effect', attempts[1]!.spanId],
      ['noop', attempts[0]!.spanId],
    ]);
    // The tool's outgoing HTTP call carried its span's traceparent.
    expect(effects.calls.filter((c) => c.key === `${planId}/two/1`).map((c) => c.traceparent)).toEqual([`00-${tools[0]!.traceId}-${tools[0]!.spanId}-01`]);
  });

  it('sends nothing without OTEL_* variables', async () => {
    const before = receiver.requests.length;
    let planId: string;
    const config = testConfig({ partitions: 1 });
    const exec = spawnExecutor(config, { label: 'quiet-exec', env: { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_TRACES_EXPORTER: '', EFFECTS_URL: effects.url } });
    await exec.waitForLog(ownsPartitions);
    const ledger = await connectLedger(config);
    try {
      ({ planId } = await ledger.createPlan({ goal: 'not traced', mode: 'execute', items }));
      await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    } finally {
      await ledger.close();
    }
    exec.kill('SIGTERM');
    expect(await exec.exited).toEqual({ code: 0, signal: null });
    expect(effects.calls.filter((c) => c.key === `${planId}/two/1`).map((c) => c.traceparent)).toEqual([undefined]); // no header
    expect(exec.logs.some((l) => l.msg === 'tracing on')).toBe(false);
    expect(receiver.requests.length).toBe(before);
  });
});
