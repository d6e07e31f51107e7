import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { pinnedVersions } from '../../stack/artifacts.js';
import { brokerList, formatArgs, newClusterId, renderServerProperties, type KafkaClusterSpec } from '../../stack/kafka.js';
import { assertPortFree } from '../../stack/processes.js';
import { stackJvmOptions } from '../../stack/stack.js';

const props = (text: string) => Object.fromEntries(text.trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));

describe('local stack configuration', () => {
  it('runs the JVMs lean for the tests (serial collector, first JIT tier) and server-grade otherwise', () => {
    expect(stackJvmOptions('broker', 'lean')).toEqual(['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1']);
    expect(stackJvmOptions('registry', 'lean')).toEqual(['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1']);
    expect(stackJvmOptions('broker', 'server')).toEqual(['-XX:+UseG1GC', '-XX:MaxGCPauseMillis=20']);
    expect(stackJvmOptions('registry', 'server')).toEqual(['-XX:+UseSerialGC']);
    // The suite sets it before any stack starts (vitest.config.ts); this very test runs under it.
    expect(process.env.PLAN_LEDGER_STACK_JVM).toBe('lean');
  });

  it('pins Kafka 4.x and Apicurio 3.x in stack/pom.xml', () => {
    const v = pinnedVersions();
    expect(v.kafka).toMatch(/^4\.\d+\.\d+$/);
    expect(v.apicurio).toMatch(/^3\.\d+\.\d+$/);
  });

  it('makes cluster ids kafka-storage accepts: 22 URL-safe base64 characters, never a leading dash', () => {
    const ids = Array.from({ length: 5000 }, () => newClusterId());
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('renders a single-node combined KRaft broker', () => {
    const spec: KafkaClusterSpec = {
      clusterId: newClusterId(),
      host: '127.0.0.1',
      nodes: [{ nodeId: 1, port: 9092, controllerPort: 9093, dir: '/tmp/n1' }],
      security: { kind: 'plaintext' },
      overrides: {},
    };
    const p = props(renderServerProperties(spec, spec.nodes[0]!));
    expect(p['process.roles']).toBe('broker,controller');
    expect(p['controller.quorum.voters']).toBe('1@127.0.0.1:9093');
    expect(p['listeners']).toBe('CLIENT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093');
    expect(p['offsets.topic.replication.factor']).toBe('1');
    expect(p['transaction.state.log.min.isr']).toBe('1');
    expect(p['log.cleaner.backoff.ms']).toBe('200');
    expect([p['offsets.topic.num.partitions'], p['transaction.state.log.num.partitions']]).toEqual(['6', '6']);
    expect(p['log.dirs']).toBe('/tmp/n1/data');
    expect(spec.clusterId).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });

  it('renders three brokers beside a dedicated KRaft controller: brokers only on the nodes, one voter of its own', () => {
    const spec: KafkaClusterSpec = {
      clusterId: newClusterId(),
      host: '127.0.0.1',
      nodes: [1, 2, 3].map((n) => ({ nodeId: n, port: 19090 + n * 2, controllerPort: 19091 + n * 2, dir: `/tmp/n${n}` })),
      controller: { nodeId: 4, port: 19093, controllerPort: 19093, dir: '/tmp/c' },
      security: { kind: 'plaintext' },
      overrides: {},
      extraListeners: [{ name: 'CHAOS0', ports: [21000, 21001, 21002], advertisedPorts: [21006, 21007, 21008] }],
    };
    const b2 = props(renderServerProperties(spec, spec.nodes[1]!));
    expect(b2['process.roles']).toBe('broker');
    expect(b2['controller.quorum.voters']).toBe('4@127.0.0.1:19093');
    // No controller listener of its own, yet it must know the controllers' listener and its protocol.
    expect(b2['listeners']).toBe('CLIENT://127.0.0.1:19094,CHAOS0://127.0.0.1:21001');
    expect(b2['controller.listener.names']).toBe('CONTROLLER');
    expect(b2['listener.security.protocol.map']).toBe('CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT,CHAOS0:PLAINTEXT');
    expect(b2['inter.broker.listener.name']).toBe('CLIENT');
    expect(b2['min.insync.replicas']).toBe('2');
    // One voter: no quorum to ride out stalls of.
    expect(b2['controller.quorum.fetch.timeout.ms']).toBeUndefined();
    const c = props(renderServerProperties(spec, spec.controller!));
    expect(c['process.roles']).toBe('controller');
    expect(c['node.id']).toBe('4');
    expect(c['listeners']).toBe('CONTROLLER://127.0.0.1:19093');
    expect(c['advertised.listeners']).toBeUndefined();
    expect(c['inter.broker.listener.name']).toBeUndefined();
    // Topic defaults are the controller's to apply (it creates the topics): the same as the brokers'.
    expect([c['default.replication.factor'], c['min.insync.replicas']]).toEqual(['3', '2']);
    expect(c['log.dirs']).toBe('/tmp/c/data');
    expect(() => renderServerProperties({ ...spec, extraListeners: [], security: { kind: 'sasl_scram', mechanism: 'SCRAM-SHA-512', users: [{ name: 'admin', password: 'x' }], secretsDir: '/tmp/s' } }, spec.nodes[0]!)).toThrow(/plaintext stack only/);
  });

  it('renders extra plaintext listeners, each node advertised at its own other port (a proxy in front)', () => {
    const spec: KafkaClusterSpec = {
      clusterId: newClusterId(),
      host: '127.0.0.1',
      nodes: [1, 2, 3].map((n) => ({ nodeId: n, port: 19090 + n * 2, controllerPort: 19091 + n * 2, dir: `/tmp/n${n}` })),
      security: { kind: 'plaintext' },
      overrides: {},
      extraListeners: [
        { name: 'CHAOS0', ports: [21000, 21001, 21002], advertisedPorts: [21006, 21007, 21008] },
        { name: 'CHAOS1', ports: [21003, 21004, 21005], advertisedPorts: [21009, 21010, 21011] },
      ],
    };
    const p3 = props(renderServerProperties(spec, spec.nodes[2]!));
    // Several nodes on one machine: a quorum that rides out a few seconds' stall instead of re-electing.
    expect(p3['controller.quorum.fetch.timeout.ms']).toBe('6000');
    expect(props(renderServerProperties({ ...spec, nodes: [spec.nodes[0]!], extraListeners: [] }, spec.nodes[0]!))['controller.quorum.fetch.timeout.ms']).toBeUndefined();
    expect(p3['listeners']).toBe('CLIENT://127.0.0.1:19096,CONTROLLER://127.0.0.1:19097,CHAOS0://127.0.0.1:21002,CHAOS1://127.0.0.1:21005');
    expect(p3['advertised.listeners']).toBe('CLIENT://127.0.0.1:19096,CHAOS0://127.0.0.1:21008,CHAOS1://127.0.0.1:21011');
    expect(p3['listener.security.protocol.map']).toBe('CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT,CHAOS0:PLAINTEXT,CHAOS1:PLAINTEXT');
    // Brokers and controllers keep talking on their own listeners.
    expect(p3['inter.broker.listener.name']).toBe('CLIENT');
    expect(p3['controller.listener.names']).toBe('CONTROLLER');
    const bad = (extraListeners: KafkaClusterSpec['extraListeners'], security: KafkaClusterSpec['security'] = { kind: 'plaintext' }) => () =>
      renderServerProperties({ ...spec, security, extraListeners }, spec.nodes[0]!);
    expect(bad([{ name: 'CLIENT', ports: [1, 2, 3], advertisedPorts: [4, 5, 6] }])).toThrow(/neither CLIENT nor CONTROLLER/);
    expect(bad([{ name: 'chaos', ports: [1, 2, 3], advertisedPorts: [4, 5, 6] }])).toThrow(/upper-case/);
    expect(bad([{ name: 'CHAOS0', ports: [1, 2], advertisedPorts: [4, 5, 6] }])).toThrow(/one port and one advertised port per node \(3\)/);
    expect(bad([{ name: 'CHAOS0', ports: [1, 2, 3], advertisedPorts: [4, 5, 6] }], { kind: 'sasl_scram', mechanism: 'SCRAM-SHA-512', users: [{ name: 'admin', password: 'x' }], secretsDir: '/tmp/s' })).toThrow(/only a plaintext stack/);
  });

  it('renders a 3-node cluster with SASL/SCRAM from the same spec', () => {
    const spec: KafkaClusterSpec = {
      clusterId: newClusterId(),
      host: '127.0.0.1',
      nodes: [1, 2, 3].map((n) => ({ nodeId: n, port: 19090 + n * 2, controllerPort: 19091 + n * 2, dir: `/tmp/n${n}` })),
      security: { kind: 'sasl_scram', mechanism: 'SCRAM-SHA-512', users: [{ name: 'admin', password: 's3cret' }, { name: 'app', password: 'pw' }], secretsDir: '/tmp/secrets' },
      overrides: { 'log.retention.ms': '1000' },
    };
    const p2 = props(renderServerProperties(spec, spec.nodes[1]!));
    expect(p2['node.id']).toBe('2');
    expect(p2['controller.quorum.voters']).toBe('1@127.0.0.1:19093,2@127.0.0.1:19095,3@127.0.0.1:19097');
    expect(p2['listener.security.protocol.map']).toBe('CLIENT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT');
    expect(p2['sasl.enabled.mechanisms']).toBe('SCRAM-SHA-512');
    // The inter-broker password is a reference the broker resolves from the secrets folder: no password
    // in server.properties (the format's passwords go through an argument file).
    expect(p2['config.providers.dir.class']).toBe('org.apache.kafka.common.config.provider.DirectoryConfigProvider');
    expect(p2['listener.name.client.scram-sha-512.sasl.jaas.config']).toBe(
      'org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="${dir:/tmp/secrets:admin.password}";',
    );
    expect(p2['sasl.mechanism.controller.protocol']).toBe('PLAIN');
    expect(p2['listener.name.controller.plain.sasl.jaas.config']).toBe(
      'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="${dir:/tmp/secrets:admin.password}" user_admin="${dir:/tmp/secrets:admin.password}";',
    );
    expect(p2['authorizer.class.name']).toBe('org.apache.kafka.metadata.authorizer.StandardAuthorizer');
    expect(p2['super.users']).toBe('User:admin');
    expect(p2['allow.everyone.if.no.acl.found']).toBe('false');
    expect(renderServerProperties(spec, spec.nodes[1]!)).not.toContain('s3cret');
    expect(p2['offsets.topic.replication.factor']).toBe('3');
    expect(p2['min.insync.replicas']).toBe('2');
    expect(p2['log.retention.ms']).toBe('1000');
    expect(formatArgs(spec, '/tmp/n2/server.properties')).toEqual([
      'format', '-t', spec.clusterId, '-c', '/tmp/n2/server.properties', '--ignore-formatted',
      '--add-scram', 'SCRAM-SHA-512=[name=admin,password=s3cret]',
      '--add-scram', 'SCRAM-SHA-512=[name=app,password=pw]',
    ]);
    expect(brokerList(spec)).toEqual(['127.0.0.1:19092', '127.0.0.1:19094', '127.0.0.1:19096']);
  });

  it('renders SASL_SSL on the client listener with TLS, the store password a reference to its file', () => {
    const spec: KafkaClusterSpec = {
      clusterId: newClusterId(),
      host: '127.0.0.1',
      nodes: [{ nodeId: 1, port: 9092, controllerPort: 9093, dir: '/tmp/n1' }],
      security: {
        kind: 'sasl_scram',
        mechanism: 'SCRAM-SHA-512',
        users: [{ name: 'admin', password: 's3cret' }],
        secretsDir: '/tmp/secrets',
        tls: { keystore: '/tmp/secrets/broker.p12', truststore: '/tmp/secrets/truststore.p12', storePassword: 'tls-store' },
      },
      overrides: {},
    };
    const p = props(renderServerProperties(spec, spec.nodes[0]!));
    expect(p['listener.security.protocol.map']).toBe('CLIENT:SASL_SSL,CONTROLLER:SASL_PLAINTEXT');
    expect(p['listener.name.client.ssl.keystore.location']).toBe('/tmp/secrets/broker.p12');
    expect(p['listener.name.client.ssl.keystore.type']).toBe('PKCS12');
    expect(p['listener.name.client.ssl.keystore.password']).toBe('${dir:/tmp/secrets:tls-store.password}');
    expect(p['listener.name.client.ssl.truststore.location']).toBe('/tmp/secrets/truststore.p12');
  });

  it('says which port is taken and how to choose another', async () => {
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as { port: number }).port;
    try {
      await expect(assertPortFree('127.0.0.1', port, 'Kafka broker', 'PLAN_LEDGER_STACK_KAFKA_PORT')).rejects.toMatchObject({
        code: 'ENVIRONMENT',
        message: `port ${port} (Kafka broker) is taken by another process; free it or choose another port with PLAN_LEDGER_STACK_KAFKA_PORT`,
      });
    } finally {
      srv.close();
    }
    await expect(assertPortFree('127.0.0.1', port, 'Kafka broker', 'X')).resolves.toBeUndefined();
  });
});
