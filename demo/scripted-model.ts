// A scripted model that streams: the AI SDK's own test model (MockLanguageModelV3 from `ai/test`) whose
// `doStream` plays a scripted response back as a provider would stream it — its text as word deltas (with
// `simulateReadableStream`, optionally spaced in time), then its tool calls and the finish with the usage.
// The demo's agent and the tests' scripted agents use it (the turn runner asks models with `streamText`).
import type { LanguageModelV3CallOptions, LanguageModelV3GenerateResult, LanguageModelV3StreamPart, LanguageModelV3StreamResult } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';

export interface StreamPacing {
  /** Milliseconds between two parts (default none: as fast as the reader takes them). */
  chunkDelayInMs?: number | null;
}

/** The text's deltas: one per word with the space before it, as providers tend to stream. */
export function wordDeltas(text: string): string[] {
  return text.match(/\s*\S+|\s+$/g) ?? (text.length ? [text] : []);
}

/** A scripted response as the parts of a provider's stream. */
export function streamParts(result: LanguageModelV3GenerateResult, modelId = 'mock-model-id'): LanguageModelV3StreamPart[] {
  const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }, { type: 'response-metadata', id: 'response-1', modelId, timestamp: new Date(0) }];
  let n = 0;
  for (const c of result.content) {
    if (c.type === 'text') {
      const id = `text-${n++}`;
      parts.push({ type: 'text-start', id });
      for (const delta of wordDeltas(c.text)) parts.push({ type: 'text-delta', id, delta });
      parts.push({ type: 'text-end', id });
    } else if (c.type === 'tool-call') {
      parts.push(c);
    }
  }
  parts.push({ type: 'finish', finishReason: result.finishReason, usage: result.usage });
  return parts;
}

/** A stream result of the given parts. */
export function streamOf(parts: LanguageModelV3StreamPart[], pacing: StreamPacing = {}): LanguageModelV3StreamResult {
  return { stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: pacing.chunkDelayInMs ?? null }) };
}

type Script = LanguageModelV3GenerateResult[] | ((options: LanguageModelV3CallOptions) => Promise<LanguageModelV3GenerateResult> | LanguageModelV3GenerateResult);

/**
 * A MockLanguageModelV3 that streams each scripted response (a list, one per call, or a function of the
 * call). Its calls are `doStreamCalls`.
 */
export function scriptedModel(script: Script, opts: StreamPacing & { provider?: string; modelId?: string } = {}): MockLanguageModelV3 {
  let call = 0;
  const modelId = opts.modelId ?? 'mock-model-id';
  return new MockLanguageModelV3({
    ...(opts.provider !== undefined ? { provider: opts.provider } : {}),
    modelId,
    doStream: async (options) => {
      const result = typeof script === 'function' ? await script(options) : script[call++];
      if (result === undefined) throw new Error(`the script has no response for call ${call}`);
      return streamOf(streamParts(result, modelId), opts);
    },
  });
}
