/** A counting semaphore: at most `limit` item protocols run at once across all owned partitions. */
export class Slots {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  /** Intents being recorded: their invocations will want a slot as soon as the transaction commits. */
  private reserved = 0;

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

  /** Slots neither in use, nor wanted by a waiting run, nor reserved. */
  get free(): number {
    return this.limit - this.active - this.waiting.length - this.reserved;
  }

  /** Holds `n` slots for intents being recorded; give them back with {@link unreserve} once their invocations are launched. */
  reserve(n: number): void {
    this.reserved += n;
  }

  unreserve(n: number): void {
    this.reserved = Math.max(0, this.reserved - n);
  }
}
