import { connectLedger, type Ledger } from '../src/client/index.js';
import { keyringFor, masterKeyFromEnv, type PlanKeyring } from '../src/crypto/index.js';
import { createKafka } from '../src/kafka/index.js';
import { loadConfig, type LedgerConfig, type LedgerConfigInput } from '../src/config.js';
import { createLogger, type Logger } from '../src/logging.js';
import { loadSettings } from '../src/settings.js';
import type { PlanState } from '../src/plan/index.js';
import type { PlanView } from '../src/projection/index.js';
import { compileTokens, type ApiToken } from '../src/api-tokens.js';
import { buildHttp, type CommandSubmitter } from './http/index.js';
import { ProjectionService, type ProjectionServiceOptions } from './projector.js';

export type { CommandSubmitter } from './http/index.js';
export type { ApiToken, Scope } from '../src/api-tokens.js';
export { ProjectionService } from './projector.js';
export { ReadModel } from './read-model.js';

export interface ProjectorOptions {
  /** A compiled config, or input for `loadConfig` (PLAN_LEDGER_* and the local stack fill the rest). */
  readonly config?: LedgerConfig | LedgerConfigInput;
  /**
   * The master key (32 bytes; default PLAN_LEDGER_MASTER_KEY_FILE / PLAN_LEDGER_MASTER_KEY): with it the
   * API and dashboard show encrypted payloads decrypted (secret fields still redacted); without it they
   * show the envelopes. A payload whose plan key was destroyed shows as "[erased]".
   */
  readonly masterKey?: Buffer;
  readonly logger?: Logger;
  /** HTTP port (default PLAN_LEDGER_HTTP_PORT, else 8787; 0 = any free port). */
  readonly port?: number;
  /** HTTP host (default 127.0.0.1; PLAN_LEDGER_HTTP_HOST). */
  readonly host?: string;
  /**
   * The single legacy bearer token (default PLAN_LEDGER_API_TOKEN): read and write scopes, principal
   * `api-token`. Without any token the /api routes answer 401.
   */
  readonly apiToken?: string | null;
  /** Tokens with principals and scopes, in addition to `apiToken` and the tokens file. */
  readonly apiTokens?: readonly ApiToken[];
  /** A file of tokens, JSON array or one JSON object per line (default PLAN_LEDGER_API_TOKENS_FILE). */
  readonly apiTokensFile?: string;
  /** Read routes without a token, for local development (default PLAN_LEDGER_API_OPEN_READS; false). */
  readonly openReads?: boolean;
  /** Origins allowed by CORS (default PLAN_LEDGER_API_CORS_ORIGINS, comma-separated; none). */
  readonly corsOrigins?: readonly string[];
  /** Largest request body in bytes (default PLAN_LEDGER_API_BODY_LIMIT, else 1 MiB); 413 past it. */
  readonly bodyLimitBytes?: number;
  /** Concurrent /api/stream clients (default PLAN_LEDGER_API_MAX_STREAMS, else 100); 503 past it. */
  readonly maxStreamClients?: number;
  /** Submits commands for the write routes (default: a `connectLedger` client opened on first use). */
  readonly submit?: CommandSubmitter;
  readonly snapshotEveryEvents?: ProjectionServiceOptions['snapshotEveryEvents'];
  readonly watermarkIntervalMs?: ProjectionServiceOptions['watermarkIntervalMs'];
  readonly retainEvents?: ProjectionServiceOptions['retainEvents'];
  readonly snapshotChunkBytes?: ProjectionServiceOptions['snapshotChunkBytes'];
  readonly beforeSnapshot?: ProjectionServiceOptions['beforeSnapshot'];
  readonly beforeFence?: ProjectionServiceOptions['beforeFence'];
  /** MiB of finished plans held in memory (default PLAN_LEDGER_PROJECTOR_CACHE_MIB or 256); see ProjectionServiceOptions. */
  readonly cacheMib?: number;
  readonly groupId?: string;
  readonly defaultMetrics?: boolean;
}

