// The demo shop's order lookup as an MCP server (stdio), for the support agent of `plan-ledger demo --agent`:
// its executors reach it through mcpTools. DEMO_SHOP_URL points at the demo's shop service.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const server = new McpServer({ name: 'demo-shop', version: '1.0.0' });
server.registerTool(
  'lookup_order',
  { description: 'Look an order up: its lines, what was returned, the customer', inputSchema: { orderId: z.string() } },
  async ({ orderId }) => {
    const res = await fetch(`${process.env.DEMO_SHOP_URL}/orders/${encodeURIComponent(orderId)}`);
    if (!res.ok) return { content: [{ type: 'text', text: `the shop answered ${res.status} for order ${orderId}` }], isError: true };
    const order = (await res.json()) as Record<string, unknown>;
    return { content: [{ type: 'text', text: JSON.stringify(order) }], structuredContent: order };
  },
);
// The executor that started it may be killed -9: end with its pipe.
process.stdin.once('end', () => process.exit(0));
process.stdin.once('close', () => process.exit(0));
await server.connect(new StdioServerTransport());
