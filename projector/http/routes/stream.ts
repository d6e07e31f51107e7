// Live updates: one SSE message per batch of changes (plan ids); the page refetches what it shows.
// A cap on concurrent clients keeps one misbehaving page (or a scraper) from holding every socket.
import type { FastifyPluginAsync } from 'fastify';
import type { ProjectionService } from '../../projector.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { errorJson, textOf } from '../responses.js';
import { openEventStream, SseClients } from '../sse.js';

export interface StreamOptions {
  readonly service: ProjectionService;
  readonly authorize: ScopeGuard;
  readonly maxClients: number;
}

export const streamRoutes: FastifyPluginAsync<StreamOptions> = async (app, { service, authorize, maxClients }) => {
  const model = service.model;
  const clients = new SseClients(maxClients);
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
    const res = openEventStream(reply, clients, `retry: 2000\nevent: hello\ndata: ${JSON.stringify({ version: model.version, clients: clients.count + 1 })}\n\n`, 'poll /api/plans or retry later');
    if (res === undefined) return reply;
    const off = model.onChange((plans, version) => res.write(`event: change\ndata: ${JSON.stringify({ version, plans: plans.slice(0, 500) })}\n\n`));
    res.once('close', off);
  });
};
