// The projector's HTTP server: fastify with JSON schemas on every route, one plugin per route group.
// /healthz, /metrics and the dashboard's static files are open; every /api route needs a bearer token
// (read scope for reads, the stream and the OpenAPI document, write scope for commands). The routes'
// schemas validate requests and describe the answers: GET /api/openapi.json is built from them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import AjvCompiler from '@fastify/ajv-compiler';
import Fastify from 'fastify';
import type { Logger } from '../../src/logging.js';
import { packageRoot } from '../../src/package-root.js';
import { OperatorViews } from '../operations.js';
import type { ProjectionService } from '../projector.js';
import type { TokenSet } from '../../src/api-tokens.js';
import { requireScope } from './auth.js';
import { corsHandlers } from './cors.js';
import { errorHandler } from './errors.js';
import { errorJson } from './responses.js';
import { openApiCollector } from './openapi.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { healthRoutes } from './routes/health.js';
import { openApiRoutes } from './routes/openapi.js';
import { operationsRoutes } from './routes/operations.js';
import { planReadRoutes, type PayloadOpenerFor } from './routes/plans-read.js';
import { planWriteRoutes, type CommandSubmitter } from './routes/plans-write.js';
import { streamRoutes } from './routes/stream.js';
import { planStreamRoutes } from './routes/plan-stream.js';
import { itemDetailRoutes } from './routes/item-detail.js';
import type { Ledger } from '../../src/client/index.js';

export type { CommandSubmitter } from './routes/plans-write.js';

export interface HttpOptions {
  readonly service: ProjectionService;
  readonly logger: Logger;
  /** Who may read and write (see `compileTokens`). */
  readonly tokens: TokenSet;
  /** Submits commands; resolved lazily on the first write. */
  readonly submitter: () => Promise<CommandSubmitter>;
  /** Reads plans' live streams (`GET /api/plans/:id/stream`); resolved lazily on the first request. Without it the route answers 500 (an app built without Kafka). */
  readonly streamReader?: () => Promise<Pick<Ledger, 'stream'>>;
  /** Origins that get Access-Control-Allow-Origin; none by default. */
  readonly corsOrigins: readonly string[];
  /** Largest request body accepted (413 past it). */
  readonly bodyLimitBytes: number;
  /** Concurrent /api/stream clients; 503 past it. */
  readonly maxStreamClients: number;
  /** Reads payloads stored by reference (an item's payload download); resolved lazily. Without it such a download answers 502 (an app built without Kafka). */
  readonly payloadReader?: () => Promise<Pick<Ledger, 'readPayload'>>;
  /** Decrypts a plan's payloads for display (a master key is configured); absent: shown as stored. */
  readonly openerFor?: PayloadOpenerFor;
}

export const HTTP_DEFAULTS = Object.freeze({ bodyLimitBytes: 1024 * 1024, maxStreamClients: 100 });

const ajvCompilers = AjvCompiler();
// allowUnionTypes: `type: ['string', 'integer']` (a fork's `at`) is meant; strict mode only logged it.
const AJV_BASE = { removeAdditional: false, allErrors: false, allowUnionTypes: true } as const;

/** Validators that coerce query strings and parameters, and leave bodies as they are. */
function validatorsByPart(externalSchemas: unknown, _options: unknown) {
  const coercing = ajvCompilers(externalSchemas as never, { customOptions: { ...AJV_BASE, coerceTypes: 'array' } } as never);
  const exact = ajvCompilers(externalSchemas as never, { customOptions: { ...AJV_BASE, coerceTypes: false } } as never);
  return (route: { httpPart?: string }) => (route.httpPart === 'body' ? exact : coercing)(route as never);
}

/**
 * Answers are serialized as a route without a response schema would be, whatever its schema says: the
 * response schemas document the API (responses.ts), they never drop or coerce a field.
 */
const asJson = () => (data: unknown) => JSON.stringify(data);

const packageVersion = () => (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;

/** The projector's HTTP API and dashboard. */
export function buildHttp(opts: HttpOptions) {
  const { service, logger, tokens } = opts;
  const app = Fastify({
    // Request lines are info-level; the API logs its own warnings and errors.
    loggerInstance: logger.child({ component: 'http' }, { level: 'warn' }),
    forceCloseConnections: true,
    bodyLimit: opts.bodyLimitBytes,
    // Query strings and path parameters arrive as text and are coerced to their schema's types; a body is
    // JSON and is taken as sent: `goal: 42` must be refused, not recorded as "42".
    schemaController: { compilersFactory: { buildValidator: validatorsByPart, buildSerializer: () => asJson } },
  });
  // Before any route: the document lists every route the app registers.
  const openApi = openApiCollector({ version: packageVersion() });
  app.addHook('onRoute', openApi.onRoute);
  app.decorateRequest('principal', null);
  app.setErrorHandler(errorHandler(logger));
  if (opts.corsOrigins.length > 0) {
    const cors = corsHandlers(opts.corsOrigins);
    app.addHook('onRequest', cors.onRequest);
    const preflight = {
      tags: ['operations'],
      summary: 'CORS preflight',
      description: 'Only when PLAN_LEDGER_API_CORS_ORIGINS lists origins: an exact listed Origin gets 204 with the allowed methods (GET, POST) and headers (authorization, content-type); any other, 403. Every answer carries Access-Control-Allow-Origin for a listed Origin.',
      response: { 204: { description: 'Allowed' }, 403: errorJson('The origin is not listed (`forbidden`)') },
    };
    app.options('/*', { schema: preflight }, cors.preflight);
  }

  void app.register(healthRoutes, { service });
  void app.register(dashboardRoutes);
  void app.register(planReadRoutes, { service, authorize: requireScope(tokens, 'read'), ...(opts.openerFor ? { openerFor: opts.openerFor } : {}) });
  const payloads = opts.payloadReader ?? (() => Promise.reject(new Error('no ledger: this app was built without Kafka')));
  void app.register(itemDetailRoutes, { service, authorize: requireScope(tokens, 'read'), payloads, ...(opts.openerFor ? { openerFor: opts.openerFor } : {}) });
  void app.register(operationsRoutes, { service, views: new OperatorViews(service), authorize: requireScope(tokens, 'read') });
  void app.register(streamRoutes, { service, authorize: requireScope(tokens, 'read'), maxClients: opts.maxStreamClients });
  const streamReader = opts.streamReader ?? (() => Promise.reject(new Error('no ledger: this app was built without Kafka')));
  void app.register(planStreamRoutes, { reader: streamReader, authorize: requireScope(tokens, 'read'), maxClients: opts.maxStreamClients });
  void app.register(planWriteRoutes, { service, logger, authorize: requireScope(tokens, 'write'), submitter: opts.submitter });
  void app.register(openApiRoutes, { authorize: requireScope(tokens, 'read'), document: openApi.document });
  return app;
}
