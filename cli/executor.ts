import { createServer } from 'node:http';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Command } from 'commander';
import { LedgerError } from '../src/errors.js';
import type { Tool } from '../src/tools.js';

/** How long a signal that came while the executor was starting waits for it to be up before the process exits. */
const EARLY_SIGNAL_EXIT_MS = 15_000;

/** Loads the tools a module exports: `tools` (an array), or a default export that is an array. */
export async function loadTools(modulePath: string): Promise<Tool[]> {
  const url = pathToFileURL(resolve(modulePath)).href;
  let mod: Record<string, unknown>;
  try {
    mod = (await import(url)) as Record<string, unknown>;
  } catch (e) {
    throw new LedgerError('VALIDATION', `cannot load tools module ${modulePath}: ${(e as Error).message}`, { field: '--tools' });
  }
  const tools = Array.isArray(mod.tools) ? mod.tools : Array.isArray(mod.default) ? mod.default : undefined;
  if (!tools) throw new LedgerError('VALIDATION', `${modulePath} exports no tools: export \`tools\` (an array) or a default array`, { field: '--tools' });
  for (const [i, t] of tools.entries()) {
    const tool = t as Partial<Tool>;
    if (!tool || typeof tool.name !== 'string' || typeof tool.run !== 'function') {
      throw new LedgerError('VALIDATION', `${modulePath}: tools[${i}] is not a tool (use defineTool({ name, run }))`, { field: `tools[${i}]` });
    }
  }
  return tools as Tool[];
}

export function registerExecutorCommand(program: Command): void {
  program
    .command('executor')
    .description('run an executor: a consumer-group worker that owns plans and runs their items')
    .requiredOption('--tools <module>', 'module exporting `tools` (an array of defineTool(...)) or a default array')
    .option('--concurrency <n>', 'max tool calls running at once (recording results does not count)', (v) => Number(v), 16)
    .option('--id <name>', 'executor id, recorded in events and its static group membership id: one live executor per id (default host-pid-random)')
    .option('--tool-timeout <ms>', 'longest a tool call may run before its attempt fails with TIMEOUT (default PLAN_LEDGER_TOOL_TIMEOUT_MS or 600000); a tool\'s own timeoutMs wins', (v) => Number(v))
    .option('--max-items <n>', 'most items one plan may hold (default PLAN_LEDGER_MAX_ITEMS or 100000)', (v) => Number(v))
    .option('--metrics-port <port>', 'serve Prometheus metrics on 127.0.0.1:<port>/metrics (partition resets, dead-lettered commands, tool timeouts, attempts)', (v) => Number(v))
    .option('--policy <file>', 'approval policy (YAML or JSON) applied to new plans and new items (default PLAN_LEDGER_POLICY)')
    .addHelpText(
      'after',
      `
Connection comes from PLAN_LEDGER_BROKERS / PLAN_LEDGER_REGISTRY_URL / PLAN_LEDGER_TOPIC_PREFIX, or the
local stack. An approval policy (--policy or PLAN_LEDGER_POLICY) makes plans it covers wait for approval,
whatever mode their client asked for; see examples/policies/. SIGTERM or SIGINT stops it gracefully: running items finish (or are aborted after the
grace period), no transaction is left half-written, and the group hands its partitions over. A signal that comes
while it is still starting stops it so once it is up; one not up 15 s later exits with 143 (SIGINT: 130).

Example:
  $ plan-ledger executor --tools ./dist/tools.js --concurrency 8 --tool-timeout 120000 --metrics-port 9464
  $ plan-ledger executor --tools ./dist/tools.js --policy examples/policies/production.yaml`,
    )
    .action(async (o: { tools: string; concurrency: number; id?: string; toolTimeout?: number; maxItems?: number; metricsPort?: number; policy?: string }) => {
      // Loaded here, not at the top: `plan-ledger --help` never pays for pino and zod.
      const [{ loadSettings }, { createLogger }] = await Promise.all([import('../src/settings.js'), import('../src/logging.js')]);
      loadSettings(['connection', 'client', 'executor']); // a bad PLAN_LEDGER_* value fails first, before the tools load or anything connects
      if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new LedgerError('VALIDATION', '--concurrency must be a positive integer', { field: '--concurrency' });
      for (const [flag, v] of [['--tool-timeout', o.toolTimeout], ['--max-items', o.maxItems]] as const) {
        if (v !== undefined && !(Number.isSafeInteger(v) && v > 0)) throw new LedgerError('VALIDATION', `${flag} must be a positive integer`, { field: flag });
      }
      if (o.metricsPort !== undefined && !(Number.isInteger(o.metricsPort) && o.metricsPort > 0 && o.metricsPort < 65536)) throw new LedgerError('VALIDATION', '--metrics-port must be a port number', { field: '--metrics-port' });
      const { resolvePolicy } = await import('../src/policy-file.js');
      const policy = resolvePolicy(o.policy); // validated before connecting: a bad field fails at once
      const tools = await loadTools(o.tools);
      (await import('./native-addon.js')).ensureKafkaClient();
      const logger = createLogger({ name: 'plan-ledger-executor' });
      const { startExecutor } = await import('../executor/index.js');
      // Signals are taken from here on: the executor owns partitions and runs items before it has finished
      // starting (its announcement is written last), so a signal then stops it gracefully once it is up.
      // One that is not up within EARLY_SIGNAL_EXIT_MS (a registry that never answers) exits the process.
      let early: { signal: string; timer: NodeJS.Timeout } | undefined;
      let onSignal = (signal: string): void => {
        if (early) return;
        logger.info({ signal }, 'stopping once started');
        early = { signal, timer: setTimeout(() => process.exit(signal === 'SIGINT' ? 130 : 143), EARLY_SIGNAL_EXIT_MS) };
      };
      process.once('SIGTERM', () => onSignal('SIGTERM'));
      process.once('SIGINT', () => onSignal('SIGINT'));
      const executor = await startExecutor({
        tools,
        concurrency: o.concurrency,
        logger,
        ...(o.id ? { executorId: o.id } : {}),
        ...(o.toolTimeout !== undefined ? { toolTimeoutMs: o.toolTimeout } : {}),
        ...(o.maxItems !== undefined ? { maxItems: o.maxItems } : {}),
        ...(policy ? { policy } : {}),
      });
      logger.info({ executorId: executor.executorId, tools: tools.map((t) => t.name), prefix: executor.config.topicPrefix }, 'executor started');
      const metrics =
        o.metricsPort === undefined
          ? undefined
          : createServer((req, res) => {
              if (req.url !== '/metrics') {
                res.writeHead(404).end();
                return;
              }
              void executor.metrics().then((text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text));
            }).listen(o.metricsPort, '127.0.0.1');
      await new Promise<void>((done) => {
        const shutdown = (signal: string) => {
          logger.info({ signal }, 'stopping');
          metrics?.close();
          void executor.stop().then(() => {
            // A tools module may hold handles of its own that nothing here closes (an MCP server's pipe from
            // mcpTools, a connection pool): once the executor has stopped, they do not keep the process
            // alive past a second (unref'd: a process with nothing left open ends at once, as before).
            setTimeout(() => process.exit(process.exitCode ?? 0), 1000).unref();
            done();
          });
        };
        if (early) {
          clearTimeout(early.timer);
          shutdown(early.signal);
        } else onSignal = shutdown;
      });
    });
}
