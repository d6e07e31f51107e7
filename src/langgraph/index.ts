// `plan-ledger/langgraph`: a LangGraph.js checkpoint saver on the ledger (docs/guides/langgraph.md).
// Its own entry, so only applications that use LangGraph load `@langchain/langgraph-checkpoint` (a peer
// dependency).
export { LedgerSaver, CHECKPOINT_TOOL, WRITES_TOOL, THREAD_LABEL, SCOPE_LABEL, INTERRUPT_LABEL, ANSWER_ITEM, RESUME_SIGNAL, type LedgerSaverOptions } from './saver.js';
export { MAX_KEY_BYTES } from './keys.js';
