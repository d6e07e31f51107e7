// Live updates: one SSE message per batch of changes (plan ids); the page refetches what it shows.
// A cap on concurrent clients keeps one misbehaving page (or a scraper) from holding every socket.
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import type { ProjectionService } from '../../projector.js';

export interface StreamOptions {
  readonly service: ProjectionService;
  readonly authorize: onRequestHookHandler;
  readonly maxClients: number;
}

export const streamRoutes: FastifyPluginAsync<StreamOptions> = async (app, { service, authorize, maxClients }) => {
  const model = service.model;
  let clients = 0;
  app.addHook('onRequest', authorize);
  app.get('/api/stream', async (_req, reply) => {
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
