// A registry that takes the connection and never answers, while an executor starts: the executor's
// registration times out (a recorded warning, never an exit), it asks again, and once the registry
// answers it starts and serves a plan. The registry is the real one, behind a TCP proxy that first
// swallows every request and then passes them through.
import { createServer, connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startExecutor } from '../../executor/index.js';
import { connectLedger } from '../../src/client/index.js';
import { createLogger } from '../../src/logging.js';
import { tools } from '../fixtures/tools.js';
import { testConfig } from '../support/helpers.js';

/** A proxy in front of `target` (host:port): silent (accepts, never answers) until `answer()`. */
async function silentProxy(target: URL): Promise<{ port: number; answer(): void; held: number; close(): Promise<void> }> {
  let silent = true;
  const held: Socket[] = [];
  const server = createServer((client) => {
    if (silent) {
      held.push(client); // kept open, never answered
      client.on('error', () => {});
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    client.pipe(upstream).pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    answer: () => {
      silent = false;
      for (const s of held) s.destroy(); // the ones it never answered end now; the client asks again
    },
    get held() {
      return held.length;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of held) s.destroy();
        server.close(() => r());
      }),
  };
}

describe('a registry that never answers at start-up', () => {
  it('the executor waits with a warning per attempt, then starts and serves a plan', async () => {
    const base = testConfig();
    const real = new URL(base.registryUrl);
    const proxy = await silentProxy(real);
    onTestFinished(() => proxy.close());
    const config = testConfig({ topicPrefix: base.topicPrefix, registryUrl: `http://127.0.0.1:${proxy.port}${real.pathname}` });

    const lines: Array<{ msg: string; attempt?: number; err?: string }> = [];
    const logger = createLogger({ level: 'warn' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    const starting = startExecutor({ tools, config, executorId: 'registry-silent-exec', logger });
    let started = false;
    void starting.then(() => (started = true), () => {});

    // Each registration waits out its timeout (10 s, asked three times): the first warning comes then.
    const waited = () => lines.filter((l) => l.msg === 'schema registry unavailable at start-up; asking again');
    for (const until = Date.now() + 90_000; waited().length === 0 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 250));
    expect(waited().length).toBeGreaterThanOrEqual(1);
    expect(waited()[0]!.err).toMatch(/registry/);
    expect(proxy.held).toBeGreaterThan(0);
    expect(started).toBe(false);

    proxy.answer();
    const executor = await starting;
    onTestFinished(() => executor.stop());
    await executor.started;
    const ledger = await connectLedger(base);
    onTestFinished(() => ledger.close());
    const { planId } = await ledger.createPlan({ goal: 'after a silent registry', mode: 'execute', items: [{ id: 'x', title: 'x', why: 'served by the executor that waited', tool: 'noop' }] });
    const done = await ledger.waitFor(planId, 'completed', { timeoutMs: 60_000 });
    expect(done.items['x']!.status).toBe('completed');
  }, 180_000);
});
