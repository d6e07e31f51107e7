// Registration only: the stack's modules (process spawners, Maven, the admin tool) load when a verb runs,
// so `plan-ledger --help` does not pay for them.
import type { Command } from 'commander';
import { LedgerError } from '../src/errors.js';
import type { LedgerPrincipal } from '../stack/acls.js';
import type { setting as settingOf } from '../src/settings.js';
import type { StackSecurity } from '../stack/stack.js';

const stackModule = () => import('../stack/stack.js');
const setting = async <K extends Parameters<typeof settingOf>[0]>(name: K) => (await import('../src/settings.js')).setting(name);

const out = (line: string): void => void process.stdout.write(`${line}\n`);

function brokerCount(raw: string): number {
  const n = Number(raw);
  if (n !== 1 && n !== 3) throw new LedgerError('VALIDATION', `--brokers must be 1 or 3, got "${raw}"`, { field: 'brokers' });
  return n;
}

/** Where a SASL stack's passwords are, and the variables a component sets to log in as one user. */
function printSecurity(sec: StackSecurity): void {
  out(`  security      ${sec.protocol} ${sec.mechanism}, ACLs enforced (StandardAuthorizer, super user admin)`);
  for (const [user, file] of Object.entries(sec.passwordFiles)) out(`  ${user.padEnd(10)}    password file ${file}`);
  if (sec.caFile) out(`  TLS           trust ${sec.caFile} (PLAN_LEDGER_SSL_CA_FILE)`);
  out(`  connect as    PLAN_LEDGER_SASL_MECHANISM=${sec.mechanism} PLAN_LEDGER_SASL_USERNAME=<user> PLAN_LEDGER_SASL_PASSWORD_FILE=<its file>`);
}

