import { createServer, type ServerResponse } from 'node:http';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
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
      const server = ledgerMcpServer(ledger, { by: principal.name, canWrite: principal.scopes.includes('write'), fixedActor: true });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.once('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res);
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
