const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/**
 * One timer per owned partition for scheduled retries and wait deadlines: it remembers per plan when that
 * plan next has an item to start or a wait to time out, and fires at the earliest such time. Per plan, so an item step costs nothing for the
 * other plans of the partition.
 */
export class RetryTimer {
  private timer: NodeJS.Timeout | undefined;
  private timerAt: number | undefined;
  private readonly wakeAt = new Map<string, number>();
  private stopped = false;

  constructor(
    private readonly now: () => number,
    private readonly onDue: (planId: string) => void,
  ) {}

  /** Notes when a plan next has a retry to start (`null`: none). */
  note(planId: string, at: number | null): void {
    if (at === null) {
      this.wakeAt.delete(planId);
      return;
    }
    this.wakeAt.set(planId, at);
    if (this.timerAt === undefined || at < this.timerAt) this.arm(at);
  }

  /** Notes a retry time for a plan, keeping an earlier one already noted. */
  noteEarliest(planId: string, at: number): void {
    const known = this.wakeAt.get(planId);
    if (known === undefined || at < known) this.note(planId, at);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private arm(at: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    // Node fires a timeout past 2^31-1 ms (~24.8 days; a long wait's deadline) at once: arm at most that far,
    // the fire re-arms for what is still ahead.
    this.timer = setTimeout(() => this.fire(), Math.min(MAX_TIMEOUT_MS, Math.max(0, at - this.now()) + 5));
    this.timer.unref();
  }

  /** The timer fired: the plans whose time came are due; re-arm for the next one. */
  private fire(): void {
    this.timer = undefined;
    this.timerAt = undefined;
    const now = this.now();
    let next: number | undefined;
    for (const [planId, at] of [...this.wakeAt]) {
      if (at <= now) {
        this.wakeAt.delete(planId);
        this.onDue(planId);
      } else if (next === undefined || at < next) {
        next = at;
      }
    }
    if (next !== undefined && this.timerAt === undefined) this.arm(next);
  }
}
