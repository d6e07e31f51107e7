// Master key rotation (docs/guides/security.md#rotating-the-master-key): re-wraps every live data key in
// <prefix>.plan-keys with the new master key. The cluster comes from PLAN_LEDGER_* as for every component.
//
//   npx tsx scripts/rotate-master-key.ts --from old.key --to new.key
import { parseArgs } from 'node:util';
import { loadConfig, topicNames } from '../src/config.js';
import { masterKeyFromFile, rewrapPlanKeys } from '../src/crypto/index.js';
import { createKafka } from '../src/kafka/index.js';
import { silentLogger } from '../src/logging.js';

const { values } = parseArgs({ options: { from: { type: 'string', multiple: true }, to: { type: 'string' } } });
if (!values.to || !values.from?.length) {
  process.stderr.write('usage: rotate-master-key --from old.key [--from older.key] --to new.key\n');
  process.exit(2);
}
const keyFile = (file: string) => masterKeyFromFile(file, 'key file');
const config = loadConfig();
const kafka = createKafka(config, silentLogger(), 'rotate-master-key');
try {
  const r = await rewrapPlanKeys({ kafka, topic: topicNames(config.topicPrefix).planKeys, from: values.from.map(keyFile), to: keyFile(values.to) });
  process.stdout.write(`${JSON.stringify(r)}\n`);
  if (r.unreadable.length) process.exitCode = 1;
} finally {
  await kafka.close();
}
