/* global fetch, TextDecoder */
// Server-sent events read with fetch: EventSource cannot send an Authorization header, and a token in the
// URL would end up in logs. Calls onEvent(type, data, id) per event; resolves when the stream ends,
// rejects on a network error (AbortError when `signal` aborts), and says why a stream did not open.
import { auth } from './core.js';

/** Largest event the reader holds before it gives up on the stream (a server that never ends a block). */
const MAX_BLOCK = 4 * 1024 * 1024;

export async function readEvents(path, { signal, onOpen, onEvent }) {
  const res = await fetch(path, { headers: { accept: 'text/event-stream', ...auth() }, signal });
  if (!res.ok) {
    const body = await res.json().catch(() => ({}));
    const err = new Error(body.message ?? `${res.status} ${res.statusText}`);
    err.status = res.status;
    throw err;
  }
  onOpen?.();
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let cut;
    while ((cut = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, cut);
      buf = buf.slice(cut + 2);
      let type = 'message';
      let id = null;
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
        else if (line.startsWith('id:')) id = line.slice(3).trim();
      }
      if (data.length) onEvent(type, data.join('\n'), id);
    }
    if (buf.length > MAX_BLOCK) throw new Error('an event of the stream is too large');
  }
}
