import { setTimeout as sleep } from 'node:timers/promises';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { LedgerError } from '../src/errors.js';
import { createKafka, ensurePlanTopics } from '../src/kafka/index.js';
import { confluent } from '../src/kafka/native.js';
import { silentLogger } from '../src/logging.js';
import { applyLedgerAcls } from './acls.js';
import { ensurePasswords, ensureTls, javaClientProperties, secretsDir, stackSasl, stackSecurity } from './credentials.js';
import { ensureArtifacts, type StackArtifacts } from './artifacts.js';
import { findJava } from './java.js';
import {
  brokerList,
  formatArgs,
  log4j2Properties,
  newClusterId,
  checkExtraListeners,
  renderServerProperties,
  type ExtraListener,
  type KafkaClusterSpec,
  type KafkaNodeSpec,
} from './kafka.js';
import { assertPortFree, spawnDetached, stopProcess, waitUntilReady } from './processes.js';
import { clusterFile, CONTROLLER, nodeName, pidFile, processNames, readCluster, readStackInfo, REGISTRY, STACK_SASL_MECHANISM, stackDir, type ClusterRecord, type StackInfo, type StackSecurity } from '../src/stack/discovery.js';
import { isOurs, readPid, type PidRecord } from '../src/stack/pids.js';
import { setting } from '../src/settings.js';

export { readStackInfo, STACK_SASL_MECHANISM, STACK_USERS, type StackInfo, type StackSecurity, type StackUser } from '../src/stack/discovery.js';
export { stackSasl } from './credentials.js';

export interface StackOptions {
  /** Runtime folder (data, logs, pid files, stack.json): PLAN_LEDGER_STACK_DIR or <cache>/stack. */
  readonly dir?: string;
  readonly host?: string;
  /** PLAN_LEDGER_STACK_KAFKA_PORT, default 9092. Node i (0-based) listens on port + 2i, its controller on port + 2i + 1. */
  readonly kafkaPort?: number;
  /** PLAN_LEDGER_STACK_REGISTRY_PORT, default 8081 (management interface on port + 10). */
  readonly registryPort?: number;
  /**
   * Number of KRaft nodes, 1 (default) or 3. Fixed when the storage is first formatted: a stack with
   * data keeps its size until `stack reset`.
   */
  readonly brokers?: number;
  /**
   * SASL/SCRAM-SHA-512 on every listener, the StandardAuthorizer with ACLs (see acls.ts), users
   * {@link STACK_USERS} with generated passwords in `<dir>/secrets`. Fixed when the storage is first
   * formatted, like the node count.
   */
  readonly sasl?: boolean;
  /** With `sasl`: TLS on the client listener (SASL_SSL), a self-signed certificate made with keytool. Fixed at format time. */
  readonly tls?: boolean;
  /**
   * With `brokers: 3`: the three nodes are brokers only and one more process is the KRaft controller (the
   * one voter, on the first node's controller port), as production clusters are laid out; a broker killed
   * is then never the controller. Plaintext only; fixed when the storage is first formatted.
   */
  readonly dedicatedController?: boolean;
  /** Broker settings written into every node's server.properties over the local defaults (e.g. `broker.session.timeout.ms`). */
  readonly brokerSettings?: Readonly<Record<string, string>>;
  /**
   * Further plaintext client listeners on every node, each advertised at another port (a proxy's: see
   * {@link ExtraListener}). Written into the nodes' configs, so a restarted node keeps them.
   */
  readonly extraListeners?: readonly ExtraListener[];
  readonly log?: (line: string) => void;
}

export interface StackUpResult {
  readonly info: StackInfo;
  readonly alreadyRunning: boolean;
  /** True when existing storage was reused (topics, records and schemas from earlier runs are there). */
  readonly reused: boolean;
  readonly seconds: number;
}

