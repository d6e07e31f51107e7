import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LedgerError } from '../src/errors.js';
import { packageRoot } from '../src/package-root.js';
import { cacheDir, ensureArtifacts } from './artifacts.js';
import type { StackSecurity } from '../src/stack/discovery.js';
import { javaClientProperties } from './credentials.js';
import { findJava } from './java.js';

/** Where the stack's brokers are and, on a SASL stack, how its admin logs in. */
export interface JvmAdminTarget {
  readonly brokers: readonly string[];
  readonly security?: StackSecurity | undefined;
  /** The stack's runtime folder (its secrets), for a SASL stack. */
  readonly dir?: string;
}

/**
 * Runs `stack/LedgerAdmin.java` — Kafka's own Java AdminClient from the stack's Maven-resolved jars — for
 * the admin requests librdkafka's Node binding lacks: ACLs, topic configs, leadership moves. Local-stack tooling only (a
 * second or two of JVM start a call); a real cluster's ACLs come from `stack acls --print`.
 */
function runJvmAdmin(target: JvmAdminTarget, args: string[]): string {
  const tmp = mkdtempSync(join(tmpdir(), 'plan-ledger-admin-'));
  try {
    const [bin, argv] = jvmAdminCommand(target, tmp, args);
    const r = spawnSync(bin, argv, { encoding: 'utf8', timeout: 120_000 });
    if (r.status !== 0) {
      const reason = `${r.stderr ?? ''}\n${r.stdout ?? ''}`.split('\n').find((l) => /error|exception/i.test(l)) ?? `exit ${r.status ?? r.signal}`;
      throw new LedgerError('ENVIRONMENT', `the stack admin tool (${args[0]}) failed: ${reason.trim()}`);
    }
    return r.stdout.trim().split('\n').at(-1) ?? '';
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The java binary and the tool's classpath, found and compiled once per process (per cache folder). */
let resolved: { cache: string; bin: string; classpath: string } | undefined;

/**
 * Finds java, the stack's jars and the compiled tool now, so a later call spends nothing but the JVM's
 * start (the chaos run calls it before its faults begin: finding and compiling block the event loop).
 */
export function prepareJvmAdmin(): { bin: string; classpath: string } {
  if (resolved?.cache !== cacheDir()) {
    const java = findJava(17, 'the stack admin tool');
    const artifacts = ensureArtifacts();
    resolved = { cache: cacheDir(), bin: java.bin, classpath: `${compiledTool(java.bin, artifacts.kafkaLibs)}:${artifacts.kafkaLibs}/*` };
  }
  return resolved;
}

/** The java binary and its arguments for one call of the tool (a SASL stack's admin login written into `tmp`). */
function jvmAdminCommand(target: JvmAdminTarget, tmp: string, args: string[]): [string, string[]] {
  const { bin, classpath } = prepareJvmAdmin();
  let props = '-';
  if (target.security) {
    props = join(tmp, 'admin.properties');
    writeFileSync(props, `${javaClientProperties(target.security, 'admin', target.dir ?? '').join('\n')}\n`, { mode: 0o600 });
  }
  return [bin, ['-cp', classpath, '-Dlog4j2.level=ERROR', 'LedgerAdmin', target.brokers.join(','), props, ...args]];
}

/**
 * `stack/LedgerAdmin.java` compiled once per source version into the cache (javac beside the java found),
 * so a call pays the JVM start and not the compile.
 */
function compiledTool(javaBin: string, kafkaLibs: string): string {
  const source = join(packageRoot(), 'stack', 'LedgerAdmin.java');
  const text = readFileSync(source);
  const dir = join(cacheDir(), 'admin-tool', createHash('sha256').update(text).digest('hex').slice(0, 16));
  if (existsSync(join(dir, 'LedgerAdmin.class'))) return dir;
  const tmp = `${dir}.tmp-${process.pid}`;
  mkdirSync(tmp, { recursive: true });
  const javac = join(javaBin, '..', 'javac');
  const r = spawnSync(existsSync(javac) ? javac : 'javac', ['-nowarn', '-d', tmp, '-cp', `${kafkaLibs}/*`, source], { encoding: 'utf8' });
  if (r.status !== 0) {
    rmSync(tmp, { recursive: true, force: true });
    throw new LedgerError('ENVIRONMENT', `compiling the stack admin tool failed (a JDK's javac is needed): ${(r.stderr || r.error?.message || '').split('\n')[0]}`);
  }
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another process compiled it first
  }
  return dir;
}

export interface AclBindingSpec {
  readonly resourceType: 'TOPIC' | 'GROUP' | 'TRANSACTIONAL_ID';
  readonly name: string;
  readonly pattern: 'LITERAL' | 'PREFIXED';
  readonly principal: string;
  readonly operation: 'READ' | 'WRITE' | 'DESCRIBE' | 'DESCRIBE_CONFIGS';
}

/** Creates ACL bindings (idempotent: an existing binding stays as it is); returns how many were sent. */
export function createAcls(target: JvmAdminTarget, bindings: readonly AclBindingSpec[]): number {
  const tmp = mkdtempSync(join(tmpdir(), 'plan-ledger-acls-'));
  try {
    const file = join(tmp, 'acls.json');
    writeFileSync(file, JSON.stringify(bindings));
    return Number(runJvmAdmin(target, ['create-acls', file]));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** A topic's effective configuration values (all of them, or the names given). */
export function topicConfig(target: JvmAdminTarget, topic: string, names: readonly string[] = []): Record<string, string> {
  return JSON.parse(runJvmAdmin(target, ['describe-configs', topic, ...names])) as Record<string, string>;
}

/** Sets topic configuration values (incrementally: the others stay as they are). */
export function alterTopicConfig(target: JvmAdminTarget, topic: string, values: Readonly<Record<string, string>>): void {
  runJvmAdmin(target, ['alter-configs', topic, ...Object.entries(values).map(([k, v]) => `${k}=${v}`)]);
}

/** A leadership move under way (see {@link moveLeader}). */
export interface LeaderMove {
  /** Resolves with the time (epoch ms) the tool said it asks for the election, and the leader then; rejects when it ends before. */
  readonly moving: Promise<{ at: number; leaderBefore: number }>;
  /** Resolves with what the election's answer said ("elected", or why it failed), or why the tool ended without one. */
  readonly elected: Promise<string>;
  /**
   * Tells the tool which broker was killed (or `null`: none). After a kill, `writable` resolves when the tool
   * first saw another broker lead and the killed one out of the in-sync replicas.
   */
  killed(node: number | null): void;
  readonly writable: Promise<{ at: number; leader: number }>;
  /** Resolves with the leader the tool saw last (-1: none), or rejects with why it failed. */
  readonly done: Promise<number>;
  /** Stops the tool if it still runs. */
  cancel(): void;
}

/**
 * Moves a partition's leadership to `node`, a replica of it: a reassignment that only reorders the replicas
 * makes `node` the preferred one, then a preferred-leader election moves the leader there. Runs without
 * blocking: the chaos run kills a broker while the move is under way (`moving` says when it starts), says
 * which through {@link LeaderMove.killed}, and learns from `writable` when the partition takes writes with
 * acks=all again. The tool is stopped after `timeoutMs`.
 */
export function moveLeader(target: JvmAdminTarget, topic: string, partition: number, node: number, timeoutMs = 240_000): LeaderMove {
  const tmp = mkdtempSync(join(tmpdir(), 'plan-ledger-admin-'));
  const [bin, argv] = jvmAdminCommand(target, tmp, ['move-leader', topic, String(partition), String(node)]);
  const child = spawn(bin, argv, { stdio: ['pipe', 'pipe', 'pipe'] });
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  let out = '';
  let err = '';
  const waiting = new Map<RegExp, (m: RegExpExecArray) => void>();
  const line = (re: RegExp) => new Promise<RegExpExecArray>((resolve) => waiting.set(re, resolve));
  const moving = line(/^moving (-?\d+)$/m).then((m) => ({ at: Date.now(), leaderBefore: Number(m[1]) }));
  const elected = line(/^(elected|election failed: .*)$/m).then((m) => m[1]!);
  const writable = line(/^writable (-?\d+)$/m).then((m) => ({ at: Date.now(), leader: Number(m[1]) }));
  child.stdout.on('data', (c: Buffer) => {
    out += c.toString();
    for (const [re, resolve] of waiting) {
      const m = re.exec(out);
      if (m) {
        waiting.delete(re);
        resolve(m);
      }
    }
  });
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  child.stdin.on('error', () => {});
  const done = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      rmSync(tmp, { recursive: true, force: true });
      const moved = /^moved (-?\d+)$/m.exec(out);
      if (code === 0 && moved) return resolve(Number(moved[1]));
      const reason = `${err}\n${out}`.split('\n').find((l) => /error|exception|failed/i.test(l)) ?? `exit ${code ?? signal}`;
      reject(new LedgerError('ENVIRONMENT', `the stack admin tool (move-leader) failed: ${reason.trim()}`));
    });
  });
  done.catch(() => {});
  const ended = (what: string) => done.then(
    () => Promise.reject(new Error(`the tool ended before it ${what}`)),
    (e: unknown) => Promise.reject(e as Error),
  );
  const settled = <T>(p: Promise<T>, what: string) => {
    const r = Promise.race([p, ended(what)]);
    r.catch(() => {});
    return r;
  };
  return {
    moving: settled(moving, 'moved the leader'),
    elected: Promise.race([elected, done.then(() => 'no answer', (e: unknown) => `no answer: ${(e as Error).message}`)]),
    killed: (n) => void child.stdin.end(n === null ? 'none\n' : `killed ${n}\n`),
    writable: settled(writable, 'saw the partition writable'),
    done,
    cancel: () => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')),
  };
}
