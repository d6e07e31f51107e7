// MCP progress for `plan_wait` (docs/guides/agents.md#plan-ledger-as-an-mcp-server): when the client passes
// a progressToken, the wait sends `notifications/progress` as the plan advances — items completed of the
// total, and a running attempt's streamed text — bounded in rate (one notification per `intervalMs`) and
// size (at most `maxTextChars` of text each; what a window had beyond that is counted, not sent). The plan's
// stream is read as fast as it comes into one capped buffer, and notifications go out one at a time (each
// awaited), so a client that reads slowly or never holds the server to that bound, not to the stream's size.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Ledger } from '../src/client/index.js';
import type { PlanState } from '../src/plan/index.js';
import { PROGRESS_INTERVAL_MS, PROGRESS_TEXT_CHARS } from '../src/streams/records.js';

/** Items whose text waits to be sent at most: so the server holds at most this × PROGRESS_TEXT_CHARS per wait. */
const MAX_PENDING = 4;
/** Time left between the last notification of a wait and its answer (see {@link WaitProgress.stop}). */
const ANSWER_GAP_MS = 50;
const FINISHED: ReadonlySet<string> = new Set(['completed', 'failed', 'cancelled']);

export interface ProgressNotification {
  method: 'notifications/progress';
  params: { progressToken: string | number; progress: number; total?: number; message?: string };
}

export interface WaitProgressOptions {
  intervalMs?: number;
  maxTextChars?: number;
}

/**
 * The progress of one `plan_wait`. {@link onState} is fed each state the wait sees; {@link start} reads the
 * plan's stream; {@link stop} ends both and sends the last count. `progress` increases with every
 * notification (the MCP rule): the items completed, plus a fraction below the next one for each text
 * notification in between; `total` is the plan's item count.
 */
export class WaitProgress {
  private readonly intervalMs: number;
  private readonly maxTextChars: number;
  private readonly stopped = new AbortController();
  private done = 0;
  private total = 0;
  private status = '';
  /** The counts last sent; nothing is sent before the first state is known. */
  private countsSent = '0/0/';
  private lastDone = -1;
  private between = 0;
  private lastWasText = false;
  /** Text streamed and not sent yet, per item in order: its kept tail and how many characters were cut. */
  private readonly texts: Array<{ itemId: string; kept: string; skipped: number }> = [];
  private wake: (() => void) | undefined;
  private sending: Promise<void> | undefined;
  private reading: Promise<void> | undefined;
  private signal: AbortSignal | undefined;
  private cursor: string | undefined;
  /** Notifications sent. */
  sent = 0;

  constructor(
    private readonly ledger: Pick<Ledger, 'stream'>,
    private readonly planId: string,
    private readonly token: string | number,
    private readonly send: (n: ProgressNotification) => Promise<void>,
    opts: WaitProgressOptions = {},
  ) {
    this.intervalMs = opts.intervalMs ?? PROGRESS_INTERVAL_MS;
    this.maxTextChars = opts.maxTextChars ?? PROGRESS_TEXT_CHARS;
  }

  onState(s: PlanState): void {
    const items = Object.values(s.items);
    this.done = items.filter((i) => i.status === 'completed').length;
    this.total = items.length;
    this.status = s.status;
    this.wake?.();
  }

  /** Reads the plan's stream from its start and sends notifications until {@link stop}. */
  start(signal: AbortSignal): void {
    this.signal = signal;
    const both = AbortSignal.any([signal, this.stopped.signal]);
    both.addEventListener('abort', () => this.wake?.(), { once: true });
    this.reading = this.read({ from: 'beginning', signal: both });
    this.sending = this.pump(both);
  }

  /** Takes the stream's text into the capped buffers (never waits for the client). */
  private async read(opts: { from: string; signal: AbortSignal; follow?: boolean }): Promise<void> {
    try {
      for await (const c of this.ledger.stream(this.planId, opts)) {
        this.cursor = c.cursor;
        if (c.kind !== 'text' || !c.text) continue;
        let t = this.texts.at(-1);
        if (t === undefined || t.itemId !== c.itemId) {
          t = { itemId: c.itemId, kept: '', skipped: 0 };
          this.texts.push(t);
          // A client behind by more than MAX_PENDING items' texts loses the oldest.
          if (this.texts.length > MAX_PENDING) this.texts.shift();
        }
        t.kept += c.text;
        if (t.kept.length > this.maxTextChars) {
          const cut = t.kept.length - this.maxTextChars;
          t.skipped += cut;
          t.kept = t.kept.slice(cut);
        }
        this.wake?.();
      }
    } catch {
      // A stream that cannot be read (the plan erased, a partition without a leader) leaves the counts.
    }
  }

