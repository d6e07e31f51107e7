import type { TracerProvider } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { tracingRequested } from './trace-context.js';

export { tracingRequested, TRACEPARENT_HEADER, TRACER_NAME, traceparentOf } from './trace-context.js';

/**
 * Tracing set-up, in one place: a tracer provider built from the standard `OTEL_*` variables (OTLP over
 * HTTP, JSON bodies), or none when they are unset — then nothing is traced and nothing is allocated for it.
 * Trace context travels in Kafka record headers as a W3C `traceparent` (see trace-context.ts).
 */

export interface Telemetry {
  readonly provider: TracerProvider;
  /** Exports what is buffered and stops the exporter (call once, on shutdown). */
  shutdown(): Promise<void>;
}

/**
 * A tracer provider exporting over OTLP/HTTP (JSON) as the `OTEL_*` variables say, or undefined when they
 * ask for no traces (see {@link tracingRequested}). The exporter reads its endpoint, headers and timeout
 * from `OTEL_EXPORTER_OTLP_*`; the resource's `service.name` is `OTEL_SERVICE_NAME`, else `serviceName`.
 * Not registered globally: the caller hands it to what it starts (e.g. `startExecutor({ tracerProvider })`).
 */
export function tracerProviderFromEnv(serviceName = 'plan-ledger', env: NodeJS.ProcessEnv = process.env): Telemetry | undefined {
  if (!tracingRequested(env)) return undefined;
  const resource = defaultResource()
    .merge(resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] });
  let done: Promise<void> | undefined;
  return { provider, shutdown: () => (done ??= provider.shutdown().catch(() => {})) };
}
