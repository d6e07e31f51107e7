// `npm run chaos`'s options: a bad value ends the run before any stack starts, with exit code 2 and one
// line naming the option and the value.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function chaos(args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'chaos/run.ts', ...args], { encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stderr: r.stderr.trim() };
}

describe('chaos run options', () => {
  it.each([
    [['--faults', 'network'], /^--faults must be all, brokers or rolling, not "network"$/],
    [['--broker-gap', '-1'], /^Option '--broker-gap' argument is ambiguous\. .*--broker-gap=-XYZ/],
    [['--broker-gap=-1'], /^--broker-gap must be a number of seconds >= 0, not "-1"$/],
    [['--plans', '0'], /^--plans must be an integer >= 1, not "0"$/],
    [['--minutes', 'ten'], /^--minutes must be an integer >= 1, not "ten"$/],
    [['--surprise'], /^Unknown option '--surprise'/],
    [['--broker-gap', 'soon'], /^--broker-gap must be a number of seconds >= 0, not "soon"$/],
    [['--broker-session', '500'], /^--broker-session must be an integer number of ms >= 1000, not "500"$/],
    [['--session', '1e9x'], /^--session must be an integer number of ms >= 1000, not "1e9x"$/],
    [['--skew', '3600000'], /^--skew must be an integer number of ms from 0 to 1800000, not "3600000"$/],
    [['--controller', 'solo'], /^--controller must be dedicated or combined, not "solo"$/],
  ])('refuses %j with exit 2 and one line', (args, line) => {
    const { code, stderr } = chaos(args);
    expect(code).toBe(2);
    expect(stderr.split('\n')).toHaveLength(1);
    expect(stderr).toMatch(line);
  });
});
