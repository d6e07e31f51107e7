// Scripted turns for the AI SDK's own test model (MockLanguageModelV3 from `ai/test`): what a provider
// would answer, in the SDK's provider format. Shared by the agent tests and the agent tools fixture.
import type { LanguageModelV3CallOptions, LanguageModelV3Content, LanguageModelV3GenerateResult } from '@ai-sdk/provider';

export function call(toolCallId: string, toolName: string, args: unknown): LanguageModelV3Content {
  return { type: 'tool-call', toolCallId, toolName, input: typeof args === 'string' ? args : JSON.stringify(args) };
}

export function text(t: string): LanguageModelV3Content {
  return { type: 'text', text: t };
}

/** One model response: content parts, token usage (in, out), finish reason from the content. */
export function response(content: LanguageModelV3Content[], tokens: { in: number; out: number } = { in: 100, out: 20 }): LanguageModelV3GenerateResult {
  const calls = content.some((c) => c.type === 'tool-call');
  return {
    content,
    finishReason: { unified: calls ? 'tool-calls' : 'stop', raw: calls ? 'tool_calls' : 'stop' },
    usage: {
      inputTokens: { total: tokens.in, noCache: tokens.in, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: tokens.out, text: tokens.out, reasoning: 0 },
    },
    warnings: [],
  };
}

/** The turn the model is being asked for: one more than the assistant messages in its prompt. */
export function turnOf(options: LanguageModelV3CallOptions): number {
  return options.prompt.filter((m) => m.role === 'assistant').length + 1;
}

/** The tool results the prompt ends with (the previous turn's), as { toolName, output }. */
export function lastToolResults(options: LanguageModelV3CallOptions): Array<{ toolCallId: string; toolName: string; output: unknown }> {
  const last = options.prompt.at(-1);
  if (last?.role !== 'tool') return [];
  return last.content.flatMap((p) => (p.type === 'tool-result' ? [{ toolCallId: p.toolCallId, toolName: p.toolName, output: p.output }] : []));
}

export { scriptedModel, streamParts, streamOf, wordDeltas } from '../../demo/scripted-model.js';
