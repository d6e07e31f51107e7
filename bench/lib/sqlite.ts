// LangGraph's SQLite checkpoint saver for bench/langgraph.ts, with its native module built on demand.
// `@langchain/langgraph-checkpoint-sqlite` (a devDependency) runs on better-sqlite3, whose install step
// downloads a prebuilt binary; the repo's .npmrc turns install scripts off, so `npm ci` leaves it unbuilt
// (and never tries to download). The first bench run that needs it builds it here from the SQLite sources
// bundled in the npm package, with npm's own node-gyp and the running Node's headers (include/node beside
// its binary, as scripts/native.mjs does for the Kafka client): about a minute on two cores, once. Nothing
// in `npm test` or CI loads it. A build that cannot run or fails ends in one line naming why and the log.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';

const require = createRequire(import.meta.url);

/** The directory of an installed package, or undefined. */
function packageDir(name: string): string | undefined {
  try {
    return dirname(require.resolve(`${name}/package.json`));
  } catch {
    return undefined;
  }
}

/** True when better-sqlite3 (in `dir`) opens a database in a fresh process: its native module is built for this Node. */
function opens(dir: string): boolean {
  const r = spawnSync(process.execPath, ['-e', `new (require(${JSON.stringify(dir)}))(':memory:').close()`], { encoding: 'utf8' });
  return r.status === 0;
}

/** npm's bundled node-gyp, beside the running Node (or where npm says it is, under `npm run`). */
function nodeGyp(): string | undefined {
  const candidates = [
    process.env.npm_config_node_gyp,
    join(dirname(dirname(process.execPath)), 'lib', 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
    process.env.npm_execpath ? join(dirname(dirname(process.env.npm_execpath)), 'node_modules', 'node-gyp', 'bin', 'node-gyp.js') : undefined,
  ];
  return candidates.find((c): c is string => c !== undefined && existsSync(c));
}

/**
 * Builds better-sqlite3 if it does not load yet; throws an Error whose message is one line saying why it
 * could not. Returns the seconds the build took (0 when it was there).
 */
export function ensureSqliteBuilt(log: (line: string) => void = (l) => console.error(l)): number {
  const saverDir = packageDir('@langchain/langgraph-checkpoint-sqlite');
  if (!saverDir) throw new Error('@langchain/langgraph-checkpoint-sqlite is not installed: run `npm ci`');
  const sqliteDir = (() => {
    try {
      return dirname(createRequire(join(saverDir, 'package.json')).resolve('better-sqlite3/package.json'));
    } catch {
      return undefined;
    }
  })();
  if (!sqliteDir) throw new Error('better-sqlite3 (a dependency of @langchain/langgraph-checkpoint-sqlite) is not installed: run `npm ci`');
  if (opens(sqliteDir)) return 0;
  const prefix = dirname(dirname(process.execPath));
  if (!existsSync(join(prefix, 'include', 'node', 'node_version.h'))) throw new Error(`cannot build better-sqlite3: no Node headers under ${join(prefix, 'include', 'node')} (the running Node's install has none)`);
  const gyp = nodeGyp();
  if (!gyp) throw new Error('cannot build better-sqlite3: npm\'s node-gyp was not found beside this Node');
  const which = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
  const missing = [!which('c++') && !which('g++') ? 'g++' : null, !which('make') ? 'make' : null, !which('python3') ? 'python3' : null].filter(Boolean);
  if (missing.length) throw new Error(`cannot build better-sqlite3: missing ${missing.join(', ')} (Debian/Ubuntu: apt-get install ${missing.join(' ')})`);
  log(`[sqlite] building better-sqlite3 from its bundled SQLite sources for node ${process.version} (once, about a minute)`);
  const t0 = Date.now();
  const r = spawnSync(process.execPath, [gyp, 'rebuild', '--release', `--nodedir=${prefix}`], { cwd: sqliteDir, encoding: 'utf8', env: { ...process.env, npm_config_nodedir: prefix } });
  mkdirSync(join(sqliteDir, 'build'), { recursive: true });
  const logFile = join(sqliteDir, 'build', 'plan-ledger-build.log');
  writeFileSync(logFile, `${r.stdout ?? ''}\n${r.stderr ?? ''}`);
  if (r.status !== 0 || !opens(sqliteDir)) {
    const last = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.split('\n').filter((l) => /error/i.test(l)).at(-1)?.trim();
    throw new Error(`building better-sqlite3 failed: ${last ?? (r.error?.message ?? `exit ${String(r.status)}`)} (full log: ${logFile})`);
  }
  const s = (Date.now() - t0) / 1000;
  log(`[sqlite] better-sqlite3 built in ${s.toFixed(0)} s (log: ${logFile})`);
  return s;
}

/** A file-backed SqliteSaver (`@langchain/langgraph-checkpoint-sqlite`) on `path`; its module loads only here. */
export async function sqliteSaver(path: string): Promise<BaseCheckpointSaver & { db: { close(): void } }> {
  const { SqliteSaver } = await import('@langchain/langgraph-checkpoint-sqlite');
  return SqliteSaver.fromConnString(path);
}
