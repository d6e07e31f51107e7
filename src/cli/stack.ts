import type { Command } from 'commander';
import { stackDown, stackStatus, stackUp } from '../stack/stack.js';

const out = (line: string): void => void process.stdout.write(`${line}\n`);

export function registerStackCommands(program: Command): void {
  const stack = program
    .command('stack')
    .description('run a local Kafka broker and schema registry as JVM processes (no Docker)')
    .addHelpText(
      'after',
      `
The artifacts are resolved by Maven into ~/.cache/plan-ledger (PLAN_LEDGER_CACHE_DIR); the stack's
data, logs and pid files live in <cache>/stack (PLAN_LEDGER_STACK_DIR). The stack is ephemeral: every
"up" starts from empty storage.

Example:
  $ plan-ledger stack up && npm test && plan-ledger stack down`,
    );

  stack
    .command('up')
    .description('start Kafka (KRaft, 127.0.0.1:9092) and Apicurio Registry (127.0.0.1:8081); idempotent')
    .option('--json', 'print the stack description as JSON')
    .addHelpText('after', '\nPorts: PLAN_LEDGER_STACK_KAFKA_PORT (controller on port+1), PLAN_LEDGER_STACK_REGISTRY_PORT (management on port+10).\n\nExample:\n  $ plan-ledger stack up')
    .action(async (o: { json?: boolean }) => {
      const r = await stackUp({ log: (l) => process.stderr.write(`${l}\n`) });
      if (o.json) return out(JSON.stringify({ ...r.info, alreadyRunning: r.alreadyRunning, seconds: r.seconds }));
      out(r.alreadyRunning ? 'local stack already running' : `local stack up in ${r.seconds.toFixed(1)}s`);
      out(`  brokers       ${r.info.brokers.join(',')}   (Kafka ${r.info.versions.kafka})`);
      out(`  registry      ${r.info.registryUrl}   (Apicurio ${r.info.versions.apicurio})`);
      out(`  described in  ${r.info.dir}/stack.json`);
    });

  stack
    .command('down')
    .description('stop the processes "stack up" started and free their ports')
    .addHelpText('after', '\nExample:\n  $ plan-ledger stack down')
    .action(async () => {
      const r = await stackDown();
      out(r.stopped.length ? `stopped ${r.stopped.join(', ')}` : 'local stack was not running');
    });

  stack
    .command('status')
    .description('tell whether the local stack runs, and where')
    .option('--json', 'print the status as JSON')
    .addHelpText('after', '\nExample:\n  $ plan-ledger stack status --json')
    .action((o: { json?: boolean }) => {
      const s = stackStatus();
      if (o.json) return out(JSON.stringify(s));
      if (s.info) {
        out(`running: brokers ${s.info.brokers.join(',')}, registry ${s.info.registryUrl}`);
      } else {
        out('not running');
      }
      for (const p of s.processes) out(`  ${p.name.padEnd(9)} pid ${p.pid} ${p.alive ? 'alive' : 'gone'}  log ${p.log}`);
      if (!s.info) process.exitCode = 3;
    });
}
