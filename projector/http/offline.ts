// The projector's HTTP app without Kafka: a projection service that is never started (no plans, no
// connections) behind the real routes, schemas and hooks. For what needs the routes and not the data: the
// API reference (scripts/docs.ts reads GET /api/openapi.json from it) and tests of validation and auth.
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { ProjectionService } from '../projector.js';
import { compileTokens, type AuthInput } from '../../src/api-tokens.js';
import { buildHttp, HTTP_DEFAULTS, type CommandSubmitter } from './index.js';

export interface OfflineHttpOptions {
  /** Who may call the API (default: open reads, no token). */
  readonly auth?: AuthInput;
  /** Origins for CORS: with some, the OPTIONS preflight route is registered too. */
  readonly corsOrigins?: readonly string[];
  readonly submitter?: () => Promise<CommandSubmitter>;
}

export function buildOfflineHttp(opts: OfflineHttpOptions = {}) {
  const logger = createLogger({ level: 'silent' });
  // Addresses that are never dialled: the service is not started.
  const config = loadConfig({ brokers: ['127.0.0.1:1'], registryUrl: 'http://127.0.0.1:1' }, {}, { stack: () => undefined });
  const service = new ProjectionService({ config, logger, defaultMetrics: false });
  const submitter = opts.submitter ?? (() => Promise.reject(new Error('no ledger: this app was built without Kafka')));
  return buildHttp({ service, logger, tokens: compileTokens(opts.auth ?? { openReads: true }), submitter, corsOrigins: opts.corsOrigins ?? [], ...HTTP_DEFAULTS });
}
