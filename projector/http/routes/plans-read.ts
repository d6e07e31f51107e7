// Read routes over the projection: the plan list, one plan (or its header), a page of its items, its
// events, its audit as of a seq or time (whole, or a window of it).
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify';
import { summarizeAgentRun } from '../../../src/agent/records.js';
import { FORK_LABEL, stateDigest } from '../../../src/plan/index.js';
import { showEvents, showItem, showPlan } from '../../../src/secrets/redact.js';
import { atOrBefore, auditAsOf, foldAsOf, parseAsOf, parsePlanQuery, queryPlans, summarize } from '../../../src/projection/index.js';
import type { ProjectionService } from '../../projector.js';
import { notFound } from '../errors.js';
import { auditQuery, eventsQuery, itemsQuery, planListQuery, planParams, planQuery } from '../schemas.js';
import { AUDIT_PAGE_MAX, auditWindow, headerSummary, ITEM_PAGE_MAX, itemPage, pageNumber, parseItemStatuses, planHeader } from './plan-pages.js';

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

  /**
   * Delegation and lineage toward other plans, in one pass over the projection: the plans this one's items
   * delegated to (a cold child is listed from its summary), and the plans forked from it (a fork's state
   * names its source; a cold fork, its label — only a fork carries it).
   */
  const relationsOf = (planId: string) => {
    const children: Array<{ planId: string; itemId: string; status: string | null; goal: string }> = [];
    const forks: Array<{ planId: string; seq: number | null; status: string | null; goal: string }> = [];
    for (const c of model.views()) {
      const s = c.state ?? c.summary;
      if (s?.parent?.planId === planId) children.push({ planId: c.planId, itemId: s.parent.itemId, status: s.status, goal: s.goal });
      const origin = c.state?.forkedFrom;
      if (origin?.planId === planId) forks.push({ planId: c.planId, seq: origin.seq, status: c.state!.status, goal: c.state!.goal });
      else if (c.state === undefined && c.summary?.labels[FORK_LABEL] === planId) forks.push({ planId: c.planId, seq: null, status: c.summary.status, goal: c.summary.goal });
    }
    const byId = (a: { planId: string }, b: { planId: string }) => a.planId.localeCompare(b.planId);
    return { children: children.sort(byId), forks: forks.sort(byId) };
  };
  const statusOf = (planId: string) => model.view(planId)?.state?.status ?? model.cold.get(planId)?.summary.status ?? null;

  app.get('/api/plans/:id', { schema: { params: planParams, querystring: planQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    const v = await model.read(planId); // a cold plan: its archived snapshot, read back
    if (!v) return notFound(reply, planId);
    // items=none: the header only, the same few KB for 10 items or 100,000 (and no stateDigest, which
    // hashes every item; the full plan and /verify have it).
    const headerOnly = (req.query as { items?: 'all' | 'none' }).items === 'none';
    const { children, forks } = relationsOf(planId);
    return {
      planId,
      partition: v.partition,
      lastOffset: v.lastOffset,
      summary: headerOnly ? headerSummary(v) : summarize(v),
      stalled: v.stalled,
      ...(headerOnly ? { items: 'none', state: v.state ? planHeader(v.state) : null } : { stateDigest: v.state ? stateDigest(v.state) : null, state: v.state ? showPlan(v.state, await opener(planId)) : null }),
      // Delegation both ways: the plan this one runs for, and the plans its items delegated to.
      parent: v.state?.parent ? { ...v.state.parent, status: statusOf(v.state.parent.planId) } : null,
      children,
      // Lineage both ways: the plan and point this one was forked from, and the plans forked from it.
      forkedFrom: v.state?.forkedFrom ? { ...v.state.forkedFrom, status: statusOf(v.state.forkedFrom.planId) } : null,
      forks,
      // An agent run's turns and token totals (null for a plan that is not one, and with items=none).
      agent: v.state && !headerOnly ? agentUsage(v.state) : null,
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
    const page = itemPage(v.state, { offset, limit, status });
    const open = await opener(planId);
    return { ...page, items: page.items.map((it) => showItem(it, open)) };
  });

  app.get('/api/plans/:id/events', { schema: { params: planParams, querystring: eventsQuery } }, async (req, reply) => {
    const planId = (req.params as { id: string }).id;
    if (!model.has(planId)) return notFound(reply, planId); // cold plans too: their events are read back
    const q = req.query as { fromSeq?: number; limit?: number };
    const from = pageNumber('fromSeq', q.fromSeq, 1, Number.MAX_SAFE_INTEGER) ?? 1;
    const limit = pageNumber('limit', q.limit, 1, AUDIT_PAGE_MAX);
    // Shown with the secret paths of the plan's own ItemAdded events (all of them, before the filter).
    const events = showEvents(await model.events(planId), undefined, await opener(planId)).filter((e) => e.seq >= from);
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
    const open = await opener(planId);
    if (limit === undefined && before === undefined) {
      const real = auditAsOf(planId, events, asOf);
      // The timeline and attempts from the shown events (decrypted, redacted); the plan and its digests are the real ones, shown.
      const shown = auditAsOf(planId, showEvents(events, undefined, open), asOf);
      return { ...shown, state: real.state ? showPlan(real.state, open) : null, stateDigest: real.stateDigest, stalled: v.stalled };
    }
    // A window of the timeline and its attempts (from the shown events), with the plan's header as of that point (no items).
    const upTo = asOf === null ? events : events.filter((e) => atOrBefore(e, asOf));
    const shownUpTo = showEvents(upTo, undefined, open);
    const last = upTo[upTo.length - 1];
    const state = asOf === null ? v.state : foldAsOf(upTo, null).state;
    return {
      planId,
      asOf: { seq: last?.seq ?? 0, at: last?.occurredAt ?? null },
      state: state ? planHeader(state) : null,
      ...auditWindow(shownUpTo, { limit, before }),
      stalled: v.stalled,
    };
  });
};

/** What the dashboard shows of an agent run: how it ended, its totals and one line per recorded turn. */
function agentUsage(s: Parameters<typeof summarizeAgentRun>[0]) {
  const run = summarizeAgentRun(s);
  if (run === undefined) return null;
  return { agent: run.agent, finished: run.finished, pausedOn: run.pausedOn, stopReason: run.stopReason, totals: run.totals, unread: run.unread, turns: run.turns };
}
