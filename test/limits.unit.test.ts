// The limits reference (docs/reference/limits.md) is generated from src/limits.ts: its defaults are the
// code's constants and settings' defaults, so changing one changes the page (npm run docs:check).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_COMMAND_FAILURES } from '../executor/executor.js';
import { DEFAULT_TOOL_TIMEOUT_MS } from '../executor/item-runner.js';
import { DEFAULT_INLINE_BYTES, DEFAULT_MAX_PAYLOAD_BYTES } from '../src/blobs/index.js';
import { MAX_RECORD_BYTES } from '../src/kafka/index.js';
import { bytesText, countText, durationText, LIMIT_VALUES, limitRow, LIMITS, limitsReference } from '../src/limits.js';
import { DEFAULT_LIMITS, MAX_REJECTIONS_KEPT } from '../src/plan/index.js';
import { LARGE_PLAN_ITEMS } from '../src/projection/snapshot-policy.js';
import { settingDefault } from '../src/settings.js';
import { DEFAULT_CHUNK_BYTES, DEFAULT_LINGER_MS } from '../src/streams/coalesce.js';
import { STREAM_BYTES_PER_ATTEMPT } from '../src/streams/records.js';

const byName = (limit: string) => LIMITS.find((l) => l.limit === limit)!;

describe('limits reference', () => {
  it('takes its defaults from the code', () => {
    expect(LIMIT_VALUES.inlinePayloadBytes).toBe(DEFAULT_INLINE_BYTES);
    expect(LIMIT_VALUES.maxPayloadBytes).toBe(DEFAULT_MAX_PAYLOAD_BYTES);
    expect(LIMIT_VALUES.maxItems).toBe(settingDefault('PLAN_LEDGER_MAX_ITEMS', {}));
    expect(LIMIT_VALUES.maxItems).toBe(DEFAULT_LIMITS.maxItems);
    expect(LIMIT_VALUES.toolTimeoutMs).toBe(DEFAULT_TOOL_TIMEOUT_MS);
    expect(LIMIT_VALUES.maxRecordBytes).toBe(MAX_RECORD_BYTES);
    expect(LIMIT_VALUES.maxCommandFailures).toBe(MAX_COMMAND_FAILURES);
    expect(LIMIT_VALUES.rejectionsKept).toBe(MAX_REJECTIONS_KEPT);
    expect(LIMIT_VALUES.largePlanItems).toBe(LARGE_PLAN_ITEMS);
    expect(LIMIT_VALUES.announceMs).toBe(settingDefault('PLAN_LEDGER_EXECUTOR_ANNOUNCE_MS', {}));
    expect(byName("an executor's heartbeat age").default).toBe('three heartbeat intervals (15 s at the default 5 s)');
    expect(byName("an executor's announcement").default).toBe('256 KiB');
    expect([LIMIT_VALUES.streamChunkBytes, LIMIT_VALUES.streamLingerMs, LIMIT_VALUES.streamBytesPerAttempt]).toEqual([DEFAULT_CHUNK_BYTES, DEFAULT_LINGER_MS, STREAM_BYTES_PER_ATTEMPT]);
  });

  it('writes the defaults in words computed from the values', () => {
    expect(byName('payload ceiling').default).toBe(bytesText(DEFAULT_MAX_PAYLOAD_BYTES));
    expect(byName('tool call time').default).toBe(durationText(DEFAULT_TOOL_TIMEOUT_MS));
    expect(byName('items per plan').default).toBe(countText(DEFAULT_LIMITS.maxItems));
    // The values the code has today, as the page has always said them.
    expect([bytesText(65_536), bytesText(67_108_864), bytesText(1024 * 1024), bytesText(262_144), bytesText(1000)]).toEqual(['64 KiB', '64 MiB', '1 MiB', '256 KiB', '1,000 bytes']);
    expect([countText(100_000), durationText(600_000), durationText(60_000), durationText(500), durationText(30_000)]).toEqual(['100,000', '10 minutes', '1 minute', '0.5 s', '30 s']);
    expect(byName('partition resets').default).toBe('backoff 0.5 s, 1 s, 2 s … capped at 30 s, starting over once an owner has restored the partition');
    expect(byName("a large plan's snapshot (the projector's)").default).toBe('from 1,000 items: after a quarter of its item count in events since the last one');
    expect(byName('a command that keeps failing to append').default).toBe('3 times in a row');
    expect(byName('items a step looks at').default).toBe("256 at the plan's cursor, plus the dependants of what it completed");
  });

  it('puts every row in the generated page, and the committed page is the generated one', () => {
    const page = limitsReference();
    expect(LIMITS.length).toBe(26);
    expect(LIMITS.find((l) => l.limit.startsWith("a revoked partition's hand-over"))?.default).toBe('8 s');
    expect(LIMITS.find((l) => l.limit.startsWith("the executor's group member fenced for good"))?.default).toBe('backoff 1 s, 2 s … capped at 30 s, doubling per fence in the last 10 minutes');
    expect(byName('`<prefix>.plan-streams` retention').default).toBe('1 day and 256 MiB per partition');
    expect(byName('MCP `plan_wait` progress notifications').default).toBe('one every 0.25 s at most, 2,048 characters of streamed text each');
    for (const l of LIMITS) expect(page).toContain(`${limitRow(l)}\n`);
    const committed = readFileSync(new URL('../docs/reference/limits.md', import.meta.url), 'utf8');
    expect(committed.endsWith(page)).toBe(true);
  });
});
