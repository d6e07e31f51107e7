// bench/profile-summary.ts on a tiny hand-made profile: 8 samples whose durations are known (a sample lasts
// until the next one), one frame in each group the fixture holds.
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatSummary, groupOf, summarizeProfile, type CpuProfile } from '../../bench/profile-summary.js';

const fixture = fileURLToPath(new URL('./fixtures/tiny.cpuprofile', import.meta.url));
const profile = JSON.parse(readFileSync(fixture, 'utf8')) as CpuProfile;

describe('profile summary', () => {
  it('sums self time by group, of all time and of busy time (all but idle)', () => {
    const s = summarizeProfile(profile);
    expect(s.samples).toBe(8);
    expect(s.totalMs).toBe(8);
    expect(s.busyMs).toBe(7.5);
    const ms = Object.fromEntries(s.groups.map((g) => [g.group, g.ms]));
    expect(ms).toEqual({ 'plan fold/decide': 2, avsc: 2, 'native, outside JS': 1, GC: 1, 'node internals': 1, 'librdkafka binding': 0.5, idle: 0.5 });
    const plan = s.groups.find((g) => g.group === 'plan fold/decide')!;
    expect(plan.pctOfTotal).toBe(25);
    expect(plan.pctOfBusy).toBeCloseTo(26.667, 2);
    expect(s.groups.find((g) => g.group === 'idle')!.pctOfBusy).toBe(0);
    // Largest first; the shares of busy time add up to 100.
    expect(s.groups[0]!.ms).toBe(2);
    expect(s.groups.reduce((a, g) => a + g.pctOfBusy, 0)).toBeCloseTo(100, 6);
  });

  it('lists the functions with the most self time, idle left out, with where they are', () => {
    const s = summarizeProfile(profile, 3);
    expect(s.top.map((f) => [f.functionName, f.where, f.group, f.ms])).toEqual([
      ['fold', 'src/plan/fold.ts:42', 'plan fold/decide', 2],
      ['Type.toBuffer', 'avsc/lib/types.js:100', 'avsc', 2],
      ['(program)', '(native)', 'native, outside JS', 1],
    ]);
    expect(formatSummary('tiny', s).split('\n')).toContain('| plan fold/decide | 2 | 25.0 | 26.7 |');
  });

  it('groups frames by file: ours, the dependencies named, node internals', () => {
    const g = (url: string, functionName = 'f') => groupOf({ functionName, url });
    expect(g('file:///w/executor/appender.ts')).toBe('executor');
    expect(g('file:///w/src/kafka/writers.ts')).toBe('Kafka port');
    expect(g('file:///w/src/client/ledger.ts')).toBe('ledger (other)');
    expect(g('file:///w/node_modules/@kafkajs/confluent-schema-registry/dist/x.js')).toBe('registry client');
    expect(g('file:///w/node_modules/pino/lib/proto.js')).toBe('pino');
    expect(g('file:///w/node_modules/zod/index.js')).toBe('other dependencies');
    // A dependency's own src/ or executor/ folder is not ours.
    expect(g('file:///w/node_modules/foo/src/plan/x.js')).toBe('other dependencies');
    expect(g('node:internal/streams/readable')).toBe('node internals');
    expect(g('node:internal/modules/esm/hooks')).toBe('module loading');
    expect(g('', 'Promise.then')).toBe('node internals');
  });

  it('as a command: one summary per file; a missing file ends with exit 1 and one line naming it', () => {
    const script = fileURLToPath(new URL('../../bench/profile-summary.ts', import.meta.url));
    const ok = spawnSync(process.execPath, ['--import', 'tsx', script, fixture, '--top', '2'], { encoding: 'utf8' });
    expect(ok.status).toBe(0);
    expect(ok.stdout).toContain('tiny.cpuprofile: 0.0 s sampled (8 samples)');
    expect(ok.stdout).toContain('| fold | src/plan/fold.ts:42 | plan fold/decide | 2 | 26.7 |');
    const bad = spawnSync(process.execPath, ['--import', 'tsx', script, '/nonexistent.cpuprofile'], { encoding: 'utf8' });
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toContain('/nonexistent.cpuprofile');
    // Two node processes compiling TypeScript on a busy 2-core machine: the bound only catches a hang.
  }, 120_000);
});
