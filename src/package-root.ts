import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** The folder holding plan-ledger's package.json, from source (tsx) or from dist/ alike. */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'plan-ledger') {
      cached = dir;
      return dir;
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('plan-ledger: cannot find the package root');
    dir = up;
  }
}
