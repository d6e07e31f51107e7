// LangGraph's time travel onto a new thread, as the ledger's fork (issue 32). A thread is a plan whose
// items are its puts and putWrites in order, so "the thread as it was at checkpoint X" is the plan's log up
// to the event that added X's item: `ledger.fork(source, { at: thatSeq, planId: <the new thread's plan> })`
// creates the new thread's plan with every item added by then, and its first event names the origin
// (`PlanCreated.forkedFrom { planId, seq, chainHead }`), so `show`, `audit` and `verify` (its lineage check)
// tell where the new thread came from. `set` gives each copied item its input with the new thread's id —
// what the saver would have written had LangGraph put those checkpoints to the new thread (LangGraph's own
// savers copy a thread the same way: its rows with the new thread_id). Writes recorded for X itself are
// not copied (their items are copied empty): on the new thread X has no pending writes, so the nodes after
// X run again, as LangGraph's time travel from X does. The source is not touched.
import type { RunnableConfig } from '@langchain/core/runnables';
import type { CheckpointTuple } from '@langchain/langgraph-checkpoint';
import type { Ledger } from '../client/index.js';
import { isLedgerError, LedgerError } from '../errors.js';
import { invalid, isRejected, key } from './keys.js';
import type { CheckpointInput, WritesInput } from './thread-fold.js';

export interface ForkThreadContext {
  ledger: Ledger;
  scope: string;
  by: string | undefined;
  timeoutMs: number | undefined;
  planIdOf(threadId: string): string;
  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined>;
  itemTools: readonly string[];
}

export interface ForkedThread {
  /** The new thread at the fork point: `{ thread_id, checkpoint_ns: '', checkpoint_id }`. */
  config: RunnableConfig;
  /** The new thread's plan. */
  planId: string;
  /** Its origin as its PlanCreated records it: the source thread's plan, the seq forked at, its hash there. */
  forkedFrom: { planId: string; seq: number; chainHead: string };
}

/** See {@link LedgerSaver.fork}. */
export async function forkThread(ctx: ForkThreadContext, config: RunnableConfig, opts: { threadId: string }): Promise<ForkedThread> {
  const threadId = key('thread_id', config.configurable?.thread_id);
  const ns = key('checkpoint_ns', config.configurable?.checkpoint_ns ?? '', { allowEmpty: true });
  if (ns !== '') throw invalid('checkpoint_ns', 'must be the root namespace "": a thread forks at one of its own (root) checkpoints, not a subgraph\'s');
  const rawId: unknown = config.configurable?.checkpoint_id;
  const wanted = rawId === undefined || rawId === null || rawId === '' ? undefined : key('checkpoint_id', rawId);
  if (typeof opts !== 'object' || opts === null) throw invalid('threadId', 'must be given: fork(config, { threadId })');
  const newThread = key('threadId', opts.threadId);
  const source = ctx.planIdOf(threadId);
  const target = ctx.planIdOf(newThread);

  const tuple = await ctx.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: '', ...(wanted ? { checkpoint_id: wanted } : {}) } });
  if (tuple === undefined) {
    const known = wanted !== undefined && (await ctx.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: '' } })) !== undefined;
    if (known) throw new LedgerError('NOT_FOUND', `langgraph: thread ${JSON.stringify(threadId).slice(0, 200)} has no checkpoint ${wanted}`, { field: 'checkpoint_id', planId: source });
    throw new LedgerError('NOT_FOUND', `langgraph: thread ${JSON.stringify(threadId).slice(0, 200)} has no checkpoints in scope ${ctx.scope} (never written, or deleted with deleteThread)`, { field: 'thread_id', planId: source });
  }
  const checkpointId = tuple.checkpoint.id;
  const taken = () => new LedgerError('CONFLICT', `langgraph: thread ${JSON.stringify(newThread).slice(0, 200)} already has checkpoints (plan ${target}); fork onto a thread id not used yet`, { field: 'threadId', planId: target });
  if ((await ctx.ledger.getPlan(target, { payloads: 'reference' })) !== undefined) throw taken();

  // The source's items as the saver wrote them; the fork point is the event that added X's item (the last
  // one, if X was put again: the later wins on read).
  const plan = await ctx.ledger.getPlan(source, { payloads: 'reference' });
  if (plan === undefined) throw new LedgerError('NOT_FOUND', `langgraph: thread ${JSON.stringify(threadId).slice(0, 200)} was deleted while forking it`, { field: 'thread_id', planId: source });
  const items = plan.itemOrder.map((id) => plan.items[id]!).filter((it) => ctx.itemTools.includes(it.tool ?? ''));
  const inputs = await Promise.all(items.map(async (it) => JSON.parse(await ctx.ledger.readPayload(source, it.inputJson)) as CheckpointInput | WritesInput));
  let at: number | undefined;
  items.forEach((it, i) => {
    const input = inputs[i]!;
    if (input.langgraph === 'checkpoint' && input.ns === '' && input.id === checkpointId) at = it.addedSeq;
  });
  if (at === undefined) throw new LedgerError('NOT_FOUND', `langgraph: checkpoint ${checkpointId} is not among the items of plan ${source}`, { field: 'checkpoint_id', planId: source });
  const forkAt = at;
  const set: Record<string, unknown> = {};
  items.forEach((it, i) => {
    if (it.addedSeq > forkAt) return;
    const input = inputs[i]!;
    // Writes recorded for X before X's own item (LangGraph's `durability: 'async'` does not wait for a put):
    // not X's history on the new thread, where the nodes after X run again.
    const ofX = input.langgraph === 'writes' && input.ns === '' && input.checkpoint === checkpointId;
    set[it.id] = ofX ? { ...input, thread: newThread, writes: [] } : { ...input, thread: newThread };
  });
  try {
    const out = await ctx.ledger.fork(source, { at: forkAt, set, planId: target, ...(ctx.by ? { by: ctx.by } : {}), ...(ctx.timeoutMs ? { timeoutMs: ctx.timeoutMs } : {}) });
    return { config: { configurable: { thread_id: newThread, checkpoint_ns: '', checkpoint_id: checkpointId } }, planId: target, forkedFrom: out.forkedFrom };
  } catch (e) {
    if (isRejected(e, 'PLAN_EXISTS')) throw taken(); // a put to the new thread got there first
    if (isLedgerError(e, 'PAYLOAD_TOO_LARGE') && e.details.command === 'CreatePlan') {
      // The copied items travel in one command: inline values (up to the inline threshold each) add up.
      const hint = `langgraph: forking thread ${JSON.stringify(threadId).slice(0, 200)} copies ${Object.keys(set).length} items in one command, too large: ${e.message}. A client with a lower PLAN_LEDGER_INLINE_PAYLOAD_BYTES stores more of them by reference`;
      throw new LedgerError('PAYLOAD_TOO_LARGE', hint, e.details, { cause: e });
    }
    throw e;
  }
}
