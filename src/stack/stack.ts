import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { LedgerError } from '../errors.js';
import { cacheDir, ensureArtifacts, type StackVersions } from './artifacts.js';
import { findJava } from './java.js';
import {
  brokerList,
  formatArgs,
  log4j2Properties,
  newClusterId,
  renderServerProperties,
  type KafkaClusterSpec,
} from './kafka.js';
import { assertPortFree, isOurs, readPid, spawnDetached, stopProcess, waitUntilReady, type PidRecord } from './processes.js';

/** What a running local stack publishes for the CLI, the library and the tests (`<dir>/stack.json`). */
export interface StackInfo {
  readonly brokers: string[];
  readonly registryUrl: string;
  readonly dir: string;
  readonly versions: StackVersions;
  readonly startedAt: string;
}

export interface StackOptions {
  /** Runtime folder (data, logs, pid files, stack.json): PLAN_LEDGER_STACK_DIR or <cache>/stack. */
  readonly dir?: string;
  readonly host?: string;
  /** PLAN_LEDGER_STACK_KAFKA_PORT, default 9092 (controller listener on port + 1). */
  readonly kafkaPort?: number;
  /** PLAN_LEDGER_STACK_REGISTRY_PORT, default 8081 (management interface on port + 10). */
  readonly registryPort?: number;
  readonly log?: (line: string) => void;
}

export interface StackUpResult {
  readonly info: StackInfo;
  readonly alreadyRunning: boolean;
  readonly seconds: number;
}

const KAFKA = 'kafka-1';
const REGISTRY = 'registry';

function envPort(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new LedgerError('VALIDATION', `${name} must be a port number, got "${raw}"`);
  return n;
}

function resolve(opts: StackOptions) {
  const dir = opts.dir ?? process.env.PLAN_LEDGER_STACK_DIR ?? join(cacheDir(), 'stack');
  return {
    dir,
    host: opts.host ?? '127.0.0.1',
    kafkaPort: opts.kafkaPort ?? envPort('PLAN_LEDGER_STACK_KAFKA_PORT', 9092),
    registryPort: opts.registryPort ?? envPort('PLAN_LEDGER_STACK_REGISTRY_PORT', 8081),
    log: opts.log ?? (() => {}),
  };
}

const pidFile = (dir: string, name: string) => join(dir, `${name}.pid`);

function runningProcesses(dir: string): PidRecord[] {
  return [KAFKA, REGISTRY].map((n) => readPid(pidFile(dir, n))).filter((r): r is PidRecord => !!r && isOurs(r));
}

/** The running stack's addresses, or undefined when it is not (fully) up. */
export function readStackInfo(dir?: string): StackInfo | undefined {
  const { dir: d } = resolve({ dir });
  const file = join(d, 'stack.json');
  if (!existsSync(file) || runningProcesses(d).length !== 2) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as StackInfo;
}

