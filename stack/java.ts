import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LedgerError } from '../src/errors.js';
import { setting } from '../src/settings.js';

/** A Java runtime found on this machine. */
export interface JavaRuntime {
  readonly bin: string;
  readonly major: number;
}

/** Reads the major version a `java` binary reports (`java -version` prints to stderr). */
export function javaMajorVersion(bin: string): number | undefined {
  const out = spawnSync(bin, ['-version'], { encoding: 'utf8' });
  if (out.error || out.status !== 0) return undefined;
  const m = /version "(\d+)(?:\.(\d+))?/.exec(`${out.stderr}${out.stdout}`);
  if (!m) return undefined;
  const first = Number(m[1]);
  return first === 1 ? Number(m[2]) : first;
}

function candidates(): string[] {
  const list: string[] = [];
  const explicit = setting('PLAN_LEDGER_JAVA_HOME');
  if (explicit) list.push(join(explicit, 'bin', 'java'));
  if (process.env.JAVA_HOME) list.push(join(process.env.JAVA_HOME, 'bin', 'java'));
  list.push('java');
  const jvmDir = '/usr/lib/jvm';
  if (existsSync(jvmDir)) {
    for (const name of readdirSync(jvmDir).sort().reverse()) {
      const bin = join(jvmDir, name, 'bin', 'java');
      if (existsSync(bin)) list.push(bin);
    }
  }
  return [...new Set(list)];
}

/**
 * Finds a Java runtime of at least `minMajor`: PLAN_LEDGER_JAVA_HOME, JAVA_HOME, `java` on PATH, then
 * the JDKs under /usr/lib/jvm. The broker needs 17; Apicurio Registry 3.3 needs 21.
 */
export function findJava(minMajor: number, purpose: string): JavaRuntime {
  const seen: string[] = [];
  for (const bin of candidates()) {
    const major = javaMajorVersion(bin);
    if (major === undefined) continue;
    seen.push(`${bin} (${major})`);
    if (major >= minMajor) return { bin, major };
  }
  const found = seen.length ? `found only ${seen.join(', ')}` : 'found no java at all';
  throw new LedgerError(
    'ENVIRONMENT',
    `${purpose} needs Java ${minMajor} or newer, ${found}; install one or set PLAN_LEDGER_JAVA_HOME`,
  );
}
