import { context, ROOT_CONTEXT, trace, type Context, type Span, type SpanContext, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { TRACEPARENT_HEADER } from './trace-header.js';

/**
 * Trace context as record metadata: a W3C `traceparent` in Kafka record headers (commands from clients,
 * the plan's event records). Only the API and the propagator: what every reader can load at no cost; the
 * SDK and the exporter are in telemetry.ts.
 */

export { TRACEPARENT_HEADER };

/** The tracer name (instrumentation scope) of every plan-ledger span. */
export const TRACER_NAME = 'plan-ledger';

/**
 * True when the `OTEL_*` variables ask for traces: `OTEL_TRACES_EXPORTER` names `otlp`, or it is unset and
 * an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`).
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn tracing off.
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s.length > 0);
  if (exporters.length > 0) return exporters.includes('otlp');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

const propagator = new W3CTraceContextPropagator();

const setter: TextMapSetter<Record<string, string>> = {
  set: (carrier, key, value) => {
    carrier[key] = value;
  },
};

const getter: TextMapGetter<string | undefined> = {
  keys: () => [TRACEPARENT_HEADER],
  get: (carrier, key) => (key === TRACEPARENT_HEADER ? carrier : undefined),
};

/** The W3C `traceparent` of a span (or of the active span when none is given); undefined without a valid one. */
export function traceparentOf(span: Span | undefined = trace.getSpan(context.active())): string | undefined {
  if (span === undefined || !trace.isSpanContextValid(span.spanContext())) return undefined;
  const carrier: Record<string, string> = {};
  propagator.inject(trace.setSpan(context.active(), span), carrier, setter);
  return carrier[TRACEPARENT_HEADER];
}

/** A context whose parent is the span a `traceparent` names (the root context when it is absent or malformed). */
export function contextFromTraceparent(traceparent: string | undefined): Context {
  return traceparent === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, traceparent, getter);
}

/** The span context a `traceparent` names, for a span link; undefined when absent or malformed. */
export function spanContextFromTraceparent(traceparent: string | undefined): SpanContext | undefined {
  if (traceparent === undefined) return undefined;
  const sc = trace.getSpanContext(contextFromTraceparent(traceparent));
  return sc && trace.isSpanContextValid(sc) ? sc : undefined;
}

/** The value of a Kafka header as a string (first value of a list). */
export function headerString(v: Buffer | string | (Buffer | string)[] | undefined): string | undefined {
  const x = Array.isArray(v) ? v[0] : v;
  return x === undefined ? undefined : typeof x === 'string' ? x : x.toString('utf8');
}

/**
 * `{ headers: { traceparent } }` for a record produced inside an active span (the caller's trace continues
 * in whoever consumes the record); `{}` without one.
 */
export function traceHeaders(): { headers?: Record<string, string> } {
  const tp = traceparentOf();
  return tp === undefined ? {} : { headers: { [TRACEPARENT_HEADER]: tp } };
}
