// One item of a plan as the dashboard opens it: the item without its payloads, each payload as a bounded
// preview with its size (or, stored by reference, its size and no text), the item's attempts with the
// take-overs that touched them, its events, and for an agent's model turn the recorded text, tool calls
// and usage. Pure: the route hands it the shown item (decrypted when the projector holds the key, secret
// fields "[secret]") and the plan's events.
import { isTurnTool, type TurnOutput } from '../../src/agent/records.js';
import { takeovers, type Takeover } from '../../src/audit/takeovers.js';
import { parseRef } from '../../src/blobs/index.js';
import { getItem, type ItemState, type PlanEvent, type PlanState } from '../../src/plan/index.js';
import { attemptsOf, itemAttemptOf, timelineEntry, type AttemptTimeline, type TimelineEntry } from '../../src/projection/index.js';

/** Characters of a payload's text an item view carries; the whole payload is one download away. */
export const PAYLOAD_PREVIEW_CHARS = 16 * 1024;
/** Characters of a turn's recorded text an item view carries. */
export const TURN_TEXT_CHARS = 64 * 1024;
/** Characters of a tool call's arguments (JSON) an item view carries. */
export const CALL_INPUT_CHARS = 2 * 1024;
/** The newest events of the item an item view carries. */
export const ITEM_EVENTS = 200;
/** Dependants listed (by id); `dependants.total` counts them all. */
export const DEPENDANTS = 100;

/** A payload's name in the download route: `input`, `output`, `checkpoint`, `attempt-<n>`, `evidence-<i>`. */
export const PAYLOAD_NAME = '^(input|output|checkpoint|attempt-[1-9][0-9]{0,5}|evidence-(0|[1-9][0-9]{0,5}))$';

export interface PayloadView {
  name: string;
  /** For a person: "input", "output of attempt 2", "evidence: receipt". */
  label: string;
  /** UTF-8 bytes of the payload as the API serves it (by reference: as stored). */
  bytes: number;
  /** The first {@link PAYLOAD_PREVIEW_CHARS} characters; null when stored by reference. */
  text: string | null;
  /** Whether `text` is shorter than the payload. */
  truncated: boolean;
  /** Set when the payload is stored by reference (`<prefix>.plan-blobs`): its sha256, size and chunks. */
  reference: { sha256: string; bytes: number; chunks: number } | null;
  /** Sealed with the plan's key, which this projector does not hold: shown as stored, never opened here. */
  sealed: boolean;
  /** The route that serves the whole payload. */
  download: string;
}

export type AttemptView = AttemptTimeline & { takeover: Takeover | null };

/** An agent turn as its output records it (those fields as recorded), with what this view adds. */
export type TurnView = Pick<TurnOutput, 'agent' | 'turn' | 'modelId' | 'text' | 'textBytes' | 'textTruncated' | 'finishReason' | 'usage' | 'totals' | 'finished' | 'next'> & {
  /** This view cut `text` at {@link TURN_TEXT_CHARS} (`textBytes` still counts the whole text). */
  textCut: boolean;
  stopReason: string | null;
  toolCalls: Array<{ toolCallId: string; toolName: string; input: string; inputCut: boolean; itemId: string | null; error: { code: string; message: string } | null; notRun: boolean }>;
};

export interface ItemView {
  planId: string;
  planStatus: PlanState['status'];
  seq: number;
  /** The item without its payloads (see `payloads`). */
  item: Omit<ItemState, 'inputJson' | 'outputJson' | 'attempts' | 'checkpoint' | 'evidence'> & {
    attempts: Array<Omit<ItemState['attempts'][number], 'outputJson'>>;
    checkpoint: Omit<NonNullable<ItemState['checkpoint']>, 'stateJson'> | null;
    evidence: Array<Omit<NonNullable<ItemState['evidence']>[number], 'valueJson'>>;
  };
  payloads: PayloadView[];
  attempts: AttemptView[];
  takeovers: Takeover[];
  /** The item's events, the newest {@link ITEM_EVENTS}; `eventCount` counts them all. */
  timeline: TimelineEntry[];
  eventCount: number;
  dependants: { ids: string[]; total: number };
  /** An agent's model turn (`agent:<name>` tool): what it recorded, null while it runs or when unreadable. */
  turn: TurnView | null;
  /** Why a recorded turn could not be read here (stored by reference, sealed, not a turn's output). */
  turnUnread: string | null;
}

/** The first `max` characters of `text`, never ending inside a surrogate pair. */
export function cut(text: string, max: number): { text: string; cut: boolean } {
  if (text.length <= max) return { text, cut: false };
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end -= 1;
  return { text: text.slice(0, end), cut: true };
}

const isSealed = (json: string) => json.startsWith('{"$enc":');

/** A payload as the item view carries it: a bounded preview and its size, or its reference. */
export function payloadView(base: string, name: string, label: string, json: string): PayloadView {
  const ref = parseRef(json);
  const download = `${base}/payloads/${name}`;
  if (ref) return { name, label, bytes: ref.bytes, text: null, truncated: true, reference: { sha256: ref.sha256, bytes: ref.bytes, chunks: ref.chunks }, sealed: false, download };
  const preview = cut(json, PAYLOAD_PREVIEW_CHARS);
  return { name, label, bytes: Buffer.byteLength(json, 'utf8'), text: preview.text, truncated: preview.cut, reference: null, sealed: isSealed(json), download };
}