async function kafkaAnswers(brokers: string[]): Promise<boolean> {
  const kafka = new Kafka({ brokers, clientId: 'plan-ledger-stack', logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 && cluster.controller !== null;
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

async function registryAnswers(url: string): Promise<boolean> {
  const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(1000) });
  return res.ok;
}

/**
 * Brings up a single-node KRaft broker and Apicurio Registry (in-memory, BACKWARD) as JVM processes.
 * Idempotent: when both already run it returns their addresses with `alreadyRunning: true`. The stack
 * is ephemeral — the registry keeps schemas in memory, so the broker's data is formatted anew on each
 * `up` to keep records and schema ids consistent.
 */
export async function stackUp(opts: StackOptions = {}): Promise<StackUpResult> {
  const t0 = Date.now();
  const o = resolve(opts);
  const existing = readStackInfo(o.dir);
  if (existing) return { info: existing, alreadyRunning: true, seconds: 0 };
  // Half a stack (one process died): stop what is left and start clean.
  await stackDown({ dir: o.dir });

  const brokerJava = findJava(17, 'the Kafka broker');
  const registryJava = findJava(21, 'Apicurio Registry 3.3');
  await assertPortFree(o.host, o.kafkaPort, 'Kafka broker', 'PLAN_LEDGER_STACK_KAFKA_PORT');
  await assertPortFree(o.host, o.kafkaPort + 1, 'Kafka controller', 'PLAN_LEDGER_STACK_KAFKA_PORT');
  await assertPortFree(o.host, o.registryPort, 'schema registry', 'PLAN_LEDGER_STACK_REGISTRY_PORT');
  await assertPortFree(o.host, o.registryPort + 10, 'schema registry management', 'PLAN_LEDGER_STACK_REGISTRY_PORT');

  const artifacts = ensureArtifacts(o.log);
  mkdirSync(o.dir, { recursive: true });

  // Kafka: format fresh storage, then start.
  const nodeDir = join(o.dir, KAFKA);
  rmSync(nodeDir, { recursive: true, force: true });
  mkdirSync(nodeDir, { recursive: true });
  const spec: KafkaClusterSpec = {
    clusterId: newClusterId(),
    host: o.host,
    nodes: [{ nodeId: 1, port: o.kafkaPort, controllerPort: o.kafkaPort + 1, dir: nodeDir }],
    security: { kind: 'plaintext' },
    overrides: {},
  };
  const node = spec.nodes[0]!;
  const props = join(nodeDir, 'server.properties');
  const log4j = join(nodeDir, 'log4j2.properties');
  const kafkaLog = join(nodeDir, 'server.log');
  writeFileSync(props, renderServerProperties(spec, node));
  writeFileSync(log4j, log4j2Properties(kafkaLog));
  const classpath = `${artifacts.kafkaLibs}/*`;
  const jvmCommon = [`-Dlog4j2.configurationFile=${log4j}`, `-Dkafka.logs.dir=${nodeDir}`];
  const format = spawnSync(brokerJava.bin, ['-cp', classpath, ...jvmCommon, 'kafka.tools.StorageTool', ...formatArgs(spec, props)], {
    encoding: 'utf8',
  });
  if (format.status !== 0) {
    writeFileSync(join(nodeDir, 'format.log'), `${format.stdout}\n${format.stderr}`);
    throw new LedgerError('ENVIRONMENT', `formatting Kafka storage failed; see ${join(nodeDir, 'format.log')}`);
  }
  const kafkaLaunch: KafkaLaunch = {
    bin: brokerJava.bin,
    args: ['-Xms256m', '-Xmx1g', '-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20', '-Djava.awt.headless=true', ...jvmCommon, '-cp', classpath, 'kafka.Kafka', props],
    cwd: nodeDir,
    logFile: kafkaLog, // JVM output and log4j2 share one file
    marker: props,
  };
  writeFileSync(join(nodeDir, 'launch.json'), JSON.stringify(kafkaLaunch));
  const kafkaRec = spawnDetached({ name: KAFKA, ...kafkaLaunch, pidFile: pidFile(o.dir, KAFKA) });

  // Registry: Apicurio's fast-jar, in-memory storage, global BACKWARD compatibility.
  const regDir = join(o.dir, REGISTRY);
  mkdirSync(regDir, { recursive: true });
  const regLog = join(regDir, 'registry.log');
  const registryRec = spawnDetached({
    name: REGISTRY,
    bin: registryJava.bin,
    args: [
      '-Xmx512m',
      '-XX:+UseSerialGC',
      `-Dplan-ledger.stack=${regDir}`,
      `-Dquarkus.http.host=${o.host}`,
      `-Dquarkus.http.port=${o.registryPort}`,
      `-Dquarkus.management.host=${o.host}`,
      `-Dquarkus.management.port=${o.registryPort + 10}`,
      '-Dquarkus.http.access-log.enabled=false',
      '-Dapicurio.rules.global.compatibility=BACKWARD',
      '-jar',
      join(artifacts.apicurioHome, 'quarkus-run.jar'),
    ],
    cwd: regDir,
    logFile: regLog,
    pidFile: pidFile(o.dir, REGISTRY),
    marker: `-Dplan-ledger.stack=${regDir}`,
  });

  const info: StackInfo = {
    brokers: brokerList(spec),
    registryUrl: `http://${o.host}:${o.registryPort}/apis/ccompat/v7`,
    dir: o.dir,
    versions: artifacts.versions,
    startedAt: new Date().toISOString(),
  };
  try {
    await Promise.all([
      waitUntilReady(kafkaRec, `Kafka broker on ${info.brokers.join(',')}`, () => kafkaAnswers(info.brokers), 90_000),
      waitUntilReady(registryRec, `schema registry on ${info.registryUrl}`, () => registryAnswers(info.registryUrl), 90_000),
    ]);
  } catch (e) {
    await stackDown({ dir: o.dir });
    throw e;
  }
  writeFileSync(join(o.dir, 'stack.json'), `${JSON.stringify(info, null, 2)}\n`);
  return { info, alreadyRunning: false, seconds: (Date.now() - t0) / 1000 };
}

/** How the broker was started, so it can be started again on the same storage. */
interface KafkaLaunch {
  readonly bin: string;
  readonly args: string[];
  readonly cwd: string;
  readonly logFile: string;
  readonly marker: string;
}

/**
 * Restarts the running stack's broker on the same storage (a broker outage for tests and drills):
 * stops it — SIGTERM, or SIGKILL with `hard` — optionally stays down for `downMs`, starts it again with
 * the same command line and waits until it answers. Topics, records and schema ids survive.
 */
export async function restartBroker(opts: Pick<StackOptions, 'dir'> & { hard?: boolean; downMs?: number } = {}): Promise<void> {
  const { dir } = resolve(opts);
  const info = readStackInfo(dir);
  const file = pidFile(dir, KAFKA);
  const rec = readPid(file);
  if (!info || !rec) throw new LedgerError('NOT_FOUND', `no running local stack in ${dir}`);
  const launch = JSON.parse(readFileSync(join(dir, KAFKA, 'launch.json'), 'utf8')) as KafkaLaunch;
  if (opts.hard) process.kill(rec.pid, 'SIGKILL');
  await stopProcess(rec, file);
  if (opts.downMs) await new Promise((r) => setTimeout(r, opts.downMs));
  const again = spawnDetached({ name: KAFKA, ...launch, pidFile: file });
  await waitUntilReady(again, `Kafka broker on ${info.brokers.join(',')}`, () => kafkaAnswers(info.brokers), 90_000);
}

/** Stops exactly the processes this stack started (by pid file) and waits until they are gone. */
export async function stackDown(opts: Pick<StackOptions, 'dir'> = {}): Promise<{ stopped: string[] }> {
  const { dir } = resolve(opts);
  const stopped: string[] = [];
  // Registry first: it does not depend on the broker, and the broker's shutdown is the slower one.
  for (const name of [REGISTRY, KAFKA]) {
    const file = pidFile(dir, name);
    const rec = readPid(file);
    if (rec && (await stopProcess(rec, file))) stopped.push(`${name} (pid ${rec.pid})`);
  }
  rmSync(join(dir, 'stack.json'), { force: true });
  return { stopped };
}

export interface StackStatus {
  readonly running: boolean;
  readonly info: StackInfo | undefined;
  readonly processes: { name: string; pid: number; alive: boolean; log: string }[];
}

export function stackStatus(opts: Pick<StackOptions, 'dir'> = {}): StackStatus {
  const { dir } = resolve(opts);
  const processes = [KAFKA, REGISTRY]
    .map((n) => readPid(pidFile(dir, n)))
    .filter((r): r is PidRecord => !!r)
    .map((r) => ({ name: r.name, pid: r.pid, alive: isOurs(r), log: r.logFile }));
  const info = readStackInfo(dir);
  return { running: info !== undefined, info, processes };
}
