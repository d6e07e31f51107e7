// The API's auth as Fastify hooks: each route's scope, checked against the compiled token set
// (src/api-tokens.ts: parsing, compiling and the timing-safe lookup).
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import { bearerToken, type Principal, type Scope, type TokenSet } from '../../src/api-tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook of the read and write routes. */
    principal: Principal | null;
  }
  interface FastifyContextConfig {
    /** The scope a route's token needs, set by {@link guardRoutes}; absent: an open route. */
    scope?: Scope;
  }
}

/** The bearer token of a request: the Authorization header only. */
const bearer = (req: FastifyRequest) => bearerToken(req.headers.authorization);

/**
 * An onRequest hook: 401 without a token (or when none is configured), 403 for an unknown token or one
 * without `scope`; otherwise `req.principal` is the token's holder.
 */
export function requireScope(tokens: TokenSet, scope: Scope): ScopeGuard {
  const hook = async (req: FastifyRequest, reply: FastifyReply) => {
    if (scope === 'read' && tokens.openReads && bearer(req) === null) return;
    if (tokens.size === 0) {
      const what = scope === 'write' ? 'write routes are disabled' : 'read routes are closed';
      return reply.code(401).send({ error: 'unauthorized', message: `${what}: no API token is configured (set PLAN_LEDGER_API_TOKEN or PLAN_LEDGER_API_TOKENS_FILE)` });
    }
    const given = bearer(req);
    if (given === null) return reply.code(401).send({ error: 'unauthorized', message: 'missing bearer token (Authorization: Bearer <token>)' });
    const principal = tokens.lookup(given);
    if (!principal) return reply.code(403).send({ error: 'forbidden', message: 'wrong API token' });
    if (!principal.scopes.includes(scope)) return reply.code(403).send({ error: 'forbidden', message: `the token of ${principal.name} has no ${scope} scope` });
    req.principal = principal;
  };
  return Object.assign(hook as onRequestHookHandler, { scope });
}

/** The auth hook of one scope (see {@link requireScope}). */
export type ScopeGuard = onRequestHookHandler & { readonly scope: Scope };

/**
 * Guards the routes a plugin registers after this call: `guard` runs on each of their requests, and each
 * route's config names the scope (`config.scope`), which the API's OpenAPI document reads.
 */
export function guardRoutes(app: FastifyInstance, guard: ScopeGuard): void {
  app.addHook('onRequest', guard);
  app.addHook('onRoute', (route) => {
    route.config = { ...route.config, scope: guard.scope };
  });
}
