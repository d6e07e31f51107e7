// Write routes: commands submitted through the ledger client, answered once the owning executor decided.
// The auth hook is added once, at this plugin's scope. The recorded actor (`by`, the approver) is the
// token's principal; a `by` in the body is accepted for older clients and ignored.
import type { FastifyPluginAsync, FastifyRequest, onRequestHookHandler } from 'fastify';
import type { Ledger } from '../../../src/client/index.js';
import type { Logger } from '../../../src/logging.js';
import type { ProjectionService } from '../../projector.js';
import { notFound, sendOutcome } from '../errors.js';
import { approveBody, cancelBody, createPlanBody, forkBody, itemParams, planParams, rejectBody, retryBody, signalBody, signalParams } from '../schemas.js';

/**
 * What the write routes need to submit commands: the ledger client (`connectLedger`) satisfies it.
 * Each call resolves once the owning executor decided the command.
 */
export type CommandSubmitter = Pick<Ledger, 'createPlan' | 'approve' | 'reject' | 'cancel' | 'retryItem' | 'signal' | 'fork'>;

export interface PlanWriteOptions {
  readonly service: ProjectionService;
  readonly logger: Logger;
  readonly authorize: onRequestHookHandler;
  readonly submitter: () => Promise<CommandSubmitter>;
}

export const planWriteRoutes: FastifyPluginAsync<PlanWriteOptions> = async (app, opts) => {
  const model = opts.service.model;
  app.addHook('onRequest', opts.authorize);
  const actor = (req: FastifyRequest): string => {
    if (!req.principal) throw new Error('write route reached without a principal'); // the hook guarantees one
    return req.principal.name;
  };
  const submit = (reply: Parameters<typeof sendOutcome>[0], run: (s: CommandSubmitter) => ReturnType<Parameters<typeof sendOutcome>[2]>) =>
    sendOutcome(reply, opts.logger, async () => run(await opts.submitter()));

  app.post('/api/plans', { schema: { body: createPlanBody } }, async (req, reply) => {
    const { by: _ignored, ...input } = req.body as Parameters<CommandSubmitter['createPlan']>[0] & { by?: string };
    const by = actor(req);
    return submit(reply, (s) => s.createPlan(input, { by }));
  });

  const planCommand = (path: string, body: object, run: (s: CommandSubmitter, planId: string, body: Record<string, string | undefined>, by: string) => ReturnType<CommandSubmitter['approve']>) =>
    app.post(path, { schema: { params: planParams, body } }, async (req, reply) => {
      const planId = (req.params as { id: string }).id;
      if (!model.has(planId)) return notFound(reply, planId);
      const by = actor(req);
      return submit(reply, (s) => run(s, planId, (req.body ?? {}) as Record<string, string | undefined>, by));
    });

  planCommand('/api/plans/:id/approve', approveBody, (s, planId, b, by) => s.approve(planId, b['digest']!, { by, ...(b['comment'] ? { note: b['comment'] } : {}) }));
  planCommand('/api/plans/:id/reject', rejectBody, (s, planId, b, by) => s.reject(planId, b['reason']!, { by, ...(b['digest'] ? { digest: b['digest'] } : {}) }));
  planCommand('/api/plans/:id/cancel', cancelBody, (s, planId, b, by) => s.cancel(planId, b['reason'], { by }));

  app.post('/api/plans/:id/items/:itemId/retry', { schema: { params: itemParams, body: retryBody } }, async (req, reply) => {
    const { id: planId, itemId } = req.params as { id: string; itemId: string };
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    if (!v.state || !Object.prototype.hasOwnProperty.call(v.state.items, itemId)) {
      return reply.code(404).send({ error: 'not_found', message: `plan ${planId} has no item ${itemId}` });
    }
    const by = actor(req);
    return submit(reply, (s) => s.retryItem(planId, itemId, { by }));
  });

  // A signal for the plan's items waiting for `name`; the token's principal is the recorded signaller. A plan
  // or name that is not waiting is answered with the ledger's code (409 NOT_WAITING, DUPLICATE_SIGNAL).
  app.post('/api/plans/:id/signals/:name', { schema: { params: signalParams, body: signalBody } }, async (req, reply) => {
    const { id: planId, name } = req.params as { id: string; name: string };
    if (!model.has(planId)) return notFound(reply, planId);
    const body = (req.body ?? {}) as { data?: unknown; signalId?: string };
    const by = actor(req);
    return submit(reply, (s) => s.signal(planId, name, body.data ?? null, { by, ...(body.signalId ? { signalId: body.signalId } : {}) }));
  });

  // A fork of a plan the projector knows; the token's principal creates it. A bad fork point is a 400 naming `at`.
  app.post('/api/plans/:id/fork', { schema: { params: planParams, body: forkBody } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!model.has(planId)) return notFound(reply, planId);
    const b = req.body as { at: string | number; set?: Record<string, unknown>; planId?: string; mode?: 'propose' | 'execute' };
    const by = actor(req);
    return submit(reply, (s) => s.fork(planId, { at: b.at, by, ...(b.set ? { set: b.set } : {}), ...(b.planId ? { planId: b.planId } : {}), ...(b.mode ? { mode: b.mode } : {}) }));
  });
};
