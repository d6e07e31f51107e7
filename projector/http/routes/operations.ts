// The operator's read routes: problems (stalled plans, failed items, DLQ records), the overview (plans
// by status, recent activity, consumer groups) and a plan's verification, computed on request.
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import type { OperatorViews } from '../../operations.js';
import type { ProjectionService } from '../../projector.js';
import { notFound } from '../errors.js';
import { planParams } from '../schemas.js';

export interface OperationsOptions {
  readonly service: ProjectionService;
  readonly views: OperatorViews;
  readonly authorize: onRequestHookHandler;
}

export const operationsRoutes: FastifyPluginAsync<OperationsOptions> = async (app, { service, views, authorize }) => {
  app.addHook('onRequest', authorize);

  app.get('/api/problems', async () => views.problems());
  app.get('/api/overview', async () => views.overview());

  app.get('/api/plans/:id/verify', { schema: { params: planParams } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!service.model.has(planId)) return notFound(reply, planId);
    const running = views.verify(planId);
    if (!running) return reply.code(503).header('retry-after', '2').send({ error: 'unavailable', message: 'several plans are being verified already; retry in a moment' });
    const v = await running;
    return { planId, ok: v.ok, events: v.events, head: v.head, stateDigest: v.stateDigest, checks: v.checks, firstBroken: v.firstBroken };
  });
};
