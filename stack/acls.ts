import { topicNames } from '../src/config.js';
import { auditTopic } from '../src/kafka/topics.js';
import { createAcls, type AclBindingSpec, type JvmAdminTarget } from './jvm-admin.js';

/** The ledger's principals (besides the super user): who runs what. */
export const LEDGER_PRINCIPALS = ['executor', 'projector', 'client', 'auditor'] as const;
export type LedgerPrincipal = (typeof LEDGER_PRINCIPALS)[number];

export type AclOperation = 'READ' | 'WRITE' | 'DESCRIBE' | 'DESCRIBE_CONFIGS';
export type AclResource = 'topic' | 'group' | 'transactional-id';

/** One allow rule: `principal` may do `operations` on the resource(s) `name` (or every name starting with it). */
export interface LedgerAcl {
  readonly principal: LedgerPrincipal;
  readonly resource: AclResource;
  readonly pattern: 'literal' | 'prefixed';
  readonly name: string;
  readonly operations: readonly AclOperation[];
}

/**
 * The single-writer rule as ACLs: the one list the local SASL stack creates and `plan-ledger stack acls
 * --print` prints for a real cluster. Nothing is allowed that is not here (the stack runs with
 * `allow.everyone.if.no.acl.found=false`); `admin` is the super user. READ and WRITE imply DESCRIBE.
 *
 * - executor: reads commands and the plan topics it restores from; the only writer of events (under its
 *   transactional ids `<prefix>.executor.p<N>`), and of the erasure's tombstones (snapshots, archive,
 *   blobs), ledger-audit records, dead letters, cross-partition commands (child → parent), its own
 *   announcement and heartbeat on plan-executors, and plan-streams (the writer, and for an erasure's sweep the reader).
 * - client: writes commands and its large inputs (blobs); reads events (its outcomes), snapshots,
 *   archive, blobs, plan-streams (ledger.stream), ledger-audit and plan-executors (getPlan, waitFor, erase results, who runs); groups `<prefix>.client-*` and
 *   the CLI's readers (`<prefix>.cli*`, `<prefix>.verify-*`).
 * - projector: reads events, commands, blobs, DLQ; writes snapshots, archive, DLQ under
 *   `<prefix>.projector.*` transactional ids; its API's write routes send commands through a client.
 * - auditor: reads every plan topic, writes nothing; groups of the CLI's readers.
 */
export function ledgerAcls(prefix: string): LedgerAcl[] {
  const t = topicNames(prefix);
  const audit = auditTopic(prefix);
  const topic = (principal: LedgerPrincipal, operations: AclOperation[], ...names: string[]): LedgerAcl[] =>
    names.map((name) => ({ principal, resource: 'topic', pattern: 'literal', name, operations }));
  const prefixed = (principal: LedgerPrincipal, resource: AclResource, operations: AclOperation[], ...names: string[]): LedgerAcl[] =>
    names.map((name) => ({ principal, resource, pattern: 'prefixed', name, operations }));
  const clientRights = (principal: LedgerPrincipal): LedgerAcl[] => [
    ...topic(principal, ['WRITE'], t.commands),
    ...topic(principal, ['READ', 'WRITE'], t.blobs),
    // Plan keys: a client writes a new plan's key; readers with the master key decrypt for display.
    ...topic(principal, ['READ', 'WRITE'], t.planKeys),
    // Who runs (`ledger.executors()`, createPlan's tool check, `plan-ledger executors`, GET /api/executors).
    ...topic(principal, ['READ'], t.events, t.snapshots, t.archive, t.streams, audit, t.planExecutors),
    ...prefixed(principal, 'group', ['READ'], `${prefix}.client-`),
  ];
  // The CLI's log readers (show, audit, tail, replay, verify, export): an operator's CLI runs as client.
  const cliReaders = (principal: LedgerPrincipal): LedgerAcl[] => prefixed(principal, 'group', ['READ'], `${prefix}.cli`, `${prefix}.verify-`);
  return [
    // Every reader of the log (restore, audit, tails) is an assigned consumer under the group id
    // `<prefix>.reader`: it never joins the group or commits, but librdkafka looks its coordinator up.
    ...LEDGER_PRINCIPALS.map((principal): LedgerAcl => ({ principal, resource: 'group', pattern: 'literal', name: `${prefix}.reader`, operations: ['READ'] })),
    // Everyone may see the ledger's topics exist and read their configs (topic checks, the commands
    // topic's max.message.bytes): metadata, not records.
    ...LEDGER_PRINCIPALS.flatMap((p) => prefixed(p, 'topic', ['DESCRIBE', 'DESCRIBE_CONFIGS'], `${prefix}.`)),

    ...topic('executor', ['READ', 'WRITE'], t.commands, t.events, t.snapshots, t.archive, t.blobs, t.dlq, t.planKeys, t.planExecutors, t.streams),
    ...topic('executor', ['WRITE'], audit),
    ...prefixed('executor', 'transactional-id', ['WRITE', 'DESCRIBE'], `${prefix}.executor.`),
    // `<prefix>.executors` (the group), and the readers of restore and blob reads.
    ...prefixed('executor', 'group', ['READ'], `${prefix}.executor`, `${prefix}.blob-reader`, `${prefix}.projector.restore`, `${prefix}.projector.archive`),

    ...clientRights('client'),
    ...cliReaders('client'),

    ...topic('projector', ['READ'], t.events, t.dlq),
    ...topic('projector', ['READ', 'WRITE'], t.snapshots, t.archive),
    ...topic('projector', ['WRITE'], t.dlq),
    ...prefixed('projector', 'transactional-id', ['WRITE', 'DESCRIBE'], `${prefix}.projector.`),
    ...prefixed('projector', 'group', ['READ'], `${prefix}.projector`),
    ...clientRights('projector'),

    ...topic('auditor', ['READ'], t.commands, t.events, t.snapshots, t.archive, t.blobs, t.dlq, t.planKeys, t.streams, audit, t.planExecutors),
    ...cliReaders('auditor'),
  ];
}

