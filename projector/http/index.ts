// The projector's HTTP server: fastify with JSON schemas on every route, one plugin per route group.
import Fastify from 'fastify';
import type { Ledger } from '../../src/client/index.js';
import type { Logger } from '../../src/logging.js';
import type { ProjectionService } from '../projector.js';
import { bearerAuth } from './auth.js';
import { errorHandler } from './errors.js';
import { dashboardRoutes } from './routes/dashboard.js';
import { healthRoutes } from './routes/health.js';
import { planReadRoutes } from './routes/plans-read.js';
import { planWriteRoutes } from './routes/plans-write.js';
import { streamRoutes } from './routes/stream.js';

/**
 * What the write routes need to submit commands: the ledger client (`connectLedger`) satisfies it.
 * Each call resolves once the owning executor decided the command.
 */
export type CommandSubmitter = Pick<Ledger, 'createPlan' | 'approve' | 'reject' | 'cancel' | 'retryItem'>;

export interface HttpOptions {
  readonly service: ProjectionService;
  readonly logger: Logger;
  /** Bearer token of the write routes; without one they answer 401 and say why. */
  readonly apiToken: string | null;
  /** Submits commands; resolved lazily on the first write. */
  readonly submitter: () => Promise<CommandSubmitter>;
}

/** The projector's HTTP API and dashboard. */
export function buildHttp(opts: HttpOptions) {
  const { service, logger } = opts;
  const app = Fastify({
    // Request lines are info-level; the API logs its own warnings and errors.
    loggerInstance: logger.child({ component: 'http' }, { level: 'warn' }),
    forceCloseConnections: true,
    ajv: { customOptions: { removeAdditional: false, coerceTypes: 'array', allErrors: false } },
  });
  app.setErrorHandler(errorHandler(logger));

  void app.register(healthRoutes, { service });
  void app.register(planReadRoutes, { service });
  void app.register(planWriteRoutes, { service, logger, authorize: bearerAuth(opts.apiToken), submitter: opts.submitter });
  void app.register(streamRoutes, { service });
  void app.register(dashboardRoutes);
  return app;
}