function resolve(opts: StackOptions) {
  return {
    dir: stackDir(opts.dir),
    host: opts.host ?? '127.0.0.1',
    kafkaPort: opts.kafkaPort ?? setting('PLAN_LEDGER_STACK_KAFKA_PORT'),
    registryPort: opts.registryPort ?? setting('PLAN_LEDGER_STACK_REGISTRY_PORT'),
    log: opts.log ?? (() => {}),
  };
}

/** How the stack's admin logs in (and trusts its certificate); nothing on a plaintext stack. */
interface AdminAuth {
  readonly sasl?: { mechanism: 'scram-sha-512'; username: string; password: string };
  readonly sslCaFile?: string;
}

function adminAuth(security: StackSecurity | undefined): AdminAuth {
  if (!security) return {};
  return { sasl: stackSasl(security, 'admin') as AdminAuth['sasl'], ...(security.caFile ? { sslCaFile: security.caFile } : {}) };
}

/** A ledger config for the stack's own admin requests (no registry is asked). */
function adminConfig(brokers: readonly string[], auth: AdminAuth, extra: Partial<Parameters<typeof loadConfig>[0]> = {}) {
  return loadConfig({ brokers: [...brokers], registryUrl: 'http://127.0.0.1:1/unused', ...(auth.sasl ? { sasl: auth.sasl } : {}), ...(auth.sslCaFile ? { sslCaFile: auth.sslCaFile } : {}), ...extra }, {});
}

/** True when the cluster reachable through `brokers` has `expectNodes` brokers (and `nodeId` among them). */
async function kafkaAnswers(brokers: string[], expectNodes: number, nodeId?: number, auth: AdminAuth = {}): Promise<boolean> {
  const kafka = createKafka(adminConfig(brokers, auth), silentLogger(), 'stack');
  const admin = kafka.admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    if (cluster.brokers.length < expectNodes) return false;
    return nodeId === undefined || cluster.brokers.some((b) => b.nodeId === nodeId);
  } finally {
    await admin.disconnect().catch(() => {});
    await kafka.close();
  }
}

/**
 * The registry answers and its KafkaSQL storage has replayed the journal: Apicurio reports ready on
 * its management health endpoint only then, and a schema registered before would get a fresh id.
 */
async function registryAnswers(url: string, healthUrl: string): Promise<boolean> {
  const health = await fetch(healthUrl, { signal: AbortSignal.timeout(2000) });
  if (!health.ok) return false;
  const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2000) });
  return res.ok;
}

/** How a process was started, so it can be started again on the same storage (`<dir>/<name>/launch.json`). */
interface Launch {
  readonly bin: string;
  readonly args: string[];
  readonly cwd: string;
  readonly logFile: string;
  readonly marker: string;
}

const launchFile = (dir: string, name: string) => join(dir, name, 'launch.json');

function spawnLaunch(dir: string, name: string, launch: Launch): PidRecord {
  writeFileSync(launchFile(dir, name), JSON.stringify(launch));
  return spawnDetached({ name, ...launch, pidFile: pidFile(dir, name) });
}

function nodeSpecs(dir: string, host: string, kafkaPort: number, count: number): KafkaNodeSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    nodeId: i + 1,
    port: kafkaPort + 2 * i,
    controllerPort: kafkaPort + 2 * i + 1,
    dir: join(dir, nodeName(i + 1)),
  }));
}

/** A node's storage is formatted when its log dir holds meta.properties (written by the StorageTool). */
const isFormatted = (node: KafkaNodeSpec) => existsSync(join(node.dir, 'data', 'meta.properties'));

/**
 * Writes a node's config, formats its storage only when it holds none (the cluster id comes from
 * cluster.json, so a re-formatted node joins the same cluster), and returns how to start it.
 */
