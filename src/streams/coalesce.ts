// Coalescing of text deltas: a model's deltas are a few characters each, and a record per delta would make
// a million tiny deltas a million records. Pure: the writer owns the clock and the timer.

/** Default largest text of one stream record (UTF-8 bytes). */
export const DEFAULT_CHUNK_BYTES = 16 * 1024;
/** Default longest a delta waits for others before its record is written (ms). */
export const DEFAULT_LINGER_MS = 25;

/** Cuts `text` at most `maxBytes` UTF-8 bytes in, on a code point boundary (never an empty head unless `text` is empty). */
export function cutAtBytes(text: string, maxBytes: number): [head: string, tail: string] {
  if (text.length * 3 <= maxBytes) return [text, '']; // a UTF-16 unit is at most 3 UTF-8 bytes
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const cp = text.codePointAt(i)!;
    const units = cp > 0xffff ? 2 : 1;
    const b = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + b > maxBytes) break;
    bytes += b;
    i += units;
  }
  if (i >= text.length) return [text, ''];
  if (i === 0) i = text.codePointAt(0)! > 0xffff ? 2 : 1;
  return [text.slice(0, i), text.slice(i)];
}

/**
 * Buffers text deltas into chunks of at most `maxBytes`: {@link push} returns the chunks that are full,
 * {@link take} the rest once the linger since the first buffered delta is over ({@link dueAt}) or before
 * any other record (so records keep the order of what the model said).
 */
export class DeltaCoalescer {
  private parts: string[] = [];
  private bytes = 0;
  private since: number | undefined;

  constructor(
    readonly maxBytes = DEFAULT_CHUNK_BYTES,
    readonly lingerMs = DEFAULT_LINGER_MS,
  ) {
    if (!(Number.isSafeInteger(maxBytes) && maxBytes >= 4)) throw new RangeError('maxBytes must be an integer of at least 4');
  }

  /** Adds a delta; returns the chunks that reached `maxBytes` (to write now, in order). */
  push(delta: string, now: number): string[] {
    if (delta.length === 0) return [];
    this.since ??= now;
    this.parts.push(delta);
    this.bytes += Buffer.byteLength(delta, 'utf8');
    if (this.bytes < this.maxBytes) return [];
    const full: string[] = [];
    let rest = this.parts.join('');
    this.parts = [];
    for (;;) {
      const [head, tail] = cutAtBytes(rest, this.maxBytes);
      if (tail.length === 0 && Buffer.byteLength(head, 'utf8') < this.maxBytes) {
        rest = head;
        break;
      }
      full.push(head);
      rest = tail;
      if (rest.length === 0) break;
    }
    this.bytes = Buffer.byteLength(rest, 'utf8');
    if (rest.length) this.parts.push(rest);
    else this.since = undefined;
    return full;
  }

  /** When the buffered text must be written (undefined: nothing buffered). */
  dueAt(): number | undefined {
    return this.since === undefined ? undefined : this.since + this.lingerMs;
  }

  /** The buffered text, emptied (undefined when there is none). */
  take(): string | undefined {
    if (this.parts.length === 0) return undefined;
    const text = this.parts.join('');
    this.parts = [];
    this.bytes = 0;
    this.since = undefined;
    return text;
  }

  get bufferedBytes(): number {
    return this.bytes;
  }
}
