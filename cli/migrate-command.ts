// Registration of `plan-ledger migrate` only: the migration (codec, Kafka, verify) loads when it runs.
import type { Command } from 'commander';

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description('copy every plan to a new prefix whose topics have another partition count, then verify each plan there')
    .requiredOption('--to-prefix <prefix>', 'prefix of the new topics (they must not hold events yet)')
    .requiredOption('--partitions <n>', 'partition count of the new topics', (v) => Number(v))
    .option('--force', 'copy although executors still run or commands are undecided (their later work is left behind)')
    .option('--json', 'print the report as JSON')
    .addHelpText(
      'after',
      `
Stop the executors of the current prefix first (and let them decide every command), then:
  $ PLAN_LEDGER_TOPIC_PREFIX=plan-ledger plan-ledger migrate --to-prefix plan-ledger-v2 --partitions 24
and start executors and projectors with PLAN_LEDGER_TOPIC_PREFIX=plan-ledger-v2 PLAN_LEDGER_PARTITIONS=24.
Live stream records (<prefix>.plan-streams) are not copied, by design; the report counts them.`,
    )
    .action(async (o: { toPrefix: string; partitions: number; force?: boolean; json?: boolean }) => (await import('./migrate.js')).runMigrate(o));
}
