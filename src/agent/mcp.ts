import { jsonSchema } from 'ai';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { defineTool, RetryableError, TerminalError, type Tool, type ToolContext } from '../tools.js';
import { defineAgentTool, type AgentTool } from './define.js';

/** An MCP server to reach: a command spoken to over stdio, or a Streamable HTTP endpoint. */
export type McpServer =
  | { command: string; args?: string[]; env?: Record<string, string>; cwd?: string; name?: string }
  | { url: string; headers?: Record<string, string>; name?: string };

export interface McpToolsOptions {
  /** Prepended to every tool name (the ledger's and the model's), e.g. `fs_`. */
  prefix?: string;
  /** Only these of the server's tools (by their MCP names). */
  include?: string[];
  /** Longest one call may run (ms): the MCP request's timeout and, for agents, the call item's deadline. Default 10 minutes. */
  timeoutMs?: number;
}

/** Where the call's identity goes in the MCP request's `_meta`, for a server that dedupes or fences. */
export const MCP_META = {
  idempotencyKey: 'plan-ledger/idempotency-key',
  fencingToken: 'plan-ledger/fencing-token',
  planId: 'plan-ledger/plan-id',
  itemId: 'plan-ledger/item-id',
} as const;

const DEFAULT_TIMEOUT_MS = 10 * 60_000;

/** What an MCP tool call records: the server's result as it gave it. */
export interface McpCallOutput {
  content: unknown[];
  structuredContent?: unknown;
}

export interface McpToolset {
  /** The server's tools for {@link defineAgent} (names as given, with the prefix). */
  readonly tools: AgentTool<unknown, McpCallOutput>[];
  /** The same tools as plain ledger tools, for plans written by hand (an error result fails the item terminally). */
  readonly ledgerTools: Tool[];
  /** The server's process id (stdio), while connected. */
  serverPid(): number | undefined;
  close(): Promise<void>;
}

function describe(server: McpServer): string {
  return server.name ?? ('command' in server ? [server.command, ...(server.args ?? [])].join(' ') : server.url);
}

// The MCP SDK loads when a toolset is made, not with the library.
const sdk = async () => ({
  ...(await import('@modelcontextprotocol/sdk/client/index.js')),
  ...(await import('@modelcontextprotocol/sdk/client/stdio.js')),
  ...(await import('@modelcontextprotocol/sdk/client/streamableHttp.js')),
});
type Sdk = Awaited<ReturnType<typeof sdk>>;

function transportFor(mcp: Sdk, server: McpServer): Transport {
  if ('command' in server) {
    return new mcp.StdioClientTransport({
      command: server.command,
      args: server.args ?? [],
      ...(server.env ? { env: server.env } : {}),
      ...(server.cwd ? { cwd: server.cwd } : {}),
      stderr: 'ignore',
    });
  }
  return new mcp.StreamableHTTPClientTransport(new URL(server.url), server.headers ? { requestInit: { headers: server.headers } } : undefined);
}

