// Live updates: one SSE message per batch of changes (plan ids); the page refetches what it shows.
import type { FastifyPluginAsync } from 'fastify';
import type { ProjectionService } from '../../projector.js';

export const streamRoutes: FastifyPluginAsync<{ service: ProjectionService }> = async (app, { service }) => {
  const model = service.model;
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
};
