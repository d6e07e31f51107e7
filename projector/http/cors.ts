// CORS, closed unless origins are configured: only a listed Origin gets Access-Control-Allow-Origin.
// Small on purpose (exact origins, no wildcards, no credentials mode): the API authenticates with bearer
// tokens, never cookies.
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The onRequest hook that marks allowed origins, and the preflight (OPTIONS) handler. */
export function corsHandlers(origins: readonly string[]) {
  const allowed = new Set(origins);
  const onRequest = async (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    reply.header('vary', 'Origin');
    if (typeof origin === 'string' && allowed.has(origin)) reply.header('access-control-allow-origin', origin);
  };
  const preflight = async (req: FastifyRequest, reply: FastifyReply) => {
    const origin = req.headers.origin;
    if (typeof origin !== 'string' || !allowed.has(origin)) return reply.code(403).send({ error: 'forbidden', message: 'origin not allowed' });
    return reply
      .code(204)
      .header('access-control-allow-methods', 'GET, POST')
      .header('access-control-allow-headers', 'authorization, content-type')
      .header('access-control-max-age', '600')
      .send();
  };
  return { onRequest, preflight };
}
