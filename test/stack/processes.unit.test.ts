import { createServer } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freeStackPorts, logTail, spawnDetached, waitUntilReady } from '../../stack/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'plan-ledger-processes-'));

describe('starting a stack process', () => {
  it('reports a process that dies during start-up with what its log said last: error lines first, each cut to 300 characters', async () => {
    const log = join(dir, 'dies.log');
    const script = 'console.log("INFO booting"); console.log("ERROR Failed to start: Address already in use"); console.log("INFO shutting down"); process.exit(1)';
    const rec = spawnDetached({ name: 'dies', bin: process.execPath, args: ['-e', script, dir], cwd: dir, logFile: log, pidFile: join(dir, 'dies.pid'), marker: dir });
    const err = await waitUntilReady(rec, 'the dying service', async () => false, 30_000).then(
      () => null,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(err?.code).toBe('ENVIRONMENT');
    expect(err?.message).toBe(`the dying service exited during start-up; see ${log}; it last said:\n  ERROR Failed to start: Address already in use`);

    const quiet = join(dir, 'quiet.log');
    writeFileSync(quiet, `one\n\ntwo\n${'x'.repeat(400)}\n`);
    expect(logTail(quiet)).toBe(`; it last said:\n  one\n  two\n  ${'x'.repeat(300)}…`);
    expect(logTail(join(dir, 'absent.log'))).toBe('');
    expect(logTail(quiet, 20)).toBe(`; it last said:\n  …${'x'.repeat(19)}…`);
  });

  it('hands one stack ports from one free block, so its broker and registry can never be given the same port', async () => {
    for (const brokers of [1, 3]) {
      const { kafkaPort, registryPort } = await freeStackPorts(brokers);
      const used = [...Array.from({ length: brokers }, (_, i) => [kafkaPort + 2 * i, kafkaPort + 2 * i + 1]).flat(), registryPort, registryPort + 10];
      expect(new Set(used).size).toBe(2 * brokers + 2);
      expect(registryPort).toBe(kafkaPort + 2 * brokers);
      // Every one of them is free now.
      for (const port of used) {
        const free = await new Promise<boolean>((resolve) => {
          const srv = createServer();
          srv.once('error', () => resolve(false));
          srv.listen({ host: '127.0.0.1', port, exclusive: true }, () => srv.close(() => resolve(true)));
        });
        expect(free, `port ${port}`).toBe(true);
      }
    }
  });
});
