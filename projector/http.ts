import { timingSafeEqual } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { CommandOutcome, Ledger } from '../src/client/index.js';
import { isLedgerError } from '../src/errors.js';
import type { Logger } from '../src/logging.js';
import { stateDigest, type CommandRejected } from '../src/plan/index.js';
import { auditAsOf, parseAsOf, parsePlanQuery, QueryError, queryPlans, summarize } from '../src/projection/index.js';
import type { ProjectionService } from './projector.js';

/**
 * What the write routes need to submit commands: the ledger client (`connectLedger`) satisfies it.
 * Each call resolves once the owning executor decided the command.
 */
export type CommandSubmitter = Pick<Ledger, 'createPlan' | 'approve' | 'reject' | 'cancel' | 'retryItem'>;

export interface HttpOptions {
  readonly service: ProjectionService;
  readonly logger: Logger;
  /** Bearer token of the write routes; without one they answer 401 and say why. */
  readonly apiToken: string | null;
  /** Submits commands; resolved lazily on the first write. */
  readonly submitter: () => Promise<CommandSubmitter>;
}

const id = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } as const;
const planParams = { type: 'object', required: ['id'], properties: { id } } as const;
const actor = { type: 'string', minLength: 1, maxLength: 256 } as const;

const publicDir = [new URL('./public/', import.meta.url), new URL('../../projector/public/', import.meta.url)]
  .map((u) => fileURLToPath(u))
  .find((d) => existsSync(`${d}index.html`));

const assets: Record<string, { file: string; type: string }> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/style.css': { file: 'style.css', type: 'text/css; charset=utf-8' },
};

