// `npm run chaos` — a bounded chaos run against a private 3-broker stack; writes
// chaos/results/<label>.json and .md and exits 1 when any promise did not hold.
//   --short          the CI-sized runs: the fixed seeds of SHORT_SEEDS (chaos.ts), then one random seed,
//                    each about 4 minutes on a 2-core machine (stack start included)
//   --plans <n>      root plans (default 200; short 20)
//   --minutes <n>    hard bound on the work once the stack is up (default 20; short 3)
//   --seed <n>       fault schedule seed: one run of it (default: random, printed in the report)
//   --out <dir>      report folder (default chaos/results)
//   --faults <kind>  all (default): executor faults (network partitions among them), a broker killed, another
//                    killed while a partition's leadership moves, a registry and a projector kill;
//                    brokers: only broker kills, one of three at a time, again and again (every other one
//                    while a partition's leadership moves);
//                    rolling: a rolling restart of the brokers, as an upgrade does it (each in turn stopped
//                    with SIGTERM and started again), again and again
//   --broker-gap <s> with --faults brokers or rolling: seconds a restarted broker is left back before the
//                    next fault (15)
//   --controller <layout>  dedicated: the brokers share a KRaft controller process no fault touches (production's
//                    layout; the default with --faults brokers or rolling); combined: each broker is a
//                    controller too, so a broker killed may be the active controller (the default with all)
//   --broker-session <ms>  each broker's broker.session.timeout.ms (Kafka's default 9000): how soon a killed broker is fenced
//   --session <ms>   the executors' consumer-group session timeout (default 6000); a network partition lasts
//                    past it (at least 4 s more) until the cut executor's partitions are taken over
//   --keep-stack     stop the stack at the end instead of wiping it
//   --docs           write the report's figures into docs/operations/chaos.md and its summary into
//                    RELIABILITY.md (each between its markers); one run only (not --short without --seed)
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { cacheDir } from '../stack/artifacts.js';
import { randomSeed, renderDocsBlock, renderSummaryBlock, runChaos, SHORT_RUN, SHORT_SEEDS, type ChaosReport } from './chaos.js';

const OPTIONS = {
  short: { type: 'boolean', default: false },
  plans: { type: 'string' },
  minutes: { type: 'string' },
  seed: { type: 'string' },
  out: { type: 'string', default: join('chaos', 'results') },
  faults: { type: 'string', default: 'all' },
  'broker-gap': { type: 'string', default: '15' },
  'broker-session': { type: 'string' },
  controller: { type: 'string' },
  session: { type: 'string', default: '6000' },
  skew: { type: 'string', default: '300000' },
  'keep-stack': { type: 'boolean', default: false },
  docs: { type: 'boolean', default: false },
} as const;

function parse() {
  try {
    return parseArgs({ options: OPTIONS });
  } catch (e) {
    // An unknown option or a value that looks like one ("-1"): one line, not a stack.
    process.stderr.write(`${(e as Error).message.replace(/\s*\n\s*/g, ' ')}\n`);
    process.exit(2);
  }
}
const { values } = parse();
if (values.faults !== 'all' && values.faults !== 'brokers' && values.faults !== 'rolling') {
  process.stderr.write(`--faults must be all, brokers or rolling, not ${JSON.stringify(values.faults)}\n`);
  process.exit(2);
}
for (const [name, min] of [['plans', 1], ['minutes', 1], ['seed', 0]] as const) {
  const v = values[name];
  if (v !== undefined && !(Number.isInteger(Number(v)) && Number(v) >= min)) {
    process.stderr.write(`--${name} must be an integer >= ${min}, not ${JSON.stringify(v)}\n`);
    process.exit(2);
  }
}
const brokerGap = Number(values['broker-gap']);
if (!Number.isFinite(brokerGap) || brokerGap < 0) {
  process.stderr.write(`--broker-gap must be a number of seconds >= 0, not ${JSON.stringify(values['broker-gap'])}\n`);
  process.exit(2);
}
const brokerSession = values['broker-session'] === undefined ? undefined : Number(values['broker-session']);
if (brokerSession !== undefined && !(Number.isInteger(brokerSession) && brokerSession >= 1000)) {
  process.stderr.write(`--broker-session must be an integer number of ms >= 1000, not ${JSON.stringify(values['broker-session'])}\n`);
  process.exit(2);
}
const controller = values.controller;
if (controller !== undefined && controller !== 'dedicated' && controller !== 'combined') {
  process.stderr.write(`--controller must be dedicated or combined, not ${JSON.stringify(controller)}\n`);
  process.exit(2);
}
const session = Number(values.session);
if (!(Number.isInteger(session) && session >= 1000)) {
  process.stderr.write(`--session must be an integer number of ms >= 1000, not ${JSON.stringify(values.session)}\n`);
  process.exit(2);
}
const skew = Number(values.skew);
// An executor refuses an offset past 30 min (a broker refuses records stamped more than an hour ahead).
if (!(Number.isInteger(skew) && skew >= 0 && skew <= 1_800_000)) {
  process.stderr.write(`--skew must be an integer number of ms from 0 to 1800000, not ${JSON.stringify(values.skew)}\n`);
  process.exit(2);
}
const load = loadavg()[0]!.toFixed(1);
/** The code the run exercises, as it was when the run began (a docs block names it). */
const commit = (() => {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return `commit ${head}${changed ? ' with uncommitted changes' : ''}`;
  } catch {
    return 'a tree outside git';
  }
})();
const short = values.short === true;
const seeds = values.seed !== undefined ? [Number(values.seed)] : short ? [...SHORT_SEEDS.map((s) => s.seed), randomSeed()] : [randomSeed()];
if (values.docs && seeds.length > 1) {
  process.stderr.write('--docs writes the figures of one run: give --seed with --short, or run the full one\n');
  process.exit(2);
}
if (seeds.length > 1) process.stderr.write(`[chaos] ${seeds.length} short runs: seeds ${seeds.join(', ')} (the last one random)\n`);

