// Server-sent events for the API's live routes (`/api/stream`, `/api/plans/:id/stream`): a cap on
// concurrent clients per route, the response opened with the SSE headers, and a `: ping` every 15 s.
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/** The clients of one live route, up to `max` at once. */
export class SseClients {
  count = 0;
  constructor(readonly max: number) {}
}

/**
 * Opens an event stream on `reply` and writes `first`; undefined, after a 503 with `hint`, when the
 * route already has its `max` clients. The ping stops and the client is counted out when the socket closes.
 */
export function openEventStream(reply: FastifyReply, clients: SseClients, first: string, hint: string): ServerResponse | undefined {
  if (clients.count >= clients.max) {
    void reply.code(503).header('retry-after', '5').send({ error: 'unavailable', message: `too many live streams (${clients.max}); ${hint}` });
    return undefined;
  }
  clients.count += 1;
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
  res.write(first);
  const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
  res.once('close', () => {
    clearInterval(ping);
    clients.count -= 1;
  });
  return res;
}
