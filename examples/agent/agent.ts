// The example's agent: a model, two plain tools and one MCP tool. Import it, or serve it from its own
// process: `plan-ledger executor --tools examples/agent/agent.ts` (an executor loads the `tools` export).
//
// The model is the AI SDK's own test model (`MockLanguageModelV3` from `ai/test`) with a scripted
// conversation, so the example runs offline and the same way every time. On a real provider, replace it
// with e.g. `openai('gpt-4.1-mini')` from `@ai-sdk/openai` (needs OPENAI_API_KEY): nothing else changes.
//
// In a project of your own, import from 'plan-ledger' instead of '../../index.js'.
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, mcpTools, TerminalError, type McpCallOutput } from '../../index.js';

type ModelCall = Parameters<MockLanguageModelV3['doStream']>[0];
type ModelResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

// ── two plain tools ────────────────────────────────────────────────────────────────────────────────────

const ORDERS: Record<string, { orderId: string; sku: string; qty: number; customer: string }> = {
  '7': { orderId: '7', sku: 'SKU-42', qty: 3, customer: 'Grace Hopper' },
};

/** Reads only: an order from the shop (here a table). */
export const lookupOrder = defineAgentTool({
  name: 'lookup_order',
  description: 'Look an order up: the SKU, the quantity and the customer',
  inputSchema: z.object({ orderId: z.string() }),
  run: ({ orderId }) => {
    const order = ORDERS[orderId];
    if (!order) throw new TerminalError(`no order ${orderId}`, 'NOT_FOUND'); // the model sees { error }
    return order;
  },
});

/**
 * Changes state: reserves stock, once per idempotency key. The key is `planId/itemId/attempt` and the same
 * when a crash makes another executor run the call again, so a real warehouse API keyed by it reserves once.
 */
export const reservations = new Map<string, { reservationId: string; sku: string; qty: number; orderId: string }>();
export const reserveStock = defineAgentTool({
  name: 'reserve_stock',
  description: 'Reserve units of a SKU for an order',
  inputSchema: z.object({ orderId: z.string(), sku: z.string(), qty: z.number().int().positive() }),
  run: (input, ctx) => {
    let r = reservations.get(ctx.idempotencyKey);
    if (!r) reservations.set(ctx.idempotencyKey, (r = { reservationId: `res-${reservations.size + 1}`, ...input }));
    return r;
  },
});

// ── one tool from an MCP server (examples/agent/inventory-mcp.ts, over stdio) ──────────────────────────

const here = fileURLToPath(import.meta.url);
export const inventory = await mcpTools(
  {
    command: process.execPath,
    // Run through tsx from a checkout (.ts); compiled, it is plain JavaScript.
    args: [...(extname(here) === '.ts' ? ['--import', 'tsx'] : []), join(dirname(here), `inventory-mcp${extname(here)}`)],
    name: 'example-inventory',
  },
  { timeoutMs: 30_000 },
);

// ── the model: a scripted conversation ─────────────────────────────────────────────────────────────────

/** What a model turn returns: content (text, tool calls), why it stopped, tokens used. */
function reply(content: ModelResult['content'], tokensIn: number, tokensOut: number): ModelResult {
  return {
    content,
    finishReason: { unified: content.some((c) => c.type === 'tool-call') ? 'tool-calls' : 'stop', raw: undefined },
    usage: { inputTokens: { total: tokensIn, noCache: tokensIn, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: tokensOut, text: tokensOut, reasoning: undefined } },
    warnings: [],
  };
}

/** The value the previous turn's tool call returned, as the model finds it at the end of its prompt. */
function lastToolResult<T>(call: ModelCall): T | undefined {
  const last = call.prompt.at(-1);
  if (last?.role !== 'tool') return undefined;
  const part = last.content.find((p) => p.type === 'tool-result');
  return part?.type === 'tool-result' && part.output.type === 'json' ? (part.output.value as T) : undefined;
}

const toolCall = (id: string, toolName: string, input: unknown) => ({ type: 'tool-call' as const, toolCallId: id, toolName, input: JSON.stringify(input) });

/** A reply as a provider streams it: the text word by word, then the tool calls, then the finish and usage. */
function streamed(r: ModelResult): { stream: ReadableStream<LanguageModelV3StreamPart> } {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
  for (const [i, c] of r.content.entries()) {
    if (c.type === 'text') {
      parts.push({ type: 'text-start', id: `t${i}` });
      for (const word of c.text.match(/\s*\S+/g) ?? []) parts.push({ type: 'text-delta', id: `t${i}`, delta: word });
      parts.push({ type: 'text-end', id: `t${i}` });
    } else if (c.type === 'tool-call') parts.push(c);
  }
  parts.push({ type: 'finish', finishReason: r.finishReason, usage: r.usage });
  return { stream: simulateReadableStream({ chunks: parts }) };
}

export const model = new MockLanguageModelV3({
  provider: 'example',
  modelId: 'scripted-warehouse-model',
  // The turn runner asks models with streamText: a turn's words are visible as they come (`plan-ledger tail <plan> --stream`).
  doStream: async (call) => streamed(replyTo(call)),
});

function replyTo(call: ModelCall): ModelResult {
  const turn = call.prompt.filter((m) => m.role === 'assistant').length + 1;
  if (turn === 1) return reply([{ type: 'text', text: 'First the order: what does it need?' }, toolCall('c1', 'lookup_order', { orderId: '7' })], 120, 20);
  if (turn === 2) {
    const order = lastToolResult<(typeof ORDERS)[string]>(call)!;
    return reply([{ type: 'text', text: `Order ${order.orderId} needs ${order.qty} × ${order.sku}; is there enough stock?` }, toolCall('c2', 'check_stock', { sku: order.sku })], 210, 24);
  }
  if (turn === 3) {
    const stock = lastToolResult<McpCallOutput>(call)!.structuredContent as { sku: string; available: number; warehouse: string };
    if (stock.available < 3) return reply([{ type: 'text', text: `Only ${stock.available} × ${stock.sku} left: order 7 cannot ship today.` }], 260, 18);
    return reply([{ type: 'text', text: `${stock.available} available in ${stock.warehouse}: reserving 3.` }, toolCall('c3', 'reserve_stock', { orderId: '7', sku: stock.sku, qty: 3 })], 260, 22);
  }
  const r = lastToolResult<{ reservationId: string; sku: string; qty: number }>(call)!;
  return reply([{ type: 'text', text: `Reserved ${r.qty} × ${r.sku} for order 7 (${r.reservationId}): it can ship today.` }], 320, 19);
}

export const warehouseAgent = defineAgent({
  name: 'warehouse',
  model,
  system: 'You check whether orders can ship and reserve their stock, once.',
  tools: [lookupOrder, ...inventory.tools, reserveStock],
  maxTurns: 6,
  budget: { tokens: 5_000 },
});

/** The turn tool `agent:warehouse` and the three tools its model may call. */
export const tools = agentTools(warehouseAgent);
