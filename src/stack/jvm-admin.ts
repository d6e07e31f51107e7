import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LedgerError } from '../errors.js';
import { packageRoot } from '../package-root.js';
import { cacheDir, ensureArtifacts } from './artifacts.js';
import { javaClientProperties, type StackSecurity } from './credentials.js';
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
 * the admin requests librdkafka's Node binding lacks: ACLs and topic configs. Local-stack tooling only (a
 * second or two of JVM start a call); a real cluster's ACLs come from `stack acls --print`.
 */
function runJvmAdmin(target: JvmAdminTarget, args: string[]): string {
  const java = findJava(17, 'the stack admin tool');
  const artifacts = ensureArtifacts();
  const classes = compiledTool(java.bin, artifacts.kafkaLibs);
  const tmp = mkdtempSync(join(tmpdir(), 'plan-ledger-admin-'));
  try {
    let props = '-';
    if (target.security) {
      props = join(tmp, 'admin.properties');
      writeFileSync(props, `${javaClientProperties(target.security, 'admin', target.dir ?? '').join('\n')}\n`, { mode: 0o600 });
    }
    const r = spawnSync(
      java.bin,
      ['-cp', `${classes}:${artifacts.kafkaLibs}/*`, '-Dlog4j2.level=ERROR', 'LedgerAdmin', target.brokers.join(','), props, ...args],
      { encoding: 'utf8', timeout: 120_000 },
    );
    if (r.status !== 0) {
      const reason = `${r.stderr ?? ''}\n${r.stdout ?? ''}`.split('\n').find((l) => /error|exception/i.test(l)) ?? `exit ${r.status ?? r.signal}`;
      throw new LedgerError('ENVIRONMENT', `the stack admin tool (${args[0]}) failed: ${reason.trim()}`);
    }
    return r.stdout.trim().split('\n').at(-1) ?? '';
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
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
