// tailEvents against the real broker and registry, with events appended by a ledger writer: history then
// live, each plan's events once and in seq order even when a key is re-sent (a producer retry leaves a
// second copy of an event after later ones), and --as-of a time over every plan.
import { describe, expect, it } from 'vitest';
import { LedgerLog } from '../../src/audit/log.js';
import { tailEvents, type TailRecord } from '../../src/audit/tail.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { testConfig, testLogger, waitFor } from '../support/helpers.js';
import { LedgerWriter, cleanup, interleave, testLedger } from '../projector/support.js';

const events = (got: TailRecord[], planId: string) => got.flatMap((r) => (r.kind === 'event' && r.planId === planId ? [r] : []));

describe('tailEvents', () => {
  it('every plan from the beginning, then live: each event once, in seq order, a re-sent key not again', async () => {
    const config = testConfig({ partitions: 2 });
    const l = await testLedger(config);
    const writer = new LedgerWriter(l);
    await interleave(writer, [writer.lifecycle('tail-a', 2, { failFirstTry: true }), writer.lifecycle('tail-b', 1)]);
    const a = writer.events.get('tail-a')!;
    await writer.append([a[3]!]); // a second copy of seq 4, after every later event of the plan
    const log = await LedgerLog.open(config, testLogger);
    cleanup(() => log.close());

    const got: TailRecord[] = [];
    const stop = new AbortController();
    const tailing = tailEvents(log, { fromBeginning: true, follow: stop.signal }, (r) => void got.push(r));
    await waitFor(() => events(got, 'tail-a').length === a.length && events(got, 'tail-b').length === writer.events.get('tail-b')!.length, {
      timeoutMs: 30_000,
      message: 'history of both plans',
    });

    // Live: a new plan, another re-sent copy of an event of tail-a, then a marker plan on tail-a's
    // partition (after the copy, so once the marker is out the copy has been read).
    await interleave(writer, [writer.lifecycle('tail-c', 1)]);
    await writer.append([a[6]!]);
    const marker = Array.from({ length: 50 }, (_, i) => `tail-marker-${i}`).find((id) => partitionFor(id, 2) === partitionFor('tail-a', 2))!;
    await interleave(writer, [writer.lifecycle(marker, 1).slice(0, 1)]);
    await waitFor(() => events(got, 'tail-c').length === writer.events.get('tail-c')!.length && events(got, marker).length === writer.events.get(marker)!.length, { timeoutMs: 30_000, message: 'live events' });
    stop.abort();
    await tailing;

    for (const id of ['tail-a', 'tail-b', 'tail-c', marker]) {
      const written = writer.events.get(id)!;
      expect(events(got, id).map((r) => r.event.seq)).toEqual(written.map((e) => e.seq));
      expect(events(got, id).map((r) => r.row.hash)).toEqual(written.map((e) => e.hash));
    }
    expect(got.every((r) => r.kind === 'event')).toBe(true);
    // The retried item's second result carries its intent's key: the row builder saw the whole history.
    const retried = events(got, 'tail-a').filter((r) => r.row.type === 'ResultCommitted' && r.row.itemId === 'it-1');
    expect(retried.map((r) => [r.row.attempt, r.row.outcome, r.row.idempotencyKey])).toEqual([
      [1, 'failed_retryable', 'tail-a/it-1/1'],
      [2, 'succeeded', 'tail-a/it-1/2'],
    ]);
  });

  it('--as-of a time: every plan\'s events after that time, none before; a seq needs a plan', async () => {
    const config = testConfig({ partitions: 2 });
    const l = await testLedger(config);
    const writer = new LedgerWriter(l);
    await interleave(writer, [writer.lifecycle('asof-a', 2), writer.lifecycle('asof-b', 2)]);
    const all = [...writer.events.values()].flat();
    const cut = all[Math.floor(all.length / 2)]!.occurredAt;
    const log = await LedgerLog.open(config, testLogger);
    cleanup(() => log.close());

    const got: TailRecord[] = [];
    await tailEvents(log, { asOf: { time: cut } }, (r) => void got.push(r));
    const expected = all.filter((e) => e.occurredAt > cut);
    expect(expected.length).toBeGreaterThan(0);
    expect(got.map((r) => (r.kind === 'event' ? `${r.planId}#${r.event.seq}` : r.kind)).sort()).toEqual(expected.map((e) => `${e.planId}#${e.seq}`).sort());
    // In time order across plans.
    const times = got.map((r) => (r.kind === 'event' ? r.event.occurredAt : 0));
    expect(times).toEqual([...times].sort((x, y) => x - y));

    await expect(tailEvents(log, { asOf: { seq: 3 } }, () => {})).rejects.toMatchObject({ code: 'VALIDATION' });
  });
});
