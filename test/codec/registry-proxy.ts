/**
 * A transparent HTTP forwarder in front of the real schema registry, for integration tests: it counts the
 * requests that reach the registry and can simulate an outage (connection reset, 503, no answer). It
 * never answers for the registry: in `pass` mode every request goes to the real one.
 */
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { onTestFinished } from 'vitest';

export type ProxyMode = 'pass' | 'reset' | 'error503' | 'hang';

export interface RegistryProxy {
  /** Base URL to give the codec (same path as the real registry URL). */
  readonly url: string;
  /** `METHOD /path` of every request received, in order. */
  readonly requests: string[];
  mode: ProxyMode;
}

export async function registryProxy(target: string): Promise<RegistryProxy> {
  const upstream = new URL(target);
  const sockets = new Set<Socket>();
  const state: { mode: ProxyMode; requests: string[] } = { mode: 'pass', requests: [] };
  const server = http.createServer((req, res) => {
    state.requests.push(`${req.method} ${req.url}`);
    switch (state.mode) {
      case 'reset':
        req.socket.destroy();
        return;
      case 'error503':
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error_code: 50301, message: 'registry unavailable (test outage)' }));
        return;
      case 'hang':
        return;
      case 'pass': {
        const forward = http.request(
          { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
          (up) => {
            res.writeHead(up.statusCode ?? 502, up.headers);
            up.pipe(res);
          },
        );
        forward.on('error', () => res.destroy());
        req.pipe(forward);
      }
    }
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  onTestFinished(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    requests: state.requests,
    get mode() {
      return state.mode;
    },
    set mode(m: ProxyMode) {
      state.mode = m;
    },
  };
}