const results: Array<{ label: string; report: ChaosReport }> = [];
for (const seed of seeds) {
  const label = `${short ? 'short' : 'full'}-${new Date().toISOString().replace(/[:.]/g, '-')}-seed${seed}`;
  const stackDir = join(cacheDir(), `chaos-stack-${process.pid}`);
  const report = await runChaos({
    ...(short ? SHORT_RUN : { plans: 200, executors: 3, maxMinutes: 20, arrivalShare: 0.3, faultEveryMs: [3000, 8000] as const }),
    ...(values.plans !== undefined ? { plans: Number(values.plans) } : {}),
    ...(values.minutes !== undefined ? { maxMinutes: Number(values.minutes) } : {}),
    sessionTimeoutMs: session,
    clockSkewMs: skew,
    faults: values.faults,
    brokerGapMs: brokerGap * 1000,
    ...(brokerSession !== undefined ? { brokerSessionMs: brokerSession } : {}),
    ...(controller !== undefined ? { controller } : {}),
    seed,
    outDir: values.out!,
    stackDir,
    keepStack: values['keep-stack'],
    label,
    log: (l) => process.stderr.write(`[chaos] ${l}\n`),
  });
  if (!values['keep-stack']) rmSync(stackDir, { recursive: true, force: true });
  results.push({ label, report });
  process.stdout.write(`${join(values.out!, `${label}.md`)}\n`);
  process.stdout.write(`seed ${seed}: plans ${report.plans.root}+${report.plans.child}, items ${report.items.total}, faults ${JSON.stringify(report.faults)}, lost ${report.lost}, duplicates ${report.duplicates}: ${report.ok ? 'OK' : report.problems.join('; ')}\n`);
}

if (values.docs) {
  const { report } = results[0]!;
  const args = process.argv.slice(2).filter((a) => a !== '--docs');
  const command = `npm run chaos${args.length ? ` -- ${args.join(' ')}` : ''}`;
  const machine = `${commit}, a ${cpus().length}-core machine (load average ${load} at the start)`;
  writeBlock(join('docs', 'operations', 'chaos.md'), 'chaos:latest', renderDocsBlock(report, command, machine));
  writeBlock('RELIABILITY.md', 'chaos:summary', renderSummaryBlock(report, command, machine));
}
process.exit(results.every((r) => r.report.ok) ? 0 : 1);

/** Replaces what stands between `<!-- name -->` and `<!-- /name -->` in a page. */
function writeBlock(page: string, name: string, block: string): void {
  const [open, close] = [`<!-- ${name} -->`, `<!-- /${name} -->`];
  const text = readFileSync(page, 'utf8');
  const from = text.indexOf(open);
  const to = text.indexOf(close);
  if (from < 0 || to < from) throw new Error(`${page} has no ${open} … ${close} block`);
  writeFileSync(page, `${text.slice(0, from + open.length)}\n${block}\n${text.slice(to)}`);
  process.stderr.write(`[chaos] wrote the figures into ${page}\n`);
}
