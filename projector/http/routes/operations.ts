// The operator's read routes: problems (stalled plans, failed items, DLQ records), the overview (plans
// by status, recent activity, consumer groups) and a plan's verification, computed on request.
import type { FastifyPluginAsync } from 'fastify';
import type { OperatorViews } from '../../operations.js';
import type { ProjectionService } from '../../projector.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { notFound } from '../errors.js';
import { errorJson, executorsShape, json, overviewShape, planNotFound, problemsShape, verifyShape } from '../responses.js';
import { planParams } from '../schemas.js';

export interface OperationsOptions {
  readonly service: ProjectionService;
  readonly views: OperatorViews;
  readonly authorize: ScopeGuard;
}

export const operationsRoutes: FastifyPluginAsync<OperationsOptions> = async (app, { service, views, authorize }) => {
  guardRoutes(app, authorize);

  const problemsSchema = {
    tags: ['operations'],
    summary: 'Problems: stalled plans, failed items, DLQ records',
    description: "The dashboard's Problems view: stalled plans with the record that stalled them, failed plans and items with their reason, and the newest DLQ records with their cause and source offset (read from Kafka, cached 2 s).",
    response: { 200: json('The problems', problemsShape) },
  };
  app.get('/api/problems', { schema: problemsSchema }, async () => views.problems());
  const overviewSchema = {
    tags: ['operations'],
    summary: 'Overview: plans by status, activity, consumer groups',
    description: "The dashboard's Overview: plans by status, events, completions, failures and retries per 10 s, every `<prefix>.*` consumer group with its members, their partitions and the lag per partition (cached 2 s), and this projector's partitions.",
    response: { 200: json('The overview', overviewShape) },
  };
  app.get('/api/overview', { schema: overviewSchema }, async () => views.overview());

  const executorsSchema = {
    tags: ['operations'],
    summary: 'Executors: who runs, with which tools',
    description:
      'The executors announced on `<prefix>.plan-executors`, as `ledger.executors()` and `plan-ledger executors --json` give them: live ones, stale ones (no heartbeat within three of their intervals) with the reason, and the records that could not be read. Read from Kafka, cached 1 s.',
    response: { 200: json('The executors', executorsShape) },
  };
  app.get('/api/executors', { schema: executorsSchema }, async () => views.executors());

  const verifySchema = {
    tags: ['operations'],
    summary: 'Verify a plan from the log',
    description: 'Reads the plan\'s events and snapshots from Kafka now and checks its hash chain, determinism (an independent decode folds to the same state) and snapshots. Requests for one plan share one read; past 4 plans verified at once, 503 with retry-after.',
    params: planParams,
    response: { 200: json('The verification', verifyShape), 404: planNotFound, 503: errorJson('Several plans are being verified already (`unavailable`, retry-after 2)') },
  };
  app.get('/api/plans/:id/verify', { schema: verifySchema }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!service.model.has(planId)) return notFound(reply, planId);
    const running = views.verify(planId);
    if (!running) return reply.code(503).header('retry-after', '2').send({ error: 'unavailable', message: 'several plans are being verified already; retry in a moment' });
    const v = await running;
    return { planId, ok: v.ok, events: v.events, head: v.head, stateDigest: v.stateDigest, checks: v.checks, firstBroken: v.firstBroken };
  });
};
