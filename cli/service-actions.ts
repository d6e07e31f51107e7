import { loadConfig } from '../src/config.js';
import { assertBrokersReachable } from '../src/audit/log.js';
import { ensureKafkaClient } from './native-addon.js';
import { createLogger } from '../src/logging.js';
import { loadSettings } from '../src/settings.js';

export async function projector(o: { port?: number }): Promise<void> {
  loadSettings(['connection', 'client', 'projector']); // a bad PLAN_LEDGER_* value fails first, before anything connects
  const config = loadConfig();
  ensureKafkaClient();
  await assertBrokersReachable(config);
  const { startProjector } = await import('../projector/index.js');
  const logger = createLogger({ name: 'plan-ledger-projector' });
  const p = await startProjector({ config, logger, ...(o.port !== undefined ? { port: o.port } : {}) });
  process.stderr.write(`projector on prefix "${config.topicPrefix}": dashboard and API at ${p.url}/\n`);
  await new Promise<void>((done) => {
    const stop = () => void p.stop().then(done);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
