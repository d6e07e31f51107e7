// The chaos run's late-event check: an event decided before an owner began taking its partition over may
// not follow, in the partition's log, an event decided after that owner had restored it.
import { describe, expect, it } from 'vitest';
import { lateEvents, type StampedRecord } from '../../chaos/late-events.js';

const rec = (offset: number, stamp: number, key = `plan:${offset}`): StampedRecord => ({ offset: BigInt(offset), stamp, key });

describe('lateEvents', () => {
  // exec1 began taking p0 over at 1000 (fence), had restored it at 1200.
  const takeover = { partition: 0, label: 'exec1-g1', at: 1200, ms: 200 };

  it('passes a log where the old owner\'s events all come before the new owner\'s', () => {
    const log = [rec(0, 500), rec(1, 990), rec(2, 1100), rec(3, 1250), rec(4, 1300)];
    expect(lateEvents(new Map([[0, log]]), [takeover])).toEqual([]);
  });

  it('names an event decided before the take-over began that follows the new owner\'s first event', () => {
    const log = [rec(0, 500), rec(1, 1250, 'p1:1'), rec(2, 999, 'p2:7'), rec(3, 1300)];
    expect(lateEvents(new Map([[0, log]]), [takeover])).toEqual(['p2:7 at p0@2, decided 1 ms before exec1-g1 began taking p0 over, after p1:1 at @1']);
  });

  it('reads the log in offset order, and only the partition the take-over was of', () => {
    const log = [rec(3, 900, 'late'), rec(1, 1250, 'first'), rec(0, 500)];
    expect(lateEvents(new Map([[0, log], [1, [rec(0, 1250), rec(1, 10)]]]), [takeover])).toEqual(['late at p0@3, decided 100 ms before exec1-g1 began taking p0 over, after first at @1']);
  });

  it('lets events decided during the take-over (before the fence held) pass, and a log with no event after it', () => {
    expect(lateEvents(new Map([[0, [rec(0, 1250), rec(1, 1000)]]]), [takeover])).toEqual([]);
    expect(lateEvents(new Map([[0, [rec(0, 100), rec(1, 200)]]]), [takeover])).toEqual([]);
  });

  it('lists an event once however many take-overs it follows', () => {
    const log = [rec(0, 1250), rec(1, 2600), rec(2, 50, 'stale')];
    const later = { partition: 0, label: 'exec2-g1', at: 2500, ms: 100 };
    expect(lateEvents(new Map([[0, log]]), [takeover, later])).toHaveLength(1);
  });
});
