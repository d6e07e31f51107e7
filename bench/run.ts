// Runs benchmarks one after another, each in its own process (so one's heap and connections do not
// weigh on the next), and stops at the first that fails.
//
//   npm run bench                     every bench: evolve, codec, projector, restore, executor, failover
//   npm run bench -- codec restore    only these (names of bench/<name>.ts)
//
// Needs the local stack (`npm run stack:up`) for all but `evolve`. Each writes bench/results/<name>.json;
// bench/README.md says what each measures and what was measured.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ALL = ['evolve', 'codec', 'projector', 'restore', 'executor', 'failover'];
const names = process.argv.slice(2).length ? process.argv.slice(2) : ALL;
for (const name of names) {
  const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  if (!ALL.includes(name) || !existsSync(file)) {
    console.error(`bench: no benchmark "${name}" (choose from ${ALL.join(', ')})`);
    process.exit(2);
  }
}
for (const name of names) {
  console.log(`\n== bench/${name}.ts`);
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(`./${name}.ts`, import.meta.url))], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`bench: ${name} failed (${r.signal ?? `exit ${r.status}`})`);
    process.exit(1);
  }
  console.log(`== ${name} done in ${((Date.now() - started) / 1000).toFixed(0)} s; results in bench/results/${name}.json`);
}
