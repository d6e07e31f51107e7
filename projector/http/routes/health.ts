// /healthz and /metrics: open, for probes and scrapers.
import type { FastifyPluginAsync } from 'fastify';
import type { ProjectionService } from '../../projector.js';
import { healthShape, json, textOf } from '../responses.js';

export const healthRoutes: FastifyPluginAsync<{ service: ProjectionService }> = async (app, { service }) => {
  const healthzSchema = {
    tags: ['operations'],
    summary: 'Health, for probes',
    description: 'The projector is healthy until it stops. Carries counts, never plan contents.',
    response: { 200: json('Healthy', healthShape), 503: json('Unhealthy (stopped)', healthShape) },
  };
  app.get('/healthz', { schema: healthzSchema }, async (_req, reply) => {
    const h = service.health();
    return reply.code(h.ok ? 200 : 503).send({
      status: h.ok ? 'ok' : 'unhealthy',
      reason: h.reason,
      partitions: service.partitions(),
      plans: Object.fromEntries(service.model.countByStatus()),
      dlqRecords: service.dlqWritten,
    });
  });

  const metricsSchema = {
    tags: ['operations'],
    summary: 'Prometheus metrics',
    description: "The projector's metrics in Prometheus' text format (`plan_ledger_projector_*`), for scrapers. Counts, never plan contents.",
    response: { 200: textOf('The metrics', 'text/plain') },
  };
  app.get('/metrics', { schema: metricsSchema }, async (_req, reply) => {
    reply.header('content-type', service.metrics.registry.contentType);
    return service.metrics.registry.metrics();
  });
};
