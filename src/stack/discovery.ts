/**
 * Finding the running local stack: its folder, what it published (`<dir>/stack.json`) and whether its
 * processes are alive. Small on purpose: the config reads it (a source of broker and registry addresses)
 * without importing the module that formats storage and spawns the JVMs (stack.ts).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setting } from '../settings.js';
import { isOurs, readPid, type PidRecord } from './pids.js';

/** Versions pinned in stack/pom.xml; read from there so the pom stays the one truth. */
export interface StackVersions {
  readonly kafka: string;
  readonly apicurio: string;
}

/** Users a SASL stack creates at format time; `admin` is the inter-broker user and the one super user. */
export const STACK_USERS = ['admin', 'executor', 'projector', 'client', 'auditor'] as const;
export type StackUser = (typeof STACK_USERS)[number];
export const STACK_SASL_MECHANISM = 'SCRAM-SHA-512';

export interface StackSecurity {
  readonly protocol: 'SASL_PLAINTEXT' | 'SASL_SSL';
  /** With TLS: the broker's certificate (PEM) for clients to trust (PLAN_LEDGER_SSL_CA_FILE). */
  readonly caFile?: string;
  readonly mechanism: typeof STACK_SASL_MECHANISM;
  /** `<dir>/secrets/<user>.password`, mode 0600: the password alone, no newline (PLAN_LEDGER_SASL_PASSWORD_FILE). */
  readonly passwordFiles: Readonly<Record<StackUser, string>>;
}

/** What a running local stack publishes for the CLI, the library and the tests (`<dir>/stack.json`). */
export interface StackInfo {
  readonly brokers: string[];
  readonly registryUrl: string;
  readonly dir: string;
  readonly versions: StackVersions;
  readonly startedAt: string;
  /** Number of KRaft nodes (each broker and controller); topics on a 3-node stack want RF 3. */
  readonly nodes: number;
  /** Replication factor plan topics should use on this stack (1 on one node, 3 on three). */
  readonly replicationFactor: number;
  /** Present on a `stack up --sasl` stack: how to authenticate, and where each user's password is. */
  readonly security?: StackSecurity;
}

/**
 * The stack's identity, written when its storage is first formatted (`<dir>/cluster.json`): the KRaft
 * cluster id every node's storage carries and the node count. `up` reads it back so a restart starts the
 * same cluster on the same data instead of formatting a new one.
 */
export interface ClusterRecord {
  readonly clusterId: string;
  readonly nodes: number;
  readonly createdAt: string;
  /** Absent on a plaintext stack. */
  readonly security?: 'sasl_scram';
  readonly tls?: boolean;
  /** Present when the brokers share one KRaft controller process of their own ({@link CONTROLLER}) instead of each being a controller too. */
  readonly dedicatedController?: true;
}

export const REGISTRY = 'registry';
export const nodeName = (nodeId: number) => `kafka-${nodeId}`;
/** The dedicated KRaft controller's process name (a stack started with `dedicatedController`). */
export const CONTROLLER = 'kafka-controller';
export const pidFile = (dir: string, name: string) => join(dir, `${name}.pid`);
export const clusterFile = (dir: string) => join(dir, 'cluster.json');

/** The stack's folder: the one given, else PLAN_LEDGER_STACK_DIR, else `<cache>/stack`. */
export function stackDir(dir?: string): string {
  return dir ?? setting('PLAN_LEDGER_STACK_DIR');
}

export function readCluster(dir: string): ClusterRecord | undefined {
  const file = clusterFile(dir);
  if (!existsSync(file)) return undefined;
  return JSON.parse(readFileSync(file, 'utf8')) as ClusterRecord;
}

/** Names of the processes a stack in `dir` runs (or ran): its Kafka nodes, its dedicated controller if any (after the brokers, so they stop while it serves), then the registry. */
export function processNames(dir: string): string[] {
  const nodes = existsSync(dir)
    ? readdirSync(dir)
        .map((f) => /^(kafka-\d+)\.pid$/.exec(f)?.[1])
        .filter((n): n is string => !!n)
    : [];
  const cluster = readCluster(dir);
  const count = cluster?.nodes ?? 0;
  for (let i = 1; i <= count; i++) if (!nodes.includes(nodeName(i))) nodes.push(nodeName(i));
  const controller = cluster?.dedicatedController === true || existsSync(pidFile(dir, CONTROLLER)) ? [CONTROLLER] : [];
  return [...nodes.sort(), ...controller, REGISTRY];
}

export function runningProcesses(dir: string): PidRecord[] {
  return processNames(dir)
    .map((n) => readPid(pidFile(dir, n)))
    .filter((r): r is PidRecord => !!r && isOurs(r));
}

/** The running stack's addresses, or undefined when it is not (fully) up. */
export function readStackInfo(dir?: string): StackInfo | undefined {
  const d = stackDir(dir);
  const file = join(d, 'stack.json');
  if (!existsSync(file)) return undefined;
  const info = JSON.parse(readFileSync(file, 'utf8')) as StackInfo;
  const nodes = info.nodes ?? 1;
  // Every node, the dedicated controller if there is one, and the registry.
  if (runningProcesses(d).length !== processNames(d).length) return undefined;
  return { ...info, nodes, replicationFactor: info.replicationFactor ?? 1 };
}
