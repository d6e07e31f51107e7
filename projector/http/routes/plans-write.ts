// Write routes: commands submitted through the ledger client, answered once the owning executor decided.
// The auth hook is added once, at this plugin's scope. The recorded actor (`by`, the approver) is the
// token's principal; a `by` in the body is accepted for older clients and ignored.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Ledger } from '../../../src/client/index.js';
import type { Logger } from '../../../src/logging.js';
import type { ProjectionService } from '../../projector.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { notFound, sendOutcome } from '../errors.js';
import { commandResponses, errorJson, planNotFound } from '../responses.js';
import { approveBody, cancelBody, createPlanBody, forkBody, itemParams, planParams, rejectBody, retryBody, signalBody, signalParams } from '../schemas.js';

/**
 * What the write routes need to submit commands: the ledger client (`connectLedger`) satisfies it.
 * Each call resolves once the owning executor decided the command.
 */
export type CommandSubmitter = Pick<Ledger, 'createPlan' | 'approve' | 'reject' | 'cancel' | 'retryItem' | 'signal' | 'fork'>;

export interface PlanWriteOptions {
  readonly service: ProjectionService;
  readonly logger: Logger;
  readonly authorize: ScopeGuard;
  readonly submitter: () => Promise<CommandSubmitter>;
}

export const planWriteRoutes: FastifyPluginAsync<PlanWriteOptions> = async (app, opts) => {
  const model = opts.service.model;
  guardRoutes(app, opts.authorize);
  const actor = (req: FastifyRequest): string => {
    if (!req.principal) throw new Error('write route reached without a principal'); // the hook guarantees one
    return req.principal.name;
  };
  const submit = (reply: Parameters<typeof sendOutcome>[0], run: (s: CommandSubmitter) => ReturnType<Parameters<typeof sendOutcome>[2]>) =>
    sendOutcome(reply, opts.logger, async () => run(await opts.submitter()));

  const DECIDED = " Answered once the plan's owning executor decided the command; the actor recorded is the token's principal.";
  const createSchema = {
    tags: ['commands'],
    summary: 'Create a plan',
    description: `A new plan with its goal, mode, labels and items.${DECIDED}`,
    body: createPlanBody,
    response: commandResponses,
  };
  app.post('/api/plans', { schema: createSchema }, async (req, reply) => {
    const { by: _ignored, ...input } = req.body as Parameters<CommandSubmitter['createPlan']>[0] & { by?: string };
    const by = actor(req);
    return submit(reply, (s) => s.createPlan(input, { by }));
  });

  const planCommand = (path: string, doc: { summary: string; description: string }, body: object, run: (s: CommandSubmitter, planId: string, body: Record<string, string | undefined>, by: string) => ReturnType<CommandSubmitter['approve']>) =>
    app.post(path, { schema: { tags: ['commands'], ...doc, params: planParams, body, response: { ...commandResponses, 404: planNotFound } } }, async (req, reply) => {
      const planId = (req.params as { id: string }).id;
      if (!model.has(planId)) return notFound(reply, planId);
      const by = actor(req);
      return submit(reply, (s) => run(s, planId, (req.body ?? {}) as Record<string, string | undefined>, by));
    });

  planCommand('/api/plans/:id/approve', { summary: 'Approve a proposed plan', description: `Approves the digest an operator reviewed (a stale digest is a 409 STALE_DIGEST); the comment is recorded as the approval's note.${DECIDED}` }, approveBody, (s, planId, b, by) => s.approve(planId, b['digest']!, { by, ...(b['comment'] ? { note: b['comment'] } : {}) }));
  planCommand('/api/plans/:id/reject', { summary: 'Reject a proposed plan', description: `Rejects the plan with a reason (and, optionally, the digest rejected).${DECIDED}` }, rejectBody, (s, planId, b, by) => s.reject(planId, b['reason']!, { by, ...(b['digest'] ? { digest: b['digest'] } : {}) }));
  planCommand('/api/plans/:id/cancel', { summary: 'Cancel a plan', description: `Cancels the plan with a reason: its pending items, and those waiting for a signal, are cancelled.${DECIDED}` }, cancelBody, (s, planId, b, by) => s.cancel(planId, b['reason'], { by }));

  const retrySchema = {
    tags: ['commands'],
    summary: 'Retry a failed item',
    description: `Runs a failed item again (its retry budget counts from here).${DECIDED}`,
    params: itemParams,
    body: retryBody,
    response: { ...commandResponses, 404: errorJson('The plan is not known, or has no such item (`not_found`)') },
  };
  app.post('/api/plans/:id/items/:itemId/retry', { schema: retrySchema }, async (req, reply) => {
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
  const signalSchema = {
    tags: ['commands'],
    summary: 'Signal the items waiting for a name',
    description: `Delivers a signal (its data, any JSON) to the plan's items waiting for \`name\`; a plan or name that is not waiting is a 409 NOT_WAITING, a signal id seen before DUPLICATE_SIGNAL.${DECIDED}`,
    params: signalParams,
    body: signalBody,
    response: { ...commandResponses, 404: planNotFound },
  };
  app.post('/api/plans/:id/signals/:name', { schema: signalSchema }, async (req, reply) => {
    const { id: planId, name } = req.params as { id: string; name: string };
    if (!model.has(planId)) return notFound(reply, planId);
    const body = (req.body ?? {}) as { data?: unknown; signalId?: string };
    const by = actor(req);
    return submit(reply, (s) => s.signal(planId, name, body.data ?? null, { by, ...(body.signalId ? { signalId: body.signalId } : {}) }));
  });

  // A fork of a plan the projector knows; the token's principal creates it. A bad fork point is a 400 naming `at`.
  const forkSchema = {
    tags: ['commands'],
    summary: 'Fork a plan',
    description: `A new plan from this one's history up to a point (a seq or an item id), with new inputs for items that will run; a bad fork point is a 400 naming \`at\`. The token's principal creates it.${DECIDED}`,
    params: planParams,
    body: forkBody,
    response: { ...commandResponses, 404: planNotFound },
  };
  app.post('/api/plans/:id/fork', { schema: forkSchema }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!model.has(planId)) return notFound(reply, planId);
    const b = req.body as { at: string | number; set?: Record<string, unknown>; planId?: string; mode?: 'propose' | 'execute' };
    const by = actor(req);
    return submit(reply, (s) => s.fork(planId, { at: b.at, by, ...(b.set ? { set: b.set } : {}), ...(b.planId ? { planId: b.planId } : {}), ...(b.mode ? { mode: b.mode } : {}) }));
  });
};