  private get countsMessage(): string {
    return `${this.done}/${this.total} items completed (plan ${this.status})`;
  }

  private get counts(): string {
    return `${this.done}/${this.total}/${this.status}`;
  }

  private async pump(signal: AbortSignal): Promise<void> {
    let last = 0;
    while (!signal.aborted) {
      const next = this.next();
      if (next === undefined) {
        await new Promise<void>((r) => (this.wake = r));
        this.wake = undefined;
        continue;
      }
      const wait = last + this.intervalMs - Date.now();
      if (wait > 0) await sleep(wait);
      if (signal.aborted) return;
      const message = this.next(true);
      if (message !== undefined) await this.notify(message, message === this.countsMessage).catch(() => {});
      last = Date.now();
    }
  }

  /**
   * The next message to send (taken when `take`): the first count, then counts and texts in turn while
   * both wait (so neither starves the other). The count of a finished plan (or of all items done) is left
   * to {@link stop}, after the last text.
   */
  private next(take = false): string | undefined {
    const counts = this.counts;
    const countMessage = this.countsMessage;
    const countDue = counts !== this.countsSent && (this.lastDone === -1 || (!FINISHED.has(this.status) && this.done < this.total));
    const t = this.texts[0];
    if (this.lastDone === -1 && !countDue) return undefined; // the first count goes first
    if (countDue && (this.lastDone === -1 || t === undefined || this.lastWasText)) {
      if (take) {
        this.countsSent = counts;
        this.lastWasText = false;
      }
      return countMessage;
    }
    if (t !== undefined) {
      if (take) {
        this.texts.shift();
        this.lastWasText = true;
      }
      return `${t.itemId}: ${t.skipped ? `[… ${t.skipped} characters] ` : ''}${t.kept}`;
    }
    return undefined;
  }

  /** Sends one notification: a count at the items completed, a text a step above the last count sent. */
  private async notify(message: string, count = false): Promise<void> {
    let progress: number;
    if (count && this.done > this.lastDone) {
      this.lastDone = this.done;
      this.between = 0;
      progress = this.done;
    } else progress = Math.max(this.lastDone, 0) + ++this.between / (this.between + 1);
    this.sent++;
    await this.send({ method: 'notifications/progress', params: { progressToken: this.token, progress, ...(this.total ? { total: this.total } : {}), message } });
  }

  /**
   * Ends the notifications. Given the final state, the stream is read to its end first (all of it was
   * written before the state was recorded; at most `readMs`), then the text not sent yet goes out and the
   * final count last (at most `sendMs`), so a client that does not read cannot hold the answer back here.
   */
  async stop(final: PlanState | undefined, readMs = 5000, sendMs = 2000): Promise<void> {
    this.stopped.abort();
    await Promise.all([this.reading, this.sending]);
    if (final === undefined || this.signal?.aborted) return;
    this.onState(final);
    const gone = this.signal ? [this.signal] : [];
    await this.read({ from: this.cursor ?? 'beginning', follow: false, signal: AbortSignal.any([AbortSignal.timeout(readMs), ...gone]) });
    const sentBefore = this.sent;
    const sending = AbortSignal.any([AbortSignal.timeout(sendMs), ...gone]);
    const tail = (async () => {
      for (let m = this.next(true); m !== undefined && !sending.aborted; m = this.next(true)) await this.notify(m, m === this.countsMessage);
      if (this.counts !== this.countsSent && !sending.aborted) {
        this.countsSent = this.counts;
        await this.notify(this.countsMessage, true);
      }
    })().catch(() => {});
    await Promise.race([tail, new Promise<void>((r) => sending.addEventListener('abort', () => r(), { once: true }))]);
    // The official TypeScript client handles a notification a microtask after reading it but an answer at
    // once: a notification read in the same chunk as the answer is dropped ("unknown token"). A pause
    // between the last one and the answer lets it be read on its own.
    if (this.sent > sentBefore) await sleep(ANSWER_GAP_MS);
  }
}
