// The floor rules of `npm run lint` (.dependency-cruiser.mjs; docs/design.md, "Floors") on a miniature of
// the project (test/lint/fixtures/floors/): cruised with that folder as the base, its src/, executor/,
// cli/… are what the rules see at the top of the repository. Each rule reports exactly the imports that
// break it (the fixtures' *-breaks.ts files and one re-export of index.ts) and none of the allowed ones
// beside them. `npm run lint` runs the same rules on the real tree.
import { cruise, type ICruiseOptions, type ICruiseResult } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const FLOORS = join(root, 'test/lint/fixtures/floors');

async function options(): Promise<ICruiseOptions> {
  const o: ICruiseOptions = await extractDepcruiseOptions(join(root, '.dependency-cruiser.mjs'));
  // The lint run excludes the fixtures; here they are what is cruised.
  expect(o.exclude).toEqual({ path: '^test/lint/fixtures/' });
  delete o.exclude;
  return o;
}

async function cruiseFloors(): Promise<ICruiseResult> {
  const { output } = await cruise(['.'], { ...(await options()), baseDir: FLOORS }, undefined, { tsConfig: extractTSConfig(join(root, 'tsconfig.json')) });
  return output as ICruiseResult;
}

/** [from, to] of each violation of the rule, sorted. */
function broken(r: ICruiseResult, rule: string): string[][] {
  return r.summary.violations
    .filter((v) => v.rule.name === rule)
    .map((v) => [v.from, v.to])
    .sort((a, b) => a.join().localeCompare(b.join()));
}

describe('the floor rules of npm run lint', () => {
  let r: ICruiseResult;
  beforeAll(async () => {
    r = await cruiseFloors();
  });

  it('resolved the miniature: its allowed imports are there and broke nothing', () => {
    const main = r.modules.find((m) => m.source === 'cli/main.ts');
    expect((main?.dependencies ?? []).filter((d) => !d.couldNotResolve).map((d) => d.resolved).sort()).toEqual([
      'cli/render.ts', 'demo/demo.ts', 'index.ts', 'src/errors.ts', 'stack/launcher.ts',
    ]);
    const client = r.modules.find((m) => m.source === 'src/client.ts');
    const zod = client?.dependencies.find((d) => d.module === 'zod');
    expect(zod).toBeDefined();
    expect(zod!.dependencyTypes).not.toContain('local');
    // Every violation is in a file made to break a rule (or the marked line of index.ts).
    for (const v of r.summary.violations) expect(v.from).toMatch(/-breaks\.ts$|^index\.ts$/);
  });

  it('plan-imports-only-plan: src/plan/ imports another library module (its own files and node:crypto are fine)', () => {
    expect(broken(r, 'plan-imports-only-plan')).toEqual([['src/plan/plan-breaks.ts', 'src/errors.ts']]);
  });

  it('library-imports-only-library: src/ imports the executor (a type import) or the CLI (npm packages and src/ are fine)', () => {
    expect(broken(r, 'library-imports-only-library')).toEqual([
      ['src/library-breaks.ts', 'cli/main.ts'],
      ['src/library-breaks.ts', 'executor/index.ts'],
    ]);
  });

  it('services-import-only-library: executor/ imports projector/, projector/ imports cli/, stack/ imports executor/', () => {
    expect(broken(r, 'services-import-only-library')).toEqual([
      ['executor/executor-breaks.ts', 'projector/index.ts'],
      ['projector/projector-breaks.ts', 'cli/main.ts'],
      ['stack/stack-breaks.ts', 'executor/index.ts'],
    ]);
  });

  it('entry-imports-library-and-services: index.ts re-exports a program (its src/, executor/ and projector/ re-exports are fine)', () => {
    expect(broken(r, 'entry-imports-library-and-services')).toEqual([['index.ts', 'cli/render.ts']]);
  });

  it('programs-import-no-tools: cli/ imports test/, demo/ imports bench/ (the entry, src/, stack/ and each other are fine)', () => {
    expect(broken(r, 'programs-import-no-tools')).toEqual([
      ['cli/cli-breaks.ts', 'test/support.ts'],
      ['demo/demo-breaks.ts', 'bench/lib.ts'],
    ]);
  });

  it('every forbidden rule of the config is one this file shows firing', async () => {
    const forbidden = (await options()).ruleSet?.forbidden ?? [];
    const shown = ['plan-imports-only-plan', 'library-imports-only-library', 'services-import-only-library', 'entry-imports-library-and-services', 'programs-import-no-tools'];
    // no-circular is shown by test/lint/cycles.unit.test.ts.
    expect(forbidden.map((f) => f.name).sort()).toEqual(['no-circular', ...shown].sort());
  });
});