const RESOURCE_TYPES: Record<AclResource, AclBindingSpec['resourceType']> = { topic: 'TOPIC', group: 'GROUP', 'transactional-id': 'TRANSACTIONAL_ID' };

/** The rules as ACL bindings, one per operation, for `User:<name>` of each principal. */
export function aclEntries(acls: readonly LedgerAcl[], principalName: (p: LedgerPrincipal) => string = (p) => `User:${p}`): AclBindingSpec[] {
  return acls.flatMap((a) =>
    a.operations.map((operation) => ({
      resourceType: RESOURCE_TYPES[a.resource],
      name: a.name,
      pattern: a.pattern === 'prefixed' ? ('PREFIXED' as const) : ('LITERAL' as const),
      principal: principalName(a.principal),
      operation,
    })),
  );
}

/** Creates the ledger's ACLs for `prefix` on the local stack (idempotent), as its admin user. */
export function applyLedgerAcls(target: JvmAdminTarget, prefix: string): number {
  return createAcls(target, aclEntries(ledgerAcls(prefix)));
}

const CLI_OPERATION: Record<AclOperation, string> = { READ: 'Read', WRITE: 'Write', DESCRIBE: 'Describe', DESCRIBE_CONFIGS: 'DescribeConfigs' };
const CLI_RESOURCE: Record<AclResource, string> = { topic: '--topic', group: '--group', 'transactional-id': '--transactional-id' };

/**
 * The same rules as a shell script of `kafka-acls.sh` lines for a real cluster: `$BOOTSTRAP` and
 * `$ADMIN_CONFIG` (a client properties file of a super user) are the script's inputs; principals default
 * to `User:<name>` and can be renamed (`{ executor: 'User:svc-exec' }`).
 */
export function kafkaAclsScript(prefix: string, principals: Partial<Record<LedgerPrincipal, string>> = {}): string {
  const name = (p: LedgerPrincipal) => principals[p] ?? `User:${p}`;
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const lines = ledgerAcls(prefix).map((a) =>
    [
      'kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" --add',
      `--allow-principal ${q(name(a.principal))}`,
      ...a.operations.map((op) => `--operation ${CLI_OPERATION[op]}`),
      `${CLI_RESOURCE[a.resource]} ${q(a.name)}`,
      ...(a.pattern === 'prefixed' ? ['--resource-pattern-type prefixed'] : []),
    ].join(' '),
  );
  return [
    '#!/bin/sh',
    `# plan-ledger ACLs for the topic prefix ${prefix} (generated by "plan-ledger stack acls --print").`,
    '# BOOTSTRAP: the brokers; ADMIN_CONFIG: client properties of a super user. Run on a cluster with',
    '# authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer and',
    '# allow.everyone.if.no.acl.found=false. No principal here may create topics: create the plan topics',
    '# first as a super user (an executor or "plan-ledger stack acls" run once with its credentials).',
    'set -eu',
    ': "${BOOTSTRAP:?set BOOTSTRAP}" "${ADMIN_CONFIG:?set ADMIN_CONFIG}"',
    ...lines,
    '',
  ].join('\n');
}
