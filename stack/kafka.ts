import { randomBytes } from 'node:crypto';
import { LedgerError } from '../src/errors.js';

/**
 * A local KRaft cluster: every node runs broker+controller (combined mode). One node is the default;
 * three nodes with a static voter set, or SASL/SCRAM on the client listener, are the same spec with
 * more entries — {@link renderServerProperties} and {@link formatArgs} derive everything from it.
 */
export interface KafkaClusterSpec {
  readonly clusterId: string;
  readonly host: string;
  readonly nodes: readonly KafkaNodeSpec[];
  /**
   * A KRaft controller of its own (process.roles=controller, the one voter): the `nodes` are then brokers
   * only. As production clusters run (combined mode is for development), a broker that dies is never the
   * controller, so losing one costs the cluster its broker session and a leader election, not a quorum
   * election on top. Plaintext only.
   */
  readonly controller?: KafkaNodeSpec;
  readonly security: KafkaSecurity;
  /** Extra broker properties (tests tune the log cleaner here). */
  readonly overrides: Readonly<Record<string, string>>;
  /** Further plaintext client listeners on every node (see {@link ExtraListener}). */
  readonly extraListeners?: readonly ExtraListener[];
}

/**
 * A further client listener on every node, advertised at another port: a client that bootstraps through
 * it is handed only the advertised addresses, so a TCP proxy listening there carries all its traffic (the
 * chaos run partitions an executor from the brokers so). Node i (0-based) listens on `ports[i]` and is
 * advertised as `advertisedPorts[i]`; the inter-broker and controller listeners stay as they are.
 * Plaintext stacks only.
 */
export interface ExtraListener {
  /** Upper-case listener name, e.g. `CHAOS0` (not CLIENT or CONTROLLER). */
  readonly name: string;
  readonly ports: readonly number[];
  readonly advertisedPorts: readonly number[];
}

/** Throws when an extra listener cannot be rendered for this cluster (name, port count, security). */
export function checkExtraListeners(spec: Pick<KafkaClusterSpec, 'nodes' | 'security' | 'extraListeners'>): void {
  const names = new Set<string>();
  for (const l of spec.extraListeners ?? []) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(l.name) || l.name === 'CLIENT' || l.name === 'CONTROLLER' || names.has(l.name)) {
      throw new LedgerError('VALIDATION', `extra listener name ${JSON.stringify(l.name)} must be upper-case, unique, and neither CLIENT nor CONTROLLER`, { field: 'extraListeners' });
    }
    names.add(l.name);
    if (l.ports.length !== spec.nodes.length || l.advertisedPorts.length !== spec.nodes.length) {
      throw new LedgerError('VALIDATION', `extra listener ${l.name} needs one port and one advertised port per node (${spec.nodes.length})`, { field: 'extraListeners' });
    }
    if (spec.security.kind !== 'plaintext') throw new LedgerError('VALIDATION', `extra listener ${l.name}: only a plaintext stack takes extra listeners`, { field: 'extraListeners' });
  }
}

export interface KafkaNodeSpec {
  readonly nodeId: number;
  readonly port: number;
  readonly controllerPort: number;
  /** Folder for this node's log.dirs, config and log file. */
  readonly dir: string;
}

export type KafkaSecurity =
  | { readonly kind: 'plaintext' }
  | {
      readonly kind: 'sasl_scram';
      readonly mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
      /** The first user is the inter-broker and controller user (and the one super user). */
      readonly users: readonly { readonly name: string; readonly password: string }[];
      /**
       * Folder holding `<user>.password` (the password alone, no newline). The broker reads the
       * inter-broker password from there through Kafka's DirectoryConfigProvider, so no password is
       * written into server.properties or onto a command line.
       */
      readonly secretsDir: string;
      /** TLS on the client listener (SASL_SSL): PKCS12 stores whose password is `<secretsDir>/<storePassword>.password`. */
      readonly tls?: { readonly keystore: string; readonly truststore: string; readonly storePassword: string };
    };

/** The broker property that resolves to the content of `<secretsDir>/<user>.password` when the broker starts. */
export function passwordRef(secretsDir: string, user: string): string {
  return `\${dir:${secretsDir}:${user}.password}`;
}

