import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../src/logging.js';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(chunk.toString('utf8'));
      cb();
    },
  });
  return { lines, stream };
}

describe('pino redact of config secrets', () => {
  it('a password, token or master key never reaches a log line, at any of the first levels; other fields do', () => {
    const { lines, stream } = capture();
    const log = createLogger({ level: 'info' }, stream);
    log.info({ config: { sasl: { mechanism: 'scram-sha-512', username: 'exec', password: 'pw-1' }, registryAuth: { username: 'r', password: 'pw-2' } } }, 'config');
    log.info({ token: 'tok-3', masterKey: 'mk-4', details: { tokens: ['tok-5'] } }, 'start');
    log.child({ component: 'http' }).warn({ req: { headers: { authorization: 'Bearer tok-6' } } }, 'refused');
    const text = lines.join('');
    for (const s of ['pw-1', 'pw-2', 'tok-3', 'mk-4', 'tok-5', 'tok-6']) expect(text).not.toContain(s);
    expect(text.split('[secret]').length - 1).toBe(6);
    expect(text).toContain('scram-sha-512');
    expect(text).toContain('"username":"exec"');
  });
});
