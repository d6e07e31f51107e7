/** A counting semaphore: at most `limit` item protocols run at once across all owned partitions. */
export class Slots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {}

  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.active++;
    try {
      if (signal?.aborted) return undefined;
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }

  /** Runs waiting for a slot. */
  get waitingCount(): number {
    return this.waiting.length;
  }

  get inUse(): number {
    return this.active;
  }
}