/**
 * 16 random bytes, URL-safe base64 without padding: what `kafka-storage random-uuid` prints. Like Kafka's
 * own `Uuid.randomUuid`, never one that starts with '-', which `kafka-storage format -t` would read as an
 * option (one id in 64 would fail the format).
 */
export function newClusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * Broker settings that make a small local cluster behave like a test rig (fast cleaner, no delays). The
 * group offsets and transaction state topics get 6 partitions each instead of Kafka's 50: on a machine
 * of two cores a broker killed in a chaos run left its controller moving 153 partitions in one event
 * that took 3.6 s ("controller event queue overloaded"), and every coordinator a new leader must load
 * first. 6 still spreads the coordinators over three brokers.
 */
export const LOCAL_BROKER_DEFAULTS: Readonly<Record<string, string>> = {
  'num.partitions': '1',
  'offsets.topic.num.partitions': '6',
  'transaction.state.log.num.partitions': '6',
  'group.initial.rebalance.delay.ms': '0',
  'log.cleaner.backoff.ms': '200',
  'log.cleaner.dedupe.buffer.size': '16777216',
  'auto.create.topics.enable': 'false',
};

/**
 * A local cluster of several nodes runs each as broker and controller on one machine, sharing its cores
 * with everything under test. With Kafka's 2 s quorum fetch timeout, a follower that waits longer for the
 * controller leader (a stalled JVM, a controller just restarted and catching up) starts an election: in a
 * chaos run on 2 cores the quorum re-elected 15 times in 80 s after the active controller was killed, and
 * with no stable controller no leader moved off the dead broker for 70 s. 6 s rides out such stalls; a
 * dead controller leader is noticed 4 s later than with the default.
 */
export const LOCAL_QUORUM_DEFAULTS: Readonly<Record<string, string>> = {
  'controller.quorum.fetch.timeout.ms': '6000',
};

