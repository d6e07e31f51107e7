import { connectLedger, type Ledger } from '../src/client/index.js';
import { loadConfig, type LedgerConfig, type LedgerConfigInput } from '../src/config.js';
import { LedgerError } from '../src/errors.js';
import { createLogger, type Logger } from '../src/logging.js';
import type { PlanState } from '../src/plan/index.js';
import type { PlanView } from '../src/projection/index.js';
import { buildHttp, type CommandSubmitter } from './http.js';
import { ProjectionService, type ProjectionServiceOptions } from './projector.js';

export type { CommandSubmitter } from './http.js';
export { ProjectionService } from './projector.js';
export { ReadModel } from './read-model.js';

export interface ProjectorOptions {
  /** A compiled config, or input for `loadConfig` (PLAN_LEDGER_* and the local stack fill the rest). */
  readonly config?: LedgerConfig | LedgerConfigInput;
  readonly logger?: Logger;
  /** HTTP port (default PLAN_LEDGER_HTTP_PORT, else 8787; 0 = any free port). */
  readonly port?: number;
  /** HTTP host (default 127.0.0.1; PLAN_LEDGER_HTTP_HOST). */
  readonly host?: string;
  /** Bearer token of the write routes (default PLAN_LEDGER_API_TOKEN). Without one they answer 401. */
  readonly apiToken?: string | null;
  /** Submits commands for the write routes (default: a `connectLedger` client opened on first use). */
  readonly submit?: CommandSubmitter;
  readonly snapshotEveryEvents?: ProjectionServiceOptions['snapshotEveryEvents'];
  readonly watermarkIntervalMs?: ProjectionServiceOptions['watermarkIntervalMs'];
  readonly retainEvents?: ProjectionServiceOptions['retainEvents'];
  readonly snapshotChunkBytes?: ProjectionServiceOptions['snapshotChunkBytes'];
  readonly beforeSnapshot?: ProjectionServiceOptions['beforeSnapshot'];
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

function envPort(env: NodeJS.ProcessEnv): number | undefined {
  const v = env.PLAN_LEDGER_HTTP_PORT;
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new LedgerError('VALIDATION', `PLAN_LEDGER_HTTP_PORT: expected a port number, got "${v}"`, { field: 'PLAN_LEDGER_HTTP_PORT' });
  return n;
}

/**
 * Starts the projector: the projection consumer group (restore from snapshots, catch up, snapshots,
 * watermarks, DLQ) and its HTTP API and dashboard. Stop it with `stop()` (it leaves a watermark behind so
 * the next start replays only the tail).
 *
 * @example
 * const projector = await startProjector({ port: 8787, apiToken: process.env.PLAN_LEDGER_API_TOKEN });
 * console.log(`dashboard at ${projector.url}`);
 * process.on('SIGTERM', () => void projector.stop());
 */
export async function startProjector(opts: ProjectorOptions = {}): Promise<ProjectorHandle> {
  const env = process.env;
  const config = isCompiled(opts.config) ? opts.config : loadConfig(opts.config ?? {});
  const logger = opts.logger ?? createLogger({ name: 'plan-ledger-projector' });
  const port = opts.port ?? envPort(env) ?? 8787;
  const host = opts.host ?? env.PLAN_LEDGER_HTTP_HOST ?? '127.0.0.1';
  const apiToken = opts.apiToken === undefined ? env.PLAN_LEDGER_API_TOKEN || null : opts.apiToken;

  const service = new ProjectionService({
    config,
    logger,
    snapshotEveryEvents: opts.snapshotEveryEvents,
    watermarkIntervalMs: opts.watermarkIntervalMs,
    retainEvents: opts.retainEvents,
    snapshotChunkBytes: opts.snapshotChunkBytes,
    beforeSnapshot: opts.beforeSnapshot,
    groupId: opts.groupId,
    defaultMetrics: opts.defaultMetrics,
  });
  let ledger: Promise<Ledger> | undefined;
  const submitter = async (): Promise<CommandSubmitter> => {
    if (opts.submit) return opts.submit;
    ledger ??= connectLedger(config, { logger });
    return ledger;
  };
  const http = buildHttp({ service, logger, apiToken, submitter });
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
  logger.info({ url, writeRoutes: apiToken ? 'enabled' : 'disabled (no PLAN_LEDGER_API_TOKEN)' }, 'projector listening');

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
        if (ledger) await (await ledger.catch(() => undefined))?.close().catch(() => {});
      })()),
  };
}

function isCompiled(c: ProjectorOptions['config']): c is LedgerConfig {
  return c !== undefined && Object.isFrozen(c);
}
