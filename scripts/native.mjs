#!/usr/bin/env node
// Builds the Kafka client's native addon (@confluentinc/kafka-javascript, librdkafka) once, after `npm ci`.
// The repo's .npmrc turns install scripts off, so `npm ci` never runs the package's own install step —
// which, on a machine without the internet, would try to download a prebuilt binary and then the sources
// of OpenSSL, zlib, zstd and curl. Here the prebuilt binary is tried first (a machine with the internet
// gets it in seconds); failing that, the librdkafka bundled in the npm package is built against the
// system's libssl and zlib (CKJS_LINKING=dynamic), which needs only the package registries.
// `npm test`, `npm run demo` and `npm run native` run this; it returns at once when the addon loads.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** npm_config_nodedir for the running Node when its install holds its headers (include/node). */
function nodeHeaders() {
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node_version.h')) ? { npm_config_nodedir: prefix } : {};
}
const pkg = '@confluentinc/kafka-javascript';

function loads() {
  const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(pkg)})`], { cwd: root, encoding: 'utf8' });
  return r.status === 0;
}

if (!existsSync(join(root, 'node_modules', ...pkg.split('/')))) {
  console.error(`[native] ${pkg} is not installed: run \`npm ci\` first`);
  process.exit(1);
}
if (loads()) process.exit(0);

// What the source build needs; named by Debian package so the fix is one apt-get line.
const which = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const header = (h) => ['/usr/include', '/usr/local/include', '/usr/include/x86_64-linux-gnu', '/usr/include/aarch64-linux-gnu'].some((d) => existsSync(join(d, h)));
const missing = [
  !which('c++') && !which('g++') ? 'g++' : null,
  !which('make') ? 'make' : null,
  !which('python3') ? 'python3' : null,
  !header('openssl/ssl.h') ? 'libssl-dev' : null,
  !header('zlib.h') ? 'zlib1g-dev' : null,
].filter(Boolean);

console.error(`[native] building ${pkg} (librdkafka): the prebuilt binary if it can be downloaded, else from the bundled sources (about 2 minutes)`);
// An addon built for another Node (another ABI) does not load, and the installer would keep it as "already installed".
rmSync(join(root, 'node_modules', ...pkg.split('/'), 'build'), { recursive: true, force: true });
const logDir = join(root, 'node_modules', '.cache');
mkdirSync(logDir, { recursive: true });
const logFile = join(logDir, 'kafka-javascript-build.log');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const r = spawnSync(npm, ['rebuild', pkg, '--ignore-scripts=false', '--foreground-scripts'], {
  cwd: root,
  encoding: 'utf8',
  // No parallel make: the gyp target that runs librdkafka's configure does not declare what it makes.
  // The headers of the Node that runs this (a Node unpacked beside the system's one has its own, and
  // node-gyp would otherwise take the system's and build for the wrong ABI; downloading them needs the internet).
  env: { ...process.env, CKJS_LINKING: 'dynamic', MAKEFLAGS: '', ...nodeHeaders() },
});
writeFileSync(logFile, `${r.stdout ?? ''}\n${r.stderr ?? ''}`);
if (r.status === 0 && loads()) {
  console.error(`[native] ${pkg} built (log: ${logFile})`);
  process.exit(0);
}
if (missing.length) {
  console.error(`[native] cannot build ${pkg}: missing ${missing.join(', ')} — install them (Debian/Ubuntu: apt-get install ${missing.join(' ')}) and run \`npm run native\``);
} else {
  const lines = `${r.stdout ?? ''}\n${r.stderr ?? ''}`.split('\n').filter((l) => /error/i.test(l));
  console.error(`[native] building ${pkg} failed: ${lines.at(-1)?.trim() ?? `exit ${r.status}`} (full log: ${logFile})`);
}
process.exit(1);
