// The item view's pure parts: previews cut on a character (never inside a surrogate pair) with the size in
// bytes, references and sealed payloads told apart, and an agent turn's recorded output read — or the
// reason it is not (by reference, sealed, not JSON, not a turn's shape).
import { describe, expect, it } from 'vitest';
import { refJson } from '../../src/blobs/index.js';
import type { ItemState } from '../../src/plan/index.js';
import { cut, PAYLOAD_PREVIEW_CHARS, payloadOf, payloadView, TURN_TEXT_CHARS, turnOf } from '../../projector/http/item-view.js';

const turnItem = (outputJson: string | null): ItemState =>
  ({ id: 'turn-1', title: 't', why: 'w', tool: 'agent:support', dependsOn: [], inputJson: '{}', status: outputJson ? 'completed' : 'in_progress', addedSeq: 1, addedAt: 0, followUpOf: null, attempts: [], retryAt: null, attemptBase: 0, outputJson, failure: null, retry: null }) as unknown as ItemState;

describe('item view', () => {
  it('cuts previews on a character and counts bytes; references and sealed payloads are told apart', () => {
    expect(cut('abc', 5)).toEqual({ text: 'abc', cut: false });
    expect(cut('ab😀cd', 3)).toEqual({ text: 'ab', cut: true }); // not half of the emoji
    expect(cut('ab😀cd', 4)).toEqual({ text: 'ab😀', cut: true });
    const long = JSON.stringify({ s: 'é'.repeat(PAYLOAD_PREVIEW_CHARS) });
    const v = payloadView('/api/plans/p/items/i', 'output', 'output', long);
    expect(v).toMatchObject({ bytes: Buffer.byteLength(long), truncated: true, reference: null, sealed: false, download: '/api/plans/p/items/i/payloads/output' });
    expect(v.text).toHaveLength(PAYLOAD_PREVIEW_CHARS);
    const ref = refJson({ sha256: 'b'.repeat(64), bytes: 9_000_000, chunks: 18, at: 1 });
    expect(payloadView('/x', 'input', 'input', ref)).toMatchObject({ bytes: 9_000_000, text: null, truncated: true, reference: { sha256: 'b'.repeat(64), bytes: 9_000_000, chunks: 18 } });
    // Something that looks like a reference but is not one exactly is an inline payload.
    expect(payloadView('/x', 'input', 'input', '{"$blob":{"bytes":1}}')).toMatchObject({ reference: null, text: '{"$blob":{"bytes":1}}', bytes: 21 });
    expect(payloadView('/x', 'input', 'input', '{"$enc":"v1.abc"}')).toMatchObject({ sealed: true, reference: null });
  });

  it('finds each payload by name, and none for a name the item does not have', () => {
    const it = { ...turnItem('{"a":1}'), attempts: [{ attempt: 1, outputJson: '{"first":true}' }, { attempt: 2, outputJson: null }], checkpoint: { attempt: 1, checkpoint: 2, stateJson: '{"c":2}', at: 0, seq: 3 }, evidence: [{ attempt: 1, name: 'e', valueJson: '"v"', at: 0, seq: 4 }] } as unknown as ItemState;
    expect(['input', 'output', 'checkpoint', 'attempt-1', 'attempt-2', 'attempt-3', 'evidence-0', 'evidence-1', 'other'].map((n) => payloadOf(it, n))).toEqual(['{}', '{"a":1}', '{"c":2}', '{"first":true}', undefined, undefined, '"v"', undefined, undefined]);
  });

  it("reads an agent turn's text, tool calls and usage, or says why it cannot", () => {
    const output = {
      agent: 'support',
      turn: 1,
      modelId: 'mock-model-id',
      text: 'Looking it up.',
      textBytes: 14,
      textTruncated: false,
      finishReason: 'tool-calls',
      usage: { inputTokens: 50, outputTokens: 10, totalTokens: 60 },
      totals: { inputTokens: 50, outputTokens: 10, totalTokens: 60, turns: 1 },
      toolCalls: [
        { toolCallId: 'c1', toolName: 'lookup', input: { orderId: 'A' }, itemId: 'turn-1-call-1' },
        { toolCallId: 'c2', toolName: 'lookp', input: { big: 'x'.repeat(5000) }, error: { code: 'UNKNOWN_TOOL', message: 'no tool named lookp' } },
      ],
      finished: null,
      next: 'turn-2',
      asked: true,
    };
    const { turn, unread } = turnOf(turnItem(JSON.stringify(output)));
    expect(unread).toBeNull();
    expect(turn).toMatchObject({ agent: 'support', turn: 1, text: 'Looking it up.', textCut: false, finishReason: 'tool-calls', usage: output.usage, next: 'turn-2' });
    expect(turn!.toolCalls[0]).toEqual({ toolCallId: 'c1', toolName: 'lookup', input: '{"orderId":"A"}', inputCut: false, itemId: 'turn-1-call-1', error: null, notRun: false });
    expect(turn!.toolCalls[1]).toMatchObject({ itemId: null, error: { code: 'UNKNOWN_TOOL' }, inputCut: true });
    expect(turn!.toolCalls[1]!.input).toHaveLength(2048);
    const long = turnOf(turnItem(JSON.stringify({ ...output, text: 'w '.repeat(TURN_TEXT_CHARS), textBytes: 2 * TURN_TEXT_CHARS })));
    expect(long.turn).toMatchObject({ textCut: true, textBytes: 2 * TURN_TEXT_CHARS });
    expect(long.turn!.text).toHaveLength(TURN_TEXT_CHARS);

    expect(turnOf(turnItem(null))).toEqual({ turn: null, unread: null }); // still running
    expect(turnOf({ ...turnItem('{"x":1}'), tool: 'lookup' } as ItemState)).toEqual({ turn: null, unread: null }); // not a turn
    expect(turnOf(turnItem(refJson({ sha256: 'c'.repeat(64), bytes: 70_000, chunks: 1, at: 1 }))).unread).toBe("the turn's output is stored by reference (70000 bytes): download it");
    expect(turnOf(turnItem('{"$enc":"v1.abc"}')).unread).toBe("the turn's output is sealed with the plan's key, which this projector does not hold");
    expect(turnOf(turnItem('not json')).unread).toBe("the turn's output is not JSON");
    expect(turnOf(turnItem('{"turn":"1","text":5}')).unread).toBe("the output is not a model turn's");
    expect(turnOf(turnItem('null')).unread).toBe("the output is not a model turn's");
  });
});
