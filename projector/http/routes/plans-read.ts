// Read routes over the projection: the plan list, one plan (or its header), a page of its items, its
// events, its audit as of a seq or time (whole, or a window of it).
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import { stateDigest } from '../../../src/plan/index.js';
import { atOrBefore, auditAsOf, foldAsOf, parseAsOf, parsePlanQuery, queryPlans, summarize } from '../../../src/projection/index.js';
import type { ProjectionService } from '../../projector.js';
import { notFound } from '../errors.js';
import { auditQuery, eventsQuery, itemsQuery, planListQuery, planParams, planQuery } from '../schemas.js';
import { AUDIT_PAGE_MAX, auditWindow, headerSummary, ITEM_PAGE_MAX, itemPage, pageNumber, parseItemStatuses, planHeader } from './plan-pages.js';

export const planReadRoutes: FastifyPluginAsync<{ service: ProjectionService; authorize: onRequestHookHandler }> = async (app, { service, authorize }) => {
  const model = service.model;
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

  app.get('/api/plans/:id', { schema: { params: planParams, querystring: planQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    // items=none: the header only, the same few KB for 10 items or 100,000 (and no stateDigest, which
    // hashes every item; the full plan and /verify have it).
    const headerOnly = (req.query as { items?: 'all' | 'none' }).items === 'none';
    return {
      planId,
      partition: v.partition,
      lastOffset: v.lastOffset,
      summary: headerOnly ? headerSummary(v) : summarize(v),
      stalled: v.stalled,
      ...(headerOnly ? { items: 'none', state: v.state ? planHeader(v.state) : null } : { stateDigest: v.state ? stateDigest(v.state) : null, state: v.state ?? null }),
      // Delegation both ways: the plan this one runs for, and the plans its items delegated to.
      parent: v.state?.parent ? { ...v.state.parent, status: model.view(v.state.parent.planId)?.state?.status ?? model.cold.get(v.state.parent.planId)?.summary.status ?? null } : null,
      children: childrenOf(planId),
    };
  });

  /** A page of the plan's items in plan order, optionally by status (any of), with the counts per status. */
  app.get('/api/plans/:id/items', { schema: { params: planParams, querystring: itemsQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const q = req.query as { offset?: number; limit?: number; status?: string[] };
    const offset = pageNumber('offset', q.offset, 0, Number.MAX_SAFE_INTEGER);
    const limit = pageNumber('limit', q.limit, 1, ITEM_PAGE_MAX);
    const status = parseItemStatuses(q.status);
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    if (!v.state) return reply.code(404).send({ error: 'not_found', message: `plan ${planId} has no state yet` });
    return itemPage(v.state, { offset, limit, status });
  });

  app.get('/api/plans/:id/events', { schema: { params: planParams, querystring: eventsQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!model.has(planId)) return notFound(reply, planId); // cold plans too: their events are read back
    const q = req.query as { fromSeq?: number; limit?: number };
    const from = pageNumber('fromSeq', q.fromSeq, 1, Number.MAX_SAFE_INTEGER) ?? 1;
    const limit = pageNumber('limit', q.limit, 1, AUDIT_PAGE_MAX);
    const events = (await model.events(planId)).filter((e) => e.seq >= from);
    if (limit === undefined) return { planId, events };
    // Paged: at most `limit` events; nextSeq is the fromSeq of the next page (null when none is left).
    const page = events.slice(0, limit);
    return { planId, events: page, nextSeq: events.length > page.length ? events[page.length]!.seq : null };
  });

  app.get('/api/plans/:id/audit', { schema: { params: planParams, querystring: auditQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const q = req.query as { asOf?: string; limit?: number; before?: number };
    const asOf = parseAsOf(q.asOf);
    const limit = pageNumber('limit', q.limit, 1, AUDIT_PAGE_MAX);
    const before = pageNumber('before', q.before, 1, Number.MAX_SAFE_INTEGER);
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    const events = await model.events(planId);
    if (limit === undefined && before === undefined) return { ...auditAsOf(planId, events, asOf), stalled: v.stalled };
    // A window of the timeline and its attempts, with the plan's header as of that point (no items).
    const upTo = asOf === null ? events : events.filter((e) => atOrBefore(e, asOf));
    const last = upTo[upTo.length - 1];
    const state = asOf === null ? v.state : foldAsOf(upTo, null).state;
    return {
      planId,
      asOf: { seq: last?.seq ?? 0, at: last?.occurredAt ?? null },
      state: state ? planHeader(state) : null,
      ...auditWindow(upTo, { limit, before }),
      stalled: v.stalled,
    };
  });
};