function prepareNode(spec: KafkaClusterSpec, node: KafkaNodeSpec, java: string, artifacts: StackArtifacts): Launch {
  mkdirSync(node.dir, { recursive: true });
  const props = join(node.dir, 'server.properties');
  const log4j = join(node.dir, 'log4j2.properties');
  const logFile = join(node.dir, 'server.log');
  writeFileSync(props, renderServerProperties(spec, node));
  writeFileSync(log4j, log4j2Properties(logFile));
  const classpath = `${artifacts.kafkaLibs}/*`;
  const jvmCommon = [`-Dlog4j2.configurationFile=${log4j}`, `-Dkafka.logs.dir=${node.dir}`];
  if (!isFormatted(node)) {
    // SCRAM users are created by the format, with their passwords: those go into a java argument file
    // (mode 0600, removed right after), so `ps` shows `@format.args`, never a password.
    const argFile = join(node.dir, 'format.args');
    writeFileSync(argFile, `${['kafka.tools.StorageTool', ...formatArgs(spec, props)].join('\n')}\n`, { mode: 0o600 });
    let format;
    try {
      format = spawnSync(java, ['-cp', classpath, ...jvmCommon, `@${argFile}`], { encoding: 'utf8' });
    } finally {
      rmSync(argFile, { force: true });
    }
    if (format.status !== 0) {
      writeFileSync(join(node.dir, 'format.log'), `${format.stdout}\n${format.stderr}`);
      throw new LedgerError('ENVIRONMENT', `formatting Kafka storage failed; see ${join(node.dir, 'format.log')}`);
    }
  }
  // One node gets the heap it had as the whole stack; three share a 2-core, few-GiB machine.
  const heap = spec.nodes.length === 1 ? ['-Xms256m', '-Xmx1g'] : ['-Xms128m', '-Xmx512m'];
  const jvm = stackJvmOptions('broker', setting('PLAN_LEDGER_STACK_JVM'));
  return {
    bin: java,
    args: [...heap, ...jvm, '-Djava.awt.headless=true', ...jvmCommon, '-cp', classpath, 'kafka.Kafka', props],
    cwd: node.dir,
    logFile, // JVM output and log4j2 share one file
    marker: props,
  };
}

/**
 * The collector and JIT of a stack JVM. `server`: a broker on G1 with short pauses, the registry on the serial
 * collector (one small heap), both with the optimizing JIT; this is what a benchmark measures. `lean` (the
 * tests): the serial collector and the first JIT tier only, which starts a broker in about half the CPU and
 * serves a test suite in half of it (14 s of broker CPU instead of 27 s for the same three int files).
 */
export function stackJvmOptions(role: 'broker' | 'registry', profile: string): string[] {
  if (profile === 'lean') return ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];
  return role === 'broker' ? ['-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20'] : ['-XX:+UseSerialGC'];
}

/**
 * Apicurio's fast-jar with KafkaSQL storage: every registry change is a record in the never-expiring
 * journal topic `_plan-ledger-registry-journal` of the same cluster, replayed in order on start, so
 * subjects, versions and the content ids events carry come back identical after any restart. Its topics
 * take the brokers' default replication (3 with min.insync.replicas 2 on a 3-node stack).
 */
