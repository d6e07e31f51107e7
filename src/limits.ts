/**
 * Every limit of the ledger, and what happens past it: the declaration `docs/reference/limits.md` is
 * generated from (`npm run docs`; `npm run docs:check` fails when the page is stale).
 *
 * A row's default is computed from the constant or the setting's default that the code runs with, so
 * changing one changes the page. The other columns are reviewed prose, kept here as text.
 *
 * Light on purpose: it reads the executor's bounds from `src/executor-bounds.ts` (which imports nothing), not
 * from the executor, so the docs script does not load Kafka. Nothing in `src/` or `executor/` imports it.
 */
import { backoffMs } from './backoff.js';
import { MAX_COMMAND_FAILURES, MAX_RESET_BACKOFF_MS, RESET_BACKOFF_MS, SCAN_WINDOW } from './executor-bounds.js';
import { MAX_ANNOUNCEMENT_BYTES, STALE_AFTER_HEARTBEATS } from './executors/announcement.js';
import { MAX_RECORD_BYTES, REVOCATION_WAIT_MS } from './kafka/port.js';
import { MAX_REJECTIONS_KEPT } from './plan/state.js';
import { eventsBetweenSnapshots, LARGE_PLAN_ITEMS } from './projection/snapshot-policy.js';
import { MAX_INLINE_PAYLOAD_BYTES, settingDefault } from './settings.js';
import { DEFAULT_CHUNK_BYTES, DEFAULT_LINGER_MS } from './streams/coalesce.js';
import { PROGRESS_INTERVAL_MS, PROGRESS_TEXT_CHARS, STREAM_BYTES_PER_ATTEMPT, STREAM_PREFETCH_KIB, STREAM_RETENTION_BYTES, STREAM_RETENTION_MS } from './streams/records.js';

// ---------------------------------------------------------------------------------------------------
// Numbers in words

/** Bytes in the largest binary unit that divides them: 65536 → "64 KiB", 1048576 → "1 MiB". */
export function bytesText(n: number): string {
  const units = ['GiB', 'MiB', 'KiB'] as const;
  for (const [i, unit] of units.entries()) {
    const size = 1024 ** (units.length - i);
    if (n >= size && n % size === 0) return `${countText(n / size)} ${unit}`;
  }
  return `${countText(n)} bytes`;
}

/** A count with thousands separators: 100000 → "100,000". */
export function countText(n: number): string {
  return n.toLocaleString('en-US');
}

/** Whole minutes in words, else seconds: 600000 → "10 minutes", 500 → "0.5 s", 30000 → "30 s". */
export function durationText(ms: number): string {
  const minutes = ms / 60_000;
  if (ms >= 60_000 && Number.isInteger(minutes)) return `${countText(minutes)} ${minutes === 1 ? 'minute' : 'minutes'}`;
  return `${ms / 1000} s`;
}

/** A share of a whole in words (what `eventsBetweenSnapshots` waits for, as a part of the plan's items). */
function shareText(part: number, whole: number): string {
  const names: Record<number, string> = { 1: 'all', 2: 'a half', 3: 'a third', 4: 'a quarter', 5: 'a fifth', 10: 'a tenth' };
  const name = names[whole / part];
  if (name === undefined) throw new Error(`src/limits.ts: no words for ${part}/${whole}; add them`);
  return name;
}

// ---------------------------------------------------------------------------------------------------
// The limits

