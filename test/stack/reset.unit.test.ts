// `stack reset` is the one way to wipe the durable local stack: without its confirmation it refuses with
// a one-line reason and leaves every file in place.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { isLedgerError } from '../../src/errors.js';
import { stackReset, stackStatus, stackUp } from '../../stack/stack.js';

/** A stack folder as `up` leaves it after `down`: cluster record, formatted node storage, registry folder. */
function stoppedStackDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-reset-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ clusterId: 'AAAAAAAAAAAAAAAAAAAAAA', nodes: 1, createdAt: '2026-01-01T00:00:00.000Z' }));
  mkdirSync(join(dir, 'kafka-1', 'data'), { recursive: true });
  writeFileSync(join(dir, 'kafka-1', 'data', 'meta.properties'), 'cluster.id=AAAAAAAAAAAAAAAAAAAAAA\n');
  mkdirSync(join(dir, 'registry'), { recursive: true });
  return dir;
}

const tree = (dir: string) => readdirSync(dir, { recursive: true }).map(String).sort();

describe('stack reset', () => {
  it('refuses without confirmation, with a VALIDATION error that says how to confirm, and deletes nothing', async () => {
    const dir = stoppedStackDir();
    const before = tree(dir);
    const err = await stackReset({ dir, confirm: false }).catch((e: unknown) => e);
    expect(isLedgerError(err, 'VALIDATION')).toBe(true);
    expect((err as Error).message).toBe('stack reset deletes every plan, event and schema of the local stack; pass --yes to confirm');
    expect(tree(dir)).toEqual(before);
    expect(stackStatus({ dir }).hasData).toBe(true);
  });

  it('the CLI refuses without --yes: exit 2, one line on stderr, nothing on stdout, data kept', () => {
    const dir = stoppedStackDir();
    const before = tree(dir);
    const r = spawnSync(process.execPath, ['bin/plan-ledger.js', 'stack', 'reset'], { env: { ...process.env, PLAN_LEDGER_STACK_DIR: dir }, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('plan-ledger: stack reset deletes every plan, event and schema of the local stack; pass --yes to confirm\n');
    expect(tree(dir)).toEqual(before);
  });

  it('with confirmation deletes the node storage, the registry folder and the cluster record of a stopped stack', async () => {
    const dir = stoppedStackDir();
    writeFileSync(join(dir, 'unrelated.txt'), 'kept');
    const r = await stackReset({ dir, confirm: true });
    expect(r.stopped).toEqual([]);
    expect(r.removed.sort()).toEqual([join(dir, 'cluster.json'), join(dir, 'kafka-1'), join(dir, 'registry')].sort());
    expect(tree(dir)).toEqual(['unrelated.txt']);
    expect(existsSync(join(dir, 'kafka-1'))).toBe(false);
    expect(stackStatus({ dir }).hasData).toBe(false);
  });

  it("also deletes a SASL stack's secrets (passwords and certificates of the wiped storage)", async () => {
    const dir = stoppedStackDir();
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ clusterId: 'AAAAAAAAAAAAAAAAAAAAAA', nodes: 1, createdAt: '2026-01-01T00:00:00.000Z', security: 'sasl_scram' }));
    mkdirSync(join(dir, 'secrets'));
    writeFileSync(join(dir, 'secrets', 'client.password'), 'pw', { mode: 0o600 });
    const r = await stackReset({ dir, confirm: true });
    expect(r.removed.sort()).toEqual([join(dir, 'cluster.json'), join(dir, 'kafka-1'), join(dir, 'registry'), join(dir, 'secrets')].sort());
    expect(tree(dir)).toEqual([]);
  });
});

describe('stack up on kept data', () => {
  it('refuses a node count other than the one the data was formatted for, naming both ways out', async () => {
    const dir = stoppedStackDir();
    const err = await stackUp({ dir, brokers: 3, kafkaPort: 1, registryPort: 1 }).catch((e: unknown) => e);
    expect(isLedgerError(err, 'CONFLICT')).toBe(true);
    expect((err as Error).message).toBe(
      `the stack in ${dir} holds data of a 1-broker cluster; start it with --brokers 1, or wipe it with "plan-ledger stack reset --yes"`,
    );
    expect(stackStatus({ dir }).hasData).toBe(true);
  });

  it('accepts only 1 or 3 brokers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-brokers-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const err = await stackUp({ dir, brokers: 2 }).catch((e: unknown) => e);
    expect(isLedgerError(err, 'VALIDATION')).toBe(true);
    expect((err as Error).message).toBe('--brokers must be 1 or 3, got 2');
    const cli = spawnSync(process.execPath, ['bin/plan-ledger.js', 'stack', 'up', '--brokers', 'five'], { env: { ...process.env, PLAN_LEDGER_STACK_DIR: dir }, encoding: 'utf8' });
    expect(cli.status).toBe(2);
    expect(cli.stderr).toBe('plan-ledger: --brokers must be 1 or 3, got "five"\n');
    expect(readdirSync(dir)).toEqual([]);
  });
});
