// Read routes over the projection: the plan list, one plan, its events, its audit as of a seq or time.
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import { stateDigest } from '../../../src/plan/index.js';
import { showEvents, showPlan } from '../../../src/secrets/redact.js';
import { auditAsOf, parseAsOf, parsePlanQuery, queryPlans, summarize } from '../../../src/projection/index.js';
import type { ProjectionService } from '../../projector.js';
import { notFound } from '../errors.js';
import { auditQuery, eventsQuery, planListQuery, planParams } from '../schemas.js';

/** How a payload of a plan is read for display: decrypted with the plan's key; undefined when there is nothing to open. */
export type PayloadOpenerFor = (planId: string) => Promise<((json: string) => string) | undefined>;

export interface PlanReadOptions {
  readonly service: ProjectionService;
  readonly authorize: onRequestHookHandler;
  readonly openerFor?: PayloadOpenerFor;
}

/**
 * Plans, events and audits are shown, never the raw payloads: each payload is decrypted when the
 * projector holds the plan's key, then the item's secret fields read "[secret]". Digests are the real
 * state's.
 */
export const planReadRoutes: FastifyPluginAsync<PlanReadOptions> = async (app, { service, authorize, openerFor }) => {
  const model = service.model;
  const opener = (planId: string) => (openerFor ? openerFor(planId) : Promise.resolve(undefined));
  app.addHook('onRequest', authorize);

  /** Who the token belongs to and what it may do (the dashboard shows it and hides what it may not do). */
  app.get('/api/whoami', async (req) => ({ principal: req.principal?.name ?? null, scopes: req.principal?.scopes ?? ['read'] }));

  app.get('/api/plans', { schema: { querystring: planListQuery } }, async (req) => {
    const q = req.query as { status?: string[]; label?: string[]; limit?: number; cursor?: string };
    const page = queryPlans(model.views(), parsePlanQuery(q));
    return { ...page, version: model.version };
  });

  const childrenOf = (planId: string) => {
    const out: Array<{ planId: string; itemId: string; status: string | null; goal: string }> = [];
    for (const c of model.views()) {
      const s = c.state ?? c.summary; // a cold child is listed from its summary
      if (s?.parent?.planId === planId) out.push({ planId: c.planId, itemId: s.parent.itemId, status: s.status, goal: s.goal });
    }
    return out.sort((a, b) => a.planId.localeCompare(b.planId));
  };

  app.get('/api/plans/:id', { schema: { params: planParams } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    return {
      planId,
      partition: v.partition,
      lastOffset: v.lastOffset,
      summary: summarize(v),
      stalled: v.stalled,
      stateDigest: v.state ? stateDigest(v.state) : null,
      state: v.state ? showPlan(v.state, await opener(planId)) : null,
      // Delegation both ways: the plan this one runs for, and the plans its items delegated to.
      parent: v.state?.parent ? { ...v.state.parent, status: model.view(v.state.parent.planId)?.state?.status ?? model.cold.get(v.state.parent.planId)?.summary.status ?? null } : null,
      children: childrenOf(planId),
    };
  });

  app.get('/api/plans/:id/events', { schema: { params: planParams, querystring: eventsQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!model.has(planId)) return notFound(reply, planId);
    const from = (req.query as { fromSeq?: number }).fromSeq ?? 1;
    const events = await model.events(planId);
    // Redacted with the secret paths of the plan's own ItemAdded events (all of them, before the filter).
    return { planId, events: showEvents(events, undefined, await opener(planId)).filter((e) => e.seq >= from) };
  });

  app.get('/api/plans/:id/audit', { schema: { params: planParams, querystring: auditQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const asOf = parseAsOf((req.query as { asOf?: string }).asOf);
    if (!model.has(planId)) return notFound(reply, planId);
    const events = await model.events(planId);
    const open = await opener(planId);
    const real = auditAsOf(planId, events, asOf);
    // The timeline and attempts from the shown events (decrypted, redacted); the plan and its digests are the real ones, shown.
    const shown = auditAsOf(planId, showEvents(events, undefined, open), asOf);
    return { ...shown, state: real.state ? showPlan(real.state, open) : null, stateDigest: real.stateDigest, stalled: model.view(planId)?.stalled ?? null };
  });
};
