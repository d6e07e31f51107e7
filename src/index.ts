/**
 * plan-ledger's library: the client, tools, config, errors, the pure plan model and the agent helpers.
 * It imports nothing above src/; the package entry (`index.ts` at the top of the tree) re-exports it
 * together with the executor's and the projector's entry points.
 */
export * from './client/index.js';
export {
  defineTool,
  TerminalError,
  RetryableError,
  isTerminalError,
  type Tool,
  type ToolContext,
  type ToolStream,
  type ToolResult,
  type ProbeResult,
  type FollowUpItem,
  type ChildPlanSpec,
} from './tools.js';
export { loadConfig, topicNames, type LedgerConfig, type LedgerConfigInput } from './config.js';
export { LedgerError, isLedgerError, ErrorCodes, type ErrorCode } from './errors.js';
export { loadPolicy, parsePolicy, type PolicyFile } from './policy-file.js';
export { evaluatePolicy, type ApprovalPolicy, type PolicyRule, type PolicyDecision } from './plan/index.js';
export { createLogger, type Logger } from './logging.js';
export { partitionFor } from './kafka/partitioner.js';
export type { ItemInput } from './plan-input.js';
export {
  canonicalJson,
  planDigest,
  stateDigest,
  verifyChain,
  evolve,
  decide,
  type PlanEvent,
  type PlanCommand,
  type PlanState,
  type ItemState,
  type PlanStatus,
  type ItemStatus,
  type PlanMode,
} from './plan/index.js';
export * from './agent/index.js';
export { checkTools, STALE_AFTER_HEARTBEATS, type ExecutorInfo, type ExecutorList, type InvalidAnnouncement, type ToolCheck } from './executors/index.js';
export {
  planUIMessageStream,
  planUIMessageStreamResponse,
  planUICursor,
  type PlanUIMessage,
  type PlanUIChunk,
  type PlanUIMetadata,
  type PlanUIDataParts,
  type PlanUIStreamOptions,
  type UIStreamLedger,
} from './streams/ui.js';
