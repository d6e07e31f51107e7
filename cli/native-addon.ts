import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isLedgerError, LedgerError } from '../src/errors.js';
import { confluent } from '../src/kafka/native.js';
import { packageRoot } from '../src/package-root.js';

const ADDON = '@confluentinc/kafka-javascript';

/** What a verb that needs the Kafka client does about its native addon. */
export type AddonStep = { kind: 'ok' } | { kind: 'build'; script: string } | { kind: 'fail'; message: string };

/**
 * The decision, apart from its effects. Nothing to do when the addon loads. From a checkout (the repo's
 * .npmrc turns install scripts off, so `npm ci` never builds it) the verb builds it once with
 * scripts/native.mjs, as `npm test` and `npm run demo` do; an installed package has no such script, so
 * the line names npm's own rebuild. Either way the verb fails at once with the reason in one line: a
 * verb that went on would fail later with a wrong diagnosis (a readiness probe that cannot load the
 * client looks like a broker that never answers).
 */
export function addonStep(o: { loadError: string | null; root: string; built: boolean }): AddonStep {
  if (o.loadError === null) return { kind: 'ok' };
  const script = join(o.root, 'scripts', 'native.mjs');
  const checkout = existsSync(script);
  if (checkout && !o.built) return { kind: 'build', script };
  const what = `the Kafka client's native addon (${ADDON}) does not load: ${o.loadError}`;
  if (checkout) return { kind: 'fail', message: `${what}; building it did not help: run \`npm run native\` in ${o.root} for the build's reason` };
  return { kind: 'fail', message: `${what}; run \`npm rebuild ${ADDON} --foreground-scripts\` in the project that installed plan-ledger (without a prebuilt binary for this platform it needs a C++ compiler, make, python3, libssl-dev and zlib1g-dev)` };
}

/** The first line of why the addon did not load, or null when it loads. */
function loadError(): string | null {
  try {
    confluent();
    return null;
  } catch (e) {
    if (!isLedgerError(e, 'ENVIRONMENT')) throw e;
    const cause = e.cause instanceof Error ? e.cause.message : e.message;
    return cause.split('\n')[0]!;
  }
}

/** Makes sure the Kafka client can load before a verb uses it: builds it from a checkout, or fails in one line. */
export function ensureKafkaClient(): void {
  const root = packageRoot();
  let built = false;
  for (;;) {
    const step = addonStep({ loadError: loadError(), root, built });
    if (step.kind === 'ok') return;
    if (step.kind === 'fail') throw new LedgerError('ENVIRONMENT', step.message);
    // Its progress goes to stderr: stdout is for the verb's results.
    spawnSync(process.execPath, [step.script], { cwd: root, stdio: ['ignore', process.stderr, process.stderr] });
    built = true;
  }
}
