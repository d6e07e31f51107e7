// Registry credentials from the config reach the registry on every request: codecFromConfig (the one way
// the executor, projector, client and CLI build their codec) against a loopback HTTP server that answers
// the Confluent API calls of a start-up and records each request's Authorization header.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { codecFromConfig } from '../../src/codec/index.js';
import { loadConfig } from '../../src/config.js';

interface Seen { method: string; url: string; authorization: string | undefined }

async function recordingRegistry() {
  const seen: Seen[] = [];
  let nextId = 40;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization });
      const json = (status: number, body: object) => res.writeHead(status, { 'content-type': 'application/vnd.schemaregistry.v1+json' }).end(JSON.stringify(body));
      if (req.url!.startsWith('/config/')) return json(200, { compatibilityLevel: 'BACKWARD', compatibility: 'BACKWARD' });
      if (req.method === 'POST' && /^\/subjects\/[^/]+\/versions$/.test(req.url!)) return json(200, { id: (nextId += 1) });
      return json(404, { error_code: 40401, message: 'not here' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => server.close(() => r())) };
}

let close: (() => Promise<void>) | undefined;
afterEach(async () => close?.());

describe('codecFromConfig', () => {
  it('sends the config registryAuth (from PLAN_LEDGER_REGISTRY_USERNAME/PASSWORD) with every registry request', async () => {
    const registry = await recordingRegistry();
    close = registry.close;
    const config = loadConfig({ brokers: ['127.0.0.1:1'], registryUrl: registry.url, topicPrefix: 'auth-test', registryAuth: { username: 'ledger-svc', password: 'p:ss wörd' } });
    const codec = await codecFromConfig(config, { registryTimeoutMs: 5000 });
    expect(codec.schemaIds).toEqual({ event: 41, command: 42, snapshot: 43 });
    const posts = registry.seen.filter((r) => r.method === 'POST');
    expect(posts.map((r) => r.url).sort()).toEqual(['/subjects/auth-test.plan-commands-value/versions', '/subjects/auth-test.plan-events-value/versions', '/subjects/auth-test.plan-snapshots-value/versions']);
    // base64("ledger-svc:p:ss wörd") in UTF-8, written out rather than recomputed.
    const expected = 'Basic bGVkZ2VyLXN2YzpwOnNzIHfDtnJk';
    expect(registry.seen.length).toBeGreaterThanOrEqual(3);
    for (const r of registry.seen) expect(r.authorization, `${r.method} ${r.url}`).toBe(expected);
  });

  it('reads the credentials from the environment through loadConfig, and sends none without them', async () => {
    const registry = await recordingRegistry();
    close = registry.close;
    const env = { PLAN_LEDGER_REGISTRY_USERNAME: 'env-user', PLAN_LEDGER_REGISTRY_PASSWORD: 'env-pass' };
    const saved = { ...process.env };
    Object.assign(process.env, env);
    try {
      const withEnv = loadConfig({ brokers: ['127.0.0.1:1'], registryUrl: registry.url, topicPrefix: 'auth-env' });
      await codecFromConfig(withEnv);
    } finally {
      for (const k of Object.keys(env)) if (saved[k] === undefined) delete process.env[k];
    }
    expect(new Set(registry.seen.map((r) => r.authorization))).toEqual(new Set(['Basic ZW52LXVzZXI6ZW52LXBhc3M=']));

    registry.seen.length = 0;
    const anonymous = loadConfig({ brokers: ['127.0.0.1:1'], registryUrl: registry.url, topicPrefix: 'auth-none' });
    expect(anonymous.registryAuth).toBeUndefined();
    await codecFromConfig(anonymous);
    expect(registry.seen.length).toBeGreaterThanOrEqual(3);
    expect(registry.seen.every((r) => r.authorization === undefined)).toBe(true);
  });
});
