import { setTimeout as sleep } from 'node:timers/promises';
import { LedgerError } from '../src/errors.js';
import { canonicalJson } from '../src/plan/index.js';

/**
 * A running attempt's progress writes (`ctx.checkpoint`, `ctx.evidence`), each resolved once committed.
 * Checkpoints are rate-limited: while one is being written or the interval since the last has not passed,
 * newer states replace the waiting one (the latest wins) and every caller waiting for it is resolved by
 * the write that covers it. Evidence records are written one after another, none dropped.
 */
export class ProgressRecorder {
  private latest: string | undefined;
  private waiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private flushing = false;
  private lastWriteAt = 0;
  private evidenceChain: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (kind: 'checkpoint' | 'evidence', json: string, name?: string) => Promise<void>,
    private readonly intervalMs: number,
    private readonly signal: AbortSignal,
  ) {}

  checkpoint(state: unknown): Promise<void> {
    let json: string;
    try {
      json = canonicalJson(state ?? null);
    } catch (e) {
      return Promise.reject(new LedgerError('VALIDATION', `checkpoint state is not JSON: ${(e as Error).message}`, { field: 'state' }));
    }
    return new Promise<void>((resolve, reject) => {
      this.latest = json;
      this.waiters.push({ resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  evidence(name: string, value: unknown): Promise<void> {
    let json: string;
    try {
      json = canonicalJson(value ?? null);
    } catch (e) {
      return Promise.reject(new LedgerError('VALIDATION', `evidence "${String(name)}" is not JSON: ${(e as Error).message}`, { field: 'value' }));
    }
    const next = this.evidenceChain.then(() => this.ensureLive()).then(() => this.write('evidence', json, String(name)));
    this.evidenceChain = next.catch(() => {});
    return next;
  }

  private ensureLive(): void {
    if (this.signal.aborted) throw new LedgerError('CONFLICT', 'the attempt is over (timed out, or its partition was released): nothing more is recorded for it');
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.latest !== undefined) {
        const wait = this.lastWriteAt + this.intervalMs - Date.now();
        if (wait > 0) await sleep(wait);
        const json = this.latest;
        const waiters = this.waiters;
        this.latest = undefined;
        this.waiters = [];
        try {
          this.ensureLive();
          await this.write('checkpoint', json);
          for (const w of waiters) w.resolve();
        } catch (e) {
          for (const w of waiters) w.reject(e);
        }
        this.lastWriteAt = Date.now();
      }
    } finally {
      this.flushing = false;
    }
  }
}