export function registerStackCommands(program: Command): void {
  const stack = program
    .command('stack')
    .description('run a local Kafka cluster and schema registry as JVM processes (no Docker)')
    .addHelpText(
      'after',
      `
The artifacts are resolved by Maven into ~/.cache/plan-ledger (PLAN_LEDGER_CACHE_DIR); the stack's
data, logs and pid files live in <cache>/stack (PLAN_LEDGER_STACK_DIR). The stack is durable: broker
data stays in that folder and the registry keeps its schemas in a topic of the same cluster, so plans,
events and schema ids survive "down"/"up" and a reboot. "stack reset --yes" is the one way to wipe it.

Example:
  $ plan-ledger stack up && npm test && plan-ledger stack down`,
    );

  stack
    .command('up')
    .description('start Kafka (KRaft, 127.0.0.1:9092) and Apicurio Registry (127.0.0.1:8081) on the stack\'s storage; idempotent')
    .option('--brokers <n>', 'KRaft nodes: 1, or 3 (replication factor 3, min.insync.replicas 2); fixed once the stack has data')
    .option('--sasl', 'SASL/SCRAM-SHA-512 on every listener, ACLs enforced by the broker; users admin, executor, projector, client, auditor with generated passwords in <stack dir>/secrets; fixed once the stack has data')
    .option('--tls', 'with --sasl: TLS on the client listener (SASL_SSL), a self-signed certificate made with keytool; clients trust <stack dir>/secrets/ca.pem')
    .option('--json', 'print the stack description as JSON')
    .addHelpText(
      'after',
      '\nPorts: PLAN_LEDGER_STACK_KAFKA_PORT (node i on port+2i, its controller on port+2i+1), PLAN_LEDGER_STACK_REGISTRY_PORT (management on port+10).\n\nExample:\n  $ plan-ledger stack up --brokers 3\n  $ plan-ledger stack up --sasl\n  $ plan-ledger stack up --sasl --tls',
    )
    .action(async (o: { json?: boolean; brokers?: string; sasl?: boolean; tls?: boolean }) => {
      // The readiness probe is a Kafka client: without its addon no broker would ever look ready.
      (await import('./native-addon.js')).ensureKafkaClient();
      const { stackUp } = await stackModule();
      const r = await stackUp({
        brokers: o.brokers === undefined ? undefined : brokerCount(o.brokers),
        ...(o.sasl ? { sasl: true } : {}),
        ...(o.tls ? { tls: true } : {}),
        log: (l) => process.stderr.write(`${l}\n`),
      });
      if (o.json) return out(JSON.stringify({ ...r.info, alreadyRunning: r.alreadyRunning, reused: r.reused, seconds: r.seconds }));
      out(r.alreadyRunning ? 'local stack already running' : `local stack up in ${r.seconds.toFixed(1)}s (${r.reused ? 'existing data' : 'new storage'})`);
      out(`  brokers       ${r.info.brokers.join(',')}   (Kafka ${r.info.versions.kafka}, ${r.info.nodes} node${r.info.nodes === 1 ? '' : 's'})`);
      out(`  registry      ${r.info.registryUrl}   (Apicurio ${r.info.versions.apicurio})`);
      out(`  described in  ${r.info.dir}/stack.json`);
      if (r.info.security) printSecurity(r.info.security);
    });

  stack
    .command('down')
    .description('stop the processes "stack up" started and free their ports; the data stays')
    .addHelpText('after', '\nExample:\n  $ plan-ledger stack down')
    .action(async () => {
      const r = await (await stackModule()).stackDown();
      out(r.stopped.length ? `stopped ${r.stopped.join(', ')}` : 'local stack was not running');
    });

  stack
    .command('reset')
    .description('stop the local stack and delete its data: every plan, event and schema on it')
    .option('--yes', 'confirm the deletion (required)')
    .addHelpText('after', '\nExample:\n  $ plan-ledger stack reset --yes && plan-ledger stack up')
    .action(async (o: { yes?: boolean }) => {
      const r = await (await stackModule()).stackReset({ confirm: o.yes === true });
      if (r.stopped.length) out(`stopped ${r.stopped.join(', ')}`);
      out(r.removed.length ? `deleted the local stack's data (${r.removed.length} paths)` : 'the local stack had no data');
    });

  stack
    .command('acls')
    .description('the ledger\'s ACLs for a topic prefix: create them (and its topics) on the running SASL stack, or --print them as a kafka-acls.sh script for a real cluster')
    .option('--prefix <prefix>', 'topic prefix (default PLAN_LEDGER_TOPIC_PREFIX, else "plan-ledger")')
    .option('--partitions <n>', 'partitions of the plan topics created on the stack (default PLAN_LEDGER_PARTITIONS, else 6)')
    .option('--print', 'print the kafka-acls.sh lines instead of creating anything')
    .option('--principal <role=principal...>', 'with --print: the Kafka principal of a role, e.g. executor=User:svc-exec (default User:<role>)')
    .addHelpText('after', '\nExample:\n  $ plan-ledger stack acls --prefix billing --print > acls.sh\n  $ BOOTSTRAP=kafka:9093 ADMIN_CONFIG=admin.properties sh acls.sh')
    .action(async (o: { prefix?: string; partitions?: string; print?: boolean; principal?: string[] }) => {
      if (o.prefix !== undefined && !/^[A-Za-z0-9._-]{1,100}$/.test(o.prefix)) throw new LedgerError('VALIDATION', `--prefix: letters, digits, ".", "_", "-", got "${o.prefix}"`, { field: 'prefix' });
      const prefix = o.prefix ?? (await setting('PLAN_LEDGER_TOPIC_PREFIX'));
      const { kafkaAclsScript, LEDGER_PRINCIPALS } = await import('../stack/acls.js');
      if (o.print) {
        const principals: Partial<Record<LedgerPrincipal, string>> = {};
        for (const pair of o.principal ?? []) {
          const i = pair.indexOf('=');
          const role = pair.slice(0, i) as LedgerPrincipal;
          if (i < 1 || !LEDGER_PRINCIPALS.includes(role) || !/^\S+:\S+$/.test(pair.slice(i + 1))) {
            throw new LedgerError('VALIDATION', `--principal: expected <${LEDGER_PRINCIPALS.join('|')}>=<Type:name>, got "${pair}"`, { field: 'principal' });
          }
          principals[role] = pair.slice(i + 1);
        }
        return void process.stdout.write(kafkaAclsScript(prefix, principals));
      }
      const partitions = o.partitions === undefined ? await setting('PLAN_LEDGER_PARTITIONS') : Number(o.partitions);
      if (!Number.isInteger(partitions) || partitions < 1) throw new LedgerError('VALIDATION', `--partitions must be a positive integer, got "${o.partitions}"`, { field: 'partitions' });
      const r = await (await stackModule()).provisionPrefix({ prefix, partitions });
      out(`prefix ${prefix}: ${r.topics} topics, ${r.acls} ACL bindings (created or already there)`);
    });

  stack
    .command('rotate-password')
    .argument('<user>', 'executor, projector, client or auditor')
    .description('give a user of the running SASL stack a new generated SCRAM password, on the broker and in its password file')
    .addHelpText(
      'after',
      '\nConnections already logged in stay up; restart that user\'s components one by one to log in with the new password.\n\nExample:\n  $ plan-ledger stack rotate-password client',
    )
    .action(async (user: string) => {
      const info = (await stackModule()).readStackInfo();
      if (!info) throw new LedgerError('NOT_FOUND', 'no running local stack');
      if (!info.security) throw new LedgerError('VALIDATION', 'the local stack runs without --sasl: it has no passwords', { field: 'sasl' });
      const { rotateStackPassword } = await import('../stack/credentials.js');
      const r = rotateStackPassword({ dir: info.dir, brokers: info.brokers, security: info.security, user });
      out(`new password for ${user} in ${r.passwordFile}`);
    });

  stack
    .command('status')
    .description('tell whether the local stack runs, and where')
    .option('--json', 'print the status as JSON')
    .addHelpText('after', '\nExample:\n  $ plan-ledger stack status --json')
    .action(async (o: { json?: boolean }) => {
      const s = (await stackModule()).stackStatus();
      if (o.json) return out(JSON.stringify(s));
      if (s.info) {
        out(`running: brokers ${s.info.brokers.join(',')}, registry ${s.info.registryUrl}`);
        if (s.info.security) printSecurity(s.info.security);
      } else {
        out(`not running${s.hasData ? ' (data kept; "stack up" resumes it)' : ''}`);
      }
      for (const p of s.processes) out(`  ${p.name.padEnd(9)} pid ${p.pid} ${p.alive ? 'alive' : 'gone'}  log ${p.log}`);
      if (!s.info) process.exitCode = 3;
    });
}
