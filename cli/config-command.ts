// `plan-ledger config`: registration only (commander); the action loads its module when it runs.
import type { Command } from 'commander';

export function registerConfigCommand(program: Command): void {
  program
    .command('config')
    .description('print the effective settings: every PLAN_LEDGER_* variable with its value and where it came from (env, stack, default), secrets redacted')
    .option('--json', 'machine-readable output (JSON): one object per variable')
    .addHelpText(
      'after',
      `
Every variable is described in docs/reference/configuration.md. A bad value fails here as it does at the
start of every component: one line naming the variable, the value (redacted if secret) and what is allowed.
The connection is shown as the components compile it: the variables, else the running local stack.

Example:
  $ plan-ledger config
  $ plan-ledger config --json | jq '.[] | select(.source != "default")'`,
    )
    .action(async (o: { json?: boolean }) => (await import('./config-action.js')).printConfig(o));
}
