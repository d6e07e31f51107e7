import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { assertBrokersReachable } from '../audit/log.js';
import { connectLedger } from '../client/index.js';
import { loadConfig } from '../config.js';
import { ledgerMcpServer } from '../mcp/server.js';
import { cliLogger } from './connect.js';

/** `plan-ledger mcp`: the ledger as an MCP server on stdio (stdout is the protocol; logs go to stderr). */
export async function mcp(o: { by?: string }): Promise<void> {
  const config = loadConfig();
  await assertBrokersReachable(config);
  const ledger = await connectLedger(config, { logger: cliLogger() });
  const server = ledgerMcpServer(ledger, o.by ? { by: o.by } : {});
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = resolve;
    process.stdin.once('end', resolve);
  });
  await server.connect(transport);
  await closed;
  await server.close().catch(() => {});
  await ledger.close();
}
