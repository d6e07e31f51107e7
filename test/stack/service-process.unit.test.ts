// The one process harness (stack/service-process.ts): JSON lines parsed as they come, the rest kept as
// text, the log file, and a stop that ends even a stopped (SIGSTOP) process.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ServiceProcess } from '../../stack/service-process.js';

const script = `
process.stdout.write('{"msg":"a","n":1}\\nnot json\\n{"msg":"b"');
setTimeout(() => { process.stdout.write(',"n":2}\\n[1,2]\\n{"msg":"c","n":3}\\n'); process.stderr.write('warned\\n'); }, 50);
setTimeout(() => process.exit(3), 150);
`;

describe('ServiceProcess', () => {
  it('keeps JSON objects split across chunks as lines, everything else as text, and both in the log file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'service-process-'));
    const seen: unknown[] = [];
    const p = new ServiceProcess({ label: 'lines', args: ['-e', script], env: { EXTRA: 'x', NODE_OPTIONS: undefined }, logFile: join(dir, 'lines.log'), maxLines: 2, onLine: (l) => void seen.push(l.n) });
    expect(await p.exited).toEqual({ code: 3, signal: null });
    expect(p.lines.map((l) => l.line)).toEqual([{ msg: 'a', n: 1 }, { msg: 'b', n: 2 }]); // maxLines: 2
    expect(seen).toEqual([1, 2, 3]); // onLine sees every one
    expect(p.other).toEqual(['not json', '[1,2]', 'warned\n']);
    expect(p.find((l) => l.msg === 'b')?.line).toEqual({ msg: 'b', n: 2 });
    expect(p.find((l) => l.msg === 'a', 1)).toBeUndefined();
    expect([p.alive, p.exitStatus]).toEqual([false, '3']);
    await new Promise((r) => setTimeout(r, 50)); // the file ends after the exit
    expect(readFileSync(join(dir, 'lines.log'), 'utf8')).toBe('{"msg":"a","n":1}\nnot json\n{"msg":"b","n":2}\n[1,2]\n{"msg":"c","n":3}\nwarned\n');
  });

  it('stop ends a stopped process: SIGCONT, the signal, SIGKILL past the grace', async () => {
    const p = new ServiceProcess({ label: 'stubborn', args: ['-e', "process.on('SIGTERM', () => {}); console.log(JSON.stringify({ msg: 'up' })); setInterval(() => {}, 1000);"] });
    while (p.find((l) => l.msg === 'up') === undefined) await new Promise((r) => setTimeout(r, 20));
    p.signal('SIGSTOP');
    await p.stop('SIGTERM', 300); // ignores SIGTERM: killed after 300 ms
    expect(await p.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await p.stop(); // already gone: returns at once
    expect(p.alive).toBe(false);
  });
});
