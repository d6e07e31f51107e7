// Write routes: commands submitted through the ledger client, answered once the owning executor decided.
// The auth hook is added once, at this plugin's scope.
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import type { Logger } from '../../../src/logging.js';
import type { ProjectionService } from '../../projector.js';
import type { CommandSubmitter } from '../index.js';
import { notFound, sendOutcome } from '../errors.js';
import { approveBody, cancelBody, createPlanBody, itemParams, planParams, rejectBody, retryBody } from '../schemas.js';

export interface PlanWriteOptions {
  readonly service: ProjectionService;
  readonly logger: Logger;
  readonly authorize: onRequestHookHandler;
  readonly submitter: () => Promise<CommandSubmitter>;
}

export const planWriteRoutes: FastifyPluginAsync<PlanWriteOptions> = async (app, opts) => {
  const model = opts.service.model;
  app.addHook('onRequest', opts.authorize);
  const submit = (reply: Parameters<typeof sendOutcome>[0], run: (s: CommandSubmitter) => ReturnType<Parameters<typeof sendOutcome>[2]>) =>
    sendOutcome(reply, opts.logger, async () => run(await opts.submitter()));

  app.post('/api/plans', { schema: { body: createPlanBody } }, async (req, reply) => {
    const { by, ...input } = req.body as Parameters<CommandSubmitter['createPlan']>[0] & { by?: string };
    return submit(reply, (s) => s.createPlan(input, by ? { by } : {}));
  });

  const planCommand = (path: string, body: object, run: (s: CommandSubmitter, planId: string, body: Record<string, string | undefined>) => ReturnType<CommandSubmitter['approve']>) =>
    app.post(path, { schema: { params: planParams, body } }, async (req, reply) => {
      const planId = (req.params as { id: string }).id;
      if (!model.view(planId)) return notFound(reply, planId);
      return submit(reply, (s) => run(s, planId, (req.body ?? {}) as Record<string, string | undefined>));
    });

  planCommand('/api/plans/:id/approve', approveBody, (s, planId, b) => s.approve(planId, b['digest']!, { by: b['by'], ...(b['comment'] ? { note: b['comment'] } : {}) }));
  planCommand('/api/plans/:id/reject', rejectBody, (s, planId, b) => s.reject(planId, b['reason']!, { by: b['by'], ...(b['digest'] ? { digest: b['digest'] } : {}) }));
  planCommand('/api/plans/:id/cancel', cancelBody, (s, planId, b) => s.cancel(planId, b['reason'], b['by'] ? { by: b['by'] } : {}));

  app.post('/api/plans/:id/items/:itemId/retry', { schema: { params: itemParams, body: retryBody } }, async (req, reply) => {
    const { id: planId, itemId } = req.params as { id: string; itemId: string };
    const v = model.view(planId);
    if (!v) return notFound(reply, planId);
    if (!v.state || !Object.prototype.hasOwnProperty.call(v.state.items, itemId)) {
      return reply.code(404).send({ error: 'not_found', message: `plan ${planId} has no item ${itemId}` });
    }
    const by = (req.body as { by?: string } | null)?.by;
    return submit(reply, (s) => s.retryItem(planId, itemId, by ? { by } : {}));
  });
};
