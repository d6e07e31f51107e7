// A plan's live output as server-sent events (`<prefix>.plan-streams` through the ledger client's
// `stream`): each chunk an `event: chunk` whose `id` is its cursor, so a browser's EventSource that
// reconnects sends `Last-Event-ID` and goes on after the last chunk it got — nothing missed, nothing twice.
import type { FastifyPluginAsync } from 'fastify';
import { isLedgerError } from '../../../src/errors.js';
import type { Ledger } from '../../../src/client/index.js';
import { guardRoutes, type ScopeGuard } from '../auth.js';
import { errorJson, textOf } from '../responses.js';
import { planParams } from '../schemas.js';
import { openEventStream, SseClients } from '../sse.js';

export interface PlanStreamOptions {
  /** The ledger client that reads streams; resolved lazily on the first request. */
  readonly reader: () => Promise<Pick<Ledger, 'stream'>>;
  readonly authorize: ScopeGuard;
  readonly maxClients: number;
}

export const planStreamRoutes: FastifyPluginAsync<PlanStreamOptions> = async (app, { reader, authorize, maxClients }) => {
  const clients = new SseClients(maxClients);
  guardRoutes(app, authorize);
  const schema = {
    tags: ['plans'],
    summary: "A plan's live output (server-sent events)",
    description:
      "The plan's stream records (agent turns' text deltas, tool-call starts, usage, tools' progress, each attempt's end marker: `final`, `superseded`, `abandoned`) as `event: chunk` messages whose `data` is the chunk's JSON and whose `id` is its cursor. " +
      "It starts at the plan's first retained record, after `?from=<cursor>` (or `live`), or after the `Last-Event-ID` header a reconnecting EventSource sends (it wins over `from`). " +
      'A bad cursor or an unknown or erased plan ends the stream with one `event: error` whose `data` is `{ code, message }`. A `: ping` comment every 15 s. Past PLAN_LEDGER_API_MAX_STREAMS concurrent clients of this route (100), 503.',
    params: planParams,
    querystring: { type: 'object', properties: { from: { type: 'string', maxLength: 200, description: "A chunk's cursor, `beginning` (default) or `live`" } } },
    response: { 200: textOf('The stream', 'text/event-stream'), 503: errorJson('Too many live streams (`unavailable`, retry-after 5)') },
  };
  app.get<{ Params: { id: string }; Querystring: { from?: string } }>('/api/plans/:id/stream', { schema }, async (req, reply) => {
    const lastEventId = req.headers['last-event-id'];
    const from = (typeof lastEventId === 'string' && lastEventId.length > 0 ? lastEventId : undefined) ?? req.query.from;
    const ledger = await reader();
    const res = openEventStream(reply, clients, 'retry: 2000\n\n', 'retry later');
    if (res === undefined) return reply;
    const stop = new AbortController();
    res.on('close', () => stop.abort());
    try {
      for await (const c of ledger.stream(req.params.id, { ...(from !== undefined ? { from } : {}), signal: stop.signal })) {
        // A slow client: wait for the socket to drain before reading on (the reader holds a bounded amount).
        if (!res.write(`id: ${c.cursor}\nevent: chunk\ndata: ${JSON.stringify(c)}\n\n`)) await new Promise<void>((r) => (res.once('drain', r), res.once('close', r)));
        if (stop.signal.aborted) break;
      }
    } catch (e) {
      const code = isLedgerError(e) ? e.code : 'INTERNAL';
      const message = e instanceof Error ? e.message : String(e);
      if (!res.writableEnded) res.write(`event: error\ndata: ${JSON.stringify({ code, message })}\n\n`);
    } finally {
      if (!res.writableEnded) res.end();
    }
  });
};