/** The values the rows' defaults are computed from, by name (the unit test compares them with the code's). */
export const LIMIT_VALUES = Object.freeze({
  inlinePayloadBytes: settingDefault('PLAN_LEDGER_INLINE_PAYLOAD_BYTES', {}),
  maxInlinePayloadBytes: MAX_INLINE_PAYLOAD_BYTES,
  maxPayloadBytes: settingDefault('PLAN_LEDGER_MAX_PAYLOAD_BYTES', {}),
  maxItems: settingDefault('PLAN_LEDGER_MAX_ITEMS', {}),
  maxRecordBytes: MAX_RECORD_BYTES,
  toolTimeoutMs: settingDefault('PLAN_LEDGER_TOOL_TIMEOUT_MS', {}),
  maxCommandFailures: MAX_COMMAND_FAILURES,
  resetBackoffMs: RESET_BACKOFF_MS,
  maxResetBackoffMs: MAX_RESET_BACKOFF_MS,
  largePlanItems: LARGE_PLAN_ITEMS,
  scanWindow: SCAN_WINDOW,
  rejectionsKept: MAX_REJECTIONS_KEPT,
  announceMs: settingDefault('PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS', {}),
  staleAfterHeartbeats: STALE_AFTER_HEARTBEATS,
  maxAnnouncementBytes: MAX_ANNOUNCEMENT_BYTES,
  streamChunkBytes: DEFAULT_CHUNK_BYTES,
  streamLingerMs: DEFAULT_LINGER_MS,
  streamBytesPerAttempt: STREAM_BYTES_PER_ATTEMPT,
  streamRetentionMs: STREAM_RETENTION_MS,
  streamRetentionBytes: STREAM_RETENTION_BYTES,
  streamPrefetchBytes: STREAM_PREFETCH_KIB * 1024,
});

export interface Limit {
  /** What is limited. */
  readonly limit: string;
  /** The default, computed from the code where there is a number ("—" where there is none). */
  readonly default: string;
  /** What sets it ("—" when nothing does; a file in parentheses where the code fixes it). */
  readonly setBy: string;
  /** Exactly what happens past it (reviewed text). */
  readonly pastIt: string;
}

const v = LIMIT_VALUES;
const NONE = '—';

/** The reset backoff's first steps and cap: "0.5 s, 1 s, 2 s … capped at 30 s". */
const backoffText = `${[1, 2, 3].map((n) => durationText(backoffMs(n, v.resetBackoffMs, v.maxResetBackoffMs))).join(', ')} … capped at ${durationText(v.maxResetBackoffMs)}`;

/** "from 1,000 items: after a quarter of its item count". */
const snapshotShare = shareText(eventsBetweenSnapshots(v.largePlanItems * 4), v.largePlanItems * 4);

const timesText = (n: number) => (n === 1 ? 'once' : n === 2 ? 'twice' : `${countText(n)} times`);

