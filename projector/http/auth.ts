// Bearer-token check of the write routes, in constant time.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';

export function bearerAuth(apiToken: string | null) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (!apiToken) {
      return reply.code(401).send({ error: 'unauthorized', message: 'write routes are disabled: no API token is configured (set PLAN_LEDGER_API_TOKEN)' });
    }
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header) : null;
    if (!m) return reply.code(401).send({ error: 'unauthorized', message: 'missing bearer token (Authorization: Bearer <token>)' });
    const given = Buffer.from(m[1]!.trim());
    const want = Buffer.from(apiToken);
    if (given.length !== want.length || !timingSafeEqual(given, want)) return reply.code(403).send({ error: 'forbidden', message: 'wrong API token' });
  };
}
