export {
  defineAgent,
  defineAgentTool,
  turnToolName,
  DEFAULT_MAX_TOOL_CALLS_PER_TURN,
  DEFAULT_MAX_TEXT_BYTES,
  DEFAULT_MAX_TURNS,
  type Agent,
  type AgentDefinition,
  type AgentTool,
  type AgentBudget,
} from './define.js';
export { agentTools, turnItemId } from './tools.js';
export { runAgent, type RunAgentInput, type AgentRunStarted } from './run.js';
export {
  summarizeAgentRun,
  BUDGET_SIGNAL,
  isTurnTool,
  type AgentRunSummary,
  type AgentFinish,
  type TurnInput,
  type TurnOutput,
  type RecordedCall,
  type CallRef,
  type CallOutput,
  type AgentToolError,
  type TokenUsage,
  type RunTotals,
} from './records.js';
export { mcpTools, MCP_META, type McpServer, type McpToolsOptions, type McpToolset, type McpCallOutput } from './mcp.js';