export const LIMITS: readonly Limit[] = Object.freeze([
  {
    limit: "inline payload (an item's input, a tool's output, a follow-up's input)",
    default: bytesText(v.inlinePayloadBytes),
    setBy: `\`PLAN_LEDGER_INLINE_PAYLOAD_BYTES\` (≤ ${bytesText(v.maxInlinePayloadBytes)})`,
    pastIt:
      "not a failure: the payload is stored by reference — content-addressed 512 KiB chunks in `<prefix>.plan-blobs` keyed `planId:sha256:index`, and the event carries `{\"$blob\":{\"at\",\"bytes\",\"chunks\",\"sha256\"}}`, so the hash chain covers the content. A tool output's chunks commit in the same transaction as its `ResultCommitted`; a client writes an input's chunks before it sends the command. Tools get inputs and dependencies' outputs whole; `ledger.readPayload(planId, json)` reads one back (checked against its sha256); `erase` tombstones the chunks.",
  },
  {
    limit: 'payload ceiling',
    default: bytesText(v.maxPayloadBytes),
    setBy: '`PLAN_LEDGER_MAX_PAYLOAD_BYTES`',
    pastIt:
      "`createPlan`/`addItems` throw `LedgerError('PAYLOAD_TOO_LARGE')` naming the field and its size before anything is sent; a tool output past it fails the item **terminally** with `OUTPUT_TOO_LARGE` after one invocation",
  },
  {
    limit: 'items per plan',
    default: countText(v.maxItems),
    setBy: '`--max-items`, `PLAN_LEDGER_MAX_ITEMS` (executor)',
    pastIt: 'the command is rejected with `PAYLOAD_TOO_LARGE` on `data.items`',
  },
  {
    limit: 'one event record',
    // The hand-written page said "read from the broker at start": the code reads no broker setting; the ledger sets
    // the plan topics' max.message.bytes to MAX_RECORD_BYTES when it creates them (src/kafka/topics.ts).
    default: `${bytesText(v.maxRecordBytes)}: the plan topics' \`max.message.bytes\`, which the ledger sets when it creates them`,
    setBy: `${NONE} (\`src/kafka/port.ts\`)`,
    pastIt:
      'a command whose decision would hold a larger event (e.g. a multi-MiB `why`) is rejected with `PAYLOAD_TOO_LARGE` before anything is appended; a transaction\'s records are split into produce calls under the limit, so any set of events that fit one by one commits (a 1,000-item plan is one transaction)',
  },
  {
    limit: 'tool call time',
    default: durationText(v.toolTimeoutMs),
    setBy: '`defineTool({ timeoutMs })`, `--tool-timeout`, `PLAN_LEDGER_TOOL_TIMEOUT_MS`',
    pastIt:
      "the call's `signal` aborts and the attempt is a retryable failure with code `TIMEOUT` (retried by the item's policy); a tool that ignores the abort loses its slot 5 s later and its late result is discarded",
  },
  {
    limit: "a tool's result the ledger refuses (follow-ups with a bad id, a cycle, a duplicate; output that is not JSON)",
    default: NONE,
    setBy: NONE,
    pastIt:
      'the attempt fails terminally after one invocation: `INVALID_FOLLOW_UP`, `INVALID_OUTPUT`, or `RESULT_<rejection code>` (e.g. `RESULT_DEPENDENCY_CYCLE`)',
  },
  {
    limit: 'a payload stored by reference that cannot be read',
    default: NONE,
    setBy: NONE,
    pastIt: 'missing or not matching its sha256: the attempt fails terminally (`PAYLOAD_UNREADABLE`); the broker unreachable: retryable (`PAYLOAD_UNAVAILABLE`)',
  },
  {
    limit: 'a command that keeps failing to append',
    default: `${timesText(v.maxCommandFailures)} in a row`,
    setBy: NONE,
    pastIt:
      "after the first failure the partition's commands go one per transaction, so the failing one is known; after three, it goes to the DLQ (`reason=repeated_failure`, with the last error) and the partition moves on. A failure of Kafka (an outage, a fence, a writer given up, the registry down) is never counted: an outage of any length dead-letters nothing",
  },
  {
    limit: 'partition resets',
    default: `backoff ${backoffText}, starting over once an owner has restored the partition`,
    setBy: NONE,
    pastIt: 'counted in `plan_ledger_partition_resets_total` (executor `--metrics-port`) and logged with the backoff',
  },
  {
    limit: "a revoked partition's hand-over (executor and projector): the old owner's revocation (its fences in flight end, then it stops) before the group hands the partition on; and a new owner's wait for its predecessor's fences in the same executor",
    default: durationText(REVOCATION_WAIT_MS),
    setBy: NONE,
    pastIt: 'the partition goes back to the group (the new owner fences) anyway and a warning names it; a fence of the old owner that ends later fences the new owner, which takes the partition again a session timeout and a heartbeat later',
  },
  {
    limit: "the executor's group member fenced for good (another member joined under its id: its own rejoin after its session lapsed behind a dead coordinator, or a second executor with the same id)",
    default: 'backoff 1 s, 2 s … capped at 30 s, doubling per fence in the last 10 minutes',
    setBy: NONE,
    pastIt: 'its partitions are revoked as lost; it closes the member and joins again under the same id; `plan_ledger_executor_group_fences_total` counts it. Two executors that share an id take turns, each fence logged',
  },
  {
    limit: 'a defect inside `decide` (an unexpected exception, not bad input)',
    default: NONE,
    setBy: NONE,
    pastIt:
      "the command goes to the DLQ (`reason=decide_fault`), `plan_ledger_executor_decide_faults_total` counts it; it never becomes an event in the plan's chain",
  },
  {
    limit: 'a command for a plan that does not exist',
    default: NONE,
    setBy: NONE,
    pastIt:
      "rejected (`PLAN_NOT_FOUND`, or the CreatePlan's own code), and the rejection is tombstoned in the same transaction: no live record is left in the compacted events topic",
  },
  {
    limit: "a large plan's snapshot (the projector's)",
    default: `from ${countText(v.largePlanItems)} items: after ${snapshotShare} of its item count in events since the last one`,
    setBy: `${NONE} (\`src/projection/snapshot-policy.ts\`)`,
    pastIt:
      "not a limit on the plan: between snapshots each watermark lists the plan as an exception, so readers replay its events from the last watermark that covered it (at most that many); a plan's end is snapshotted (archived) at once. A 20,000-item plan writes its snapshot a few times instead of after every batch",
  },
  {
    limit: 'items a step looks at',
    default: `${countText(v.scanWindow)} at the plan's cursor, plus the dependants of what it completed`,
    setBy: `${NONE} (\`executor/readiness.ts\`)`,
    pastIt:
      'not a limit on the plan: commands, takeovers and retry wake-ups scan the whole plan once; a step on a 100,000-item chain costs what it costs on a 10-item one (`npm run bench -- big-plan`)',
  },
  {
    limit: 'intents ahead of tool slots',
    default: 'none',
    setBy: '`--concurrency` (tool slots)',
    pastIt:
      'a step records intents only for free slots (an idle plan still gets one), so no intent waits for a slot that a new owner would have to invoke again (`test/executor/scan-window.int.test.ts`)',
  },
  {
    limit: "rejections a plan's state keeps",
    default: `the latest ${countText(v.rejectionsKept)}`,
    setBy: `${NONE} (part of the fold)`,
    pastIt:
      'every `CommandRejected` stays in the log and in `audit`; the state keeps the latest 100 and, past that, their total in `rejectionCount` (`rejectionTotal(state)`); a plan under the bound has the state and digest it always had',
  },
  {
    limit: "an executor's heartbeat age",
    default: `${STALE_AFTER_HEARTBEATS === 3 ? 'three' : countText(v.staleAfterHeartbeats)} heartbeat intervals (${durationText(v.staleAfterHeartbeats * v.announceMs)} at the default ${durationText(v.announceMs)})`,
    setBy: '`PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS` (executor); `--stale-after`, `executors({ staleAfterMs })` (readers)',
    pastIt:
      "the executor is listed stale with the reason (`no heartbeat for 4.2 s (bound 3.0 s)`) and its tools count as served by nobody in the tool check of a new plan; it stays listed until it announces itself again or its records are removed (a clean stop tombstones them)",
  },
  {
    limit: "an executor's announcement",
    default: bytesText(v.maxAnnouncementBytes),
    setBy: `${NONE} (\`src/executors/announcement.ts\`)`,
    pastIt:
      "the executor lists the tools that fit and counts the rest in `toolsOmitted` (the tool check then warns on an unlisted tool but does not refuse it); a reader skips a larger record (or a corrupt or foreign one) under `invalid` with the reason and reads on",
  },
  {
    limit: 'text fields',
    default: 'well-formed Unicode',
    setBy: NONE,
    pastIt:
      "a lone surrogate (which has no UTF-8 form, so would not survive the Avro round trip the hash is checked after) is refused by the client with `LedgerError('VALIDATION')` naming the field before anything is sent (Avro would otherwise write U+FFFD in its place); a command that reaches `decide` with one is rejected with `INVALID_FIELD`",
  },
  {
    limit: 'live stream: coalescing of text deltas',
    default: `records of at most ${bytesText(v.streamChunkBytes)}, written ${durationText(v.streamLingerMs)} after their first delta`,
    setBy: `${NONE} (\`src/streams/coalesce.ts\`)`,
    pastIt: 'a delta that fills a record is written at once (a larger one is cut on a character boundary), so a million one-character deltas are 62 records, not a million; any other record (tool call, usage, progress, end) writes the buffered text first, so order is kept',
  },
  {
    limit: "live stream: one attempt's records",
    default: bytesText(v.streamBytesPerAttempt),
    setBy: `${NONE} (\`src/streams/records.ts\`); an agent turn's text also stops at the agent's \`maxTextBytes\` (1 MiB), where its recorded text is cut`,
    pastIt: 'further records of the attempt are dropped and counted in its end marker (`dropped`); a `ctx.stream.write` value over 64 KiB is dropped the same way. The tool is never failed for it, and its recorded result is unaffected',
  },
  {
    limit: '`<prefix>.plan-streams` retention',
    default: `${countText(v.streamRetentionMs / 86_400_000)} day and ${bytesText(v.streamRetentionBytes)} per partition`,
    setBy: `${NONE} (\`src/streams/records.ts\`; the topic's \`retention.ms\` / \`retention.bytes\` can be altered)`,
    pastIt: "the oldest records leave the topic (a stream is a view, the recorded results stay); `ledger.stream` with a cursor behind the retained start throws `NOT_FOUND`; `erase` tombstones a plan's stream records a second after the erasure commits",
  },
  {
    limit: 'a stream reader that does not read',
    default: `${bytesText(v.streamPrefetchBytes)} fetched ahead, plus the one batch being handed over`,
    setBy: NONE,
    pastIt: 'the Kafka read waits for the consumer: nothing more is fetched or buffered until it reads on; the writers never wait for readers',
  },
  {
    limit: 'the AI SDK UI adapter (`planUIMessageStreamResponse`): a client that does not read',
    default: 'what the stream reader holds (above), plus one UI chunk',
    setBy: NONE,
    pastIt: "the UI message stream is pulled: nothing is read from the ledger before the HTTP client has taken what came before; a closed request closes its reads",
  },
  {
    limit: 'MCP `plan_wait` progress notifications',
    default: `one every ${durationText(PROGRESS_INTERVAL_MS)} at most, ${countText(PROGRESS_TEXT_CHARS)} characters of streamed text each`,
    setBy: `${NONE} (\`src/streams/records.ts\`)`,
    pastIt: "a notification's text keeps the latest characters and says how many it left out (`[… N characters]`); texts of more than 4 items waiting to be sent lose the oldest. The stream is read into that bound whatever the client does, so a client that reads slowly or never is sent at most that much; a client that goes away ends its wait",
  },
]);

// ---------------------------------------------------------------------------------------------------
// The page

/** A table cell: `|` escaped, one line. The prose above holds no HTML outside its code spans. */
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** One row of the page's table. */
export const limitRow = (l: Limit): string => `| ${cell(l.limit)} | ${cell(l.default)} | ${cell(l.setBy)} | ${cell(l.pastIt)} |`;

/** The body of `docs/reference/limits.md` (the docs script puts its generated-page header above it). */
export function limitsReference(): string {
  return [
    '# Limits',
    '',
    'Every limit, and exactly what happens past it. Nothing past a limit wedges a partition or loops a tool:',
    'each ends in a recorded outcome, and the partition goes on serving its other plans',
    '(`test/executor/never-wedge.int.test.ts`).',
    '',
    '| limit | default | set by | past it |',
    '|---|---|---|---|',
    ...LIMITS.map(limitRow),
    '',
    'The settings named here are in [configuration](configuration.md).',
    '',
  ].join('\n');
}