function registryLaunch(o: ReturnType<typeof resolve>, java: string, artifacts: StackArtifacts, brokers: string[], security?: StackSecurity): Launch {
  const regDir = join(o.dir, REGISTRY);
  mkdirSync(regDir, { recursive: true });
  // On a SASL stack the registry's Kafka clients (journal producer, consumer, admin) log in as the admin
  // user. Quarkus reads `<cwd>/config/application.properties`: the credentials go there (mode 0600),
  // not onto the java command line.
  const configDir = join(regDir, 'config');
  rmSync(join(configDir, 'application.properties'), { force: true });
  if (security) {
    mkdirSync(configDir, { recursive: true, mode: 0o700 });
    const client = javaClientProperties(security, 'admin', o.dir);
    const lines = ['producer', 'consumer', 'admin'].flatMap((c) => client.map((l) => `apicurio.kafkasql.${c}.${l}`));
    writeFileSync(join(configDir, 'application.properties'), `${lines.join('\n')}\n`, { mode: 0o600 });
  }
  return {
    bin: java,
    args: [
      '-Xmx512m',
      ...stackJvmOptions('registry', setting('PLAN_LEDGER_STACK_JVM')),
      `-Dplan-ledger.stack=${regDir}`,
      `-Djava.io.tmpdir=${regDir}`,
      `-Dquarkus.http.host=${o.host}`,
      `-Dquarkus.http.port=${o.registryPort}`,
      `-Dquarkus.management.host=${o.host}`,
      `-Dquarkus.management.port=${o.registryPort + 10}`,
      '-Dquarkus.http.access-log.enabled=false',
      '-Dapicurio.rules.global.compatibility=BACKWARD',
      '-Dapicurio.storage.kind=kafkasql',
      // Each start-up poll of the journal and snapshot topics waits this long when they are quiet (default 5 s).
      '-Dapicurio.kafkasql.consumer.poll.timeout=500',
      `-Dapicurio.kafkasql.bootstrap.servers=${brokers.join(',')}`,
      '-Dapicurio.kafkasql.topic=_plan-ledger-registry-journal',
      '-Dapicurio.kafkasql.snapshots.topic=_plan-ledger-registry-snapshots',
      '-Dapicurio.events.kafka.topic=_plan-ledger-registry-events',
      `-Dapicurio.storage.snapshot.location=${regDir}`,
      `-Dapicurio.import.work-dir=${regDir}`,
      '-jar',
      join(artifacts.apicurioHome, 'quarkus-run.jar'),
    ],
    cwd: regDir,
    logFile: join(regDir, 'registry.log'),
    marker: `-Dplan-ledger.stack=${regDir}`,
  };
}

/**
 * Brings up a KRaft cluster (one node, or three with `brokers: 3`) and Apicurio Registry (KafkaSQL
 * storage, BACKWARD) as JVM processes. Durable: broker data lives in the stack dir, the registry's
 * schemas in a topic of the same cluster, and `up` reuses both — storage is formatted only when a
 * node has none. Idempotent: when everything already runs it returns the addresses with
 * `alreadyRunning: true`. {@link stackReset} is the one way to wipe the data.
 */
