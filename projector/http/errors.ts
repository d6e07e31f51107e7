// One error path for the API: validation failures name the field (400), query errors too, the rest maps
// by status; the ledger's answers to a submitted command map to HTTP in `sendOutcome`.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { CommandOutcome } from '../../src/client/index.js';
import { isLedgerError } from '../../src/errors.js';
import type { Logger } from '../../src/logging.js';
import type { CommandRejected } from '../../src/plan/index.js';
import { QueryError } from '../../src/projection/index.js';

type ValidationFailure = FastifyError & { validation?: Array<{ instancePath: string; params: Record<string, unknown>; message?: string }>; validationContext?: string };

/** fastify's error handler: 400s name the field; 5xx are logged. */
export function errorHandler(logger: Logger) {
  return (err: ValidationFailure, _req: FastifyRequest, reply: FastifyReply) => {
    if (err.validation && err.validation.length > 0) {
      const v = err.validation[0]!;
      const path = v.instancePath.replace(/^\//, '').replace(/\//g, '.');
      const missing = typeof v.params['missingProperty'] === 'string' ? v.params['missingProperty'] : undefined;
      const extra = typeof v.params['additionalProperty'] === 'string' ? v.params['additionalProperty'] : undefined;
      const field = [path, missing ?? extra].filter(Boolean).join('.') || (err.validationContext ?? 'request');
      const message = missing ? `${field} is required` : extra ? `${field} is not allowed` : `${field} ${v.message ?? 'is invalid'}`;
      return reply.code(400).send({ error: 'bad_request', field, message: `${err.validationContext ?? 'request'}: ${message}` });
    }
    if (err instanceof QueryError) return reply.code(400).send({ error: 'bad_request', field: err.field, message: err.message });
    const status = err.statusCode && err.statusCode >= 400 ? err.statusCode : 500;
    if (status >= 500) logger.error({ err: err.message }, 'request failed');
    const error = status >= 500 ? 'internal' : status === 413 ? 'payload_too_large' : 'bad_request';
    return reply.code(status).send({ error, message: err.message });
  };
}

export const notFound = (reply: FastifyReply, planId: string) => reply.code(404).send({ error: 'not_found', message: `plan ${planId} is not known to this projector` });

const statusOf: Record<string, number> = { VALIDATION: 400, REJECTED: 409, CONFLICT: 409, NOT_FOUND: 404, TIMEOUT: 504, UNAVAILABLE: 503 };

/** Runs a command submission; maps the ledger's answer (or a CommandRejected event) to HTTP. */
export async function sendOutcome(reply: FastifyReply, logger: Logger, run: () => Promise<CommandOutcome & { digest?: string }>) {
  let outcome;
  try {
    outcome = await run();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    if (isLedgerError(e)) {
      const status = statusOf[e.code as string] ?? 500;
      const field = typeof e.details['field'] === 'string' ? { field: e.details['field'] } : {};
      // The ledger's rejection code (STALE_DIGEST, PLAN_FINISHED ...) is the useful part of a 409.
      const code = e.code === 'REJECTED' && typeof e.details['rejection'] === 'string' ? { code: e.details['rejection'] } : {};
      return reply.code(status).send({ error: e.code.toLowerCase(), message, ...code, ...field });
    }
    logger.error({ err: message }, 'command submission failed');
    return reply.code(502).send({ error: 'submit_failed', message });
  }
  const rejected = outcome.events.find((e) => e.type === 'CommandRejected');
  const body = { planId: outcome.planId, commandId: outcome.commandId, events: outcome.events.map((e) => ({ seq: e.seq, type: e.type })), ...(outcome.digest ? { digest: outcome.digest } : {}) };
  if (rejected) {
    const d = rejected.data as CommandRejected;
    return reply.code(409).send({ error: 'rejected', code: d.code, message: d.message, field: d.field, ...body });
  }
  return reply.code(202).send(body);
}