export function renderServerProperties(spec: KafkaClusterSpec, node: KafkaNodeSpec): string {
  const rf = Math.min(3, spec.nodes.length);
  const isr = Math.max(1, rf - 1);
  const protocol = spec.security.kind === 'plaintext' ? 'PLAINTEXT' : 'SASL_PLAINTEXT';
  const clientProtocol = spec.security.kind === 'sasl_scram' && spec.security.tls ? 'SASL_SSL' : protocol;
  checkExtraListeners(spec);
  if (spec.controller && spec.security.kind !== 'plaintext') throw new LedgerError('VALIDATION', 'a dedicated controller is offered on a plaintext stack only', { field: 'dedicatedController' });
  const index = spec.nodes.findIndex((n) => n.nodeId === node.nodeId);
  const extra = spec.extraListeners ?? [];
  const voters = spec.controller ? [spec.controller] : spec.nodes;
  const isController = spec.controller?.nodeId === node.nodeId;
  const props: Record<string, string> = {
    'process.roles': spec.controller ? (isController ? 'controller' : 'broker') : 'broker,controller',
    'node.id': String(node.nodeId),
    'controller.quorum.voters': voters.map((n) => `${n.nodeId}@${spec.host}:${n.controllerPort}`).join(','),
    listeners: isController
      ? `CONTROLLER://${spec.host}:${node.controllerPort}`
      : [`CLIENT://${spec.host}:${node.port}`, ...(spec.controller ? [] : [`CONTROLLER://${spec.host}:${node.controllerPort}`]), ...extra.map((l) => `${l.name}://${spec.host}:${l.ports[index]}`)].join(','),
    ...(isController ? {} : { 'advertised.listeners': [`CLIENT://${spec.host}:${node.port}`, ...extra.map((l) => `${l.name}://${spec.host}:${l.advertisedPorts[index]}`)].join(',') }),
    'listener.security.protocol.map': [`CLIENT:${clientProtocol}`, `CONTROLLER:${protocol}`, ...extra.map((l) => `${l.name}:PLAINTEXT`)].join(','),
    'controller.listener.names': 'CONTROLLER',
    ...(isController ? {} : { 'inter.broker.listener.name': 'CLIENT' }),
    'log.dirs': `${node.dir}/data`,
    'offsets.topic.replication.factor': String(rf),
    'transaction.state.log.replication.factor': String(rf),
    'transaction.state.log.min.isr': String(isr),
    'share.coordinator.state.topic.replication.factor': String(rf),
    'share.coordinator.state.topic.min.isr': String(isr),
    'default.replication.factor': String(rf),
    'min.insync.replicas': String(isr),
    ...LOCAL_BROKER_DEFAULTS,
    ...(voters.length > 1 ? LOCAL_QUORUM_DEFAULTS : {}),
  };
  if (spec.security.kind === 'sasl_scram') {
    const m = spec.security.mechanism;
    const admin = spec.security.users[0];
    if (!admin) throw new Error('sasl_scram needs at least one user (the first is the inter-broker user)');
    const pw = passwordRef(spec.security.secretsDir, admin.name);
    Object.assign(props, {
      'config.providers': 'dir',
      'config.providers.dir.class': 'org.apache.kafka.common.config.provider.DirectoryConfigProvider',
      'sasl.enabled.mechanisms': m,
      'sasl.mechanism.inter.broker.protocol': m,
      [`listener.name.client.${m.toLowerCase()}.sasl.jaas.config`]: `org.apache.kafka.common.security.scram.ScramLoginModule required username="${admin.name}" password="${pw}";`,
      // KRaft controllers cannot use SCRAM (its credentials live in the metadata log they serve): the
      // controller listener takes PLAIN with the one admin user, so nobody reaches it unauthenticated.
      'listener.name.controller.sasl.enabled.mechanisms': 'PLAIN',
      'sasl.mechanism.controller.protocol': 'PLAIN',
      'listener.name.controller.plain.sasl.jaas.config': `org.apache.kafka.common.security.plain.PlainLoginModule required username="${admin.name}" password="${pw}" user_${admin.name}="${pw}";`,
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      'super.users': `User:${admin.name}`,
      'allow.everyone.if.no.acl.found': 'false',
    });
    const tls = spec.security.tls;
    if (tls) {
      const storePw = passwordRef(spec.security.secretsDir, tls.storePassword);
      Object.assign(props, {
        'listener.name.client.ssl.keystore.type': 'PKCS12',
        'listener.name.client.ssl.keystore.location': tls.keystore,
        'listener.name.client.ssl.keystore.password': storePw,
        'listener.name.client.ssl.key.password': storePw,
        'listener.name.client.ssl.truststore.type': 'PKCS12',
        'listener.name.client.ssl.truststore.location': tls.truststore,
        'listener.name.client.ssl.truststore.password': storePw,
      });
    }
  }
  Object.assign(props, spec.overrides);
  return `${Object.entries(props)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n')}\n`;
}

/**
 * Arguments of `kafka.tools.StorageTool` that format one node's storage (SCRAM users included). They
 * carry passwords: pass them in a java argument file (`java @file`, mode 0600), never on the command line.
 */
export function formatArgs(spec: KafkaClusterSpec, propertiesFile: string): string[] {
  const args = ['format', '-t', spec.clusterId, '-c', propertiesFile, '--ignore-formatted'];
  if (spec.security.kind === 'sasl_scram') {
    for (const u of spec.security.users) {
      args.push('--add-scram', `${spec.security.mechanism}=[name=${u.name},password=${u.password}]`);
    }
  }
  return args;
}

export function log4j2Properties(logFile: string): string {
  return [
    'status = warn',
    'appender.file.type = File',
    'appender.file.name = FILE',
    `appender.file.fileName = ${logFile}`,
    'appender.file.layout.type = PatternLayout',
    'appender.file.layout.pattern = [%d] %p %m (%c)%n',
    'rootLogger.level = INFO',
    'rootLogger.appenderRef.file.ref = FILE',
    'logger.cleaner.name = kafka.log.LogCleaner',
    'logger.cleaner.level = INFO',
    '',
  ].join('\n');
}

export function brokerList(spec: KafkaClusterSpec): string[] {
  return spec.nodes.map((n) => `${spec.host}:${n.port}`);
}
