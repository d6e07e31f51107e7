// The ACL list is the single-writer rule in one place: these pin who may write what, so a change that
// would let a client or an auditor write events fails here before it reaches a broker.
import { describe, expect, it } from 'vitest';
import { aclEntries, kafkaAclsScript, ledgerAcls, LEDGER_PRINCIPALS } from '../../stack/acls.js';

const writersOf = (topic: string) =>
  ledgerAcls('p')
    .filter((a) => a.resource === 'topic' && a.pattern === 'literal' && a.name === topic && a.operations.includes('WRITE'))
    .map((a) => a.principal)
    .sort();

describe('ledger ACLs', () => {
  it('lets only the executor write events, and the auditor write nothing', () => {
    expect(writersOf('p.plan-events')).toEqual(['executor']);
    expect(writersOf('p.ledger-audit')).toEqual(['executor']);
    // An executor announces itself; nobody else can forge or erase an announcement.
    expect(writersOf('p.plan-executors')).toEqual(['executor']);
    expect(writersOf('p.plan-commands')).toEqual(['client', 'executor', 'projector']);
    expect(writersOf('p.plan-snapshots')).toEqual(['executor', 'projector']);
    expect(ledgerAcls('p').filter((a) => a.principal === 'auditor' && a.operations.includes('WRITE'))).toEqual([]);
  });

  it('gives transactional ids by prefix: executors under p.executor., projectors under p.projector.', () => {
    const tx = ledgerAcls('p').filter((a) => a.resource === 'transactional-id');
    expect(tx.map((a) => `${a.principal} ${a.pattern} ${a.name} ${a.operations.join('+')}`).sort()).toEqual([
      'executor prefixed p.executor. WRITE+DESCRIBE',
      'projector prefixed p.projector. WRITE+DESCRIBE',
    ]);
  });

  it('grants nothing prefixed on topics but DESCRIBE and DESCRIBE_CONFIGS, and only to the four principals', () => {
    for (const a of ledgerAcls('p')) {
      expect(LEDGER_PRINCIPALS).toContain(a.principal);
      if (a.resource === 'topic' && a.pattern === 'prefixed') expect(a.operations).toEqual(['DESCRIBE', 'DESCRIBE_CONFIGS']);
    }
  });

  it('renders one ACL binding per operation and one kafka-acls.sh line per rule', () => {
    const acls = ledgerAcls('p');
    const ops = acls.reduce((n, a) => n + a.operations.length, 0);
    const entries = aclEntries(acls);
    expect(entries).toHaveLength(ops);
    expect(entries[0]).toEqual({ resourceType: 'GROUP', name: 'p.reader', pattern: 'LITERAL', principal: 'User:executor', operation: 'READ' });
    expect(entries).toContainEqual({ resourceType: 'TRANSACTIONAL_ID', name: 'p.executor.', pattern: 'PREFIXED', principal: 'User:executor', operation: 'WRITE' });
    const script = kafkaAclsScript('p', { executor: "User:svc 'exec'" });
    const lines = script.split('\n').filter((l) => l.startsWith('kafka-acls.sh'));
    expect(lines).toHaveLength(acls.length);
    expect(lines).toContain(
      `kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" --add --allow-principal 'User:svc '\\''exec'\\''' --operation Write --operation Describe --transactional-id 'p.executor.' --resource-pattern-type prefixed`,
    );
    expect(lines).toContain(`kafka-acls.sh --bootstrap-server "$BOOTSTRAP" --command-config "$ADMIN_CONFIG" --add --allow-principal 'User:client' --operation Write --topic 'p.plan-commands'`);
  });
});