function toolName(prefix: string, name: string): string {
  return `${prefix}${name}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}

/**
 * Connects to an MCP server and turns its tools into ledger tools: `tools` for an agent, `ledgerTools` for
 * any plan. Each call passes the ledger's idempotency key, fencing token, plan and item in the request's
 * `_meta` ({@link MCP_META}), honours the item's abort signal and timeout, and records the server's
 * `content` / `structuredContent`. A result with `isError` is the tool's failure (an agent's model sees it
 * as an `MCP_TOOL_ERROR`); a server that is gone fails the attempt with `MCP_UNAVAILABLE` (retryable), and
 * the next attempt connects again (for stdio: starts the server again).
 *
 * @example
 * const fs = await mcpTools({ command: 'npx', args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/docs'] }, { prefix: 'fs_' });
 * const agent = defineAgent({ name: 'docs', model, tools: fs.tools });
 */
export async function mcpTools(server: McpServer, opts: McpToolsOptions = {}): Promise<McpToolset> {
  const mcp = await sdk();
  const label = describe(server);
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let current: { client: Client; transport: Transport; closed: boolean } | undefined;
  let connecting: Promise<{ client: Client; transport: Transport; closed: boolean }> | undefined;
  let closed = false;

  const connect = (): Promise<{ client: Client; transport: Transport; closed: boolean }> => {
    if (closed) return Promise.reject(new TerminalError(`the MCP toolset for ${label} was closed`, 'MCP_CLOSED'));
    if (current !== undefined && !current.closed) return Promise.resolve(current);
    connecting ??= (async () => {
      const transport = transportFor(mcp, server);
      const client = new mcp.Client({ name: 'plan-ledger', version: '0.1.0' });
      const conn = { client, transport, closed: false };
      client.onclose = () => {
        conn.closed = true;
      };
      try {
        await client.connect(transport);
      } catch (e) {
        await client.close().catch(() => {});
        throw new RetryableError(`cannot reach MCP server ${label}: ${(e as Error).message}`, 'MCP_UNAVAILABLE');
      }
      current = conn;
      return conn;
    })().finally(() => {
      connecting = undefined;
    });
    return connecting;
  };

  const first = await connect();
  const listed = (await first.client.listTools()).tools.filter((t) => opts.include === undefined || opts.include.includes(t.name));
  const prefix = opts.prefix ?? '';

  const call = async (mcpName: string, input: unknown, ctx: ToolContext): Promise<McpCallOutput> => {
    const conn = await connect();
    let result: Awaited<ReturnType<Client['callTool']>>;
    try {
      result = await conn.client.callTool(
        {
          name: mcpName,
          arguments: (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>,
          _meta: { [MCP_META.idempotencyKey]: ctx.idempotencyKey, [MCP_META.fencingToken]: ctx.fencingToken, [MCP_META.planId]: ctx.planId, [MCP_META.itemId]: ctx.itemId },
        },
        undefined,
        { signal: ctx.signal, timeout: timeoutMs },
      );
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      if (conn.closed) throw new RetryableError(`MCP server ${label} is gone (${(e as Error).message}); the next attempt connects again`, 'MCP_UNAVAILABLE');
      throw new RetryableError(`MCP call ${mcpName} on ${label} failed: ${(e as Error).message}`, 'MCP_CALL_FAILED');
    }
    const content = Array.isArray(result.content) ? (result.content as unknown[]) : [];
    if (result.isError === true) {
      const text = content.map((c) => (typeof c === 'object' && c !== null && (c as { type?: unknown }).type === 'text' ? String((c as { text?: unknown }).text) : '')).join('\n');
      throw new TerminalError(text || `MCP tool ${mcpName} answered with an error`, 'MCP_TOOL_ERROR', { content });
    }
    return { content, ...(result.structuredContent !== undefined ? { structuredContent: result.structuredContent } : {}) };
  };

  const tools = listed.map((t) =>
    defineAgentTool<unknown, McpCallOutput>({
      name: toolName(prefix, t.name),
      ...(t.description !== undefined ? { description: t.description } : {}),
      // The server validates the arguments (an invalid call is an isError result the model sees).
      inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]),
      timeoutMs,
      run: (input, ctx) => call(t.name, input, ctx),
    }),
  );
  const ledgerTools = listed.map((t) => defineTool<unknown, McpCallOutput>({ name: toolName(prefix, t.name), timeoutMs: timeoutMs + 2_000, run: (input, ctx) => call(t.name, input, ctx) }));

  return {
    tools,
    ledgerTools,
    serverPid: () => (current !== undefined && !current.closed && current.transport instanceof mcp.StdioClientTransport ? (current.transport.pid ?? undefined) : undefined),
    async close() {
      closed = true;
      await current?.client.close().catch(() => {});
    },
  };
}
