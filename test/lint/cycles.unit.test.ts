// The import-cycle rule of `npm run lint` (.dependency-cruiser.mjs, run by dependency-cruiser) on fixtures:
// it reports a cycle of two files that import each other as './x.js' (TypeScript source, resolved to
// x.ts), also when the way back is a type import, and reports nothing where there is no cycle.
import { cruise, type ICruiseOptions, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const FIXTURES = 'test/lint/fixtures';

async function cruiseFixture(dir: string): Promise<ICruiseResult> {
  const options: ICruiseOptions = await extractDepcruiseOptions(join(root, '.dependency-cruiser.mjs'));
  // The lint run excludes the fixtures; here they are what is cruised.
  expect(options.exclude).toEqual({ path: `^${FIXTURES}/` });
  delete options.exclude;
  const { output } = await cruise([`${FIXTURES}/${dir}`], { ...options, baseDir: root }, undefined, { tsConfig: extractTSConfig(join(root, 'tsconfig.json')) });
  return output as ICruiseResult;
}

function cycles(r: ICruiseResult): string[][] {
  return r.summary.violations.filter((v) => v.rule.name === 'no-circular').map((v) => [v.from, ...(v.cycle ?? []).map((c) => c.name)]);
}

function resolvedImports(r: ICruiseResult, from: string): string[] {
  const m = r.modules.find((x) => x.source === `${FIXTURES}/${from}`);
  return (m?.dependencies ?? []).filter((d) => !d.couldNotResolve).map((d) => d.resolved).sort();
}

describe('the import-cycle rule of npm run lint', () => {
  it('reports two files that import each other, resolving ./x.js to x.ts', async () => {
    const r = await cruiseFixture('cycle');
    expect(r.summary.error).toBeGreaterThan(0);
    expect(cycles(r)).toContainEqual([`${FIXTURES}/cycle/a.ts`, `${FIXTURES}/cycle/b.ts`, `${FIXTURES}/cycle/a.ts`]);
  });

  it('reports a cycle whose way back is a type-only import', async () => {
    const r = await cruiseFixture('type-cycle');
    expect(cycles(r)).toContainEqual([`${FIXTURES}/type-cycle/owner.ts`, `${FIXTURES}/type-cycle/part.ts`, `${FIXTURES}/type-cycle/owner.ts`]);
  });

  it('reports nothing for imports without a cycle (which it did resolve)', async () => {
    const r = await cruiseFixture('acyclic');
    expect(resolvedImports(r, 'acyclic/top.ts')).toEqual([`${FIXTURES}/acyclic/leaf.ts`, `${FIXTURES}/acyclic/middle.ts`]);
    expect(resolvedImports(r, 'acyclic/middle.ts')).toEqual([`${FIXTURES}/acyclic/leaf.ts`]);
    expect(cycles(r)).toEqual([]);
    expect(r.summary.error).toBe(0);
  });
});
