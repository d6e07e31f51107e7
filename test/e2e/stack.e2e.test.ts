// The `stack` verbs end to end, on their own ports and folder so they never touch the suite's stack.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { portOpen } from '../../stack/processes.js';
import { freeStackPorts } from '../support/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-stack-'));
let kafkaPort = 0;
let registryPort = 0;
let env: NodeJS.ProcessEnv = {};
beforeAll(async () => {
  ({ kafkaPort, registryPort } = await freeStackPorts());
  env = { ...process.env, PLAN_LEDGER_STACK_DIR: dir, PLAN_LEDGER_STACK_KAFKA_PORT: String(kafkaPort), PLAN_LEDGER_STACK_REGISTRY_PORT: String(registryPort) };
});
const cli = (...args: string[]) => spawnSync(process.execPath, ['bin/plan-ledger.js', 'stack', ...args], { env, encoding: 'utf8', timeout: 170_000 });

describe('plan-ledger stack up | status | down', () => {
  it('starts both services, is idempotent, reports status, and stops leaving no port behind', async () => {
    const up = cli('up', '--json');
    expect(up.status, up.stderr).toBe(0);
    const info = JSON.parse(up.stdout) as { brokers: string[]; registryUrl: string; alreadyRunning: boolean };
    expect(info.brokers).toEqual([`127.0.0.1:${kafkaPort}`]);
    expect(info.registryUrl).toBe(`http://127.0.0.1:${registryPort}/apis/ccompat/v7`);
    expect(info.alreadyRunning).toBe(false);
    expect(existsSync(join(dir, 'stack.json'))).toBe(true);
    const res = await fetch(`${info.registryUrl}/config`);
    expect(await res.json()).toEqual({ compatibilityLevel: 'BACKWARD' });

    const again = cli('up');
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/^local stack already running/);

    const status = cli('status', '--json');
    expect(status.status).toBe(0);
    const s = JSON.parse(status.stdout) as { running: boolean; processes: { name: string; alive: boolean }[] };
    expect(s.running).toBe(true);
    expect(s.processes.map((p) => [p.name, p.alive])).toEqual([['kafka-1', true], ['registry', true]]);

    // A second stack on the same ports is refused with a one-line reason.
    const clash = spawnSync(process.execPath, ['bin/plan-ledger.js', 'stack', 'up'], {
      env: { ...env, PLAN_LEDGER_STACK_DIR: mkdtempSync(join(tmpdir(), 'plan-ledger-clash-')) },
      encoding: 'utf8',
    });
    expect(clash.status).toBe(1);
    expect(clash.stderr.trim()).toBe(`plan-ledger: port ${kafkaPort} (Kafka broker) is taken by another process; free it or choose another port with PLAN_LEDGER_STACK_KAFKA_PORT`);

    const down = cli('down');
    expect(down.status).toBe(0);
    expect(down.stdout).toMatch(/^stopped registry \(pid \d+\), kafka-1 \(pid \d+\)/);
    for (const port of [kafkaPort, kafkaPort + 1, registryPort, registryPort + 10]) expect(await portOpen('127.0.0.1', port)).toBe(false);
    const after = cli('status');
    expect(after.status).toBe(3);
    expect(after.stdout).toMatch(/^not running/);
  });
});
