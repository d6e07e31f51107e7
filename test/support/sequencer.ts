import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's order (files that failed last time first, then the longest), with the chaos runs ahead of every
 * other file: the int and e2e tiers share two workers, and the longest file must start first or the run
 * ends with one worker busy and the other idle.
 */
export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (f: TestSpecification) => (/chaos\.e2e\.test\.ts$/.test(f.moduleId) ? 0 : 1);
    return sorted.map((f, i) => ({ f, i })).sort((a, b) => first(a.f) - first(b.f) || a.i - b.i).map(({ f }) => f);
  }
}