export async function stackUp(opts: StackOptions = {}): Promise<StackUpResult> {
  const t0 = Date.now();
  const o = resolve(opts);
  const existing = readStackInfo(o.dir);
  const record = readCluster(o.dir);
  const count = opts.brokers ?? record?.nodes ?? 1;
  if (count !== 1 && count !== 3) throw new LedgerError('VALIDATION', `--brokers must be 1 or 3, got ${count}`, { field: 'brokers' });
  if (record && record.nodes !== count) {
    throw new LedgerError(
      'CONFLICT',
      `the stack in ${o.dir} holds data of a ${record.nodes}-broker cluster; start it with --brokers ${record.nodes}, or wipe it with "plan-ledger stack reset --yes"`,
    );
  }
  const sasl = opts.sasl ?? record?.security === 'sasl_scram';
  const tls = opts.tls ?? record?.tls === true;
  if (tls && !sasl) throw new LedgerError('VALIDATION', '--tls needs --sasl (TLS is offered on the SASL stack only)', { field: 'tls' });
  if (record && record.security === 'sasl_scram' && (record.tls === true) !== tls) {
    throw new LedgerError('CONFLICT', `the stack in ${o.dir} holds data of a SASL cluster ${record.tls ? 'with' : 'without'} TLS; start it ${record.tls ? 'with' : 'without'} --tls, or wipe it with "plan-ledger stack reset --yes"`);
  }
  if (record && (record.security === 'sasl_scram') !== sasl) {
    throw new LedgerError(
      'CONFLICT',
      `the stack in ${o.dir} holds data of a ${record.security === 'sasl_scram' ? 'SASL' : 'plaintext'} cluster; start it ${record.security === 'sasl_scram' ? 'with' : 'without'} --sasl, or wipe it with "plan-ledger stack reset --yes"`,
    );
  }
  const dedicated = opts.dedicatedController ?? record?.dedicatedController === true;
  if (dedicated && (count !== 3 || sasl)) throw new LedgerError('VALIDATION', 'a dedicated controller goes with a plaintext 3-broker stack', { field: 'dedicatedController' });
  if (record && (record.dedicatedController === true) !== dedicated) {
    throw new LedgerError('CONFLICT', `the stack in ${o.dir} holds data of a cluster ${record.dedicatedController ? 'with' : 'without'} a dedicated controller; start it so, or wipe it with "plan-ledger stack reset --yes"`);
  }
  if (existing) return { info: existing, alreadyRunning: true, reused: true, seconds: 0 };
  // The readiness probes are Kafka clients: without the native addon say so now, in one line, rather
  // than start the JVMs and wait for a readiness that cannot come.
  confluent();
  // Half a stack (a process died): stop what is left, then start everything on the same storage.
  await stackDown({ dir: o.dir });

  const brokerJava = findJava(17, 'the Kafka broker');
  const registryJava = findJava(21, 'Apicurio Registry 3.3');
  const nodes = nodeSpecs(o.dir, o.host, o.kafkaPort, count);
  // The dedicated controller listens where the first node's controller listener would (brokers alone have none).
  const controller = dedicated ? { nodeId: count + 1, port: o.kafkaPort + 1, controllerPort: o.kafkaPort + 1, dir: join(o.dir, CONTROLLER) } : undefined;
  for (const n of nodes) {
    await assertPortFree(o.host, n.port, 'Kafka broker', 'PLAN_LEDGER_STACK_KAFKA_PORT');
    if (!controller) await assertPortFree(o.host, n.controllerPort, 'Kafka controller', 'PLAN_LEDGER_STACK_KAFKA_PORT');
  }
  if (controller) await assertPortFree(o.host, controller.controllerPort, 'Kafka controller', 'PLAN_LEDGER_STACK_KAFKA_PORT');
  await assertPortFree(o.host, o.registryPort, 'schema registry', 'PLAN_LEDGER_STACK_REGISTRY_PORT');
  await assertPortFree(o.host, o.registryPort + 10, 'schema registry management', 'PLAN_LEDGER_STACK_REGISTRY_PORT');

  const artifacts = ensureArtifacts(o.log);
  mkdirSync(o.dir, { recursive: true });
  const reused = !!record && nodes.every(isFormatted) && (!controller || isFormatted(controller));
  if (!record) {
    // No cluster record: a new stack, or the storage of an older, ephemeral one whose schemas are gone
    // with its in-memory registry (its events could not be decoded). Either way, start from nothing.
    for (const name of processNames(o.dir)) rmSync(join(o.dir, name), { recursive: true, force: true });
    for (const n of [...nodes, ...(controller ? [controller] : [])]) rmSync(n.dir, { recursive: true, force: true });
  }
  const cluster: ClusterRecord = record ?? {
    clusterId: newClusterId(),
    nodes: count,
    createdAt: new Date().toISOString(),
    ...(sasl ? { security: 'sasl_scram' as const } : {}),
    ...(tls ? { tls: true } : {}),
    ...(dedicated ? { dedicatedController: true as const } : {}),
  };
  if (!record) writeFileSync(clusterFile(o.dir), `${JSON.stringify(cluster, null, 2)}\n`);
  const users = sasl ? ensurePasswords(o.dir) : [];
  const tlsFiles = tls ? ensureTls(o.dir, brokerJava.bin, o.host) : undefined;
  const security = sasl ? stackSecurity(o.dir, tls) : undefined;
  const spec: KafkaClusterSpec = {
    clusterId: cluster.clusterId,
    host: o.host,
    nodes,
    security: sasl
      ? {
          kind: 'sasl_scram',
          mechanism: STACK_SASL_MECHANISM,
          users,
          secretsDir: secretsDir(o.dir),
          ...(tlsFiles ? { tls: { keystore: tlsFiles.keystore, truststore: tlsFiles.truststore, storePassword: tlsFiles.storePassword } } : {}),
        }
      : { kind: 'plaintext' },
    overrides: opts.brokerSettings ?? {},
    ...(controller ? { controller } : {}),
    ...(opts.extraListeners?.length ? { extraListeners: opts.extraListeners } : {}),
  };
  checkExtraListeners(spec);
  for (const l of spec.extraListeners ?? []) for (const port of l.ports) await assertPortFree(o.host, port, `Kafka listener ${l.name}`, 'extraListeners');
  const auth = adminAuth(security);
  const brokers = brokerList(spec);
  const rf = Math.min(3, count);

  const kafkaRecs = [
    ...(controller ? [spawnLaunch(o.dir, CONTROLLER, prepareNode(spec, controller, brokerJava.bin, artifacts))] : []),
    ...nodes.map((n) => spawnLaunch(o.dir, nodeName(n.nodeId), prepareNode(spec, n, brokerJava.bin, artifacts))),
  ];
  const kafkaReady = () =>
    Promise.all(kafkaRecs.map((rec) => waitUntilReady(rec, `Kafka broker ${rec.name} on ${brokers.join(',')}`, () => kafkaAnswers(brokers, count, undefined, auth), 120_000)));
  // One node: the registry starts beside the broker (its Kafka client waits for it), so `up` costs the
  // slower of the two start-ups, not their sum. Three nodes: the registry creates its journal topic with
  // replication factor 3, which needs every broker registered, so it starts once they all answer. SASL:
  // a login before the broker has loaded its SCRAM users from the metadata log is refused for good (the
  // registry exits on it), so it starts once the admin user's login has worked.
  let early: Promise<unknown> = Promise.resolve();
  if (count > 1 || sasl) {
    try {
      await kafkaReady();
    } catch (e) {
      await stackDown({ dir: o.dir });
      throw e;
    }
  } else early = kafkaReady();
  let brokerUp = false;
  early = early.then(() => void (brokerUp = true));
  const startRegistry = () => spawnLaunch(o.dir, REGISTRY, registryLaunch(o, registryJava.bin, artifacts, brokers, security));
  const registryRec = startRegistry();

  const info: StackInfo = {
    brokers,
    registryUrl: `http://${o.host}:${o.registryPort}/apis/ccompat/v7`,
    dir: o.dir,
    versions: artifacts.versions,
    startedAt: new Date().toISOString(),
    nodes: count,
    replicationFactor: rf,
    ...(security ? { security } : {}),
  };
  const healthUrl = `http://${o.host}:${o.registryPort + 10}/health/ready`;
  const registryReady = (rec: PidRecord) => waitUntilReady(rec, `schema registry on ${info.registryUrl}`, () => registryAnswers(info.registryUrl, healthUrl), 150_000);
  try {
    await Promise.all([
      early,
      // The registry gives up when the broker has not answered within about a minute, which a broker
      // replaying many partitions after an unclean stop can take: then it starts once more, after the broker.
      // Any other exit during start-up (once seen in CI, its log gone with the machine) also gets one more
      // start, saying what the first one printed last; a second exit fails `up` with that process's words.
      registryReady(registryRec).catch(async (e: unknown) => {
        if (!(e instanceof LedgerError) || e.code !== 'ENVIRONMENT' || isOurs(registryRec)) throw e;
        o.log(brokerUp ? `the registry exited during start-up; starting it once more. ${e.message}` : 'the registry stopped before the broker answered; starting it again once the broker is ready');
        await early;
        await registryReady(startRegistry());
      }),
    ]);
    if (security) await provision(info, security, DEFAULT_PREFIX, DEFAULT_PARTITIONS);
  } catch (e) {
    await stackDown({ dir: o.dir });
    throw e;
  }
  writeFileSync(join(o.dir, 'stack.json'), `${JSON.stringify(info, null, 2)}\n`);
  return { info, alreadyRunning: false, reused, seconds: (Date.now() - t0) / 1000 };
}

