// The example's MCP server: a warehouse's stock levels as one MCP tool, `check_stock`, spoken to over stdio.
// The agent reaches it through `mcpTools` (examples/agent/agent.ts starts it, one process per executor).
// Any MCP server works the same way; this one is small so the example runs offline.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const STOCK: Record<string, { available: number; warehouse: string }> = {
  'SKU-42': { available: 12, warehouse: 'Lyon' },
  'SKU-7': { available: 0, warehouse: 'Lyon' },
};

const server = new McpServer({ name: 'example-inventory', version: '1.0.0' });
server.registerTool(
  'check_stock',
  {
    description: 'How many units of a SKU the warehouse has available',
    inputSchema: { sku: z.string() },
    outputSchema: { sku: z.string(), available: z.number().int(), warehouse: z.string() },
  },
  ({ sku }) => {
    const s = STOCK[sku];
    if (!s) return { content: [{ type: 'text', text: `unknown SKU ${sku}` }], isError: true };
    const out = { sku, ...s };
    return { content: [{ type: 'text', text: JSON.stringify(out) }], structuredContent: out };
  },
);
// Ends with its client's pipe (the executor that started it may stop or be killed).
process.stdin.once('end', () => process.exit(0));
process.stdin.once('close', () => process.exit(0));
await server.connect(new StdioServerTransport());
