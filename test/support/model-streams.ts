import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';

/** A stream that plays `before`, waits for `gate`, then plays `after` (each with simulateReadableStream). */
export function gated(before: LanguageModelV3StreamPart[], gate: Promise<void>, after: LanguageModelV3StreamPart[]): ReadableStream<LanguageModelV3StreamPart> {
  return new ReadableStream({
    async start(controller) {
      for (const chunks of [before, after]) {
        if (chunks === after) await gate;
        const reader = simulateReadableStream({ chunks, initialDelayInMs: null, chunkDelayInMs: 5 }).getReader();
        for (let r = await reader.read(); !r.done; r = await reader.read()) controller.enqueue(r.value);
      }
      controller.close();
    },
  });
}
