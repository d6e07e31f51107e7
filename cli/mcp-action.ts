import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { DEFAULT_MAX_REQUEST_BODY_SIZE, requestBodyTooLargeMessage } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { bearerToken, compileTokens, type TokenSet } from '../src/api-tokens.js';
import { assertBrokersReachable } from '../src/audit/log.js';
import { ensureKafkaClient } from './native-addon.js';
import { connectLedger, type Ledger } from '../src/client/index.js';
import { loadConfig } from '../src/config.js';
import { ledgerMcpServer } from './mcp-server.js';
import { setting } from '../src/settings.js';
import { cliLogger } from './connect.js';
import { out } from './output.js';

/**
 * `plan-ledger mcp`: the ledger as an MCP server, on stdio (stdout is the protocol; logs go to stderr), or
 * with `--http <port>` as Streamable HTTP at `/mcp` behind the API's bearer tokens.
 */
export async function mcp(o: { by?: string; http?: number; host?: string }): Promise<void> {
  const config = loadConfig();
  ensureKafkaClient();
  await assertBrokersReachable(config);
  const ledger = await connectLedger(config, { logger: cliLogger() });
  try {
    if (o.http !== undefined) await serveHttp(ledger, o.http, o.host ?? '127.0.0.1');
    else await serveStdio(ledger, o.by);
  } finally {
    await ledger.close();
  }
}

async function serveStdio(ledger: Ledger, by: string | undefined): Promise<void> {
  const server = ledgerMcpServer(ledger, by ? { by } : {});
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => {});
}

/** The request's body as text, or undefined past `max` bytes. */
async function readBody(req: IncomingMessage, max: number): Promise<string | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > max) return undefined;
  const parts: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > max) return undefined;
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** Whether a JSON-RPC message (or batch) carries a progressToken. */
function asksProgress(message: unknown): boolean {
  return (Array.isArray(message) ? message : [message]).some((m) => (m as { params?: { _meta?: { progressToken?: unknown } } } | null)?.params?._meta?.progressToken !== undefined);
}

function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message }, id: null }));
}

/**
 * Stateless Streamable HTTP: each POST to /mcp gets a server for the token's principal (the actor of its
 * commands; a token without the write scope may only read). The tokens are the API's:
 * PLAN_LEDGER_API_TOKEN and PLAN_LEDGER_API_TOKENS_FILE.
 */
async function serveHttp(ledger: Ledger, port: number, host: string): Promise<void> {
  const tokensFile = setting('PLAN_LEDGER_API_TOKENS_FILE');
  const tokens: TokenSet = compileTokens({ apiToken: setting('PLAN_LEDGER_API_TOKEN') ?? null, ...(tokensFile ? { tokensFile } : {}) });
  const http = createServer((req, res) => {
    void (async () => {
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/mcp') return refuse(res, 404, 'not found: the MCP endpoint is /mcp');
      if (req.method !== 'POST') return refuse(res, 405, 'this server is stateless: POST /mcp only');
      if (tokens.size === 0) return refuse(res, 401, 'no API token is configured (set PLAN_LEDGER_API_TOKEN or PLAN_LEDGER_API_TOKENS_FILE)');
      const given = bearerToken(req.headers.authorization);
      if (given === null) return refuse(res, 401, 'missing bearer token (Authorization: Bearer <token>)');
      const principal = tokens.lookup(given);
      if (!principal || !principal.scopes.includes('read')) return refuse(res, 403, 'wrong API token');
      // Read here (as the SDK would, to its bound) to see whether the call asks for progress: its answer is
      // then an event stream carrying the notifications; any other answer stays one JSON document.
      const body = await readBody(req, DEFAULT_MAX_REQUEST_BODY_SIZE);
      if (body === undefined) return refuse(res, 413, requestBodyTooLargeMessage(DEFAULT_MAX_REQUEST_BODY_SIZE));
      let parsed: unknown;
      try {
        parsed = JSON.parse(body);
      } catch {
        return void res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null }));
      }
      const server = ledgerMcpServer(ledger, { by: principal.name, canWrite: principal.scopes.includes('write'), fixedActor: true });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !asksProgress(parsed) });
      res.once('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, parsed);
    })().catch((e: unknown) => {
      if (!res.headersSent) refuse(res, 500, (e as Error).message);
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolve());
  });
  const addr = http.address();
  out(`plan-ledger mcp: Streamable HTTP on http://${host}:${typeof addr === 'object' && addr ? addr.port : port}/mcp (${tokens.size} API token${tokens.size === 1 ? '' : 's'})`);
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await new Promise<void>((resolve) => http.close(() => resolve()));
}