export interface ProjectorHandle {
  /** Base URL of the HTTP API and dashboard, e.g. `http://127.0.0.1:8787`. */
  readonly url: string;
  readonly config: LedgerConfig;
  readonly service: ProjectionService;
  /** The plan as projected now (undefined when unknown). */
  plan(planId: string): (PlanView & { partition: number }) | undefined;
  /** Current states of every projected plan. */
  states(): Map<string, PlanState>;
  /** stateDigest of every projected plan. */
  stateDigests(): Map<string, string>;
  /** Resolves once every partition is projected up to its current end. */
  caughtUp(): Promise<boolean>;
  /** Flushes snapshots and the watermarks now (tests; also done on a timer and on stop). */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the projector: the projection consumer group (restore from snapshots, catch up, snapshots,
 * watermarks, DLQ) and its HTTP API and dashboard. Stop it with `stop()` (it leaves a watermark behind so
 * the next start replays only the tail).
 *
 * @example
 * const projector = await startProjector({
 *   port: 8787,
 *   apiTokens: [
 *     { token: process.env.ALICE_TOKEN!, principal: 'alice', scopes: ['read', 'write'] },
 *     { token: process.env.GRAFANA_TOKEN!, principal: 'grafana', scopes: ['read'] },
 *   ],
 * });
 * console.log(`dashboard at ${projector.url}`);
 * process.on('SIGTERM', () => void projector.stop());
 */
export async function startProjector(opts: ProjectorOptions = {}): Promise<ProjectorHandle> {
  const settings = loadSettings(['client', 'projector']); // every PLAN_LEDGER_* variable the projector reads, checked at start
  const config = isCompiled(opts.config) ? opts.config : loadConfig(opts.config ?? {});
  const logger = opts.logger ?? createLogger({ name: 'plan-ledger-projector' });
  const port = opts.port ?? settings.PLAN_LEDGER_HTTP_PORT;
  const host = opts.host ?? settings.PLAN_LEDGER_HTTP_HOST;
  const apiToken = opts.apiToken === undefined ? (settings.PLAN_LEDGER_API_TOKEN ?? null) : opts.apiToken;
  const tokensFile = opts.apiTokensFile ?? settings.PLAN_LEDGER_API_TOKENS_FILE;
  const tokens = compileTokens({ apiToken, apiTokens: opts.apiTokens, tokensFile, openReads: opts.openReads ?? settings.PLAN_LEDGER_API_OPEN_READS });
  const corsOrigins = Object.freeze([...(opts.corsOrigins ?? settings.PLAN_LEDGER_API_CORS_ORIGINS ?? [])]);
  const bodyLimitBytes = opts.bodyLimitBytes ?? settings.PLAN_LEDGER_API_BODY_LIMIT;
  const maxStreamClients = opts.maxStreamClients ?? settings.PLAN_LEDGER_API_MAX_STREAMS;

  const service = new ProjectionService({
    config,
    logger,
    snapshotEveryEvents: opts.snapshotEveryEvents,
    watermarkIntervalMs: opts.watermarkIntervalMs,
    retainEvents: opts.retainEvents,
    snapshotChunkBytes: opts.snapshotChunkBytes,
    beforeSnapshot: opts.beforeSnapshot,
    beforeFence: opts.beforeFence,
    ...(opts.cacheMib !== undefined ? { cacheMib: opts.cacheMib } : {}),
    groupId: opts.groupId,
    defaultMetrics: opts.defaultMetrics,
  });
  // The plans' keys, read on the first display of an encrypted plan (only with a master key).
  const master = opts.masterKey ?? masterKeyFromEnv();
  let ledger: Promise<Ledger> | undefined;
  const connected = () => (ledger ??= connectLedger(config, { logger, ...(master ? { masterKey: master } : {}) }));
  const submitter = async (): Promise<CommandSubmitter> => {
    if (opts.submit) return opts.submit;
    return connected();
  };
  let keyKafka: ReturnType<typeof createKafka> | undefined;
  let keyring: PlanKeyring | undefined;
  const openerFor = master
    ? (planId: string) => {
        keyKafka ??= createKafka(config, logger, 'projector-keys');
        keyring ??= keyringFor({ kafka: keyKafka, config, master })!;
        return keyring.opener(planId);
      }
    : undefined;
  const http = buildHttp({ service, logger, tokens, submitter, streamReader: connected, payloadReader: connected, corsOrigins, bodyLimitBytes, maxStreamClients, ...(openerFor ? { openerFor } : {}) });
  try {
    await service.start();
    await http.listen({ port, host });
  } catch (e) {
    await http.close().catch(() => {});
    await service.stop().catch(() => {});
    throw e;
  }
  const address = http.server.address();
  const boundPort = typeof address === 'object' && address !== null ? address.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${boundPort}`;
  logger.info(
    { url, apiTokens: tokens.size, reads: tokens.openReads ? 'open' : 'token', corsOrigins, bodyLimitBytes, maxStreamClients, ...(tokens.size === 0 ? { api: 'closed: no token configured (PLAN_LEDGER_API_TOKEN or PLAN_LEDGER_API_TOKENS_FILE)' } : {}) },
    'projector listening',
  );

  let stopping: Promise<void> | undefined;
  return {
    url,
    config,
    service,
    plan: (planId) => service.model.view(planId),
    states: () => service.model.states(),
    stateDigests: () => service.model.stateDigests(),
    caughtUp: () => service.caughtUp(),
    flush: () => service.writeWatermarks(),
    stop: () =>
      (stopping ??= (async () => {
        await http.close().catch(() => {});
        await service.stop();
        await keyKafka?.close().catch(() => {});
        if (ledger) await (await ledger.catch(() => undefined))?.close().catch(() => {});
      })()),
  };
}

function isCompiled(c: ProjectorOptions['config']): c is LedgerConfig {
  return c !== undefined && Object.isFrozen(c);
}
