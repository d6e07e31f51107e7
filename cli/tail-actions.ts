import { tailEvents, type TailRecord } from '../src/audit/tail.js';
import { parseAsOf } from '../src/audit/timeline.js';
import { LedgerError } from '../src/errors.js';
import { withLedger, withLog } from './connect.js';
import type { StreamChunk } from '../src/streams/records.js';
import { isPlanFinished } from '../src/plan/index.js';
import { elide, json, out, painter, statusStyle, type Painter, type Style } from './output.js';

export interface TailFlags {
  follow?: boolean;
  json?: boolean;
  fromBeginning?: boolean;
  asOf?: string;
  stream?: boolean;
  from?: string;
}

/** How long `tail --stream` reads on after the plan ended, for its last records (the end markers commit with the results). */
const STREAM_DRAIN_MS = 1_500;

/**
 * `plan-ledger tail <plan> --stream`: the plan's live output as it comes (text written as it arrives, a
 * line for each tool call, progress and attempt end), from its first retained record or `--from`; it stops
 * once the plan has ended (or at Ctrl-C with --follow).
 */
export async function tailStream(planId: string | undefined, o: TailFlags): Promise<void> {
  if (!planId) throw new LedgerError('VALIDATION', 'tail --stream: name the plan whose stream to show', { field: 'planId' });
  if (o.fromBeginning || o.asOf) throw new LedgerError('VALIDATION', 'tail --stream: --from-beginning and --as-of are for events; a stream starts at its beginning or --from <cursor>', { field: '--from' });
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const paint = painter();
  let midLine = false;
  const line = (text: string) => {
    if (midLine) process.stdout.write('\n');
    midLine = false;
    out(text);
  };
  try {
    await withLedger(async (ledger) => {
      if (!o.follow) {
        // Ends with the plan: a moment after it is finished, so its last end markers are read too.
        void ledger
          .waitFor(planId, (s) => isPlanFinished(s.status), { timeoutMs: 2 ** 31 - 1 })
          .then(() => setTimeout(() => stop.abort(), STREAM_DRAIN_MS).unref(), () => {});
      }
      for await (const c of ledger.stream(planId, { ...(o.from !== undefined ? { from: o.from } : {}), signal: stop.signal })) {
        if (o.json) json(c);
        else if (c.kind === 'text') {
          process.stdout.write(c.text ?? '');
          midLine = !(c.text ?? '').endsWith('\n');
        } else line(renderStreamLine(c, paint));
      }
    });
    if (midLine) process.stdout.write('\n');
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/** A stream chunk other than text, as one line: `[item#attempt] tool call lookup (c1)`, `… final`. */
export function renderStreamLine(c: StreamChunk, paint: Painter = painter(false)): string {
  const where = paint('dim', `[${c.itemId}#${c.attempt}]`);
  if (c.kind === 'tool-call') return `${where} ${paint('cyan', 'tool call')} ${c.toolName ?? ''} (${c.toolCallId ?? ''})`;
  if (c.kind === 'usage') return `${where} ${paint('dim', `usage ${c.usage?.inputTokens ?? 0} in, ${c.usage?.outputTokens ?? 0} out`)}`;
  if (c.kind === 'progress') return `${where} ${paint('yellow', 'progress')} ${JSON.stringify(c.data)}`;
  if (c.kind === 'end') return `${where} ${paint(c.end === 'final' ? 'green' : c.end === 'superseded' ? 'yellow' : 'red', c.end ?? 'end')}${c.reason ? ` ${c.reason}` : ''}`;
  return `${where} ${c.kind}`;
}

/**
 * `plan-ledger tail [planId]`: one line per event, history first (a plan's by default, every plan's with
 * --from-beginning or --as-of), then live with --follow until Ctrl-C (or SIGTERM) ends it with exit 0.
 */
export async function tail(planId: string | undefined, o: TailFlags): Promise<void> {
  const asOf = o.asOf === undefined ? null : parseAsOf(o.asOf, '--as-of');
  if (o.fromBeginning && asOf) throw new LedgerError('VALIDATION', 'tail: --from-beginning and --as-of both say where to start: pass one', { field: '--as-of' });
  if (!planId && !o.follow && !o.fromBeginning && !asOf) {
    throw new LedgerError('VALIDATION', 'tail: nothing to show: name a plan, or pass --follow (new events), --from-beginning or --as-of', { field: 'planId' });
  }
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  if (o.follow) {
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  }
  const paint = painter();
  try {
    await withLog((log) =>
      tailEvents(log, { planId, fromBeginning: o.fromBeginning, asOf, follow: o.follow ? stop.signal : undefined }, (r) => {
        if (o.json) json(tailJson(r));
        else out(renderTailLine(r, paint));
      }),
    );
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

/** `--json`: the audit row of the event with its plan id, or `{"kind":"erased",...}`. */
export function tailJson(r: TailRecord): Record<string, unknown> {
  if (r.kind === 'erased') return { kind: 'erased', planId: r.planId, at: r.at, partition: r.partition, offset: r.offset };
  return { planId: r.planId, ...r.row };
}

function typeStyle(r: Extract<TailRecord, { kind: 'event' }>): Style | undefined {
  if (r.row.type === 'IntentRecorded') return 'yellow';
  if (r.row.type === 'PlanCreated' || r.row.type === 'PlanProposed' || r.row.type === 'ItemAdded') return 'cyan';
  return r.row.outcome === null ? undefined : statusStyle(r.row.outcome);
}

/** One line: time (UTC), plan, #seq, event type, item#attempt, actor, summary (the plan id elided in it). */
export function renderTailLine(r: TailRecord, paint: Painter = painter(false)): string {
  if (r.kind === 'erased') return `${paint('dim', r.at)}  ${paint('magenta', r.planId)}  ${paint('red', 'erased')}: tombstones for its events (plan-ledger erase)`;
  const row = r.row;
  const style = typeStyle(r);
  const type = row.type.padEnd(18);
  const item = row.itemId === null ? '' : row.attempt === null ? row.itemId : `${row.itemId}#${row.attempt}`;
  return [
    paint('dim', row.at),
    paint('magenta', r.planId),
    paint('dim', `#${String(row.seq).padEnd(4)}`),
    style ? paint(style, type) : type,
    item.padEnd(20),
    row.actor.padEnd(16),
    elide(row.summary, r.planId),
  ]
    .join('  ')
    .trimEnd();
}
