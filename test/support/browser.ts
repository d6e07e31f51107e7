// The browser for the dashboard tests, found without a system package: the Chromium that ships inside the
// @sparticuz/chromium dev dependency (a brotli-compressed headless build, inflated once into the plan-ledger
// cache), so `npm ci && npm test` passes on a machine where nobody installed a browser. PLAN_LEDGER_CHROMIUM
// may name another Chromium executable to use instead.
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { chromium, type Browser } from 'playwright-core';
import { cacheDir } from '../../stack/artifacts.js';
import { setting } from '../../src/settings.js';

const execFileAsync = promisify(execFile);

const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export interface ChromiumExecutable {
  path: string;
  /** `system` (named by PLAN_LEDGER_CHROMIUM) or `bundled` (@sparticuz/chromium). */
  source: 'system' | 'bundled';
}

/** The Chromium PLAN_LEDGER_CHROMIUM names, else the bundled one (inflated on first use). */
export async function chromiumExecutable(): Promise<ChromiumExecutable> {
  const named = setting('PLAN_LEDGER_CHROMIUM');
  if (named && named !== 'bundled') {
    if (!existsSync(named)) throw new Error(`PLAN_LEDGER_CHROMIUM=${named}: no such file`);
    return { path: named, source: 'system' };
  }
  return { path: await bundledChromium(), source: 'bundled' };
}

/** Headless Chromium for a test; close it in the test's `finally`. */
export async function launchChromium(): Promise<Browser> {
  const { path } = await chromiumExecutable();
  return chromium.launch({ executablePath: path, args: ARGS });
}

/**
 * @sparticuz/chromium inflates its binary into `os.tmpdir()` and reuses whatever `chromium` it finds
 * there, so a shared /tmp could hand back a half-written or different build. It is inflated instead by a
 * child process whose TMPDIR is a fresh staging directory, renamed into place when complete: one
 * directory per package version, complete or absent, safe when two test runs race. (A child, so this
 * process's TMPDIR never changes under the executor and projector a test runs in it.)
 */
async function bundledChromium(): Promise<string> {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('@sparticuz/chromium');
  const pkgJson = join(dirname(dirname(dirname(entry))), 'package.json');
  const { version } = JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string };
  const root = join(cacheDir(), 'browsers');
  const target = join(root, `sparticuz-chromium-${version}`);
  const binary = join(target, 'chromium');
  if (existsSync(binary)) return binary;

  mkdirSync(root, { recursive: true });
  const staging = mkdtempSync(join(root, `.inflating-${version}-`));
  try {
    const script = `const m = require(${JSON.stringify(entry)}); (m.default ?? m).executablePath().then((p) => process.stdout.write(p))`;
    const { stdout } = await execFileAsync(process.execPath, ['-e', script], { env: { ...process.env, TMPDIR: staging } });
    if (stdout !== join(staging, 'chromium')) throw new Error(`@sparticuz/chromium inflated to ${stdout}, not into ${staging}`);
    renameSync(staging, target);
  } catch (e) {
    rmSync(staging, { recursive: true, force: true });
    // Another run renamed its complete copy into place first: use that one.
    if (!existsSync(binary)) throw e;
  }
  return binary;
}
