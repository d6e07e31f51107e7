/**
 * The record header that carries a W3C trace context (`traceparent`). On its own, with no imports, so a
 * reader that only passes the header on (restore, the CLI's reads) does not load OpenTelemetry for it.
 */
export const TRACEPARENT_HEADER = 'traceparent';
