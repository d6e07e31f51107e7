// /healthz and /metrics: open, for probes and scrapers.
import type { FastifyPluginAsync } from 'fastify';
import type { ProjectionService } from '../../projector.js';
import { healthResponse } from '../schemas.js';

export const healthRoutes: FastifyPluginAsync<{ service: ProjectionService }> = async (app, { service }) => {
  app.get('/healthz', { schema: { response: healthResponse } }, async (_req, reply) => {
    const h = service.health();
    return reply.code(h.ok ? 200 : 503).send({
      status: h.ok ? 'ok' : 'unhealthy',
      reason: h.reason,
      partitions: service.partitions(),
      plans: Object.fromEntries(service.model.countByStatus()),
      dlqRecords: service.dlqWritten,
    });
  });

  app.get('/metrics', async (_req, reply) => {
    reply.header('content-type', service.metrics.registry.contentType);
    return service.metrics.registry.metrics();
  });
};