/** The payload `name` of an item as stored in its state (undefined when it has none of that name). */
export function payloadOf(item: ItemState, name: string): string | undefined {
  if (name === 'input') return item.inputJson;
  if (name === 'output') return item.outputJson ?? undefined;
  if (name === 'checkpoint') return item.checkpoint?.stateJson;
  const attempt = /^attempt-(\d+)$/.exec(name);
  if (attempt) return item.attempts.find((a) => a.attempt === Number(attempt[1]))?.outputJson ?? undefined;
  const evidence = /^evidence-(\d+)$/.exec(name);
  if (evidence) return item.evidence?.[Number(evidence[1])]?.valueJson;
  return undefined;
}

function payloadsOf(base: string, item: ItemState): PayloadView[] {
  const out = [payloadView(base, 'input', 'input', item.inputJson)];
  if (item.outputJson !== null) out.push(payloadView(base, 'output', 'output', item.outputJson));
  // An attempt's own output, when it is not the item's (a retried attempt, a failed one that returned something).
  for (const a of item.attempts) if (a.outputJson !== null && a.outputJson !== item.outputJson) out.push(payloadView(base, `attempt-${a.attempt}`, `output of attempt ${a.attempt}`, a.outputJson));
  if (item.checkpoint) out.push(payloadView(base, 'checkpoint', `checkpoint ${item.checkpoint.checkpoint} (attempt ${item.checkpoint.attempt})`, item.checkpoint.stateJson));
  (item.evidence ?? []).forEach((e, i) => out.push(payloadView(base, `evidence-${i}`, `evidence: ${e.name}`, e.valueJson)));
  return out;
}

/** The recorded turn of an agent's turn item, or why it cannot be read. */
export function turnOf(item: ItemState): { turn: TurnView | null; unread: string | null } {
  if (!isTurnTool(item.tool) || item.outputJson === null) return { turn: null, unread: null };
  const json = item.outputJson;
  const ref = parseRef(json);
  if (ref) return { turn: null, unread: `the turn's output is stored by reference (${ref.bytes} bytes): download it` };
  if (isSealed(json)) return { turn: null, unread: "the turn's output is sealed with the plan's key, which this projector does not hold" };
  let out: Partial<TurnOutput>;
  try {
    out = JSON.parse(json) as Partial<TurnOutput>;
  } catch {
    return { turn: null, unread: "the turn's output is not JSON" };
  }
  if (typeof out !== 'object' || out === null || typeof out.turn !== 'number' || typeof out.text !== 'string' || !Array.isArray(out.toolCalls)) return { turn: null, unread: "the output is not a model turn's" };
  const text = cut(out.text, TURN_TEXT_CHARS);
  return {
    unread: null,
    turn: {
      agent: String(out.agent ?? item.tool.slice('agent:'.length)),
      turn: out.turn,
      modelId: String(out.modelId ?? ''),
      text: text.text,
      textBytes: typeof out.textBytes === 'number' ? out.textBytes : Buffer.byteLength(out.text, 'utf8'),
      textTruncated: out.textTruncated === true,
      textCut: text.cut,
      finishReason: String(out.finishReason ?? ''),
      usage: out.usage ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      totals: out.totals ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0, turns: 0 },
      finished: out.finished ?? null,
      next: out.next ?? null,
      stopReason: out.stopReason ?? null,
      toolCalls: out.toolCalls.map((c) => {
        const input = cut(JSON.stringify(c.input ?? null), CALL_INPUT_CHARS);
        return { toolCallId: String(c.toolCallId), toolName: String(c.toolName), input: input.text, inputCut: input.cut, itemId: c.itemId ?? null, error: c.error ?? null, notRun: c.notRun === true };
      }),
    },
  };
}

/**
 * The item view of `itemId` in `state` (the shown state: payloads decrypted and redacted as the API
 * shows them), with `events` the plan's shown events (for its attempts, take-overs and timeline). Undefined
 * when the plan has no such item.
 */
export function itemView(state: PlanState, itemId: string, events: readonly PlanEvent[]): ItemView | undefined {
  const item = getItem(state, itemId);
  if (item === undefined) return undefined;
  const base = `/api/plans/${encodeURIComponent(state.planId)}/items/${encodeURIComponent(itemId)}`;
  const mine = events.filter((e) => itemAttemptOf(e).itemId === itemId);
  const found = takeovers(mine);
  const attempts = attemptsOf(mine).map((a) => ({ ...a, takeover: found.find((t) => t.attempt === a.attempt) ?? null }));
  const { inputJson: _in, outputJson: _out, attempts: stateAttempts, checkpoint, evidence, ...rest } = item;
  const dependants: string[] = [];
  let total = 0;
  for (const id of state.itemOrder) {
    if (!getItem(state, id)?.dependsOn.includes(itemId)) continue;
    total += 1;
    if (dependants.length < DEPENDANTS) dependants.push(id);
  }
  const { turn, unread } = turnOf(item);
  return {
    planId: state.planId,
    planStatus: state.status,
    seq: state.seq,
    item: {
      ...rest,
      attempts: stateAttempts.map(({ outputJson: _o, ...a }) => a),
      checkpoint: checkpoint ? { attempt: checkpoint.attempt, checkpoint: checkpoint.checkpoint, at: checkpoint.at, seq: checkpoint.seq } : null,
      evidence: (evidence ?? []).map(({ valueJson: _v, ...e }) => e),
    },
    payloads: payloadsOf(base, item),
    attempts,
    takeovers: found,
    timeline: mine.slice(-ITEM_EVENTS).map(timelineEntry),
    eventCount: mine.length,
    dependants: { ids: dependants, total },
    turn,
    turnUnread: unread,
  };
}
