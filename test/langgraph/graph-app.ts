// A LangGraph app checkpointing on the ledger, run as a child process by graph-kill.e2e.test.ts: a real
// StateGraph (MessagesAnnotation) with a model node — LangChain's own FakeStreamingChatModel, scripted per
// turn — and a ToolNode with one tool, `refund`, whose effect goes to an idempotent effect store keyed by
// the tool call's id (a file here). Every model call and tool call is appended to `<dir>/calls.log`, so
// the test counts them across processes; the effects in `<dir>/effects.log`.
//
// Usage: node --import tsx test/langgraph/graph-app.ts <dir> <thread_id> start|resume
// with PLAN_LEDGER_* naming the ledger and GRAPH_HANG=before-effect|after-effect to make the tool print
// `HANG <where>` and wait there forever (the test kills the process -9 then).
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { AIMessage, AIMessageChunk, HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { FakeStreamingChatModel } from '@langchain/core/utils/testing';
import { MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';
import { connectLedger } from '../../src/client/index.js';
import { LedgerSaver } from '../../src/langgraph/index.js';

const [dir, threadId, mode] = process.argv.slice(2) as [string, string, 'start' | 'resume'];
const hang = process.env.GRAPH_HANG ?? '';
const calls = (line: string) => appendFileSync(`${dir}/calls.log`, `${line}\n`);

function hangHere(where: string): Promise<never> {
  process.stdout.write(`HANG ${where}\n`);
  setInterval(() => {}, 60_000);
  return new Promise<never>(() => {});
}

/** The model's answers by turn (the number of AI messages already in the thread). */
const script = [
  new FakeStreamingChatModel({
    responses: [new AIMessage('Looking up order 42.')],
    chunks: [new AIMessageChunk({ content: 'Looking up order 42.', tool_calls: [{ name: 'refund', args: { order: '42', cents: 1299 }, id: 'call-refund-42', type: 'tool_call' }] })],
  }),
  new FakeStreamingChatModel({ responses: [new AIMessage('Refunded 12.99 for order 42.')] }),
];

const refund = tool(
  async ({ order, cents }, config) => {
    const callId = config.toolCall?.id;
    if (!callId) throw new Error('refund: no tool call id');
    calls(`tool ${callId}`);
    if (hang === 'before-effect') return hangHere('before-effect');
    // The effect, once per tool call: the store refuses a key it has (as a payments API with an idempotency key).
    const effects = `${dir}/effects.log`;
    const done = existsSync(effects) && readFileSync(effects, 'utf8').split('\n').includes(callId);
    if (!done) appendFileSync(effects, `${callId}\n`);
    if (hang === 'after-effect') return hangHere('after-effect');
    return `refunded ${cents} cents for order ${order}`;
  },
  { name: 'refund', description: 'Refund an order', schema: z.object({ order: z.string(), cents: z.number() }) },
);

const ledger = await connectLedger();
const saver = new LedgerSaver({ ledger, scope: 'graph-kill', by: `graph-app-${process.pid}` });
const graph = new StateGraph(MessagesAnnotation)
  .addNode('agent', async (state) => {
    const turn = state.messages.filter((m) => AIMessage.isInstance(m)).length;
    calls(`model ${turn}`);
    return { messages: [await script[turn]!.invoke(state.messages)] };
  })
  .addNode('tools', new ToolNode([refund]))
  .addEdge(START, 'agent')
  .addConditionalEdges('agent', toolsCondition)
  .addEdge('tools', 'agent')
  .compile({ checkpointer: saver });

const input = mode === 'start' ? { messages: [new HumanMessage('Please refund order 42.')] } : null;
const out = await graph.invoke(input, { configurable: { thread_id: threadId }, durability: 'sync' });
const last = out.messages.at(-1);
process.stdout.write(`${JSON.stringify({ done: true, messages: out.messages.length, last: last?.content })}\n`);
await ledger.close();
process.exit(0);