const DEFAULT_PREFIX = 'plan-ledger';
const DEFAULT_PARTITIONS = 6;

/** As the admin user: the plan topics of `prefix` (components may not create topics) and the ledger's ACLs for it. */
async function provision(info: StackInfo, security: StackSecurity, prefix: string, partitions: number): Promise<{ topics: number; acls: number }> {
  const auth = adminAuth(security);
  const config = adminConfig(info.brokers, auth, { topicPrefix: prefix, partitions, replicationFactor: info.replicationFactor });
  const kafka = createKafka(config, silentLogger(), 'stack');
  const admin = kafka.admin();
  await admin.connect();
  try {
    await ensurePlanTopics(admin, config);
    const acls = applyLedgerAcls({ brokers: info.brokers, security, dir: info.dir }, prefix);
    return { topics: (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}.`)).length, acls };
  } finally {
    await admin.disconnect().catch(() => {});
    await kafka.close();
  }
}

/**
 * Makes a topic prefix usable on the running SASL stack: creates its plan topics as the admin user and
 * the ACLs of {@link ledgerAcls} for it. `stack up --sasl` does this for the default prefix
 * (`plan-ledger`, 6 partitions); other prefixes (tests, a second ledger) call this or `stack acls --prefix`.
 */
export async function provisionPrefix(opts: Pick<StackOptions, 'dir'> & { prefix: string; partitions?: number }): Promise<{ topics: number; acls: number }> {
  const { dir } = resolve(opts);
  const info = requireRunning(dir);
  if (!info.security) throw new LedgerError('VALIDATION', `the stack in ${dir} runs without --sasl: it enforces no ACLs`, { field: 'sasl' });
  return provision(info, info.security, opts.prefix, opts.partitions ?? DEFAULT_PARTITIONS);
}

function requireRunning(dir: string): StackInfo {
  const info = readStackInfo(dir);
  if (!info) throw new LedgerError('NOT_FOUND', `no running local stack in ${dir}`);
  return info;
}

/**
 * Stops one Kafka node of the running stack (SIGTERM, or SIGKILL with `hard`) and waits until it is
 * gone. The stack's other processes keep running; {@link startBroker} brings the node back.
 */
export async function stopBroker(opts: Pick<StackOptions, 'dir'> & { node?: number; hard?: boolean } = {}): Promise<void> {
  const { dir } = resolve(opts);
  requireRunning(dir);
  const name = nodeName(opts.node ?? 1);
  const file = pidFile(dir, name);
  const rec = readPid(file);
  if (!rec) throw new LedgerError('NOT_FOUND', `no ${name} in the stack in ${dir}`);
  if (opts.hard && isOurs(rec)) process.kill(rec.pid, 'SIGKILL');
  await stopProcess(rec, file);
}

/** Starts a stopped Kafka node again with its recorded command line and waits until it is back in the cluster. */
export async function startBroker(opts: Pick<StackOptions, 'dir'> & { node?: number } = {}): Promise<void> {
  const { dir } = resolve(opts);
  const nodeId = opts.node ?? 1;
  const name = nodeName(nodeId);
  const info = JSON.parse(readFileSync(join(dir, 'stack.json'), 'utf8')) as StackInfo;
  const launch = JSON.parse(readFileSync(launchFile(dir, name), 'utf8')) as Launch;
  const own = info.brokers[nodeId - 1]!;
  // A node restarted right after a kill -9 once exited during start-up: its port, inside the ephemeral range,
  // was taken by a client's connection, or its log directory was still locked by the dying process. Both
  // are mended where they arise (freePortBlock, stopProcess), so one start is enough.
  await waitUntilReady(spawnLaunch(dir, name, launch), `Kafka broker ${name} on ${own}`, () => kafkaAnswers([own], info.nodes ?? 1, nodeId, adminAuth(info.security)), 120_000);
}

/**
 * Restarts one broker of the running stack on the same storage (a broker outage for tests and drills):
 * stops it — SIGTERM, or SIGKILL with `hard` — optionally stays down for `downMs`, starts it again with
 * the same command line and waits until it answers. Topics, records and schema ids survive.
 */
export async function restartBroker(opts: Pick<StackOptions, 'dir'> & { node?: number; hard?: boolean; downMs?: number } = {}): Promise<void> {
  await stopBroker(opts);
  if (opts.downMs) await sleep(opts.downMs);
  await startBroker(opts);
}

/**
 * Restarts the registry (SIGKILL with `hard`) and waits until it has replayed its journal and answers;
 * schema ids are the same afterwards.
 */
export async function restartRegistry(opts: Pick<StackOptions, 'dir'> & { hard?: boolean } = {}): Promise<void> {
  const { dir } = resolve(opts);
  const info = requireRunning(dir);
  const file = pidFile(dir, REGISTRY);
  const rec = readPid(file)!;
  if (opts.hard && isOurs(rec)) process.kill(rec.pid, 'SIGKILL');
  await stopProcess(rec, file);
  const again = spawnLaunch(dir, REGISTRY, JSON.parse(readFileSync(launchFile(dir, REGISTRY), 'utf8')) as Launch);
  const url = new URL(info.registryUrl);
  const healthUrl = `http://${url.hostname}:${Number(url.port) + 10}/health/ready`;
  await waitUntilReady(again, `schema registry on ${info.registryUrl}`, () => registryAnswers(info.registryUrl, healthUrl), 150_000);
}

/** Stops exactly the processes this stack started (by pid file) and waits until they are gone. Data stays. */
export async function stackDown(opts: Pick<StackOptions, 'dir'> = {}): Promise<{ stopped: string[] }> {
  const { dir } = resolve(opts);
  const stopped: string[] = [];
  // Registry first: it writes to the brokers, and their shutdown is the slower one.
  for (const name of [REGISTRY, ...processNames(dir).filter((n) => n !== REGISTRY)]) {
    const file = pidFile(dir, name);
    const rec = readPid(file);
    if (rec && (await stopProcess(rec, file))) stopped.push(`${name} (pid ${rec.pid})`);
  }
  rmSync(join(dir, 'stack.json'), { force: true });
  return { stopped };
}

/**
 * Wipes the stack: stops it, then deletes its broker data, the registry's folder and the cluster
 * record, so the next `up` formats new storage. Every plan, event and schema on the stack is gone;
 * the caller must pass `confirm: true` (the CLI's `--yes`).
 */
export async function stackReset(opts: Pick<StackOptions, 'dir'> & { confirm: boolean }): Promise<{ stopped: string[]; removed: string[] }> {
  if (opts.confirm !== true) {
    throw new LedgerError('VALIDATION', 'stack reset deletes every plan, event and schema of the local stack; pass --yes to confirm', { field: 'yes' });
  }
  const { dir } = resolve(opts);
  const names = processNames(dir);
  const { stopped } = await stackDown({ dir });
  const removed: string[] = [];
  for (const name of names) {
    const path = join(dir, name);
    if (existsSync(path)) {
      rmSync(path, { recursive: true, force: true });
      removed.push(path);
    }
  }
  if (existsSync(clusterFile(dir))) {
    rmSync(clusterFile(dir), { force: true });
    removed.push(clusterFile(dir));
  }
  // A SASL stack's passwords and certificates belong to the storage they were formatted with.
  if (existsSync(secretsDir(dir))) {
    rmSync(secretsDir(dir), { recursive: true, force: true });
    removed.push(secretsDir(dir));
  }
  return { stopped, removed };
}

export interface StackStatus {
  readonly running: boolean;
  readonly info: StackInfo | undefined;
  readonly processes: { name: string; pid: number; alive: boolean; log: string }[];
  /** Whether the stack dir holds formatted storage that the next `up` reuses. */
  readonly hasData: boolean;
}

export function stackStatus(opts: Pick<StackOptions, 'dir'> = {}): StackStatus {
  const { dir } = resolve(opts);
  const processes = processNames(dir)
    .map((n) => readPid(pidFile(dir, n)))
    .filter((r): r is PidRecord => !!r)
    .map((r) => ({ name: r.name, pid: r.pid, alive: isOurs(r), log: r.logFile }));
  const info = readStackInfo(dir);
  return { running: info !== undefined, info, processes, hasData: readCluster(dir) !== undefined };
}
