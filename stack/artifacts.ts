import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LedgerError } from '../src/errors.js';
import { packageRoot } from '../src/package-root.js';
import { setting } from '../src/settings.js';
import type { StackVersions } from '../src/stack/discovery.js';

export interface StackArtifacts {
  readonly versions: StackVersions;
  /** Folder of the broker's jars (classpath `<dir>/*`). */
  readonly kafkaLibs: string;
  /** Folder holding Apicurio's `quarkus-run.jar`. */
  readonly apicurioHome: string;
}

/** Where downloaded artifacts live: PLAN_LEDGER_CACHE_DIR or ~/.cache/plan-ledger. */
export function cacheDir(): string {
  return setting('PLAN_LEDGER_CACHE_DIR');
}

export function stackPom(): string {
  return join(packageRoot(), 'stack', 'pom.xml');
}

export function pinnedVersions(pomText = readFileSync(stackPom(), 'utf8')): StackVersions {
  const prop = (name: string): string => {
    const m = new RegExp(`<${name}>([^<]+)</${name}>`).exec(pomText);
    if (!m?.[1]) throw new LedgerError('INTERNAL', `stack/pom.xml has no <${name}>`);
    return m[1].trim();
  };
  return { kafka: prop('kafka.version'), apicurio: prop('apicurio.version') };
}

/**
 * Resolves the broker and the registry by Maven coordinates into the cache (first run downloads;
 * later runs find the completion marker and return at once). Maven runs on a copy of the pom inside
 * the cache so nothing is written next to the package.
 */
export function ensureArtifacts(log: (line: string) => void = () => {}): StackArtifacts {
  const pomText = readFileSync(stackPom(), 'utf8');
  const versions = pinnedVersions(pomText);
  const dir = join(cacheDir(), 'artifacts', `kafka-${versions.kafka}_apicurio-${versions.apicurio}`);
  const artifacts: StackArtifacts = {
    versions,
    kafkaLibs: join(dir, 'kafka', 'libs'),
    apicurioHome: join(dir, 'apicurio'),
  };
  const marker = join(dir, '.complete');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === pomText) return artifacts;

  const mvn = spawnSync('mvn', ['--version'], { encoding: 'utf8' });
  if (mvn.error || mvn.status !== 0) {
    throw new LedgerError('ENVIRONMENT', 'Maven (mvn) is not on PATH: it resolves the local Kafka broker and schema registry; install Maven or point PLAN_LEDGER_BROKERS/PLAN_LEDGER_REGISTRY_URL at running services');
  }
  mkdirSync(dir, { recursive: true });
  copyFileSync(stackPom(), join(dir, 'pom.xml'));
  log(`resolving Kafka ${versions.kafka} and Apicurio Registry ${versions.apicurio} with Maven into ${dir} (first run only)`);
  const run = spawnSync('mvn', ['-B', '-q', '-f', join(dir, 'pom.xml'), 'package', `-Dstack.dir=${dir}`], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.status !== 0) {
    const logFile = join(dir, 'mvn.log');
    writeFileSync(logFile, `${run.stdout}\n${run.stderr}`);
    throw new LedgerError('ENVIRONMENT', `Maven could not resolve the local stack's artifacts; see ${logFile}`);
  }
  if (!existsSync(join(artifacts.apicurioHome, 'quarkus-run.jar'))) {
    throw new LedgerError('ENVIRONMENT', `Apicurio distribution has no quarkus-run.jar under ${artifacts.apicurioHome}`);
  }
  writeFileSync(marker, pomText);
  return artifacts;
}
