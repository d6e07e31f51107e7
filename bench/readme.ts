// Generates the README's Performance section from bench/results/summary.md: the block between
// `<!-- bench:begin -->` and `<!-- bench:end -->` there replaces the same markers' block in README.md
// (image paths made relative to the repository root). Run after bench/summary.ts; bench/run.ts runs both.
//
//   npx tsx bench/readme.ts [--check]   (--check: exit 1 when the README is not up to date)
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RESULTS_DIR } from './lib/harness.js';
import { BEGIN, END } from './summary.js';

export function block(text: string, where: string): string {
  const a = text.indexOf(BEGIN);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${where}: no ${BEGIN} … ${END} block`);
  return text.slice(a, b + END.length);
}

export function updateReadme(readme: string, summary: string): string {
  const generated = block(summary, 'bench/results/summary.md').replace(/\]\(summary\.svg\)/g, '](bench/results/summary.svg)');
  const current = block(readme, 'README.md');
  return readme.replace(current, () => generated);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const readmeFile = fileURLToPath(new URL('../README.md', import.meta.url));
  const readme = readFileSync(readmeFile, 'utf8');
  const next = updateReadme(readme, readFileSync(join(RESULTS_DIR, 'summary.md'), 'utf8'));
  if (process.argv.includes('--check')) {
    if (next !== readme) {
      console.error('README.md: the Performance section is not what bench/results/summary.md says; run npx tsx bench/readme.ts');
      process.exit(1);
    }
    console.log('README.md: Performance section up to date');
  } else {
    writeFileSync(readmeFile, next);
    console.log('README.md: Performance section regenerated from bench/results/summary.md');
  }
}
