// The tools of the demo's support agent (`plan-ledger demo --agent`), loaded by
// `plan-ledger executor --tools demo/agent-tools.ts`: an MCP tool (the shop's order lookup) and the refund. The model is the AI SDK's own test model with a
// scripted conversation, so the demo runs offline: turn 1 looks the order up, turn 2 reads the lookup's
// result from its prompt and refunds the returned lines, turn 3 answers. DEMO_SHOP_URL points at the
// demo's shop; DEMO_MODEL_LOG, when set, gets one JSON line per model call (who asked, for which turn).
import { appendFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scriptedModel } from './scripted-model.js';
import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult } from '@ai-sdk/provider';
import { z } from 'zod';
import { agentTools, defineAgent, defineAgentTool, mcpTools, type McpCallOutput } from '../src/agent/index.js';
import { setting } from '../src/settings.js';
import { RetryableError, TerminalError, type ToolContext } from '../src/tools.js';
import type { Order, Refund } from './shop-service.js';

async function shop<T>(ctx: ToolContext, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<T> {
  const base = process.env.DEMO_SHOP_URL;
  if (!base) throw new TerminalError('DEMO_SHOP_URL is not set', 'CONFIG');
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: ctx.signal,
  });
  if (res.status === 404 || res.status === 400) throw new TerminalError(`shop answered ${res.status} for ${path}`, `HTTP_${res.status}`);
  if (!res.ok) throw new RetryableError(`shop answered ${res.status} for ${path}`);
  return (await res.json()) as T;
}

// The order lookup is an MCP tool: the demo shop's MCP server (demo/shop-mcp.ts), one per executor process.
// From a checkout it runs through tsx; from an installed package (dist/demo/shop-mcp.js) as plain JavaScript.
const here = fileURLToPath(import.meta.url);
const shopMcp = await mcpTools(
  {
    command: process.execPath,
    args: [...(extname(here) === '.ts' ? ['--import', 'tsx'] : []), join(dirname(here), `shop-mcp${extname(here)}`)],
    env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === 'string')),
    name: 'demo-shop',
  },
  { include: ['lookup_order'], timeoutMs: 30_000 },
);

/** The side effect that must happen once: keyed by the item's idempotency key, the reply held 2 s. */
const refund = defineAgentTool({
  name: 'refund',
  description: 'Refund an amount on an order through the payment API',
  inputSchema: z.object({ orderId: z.string(), amountCents: z.number().int().positive(), currency: z.string() }),
  async run(input: { orderId: string; amountCents: number; currency: string }, ctx) {
    const r = await shop<Refund & { replay: boolean }>(ctx, '/refunds', {
      method: 'POST',
      body: input,
      headers: {
        'idempotency-key': ctx.idempotencyKey,
        'x-executor-id': setting('PLAN_LEDGER_EXECUTOR_LABEL') ?? String(process.pid),
        'x-executor-pid': String(process.pid),
        'x-hold-ms': '2000',
      },
    });
    return { refundId: r.refundId, amountCents: r.amountCents, currency: r.currency, replayedByGateway: r.replay };
  },
});

function result(content: LanguageModelV3GenerateResult['content'], tokensIn: number, tokensOut: number): LanguageModelV3GenerateResult {
  const calls = content.some((c) => c.type === 'tool-call');
  return {
    content,
    finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: undefined },
    usage: { inputTokens: { total: tokensIn, noCache: tokensIn, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: tokensOut, text: tokensOut, reasoning: 0 } },
    warnings: [],
  };
}

/** The JSON value of the last tool result in the prompt (what the previous turn's call returned). */
function lastResult(options: LanguageModelV3CallOptions): unknown {
  const last = options.prompt.at(-1);
  if (last?.role !== 'tool') return undefined;
  const part = last.content.find((p) => p.type === 'tool-result');
  return part?.type === 'tool-result' && part.output.type === 'json' ? part.output.value : undefined;
}

const model = scriptedModel(
  async (options) => {
    const turn = options.prompt.filter((m) => m.role === 'assistant').length + 1;
    if (process.env.DEMO_MODEL_LOG) appendFileSync(process.env.DEMO_MODEL_LOG, `${JSON.stringify({ executor: setting('PLAN_LEDGER_EXECUTOR_LABEL'), turn })}\n`);
    if (turn === 1) return result([{ type: 'text', text: 'I need the order to see what was returned.' }, { type: 'tool-call', toolCallId: 'call-lookup', toolName: 'lookup_order', input: JSON.stringify({ orderId: 'A-1042' }) }], 180, 24);
    if (turn === 2) {
      const order = (lastResult(options) as McpCallOutput | undefined)?.structuredContent as Order | undefined;
      if (!order) return result([{ type: 'text', text: 'The lookup failed; I cannot refund without the order.' }], 260, 16);
      const returned = order.lines.filter((l) => l.returned > 0);
      const amountCents = returned.reduce((n, l) => n + l.returned * l.unitCents, 0);
      const what = returned.map((l) => `${l.returned} × ${l.title}`).join(' and ');
      return result(
        [
          { type: 'text', text: `${what} came back: ${(amountCents / 100).toFixed(2)} ${order.currency} to refund.` },
          { type: 'tool-call', toolCallId: 'call-refund', toolName: 'refund', input: JSON.stringify({ orderId: order.orderId, amountCents, currency: order.currency }) },
        ],
        420,
        38,
      );
    }
    const r = lastResult(options) as { refundId: string; amountCents: number; currency: string } | undefined;
    return result([{ type: 'text', text: r ? `Refunded ${(r.amountCents / 100).toFixed(2)} ${r.currency} (${r.refundId}) on order A-1042.` : 'The refund did not go through.' }], 510, 20);
  },
  { provider: 'demo', modelId: 'scripted-support-model', chunkDelayInMs: 15 },
);

export const supportAgent = defineAgent({ name: 'support', model, system: 'You are a support agent. Refund what a customer returned, once.', tools: [...shopMcp.tools, refund], maxTurns: 6 });

export const tools = agentTools(supportAgent);
