// Read routes over the projection: the plan list, one plan (or its header), a page of its items, its
// events, its audit as of a seq or time (whole, or a window of it).
import type { FastifyPluginAsync } from 'fastify';
import { summarizeAgentRun } from '../../../src/agent/records.js';
import { takeovers } from '../../../src/audit/takeovers.js';
import { FORK_LABEL, stateDigest } from '../../../src/plan/index.js';
import { showEvents, showItem, showPlan } from '../../../src/secrets/redact.js';
import { atOrBefore, auditAsOf, foldAsOf, parseAsOf, parsePlanQuery, queryPlans, summarize, type AttemptTimeline } from '../../../src/projection/index.js';
import type { ProjectionService } from '../../projector.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { notFound } from '../errors.js';
import { auditShape, errorJson, eventsShape, itemPageShape, json, planNotFound, planPageShape, planShape, whoamiShape } from '../responses.js';
import { auditQuery, eventsQuery, itemsQuery, planListQuery, planParams, planQuery } from '../schemas.js';
import { AUDIT_PAGE_MAX, auditWindow, headerSummary, ITEM_PAGE_MAX, itemPage, pageNumber, parseItemStatuses, planHeader } from './plan-pages.js';

/** How a payload of a plan is read for display: decrypted with the plan's key; undefined when there is nothing to open. */
export type PayloadOpenerFor = (planId: string) => Promise<((json: string) => string) | undefined>;

export interface PlanReadOptions {
  readonly service: ProjectionService;
  readonly authorize: ScopeGuard;
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
  guardRoutes(app, authorize);

  /** Who the token belongs to and what it may do (the dashboard shows it and hides what it may not do). */
  const whoamiSchema = {
    tags: ['plans'],
    summary: 'Who the token belongs to',
    description: 'The principal and scopes of the token sent (the dashboard shows it and hides what the token may not do). With open reads and no token: principal null, scopes read.',
    response: { 200: json('The holder and scopes', whoamiShape) },
  };
  app.get('/api/whoami', { schema: whoamiSchema }, async (req) => ({ principal: req.principal?.name ?? null, scopes: req.principal?.scopes ?? ['read'] }));

  const listSchema = {
    tags: ['plans'],
    summary: 'The plan list',
    description: 'Plans by creation time, filtered by status, labels and a search text (`q`: in the id, the goal or a label), a page at a time. A bad `status`, `label`, `q`, `limit` or `cursor` is a 400 naming it.',
    querystring: planListQuery,
    response: { 200: json('A page of plans', planPageShape) },
  };
  app.get('/api/plans', { schema: listSchema }, async (req) => {
    const q = req.query as { status?: string[]; label?: string[]; q?: string; limit?: number; cursor?: string };
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

  const planSchema = {
    tags: ['plans'],
    summary: 'One plan, with its relations',
    description:
      "The plan: its summary, its state (payloads decrypted when the projector holds the plan's key, secret fields \"[secret]\"), its digest, and its relations: `parent` and `children` (delegation), `forkedFrom` (null for a plan that is not a fork) and `forks`, and `agent` for an agent run (tokens in/out per turn and in all; null otherwise and with `items=none`). " +
      'A cold (finished, archived) plan is read back from its snapshot. With `items=none` the plan without its items: `state` is the header (goal, status, mode, labels, digest, seq, approvals, the newest 50 rejections) with `itemCount`, `counts` and `rejectionCount`, and no `stateDigest` (it hashes every item: read the full plan or `/verify` for it).',
    params: planParams,
    querystring: planQuery,
    response: { 200: json('The plan', planShape), 404: planNotFound },
  };
  app.get('/api/plans/:id', { schema: planSchema }, async (req, reply) => {
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
  const itemsSchema = {
    tags: ['plans'],
    summary: "A page of a plan's items",
    description: 'The items in plan order, optionally by status (any of), with `total` (matching), `itemCount`, `counts` per status and `nextOffset` (null on the last page). Bounded by the page whatever the plan\'s size (a plan may hold 100,000 items); the dashboard switches to these reads for a plan of more than 300 items.',
    params: planParams,
    querystring: itemsQuery,
    response: { 200: json('A page of items', itemPageShape), 404: errorJson('The plan is not known, or has no state yet (`not_found`)') },
  };
  app.get('/api/plans/:id/items', { schema: itemsSchema }, async (req, reply) => {
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

  const eventsSchema = {
    tags: ['plans'],
    summary: "A plan's events",
    description: 'The events from `fromSeq` on, shown (payloads decrypted when the projector holds the key, secret fields "[secret]"; hashes as recorded). With `limit`, at most that many and `nextSeq` for the next page.',
    params: planParams,
    querystring: eventsQuery,
    response: { 200: json('The events', eventsShape), 404: planNotFound },
  };
  app.get('/api/plans/:id/events', { schema: eventsSchema }, async (req, reply) => {
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

  const auditSchema = {
    tags: ['plans'],
    summary: "A plan's audit, as of a seq or time",
    description:
      'Without `limit` or `before`: the whole audit as of `asOf` (the plan, its digest, the timeline of events and the attempts). ' +
      'With `limit` or `before`: a window of the timeline, the newest `limit` events before `before`, oldest first, the attempts whose intent falls in that window, `state` as a header, and `page.nextBefore` for the next older window (null at the first event).',
    params: planParams,
    querystring: auditQuery,
    response: { 200: json('The audit, or a window of it', auditShape), 404: planNotFound },
  };
  app.get('/api/plans/:id/audit', { schema: auditSchema }, async (req, reply) => {
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
      const shownEvents = showEvents(events, undefined, open);
      const shown = auditAsOf(planId, shownEvents, asOf);
      const attempts = withTakeovers(shown.attempts, shownEvents.filter((e) => atOrBefore(e, asOf)));
      return { ...shown, attempts, state: real.state ? showPlan(real.state, open) : null, stateDigest: real.stateDigest, stalled: v.stalled };
    }
    // A window of the timeline and its attempts (from the shown events), with the plan's header as of that point (no items).
    const upTo = asOf === null ? events : events.filter((e) => atOrBefore(e, asOf));
    const shownUpTo = showEvents(upTo, undefined, open);
    const last = upTo[upTo.length - 1];
    const state = asOf === null ? v.state : foldAsOf(upTo, null).state;
    const window = auditWindow(shownUpTo, { limit, before });
    return {
      planId,
      asOf: { seq: last?.seq ?? 0, at: last?.occurredAt ?? null },
      state: state ? planHeader(state) : null,
      ...window,
      attempts: withTakeovers(window.attempts, shownUpTo),
      stalled: v.stalled,
    };
  });
};

/** Each attempt with the take-over that a new owner made of it (re-invoked or settled), or null. */
function withTakeovers(attempts: AttemptTimeline[], events: Parameters<typeof takeovers>[0]) {
  if (attempts.length === 0) return [];
  const found = new Map(takeovers(events).map((t) => [`${t.itemId}\u0000${t.attempt}`, t]));
  return attempts.map((a) => ({ ...a, takeover: found.get(`${a.itemId}\u0000${a.attempt}`) ?? null }));
}

/** What the dashboard shows of an agent run: how it ended, its totals and one line per recorded turn. */
function agentUsage(s: Parameters<typeof summarizeAgentRun>[0]) {
  const run = summarizeAgentRun(s);
  if (run === undefined) return null;
  return { agent: run.agent, finished: run.finished, pausedOn: run.pausedOn, stopReason: run.stopReason, totals: run.totals, unread: run.unread, turns: run.turns };
}
