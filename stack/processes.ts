import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { isLedgerError, LedgerError } from '../src/errors.js';
import { isOurs, type PidRecord } from '../src/stack/pids.js';

export function spawnDetached(opts: {
  name: string;
  bin: string;
  args: string[];
  cwd: string;
  logFile: string;
  pidFile: string;
  marker: string;
  env?: NodeJS.ProcessEnv;
}): PidRecord {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(opts.bin, opts.args, {
    cwd: opts.cwd,
    detached: true,
    stdio: ['ignore', fd, fd],
    env: opts.env ?? process.env,
  });
  closeSync(fd);
  if (child.pid === undefined) throw new LedgerError('ENVIRONMENT', `could not start ${opts.name} (${opts.bin}); see ${opts.logFile}`);
  child.unref();
  const rec: PidRecord = {
    name: opts.name,
    pid: child.pid,
    marker: opts.marker,
    logFile: opts.logFile,
    startedAt: new Date().toISOString(),
  };
  writeFileSync(opts.pidFile, JSON.stringify(rec));
  return rec;
}


/** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. Removes the pid file. */
export async function stopProcess(rec: PidRecord, pidFile: string, graceMs = 15_000): Promise<boolean> {
  let stopped = false;
  if (isOurs(rec)) {
    process.kill(rec.pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (isOurs(rec) && Date.now() < deadline) await sleep(100);
    if (isOurs(rec)) {
      process.kill(rec.pid, 'SIGKILL');
      while (isOurs(rec)) await sleep(50);
    }
    stopped = true;
  }
  // An exiting process gives up its memory (its /proc cmdline reads empty, so isOurs says no) before its
  // files and sockets: a broker started again in that window finds its log directory's lock still held and
  // exits during start-up. Wait until the kernel has released them too.
  const until = Date.now() + 10_000;
  while (!exited(rec) && Date.now() < until) await sleep(20);
  rmSync(pidFile, { force: true });
  return stopped;
}

function threads(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/**
 * True once the record's process is gone, or only its zombie is left (which holds no files or sockets any
 * more), or the pid now names another program.
 */
function exited(rec: PidRecord): boolean {
  const { pid } = rec;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    try {
      process.kill(pid, 0);
      return false; // no /proc here: trust the signal check
    } catch {
      return true;
    }
  }
  // "pid (comm) S ...": the state follows the last ')' (comm may hold spaces and parentheses).
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  // A killed JVM's main thread can be a zombie while its other threads, sharing its files, still exit.
  if (state === 'Z' || state === 'X') return threads(pid) <= 1;
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return cmdline !== '' && !cmdline.includes(rec.marker);
  } catch {
    return true;
  }
}

/** Fails with a one-line error when something already listens on host:port. */
export async function assertPortFree(host: string, port: number, what: string, envVar: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const srv = createServer();
    srv.once('error', (e: NodeJS.ErrnoException) => {
      reject(
        new LedgerError(
          'ENVIRONMENT',
          e.code === 'EADDRINUSE'
            ? `port ${port} (${what}) is taken by another process; free it or choose another port with ${envVar}`
            : `cannot bind ${host}:${port} for ${what}: ${e.message}`,
        ),
      );
    });
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve()));
  });
}

export function portOpen(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

/**
 * A readiness probe's failure that no wait can end: the machine lacks something (e.g. the Kafka client's
 * native addon, without which no broker ever looks ready). Anything else (refused, not ready yet) is tried
 * again.
 */
export function probeFailureIsFinal(e: unknown): boolean {
  return isLedgerError(e, 'ENVIRONMENT');
}

/**
 * Polls `ready` until it resolves true. Fails fast, naming the log, when the process dies, and with the
 * probe's own error when it is final ({@link probeFailureIsFinal}); fails with the log's path after
 * `timeoutMs`.
 */
export async function waitUntilReady(
  rec: PidRecord,
  what: string,
  ready: () => Promise<boolean>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isOurs(rec)) throw new LedgerError('ENVIRONMENT', `${what} exited during start-up; see ${rec.logFile}${logTail(rec.logFile)}`);
    const answered = await ready().catch((e: unknown) => {
      if (probeFailureIsFinal(e)) throw e;
      return false;
    });
    if (answered) return;
    await sleep(250);
  }
  throw new LedgerError('TIMEOUT', `${what} did not become ready within ${timeoutMs / 1000}s; see ${rec.logFile}`);
}

/**
 * The lowest port the kernel hands out as the local port of an outgoing connection. A service must listen
 * below it: a broker restarted on a port in that range can find it taken by a client's connection to
 * another broker ("Address already in use"; seen in chaos runs after a broker's kill -9).
 */
function ephemeralPortsFrom(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 1024) return low;
  } catch {
    // not Linux: the IANA range starts at 49152
    return 49_152;
  }
  return 32_768;
}

/**
 * What a process that died said last, for the error that reports its death (the log may be gone by the
 * time anyone reads the message, e.g. on a CI machine): its last error lines, else its last lines; at most
 * `max` characters, each line cut to 300.
 */
export function logTail(file: string, max = 1500): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return '';
  }
  const lines = text.split('\n').filter((l) => l.trim() !== '');
  const errors = lines.filter((l) => /\b(ERROR|FATAL|Exception|Error:|Caused by)\b/.test(l));
  const picked = (errors.length ? errors : lines).slice(-8).map((l) => (l.length > 300 ? `${l.slice(0, 300)}…` : l));
  if (!picked.length) return '';
  let out = picked.join('\n  ');
  if (out.length > max) out = `…${out.slice(out.length - max)}`;
  return `; it last said:\n  ${out}`;
}

/**
 * The ports of a private stack of `brokers` Kafka nodes, from one free block so its services can never be
 * handed each other's ports: node i listens on kafkaPort + 2i (clients) and + 2i + 1 (controller), the
 * registry on registryPort and its management interface on registryPort + 10.
 */
export async function freeStackPorts(brokers = 1): Promise<{ kafkaPort: number; registryPort: number }> {
  const kafkaPort = await freePortBlock(2 * brokers + 10);
  return { kafkaPort, registryPort: kafkaPort + 2 * brokers };
}

/**
 * A base port whose block `base..base+span` is free on 127.0.0.1, for services started on free ports (a
 * private stack in the tests, the chaos run's projector): from 20000 up to the ephemeral range, never in it.
 */
export async function freePortBlock(span: number): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen({ host: '127.0.0.1', port, exclusive: true }, () => srv.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * Math.max(1, ephemeralPortsFrom() - 20_000 - span));
    let ok = true;
    for (let p = base; p <= base + span && ok; p++) ok = await free(p);
    if (ok) return base;
  }
  throw new Error('no free port block found');
}
