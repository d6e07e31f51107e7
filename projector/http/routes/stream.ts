// Live updates: one SSE message per batch of changes (plan ids); the page refetches what it shows.
// A cap on concurrent clients keeps one misbehaving page (or a scraper) from holding every socket.
import type { FastifyPluginAsync } from 'fastify';
import type { ProjectionService } from '../../projector.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { errorJson, textOf } from '../responses.js';

export interface StreamOptions {
  readonly service: ProjectionService;
  readonly authorize: ScopeGuard;
  readonly maxClients: number;
}

export const streamRoutes: FastifyPluginAsync<StreamOptions> = async (app, { service, authorize, maxClients }) => {
  const model = service.model;
  let clients = 0;
  guardRoutes(app, authorize);
  const streamSchema = {
    tags: ['plans'],
    summary: 'Live changes (server-sent events)',
    description:
      'An SSE stream: first `event: hello` with `{ version, clients }`, then one `event: change` per batch of changes with `{ version, plans }` (the ids of the plans that changed, at most 500; refetch what you show), and a `: ping` comment every 15 s. ' +
      'Past PLAN_LEDGER_API_MAX_STREAMS concurrent clients (100), 503.',
    response: { 200: textOf('The stream', 'text/event-stream'), 503: errorJson('Too many live streams (`unavailable`, retry-after 5)') },
  };
  app.get('/api/stream', { schema: streamSchema }, async (_req, reply) => {
    if (clients >= maxClients) {
      return reply.code(503).header('retry-after', '5').send({ error: 'unavailable', message: `too many live streams (${maxClients}); poll /api/plans or retry later` });
    }
    clients += 1;
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    res.write(`retry: 2000\nevent: hello\ndata: ${JSON.stringify({ version: model.version, clients })}\n\n`);
    const off = model.onChange((plans, version) => res.write(`event: change\ndata: ${JSON.stringify({ version, plans: plans.slice(0, 500) })}\n\n`));
    const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
    res.on('close', () => {
      clients -= 1;
      off();
      clearInterval(ping);
    });
  });
};