/** The projector's HTTP API and dashboard (fastify, JSON schemas on every route). */
export function buildHttp(opts: HttpOptions) {
  const { service } = opts;
  const model = service.model;
  const app = Fastify({
    // Request lines are info-level; the API logs its own warnings and errors.
    loggerInstance: opts.logger.child({ component: 'http' }, { level: 'warn' }),
    forceCloseConnections: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
  });

  // 400s name the field.
  app.setErrorHandler((err: Error & { validation?: Array<{ instancePath: string; params: Record<string, unknown>; message?: string }>; validationContext?: string; statusCode?: number }, _req, reply) => {
    if (err.validation && err.validation.length > 0) {
      const v = err.validation[0]!;
      const path = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
      const missing = typeof v.params['missingProperty'] === 'string' ? v.params['missingProperty'] : undefined;
      const extra = typeof v.params['additionalProperty'] === 'string' ? v.params['additionalProperty'] : undefined;
      const field = [path, missing ?? extra].filter(Boolean).join('.') || (err.validationContext ?? 'request');
      const message = missing ? `${field} is required` : extra ? `${field} is not allowed` : `${field} ${v.message ?? 'is invalid'}`;
      return reply.code(400).send({ error: 'bad_request', field, message: `${err.validationContext ?? 'request'}: ${message}` });
    }
    if (err instanceof QueryError) return reply.code(400).send({ error: 'bad_request', field: err.field, message: err.message });
    const status = err.statusCode && err.statusCode >= 400 ? err.statusCode : 500;
    if (status >= 500) opts.logger.error({ err: err.message }, 'request failed');
    return reply.code(status).send({ error: status >= 500 ? 'internal' : 'bad_request', message: err.message });
  });

  const authorize = async (req: FastifyRequest, reply: FastifyReply) => {
    if (!opts.apiToken) {
      return reply.code(401).send({ error: 'unauthorized', message: 'write routes are disabled: no API token is configured (set PLAN_LEDGER_API_TOKEN)' });
    }
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header) : null;
    if (!m) return reply.code(401).send({ error: 'unauthorized', message: 'missing bearer token (Authorization: Bearer <token>)' });
    const given = Buffer.from(m[1]!.trim());
    const want = Buffer.from(opts.apiToken);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return reply.code(403).send({ error: 'forbidden', message: 'wrong API token' });
  };

  const notFound = (reply: FastifyReply, planId: string) => reply.code(404).send({ error: 'not_found', message: `plan ${planId} is not known to this projector` });

  /** Runs a command; maps the ledger's answer (or a CommandRejected event) to HTTP. */
  const submit = async (reply: FastifyReply, run: (s: CommandSubmitter) => Promise<CommandOutcome & { digest?: string }>) => {
    let outcome;
    try {
      outcome = await run(await opts.submitter());
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      if (isLedgerError(e)) {
        const status = { VALIDATION: 400, REJECTED: 409, CONFLICT: 409, NOT_FOUND: 404, TIMEOUT: 504, UNAVAILABLE: 503 }[e.code as string] ?? 500;
        const field = typeof e.details['field'] === 'string' ? { field: e.details['field'] } : {};
        // The ledger's rejection code (STALE_DIGEST, PLAN_FINISHED ...) is the useful part of a 409.
        const code = e.code === 'REJECTED' && typeof e.details['rejection'] === 'string' ? { code: e.details['rejection'] } : {};
        return reply.code(status).send({ error: e.code.toLowerCase(), message, ...code, ...field });
      }
      opts.logger.error({ err: message }, 'command submission failed');
      return reply.code(502).send({ error: 'submit_failed', message });
    }
    const rejected = outcome.events.find((e) => e.type === 'CommandRejected');
    const body = { planId: outcome.planId, commandId: outcome.commandId, events: outcome.events.map((e) => ({ seq: e.seq, type: e.type })), ...(outcome.digest ? { digest: outcome.digest } : {}) };
    if (rejected) {
      const d = rejected.data as CommandRejected;
      return reply.code(409).send({ error: 'rejected', code: d.code, message: d.message, field: d.field, ...body });
    }
    return reply.code(202).send(body);
  };

  app.get('/healthz', { schema: { response: { 200: { type: 'object', additionalProperties: true }, 503: { type: 'object', additionalProperties: true } } } }, async (_req, reply) => {
    const h = service.health();
    const byStatus = Object.fromEntries(model.countByStatus());
    return reply.code(h.ok ? 200 : 503).send({
      status: h.ok ? 'ok' : 'unhealthy',
      reason: h.reason,
      partitions: service.partitions(),
      plans: byStatus,
      dlqRecords: service.dlqWritten,
    });
  });

  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', service.metrics.registry.contentType);
    return service.metrics.registry.metrics();
  });

  app.get(
    '/api/plans',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            status: { type: 'array', items: { type: 'string' } },
            label: { type: 'array', items: { type: 'string' } },
            limit: { type: 'integer', minimum: 1, maximum: 500 },
            cursor: { type: 'string', maxLength: 1024 },
          },
        },
      },
    },
    async (req) => {
      const q = req.query as { status?: string[]; label?: string[]; limit?: number; cursor?: string };
      const page = queryPlans(model.views(), parsePlanQuery(q));
      return { ...page, version: model.version };
    },
  );

  app.get('/api/plans/:id', { schema: { params: planParams } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const v = model.view(planId);
    if (!v) return notFound(reply, planId);
    return {
      planId,
      partition: v.partition,
      lastOffset: v.lastOffset,
      summary: summarize(v),
      stalled: v.stalled,
      stateDigest: v.state ? stateDigest(v.state) : null,
      state: v.state ?? null,
    };
  });

  app.get(
    '/api/plans/:id/events',
    { schema: { params: planParams, querystring: { type: 'object', additionalProperties: false, properties: { fromSeq: { type: 'integer', minimum: 1 } } } } },
    async (req, reply) => {
      const planId = (req.params as { id: string }).id;
      if (!model.view(planId)) return notFound(reply, planId);
      const from = (req.query as { fromSeq?: number }).fromSeq ?? 1;
      const events = await model.events(planId);
      return { planId, events: events.filter((e) => e.seq >= from) };
    },
  );

  app.get(
    '/api/plans/:id/audit',
    { schema: { params: planParams, querystring: { type: 'object', additionalProperties: false, properties: { asOf: { type: 'string', maxLength: 64 } } } } },
    async (req, reply) => {
      const planId = (req.params as { id: string }).id;
      const asOf = parseAsOf((req.query as { asOf?: string }).asOf);
      const v = model.view(planId);
      if (!v) return notFound(reply, planId);
      const events = await model.events(planId);
      return { ...auditAsOf(planId, events, asOf), stalled: v.stalled };
    },
  );

  const itemSchema = {
    type: 'object',
    required: ['id', 'tool'],
    additionalProperties: false,
    properties: {
      id,
      title: { type: 'string', maxLength: 1000 },
      why: { type: 'string', maxLength: 10_000 },
      dependsOn: { type: 'array', items: id },
      tool: { type: 'string', minLength: 1, maxLength: 256 },
      input: {},
      retry: {
        type: 'object',
        additionalProperties: false,
        properties: {
          maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
          initialBackoffMs: { type: 'integer', minimum: 0 },
          backoffMultiplier: { type: 'number', minimum: 1 },
          maxBackoffMs: { type: 'integer', minimum: 0 },
        },
      },
    },
  } as const;

  app.post(
    '/api/plans',
    {
      onRequest: authorize,
      schema: {
        body: {
          type: 'object',
          required: ['goal', 'mode'],
          additionalProperties: false,
          properties: {
            planId: id,
            goal: { type: 'string', minLength: 1, maxLength: 10_000 },
            mode: { type: 'string', enum: ['propose', 'execute'] },
            labels: { type: 'object', additionalProperties: { type: 'string' } },
            items: { type: 'array', maxItems: 1000, items: itemSchema },
            by: actor,
          },
        },
      },
    },
    async (req, reply) => {
      const { by, ...input } = req.body as Parameters<CommandSubmitter['createPlan']>[0] & { by?: string };
      return submit(reply, (s) => s.createPlan(input, by ? { by } : {}));
    },
  );

  const planCommand = (path: string, body: object, run: (s: CommandSubmitter, planId: string, body: Record<string, string | undefined>) => ReturnType<CommandSubmitter['approve']>) =>
    app.post(path, { onRequest: authorize, schema: { params: planParams, body } }, async (req, reply) => {
      const planId = (req.params as { id: string }).id;
      if (!model.view(planId)) return notFound(reply, planId);
      return submit(reply, (s) => run(s, planId, (req.body ?? {}) as Record<string, string | undefined>));
    });

  planCommand(
    '/api/plans/:id/approve',
    { type: 'object', required: ['digest', 'by'], additionalProperties: false, properties: { digest: { type: 'string', pattern: '^[0-9a-f]{64}$' }, by: actor, comment: { type: 'string', maxLength: 10_000 } } },
    (s, planId, b) => s.approve(planId, b['digest']!, { by: b['by'], ...(b['comment'] ? { note: b['comment'] } : {}) }),
  );
  planCommand(
    '/api/plans/:id/reject',
    { type: 'object', required: ['reason', 'by'], additionalProperties: false, properties: { reason: { type: 'string', minLength: 1, maxLength: 10_000 }, by: actor, digest: { type: 'string', pattern: '^[0-9a-f]{64}$' } } },
    (s, planId, b) => s.reject(planId, b['reason']!, { by: b['by'], ...(b['digest'] ? { digest: b['digest'] } : {}) }),
  );
  planCommand(
    '/api/plans/:id/cancel',
    { type: 'object', required: ['reason'], additionalProperties: false, properties: { reason: { type: 'string', minLength: 1, maxLength: 10_000 }, by: actor } },
    (s, planId, b) => s.cancel(planId, b['reason'], b['by'] ? { by: b['by'] } : {}),
  );

  app.post(
    '/api/plans/:id/items/:itemId/retry',
    {
      onRequest: authorize,
      schema: {
        params: { type: 'object', required: ['id', 'itemId'], properties: { id, itemId: id } },
        body: { type: ['object', 'null'], additionalProperties: false, properties: { by: actor } },
      },
    },
    async (req, reply) => {
      const { id: planId, itemId } = req.params as { id: string; itemId: string };
      const v = model.view(planId);
      if (!v) return notFound(reply, planId);
      if (!v.state || !Object.prototype.hasOwnProperty.call(v.state.items, itemId)) {
        return reply.code(404).send({ error: 'not_found', message: `plan ${planId} has no item ${itemId}` });
      }
      const by = (req.body as { by?: string } | null)?.by;
      return submit(reply, (s) => s.retryItem(planId, itemId, by ? { by } : {}));
    },
  );

  // Live updates: one SSE message per batch of changes (plan ids), the page refetches what it shows.
  app.get('/api/stream', async (req, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write(`retry: 2000\nevent: hello\ndata: ${JSON.stringify({ version: model.version })}\n\n`);
    const off = model.onChange((plans, version) => res.write(`event: change\ndata: ${JSON.stringify({ version, plans: plans.slice(0, 500) })}\n\n`));
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    req.raw.on('close', () => {
      off();
      clearInterval(ping);
    });
  });

  for (const [route, asset] of Object.entries(assets)) {
    app.get(route, async (_req, reply) => {
      if (!publicDir) return reply.code(404).send({ error: 'not_found', message: 'dashboard files are missing (projector/public)' });
      reply.header('content-type', asset.type).header('cache-control', 'no-cache');
      return readFileSync(`${publicDir}${asset.file}`);
    });
  }

  return app;
}
