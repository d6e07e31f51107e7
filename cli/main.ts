import { Command, CommanderError } from 'commander';
import { isLedgerError, type LedgerError } from '../src/errors.js';
import { registerConfigCommand } from './config-command.js';
import { registerExecutorCommand } from './executor.js';
import { registerMigrateCommand } from './migrate-command.js';
import { registerStackCommands } from './stack.js';
import { registerAuditCommands, registerPlanCommands, registerServiceCommands } from './verbs.js';

/** Exit codes, documented in `plan-ledger --help` and docs/reference/cli-walkthrough.md#exit-codes. */
export const ExitCode = { ok: 0, failure: 1, usage: 2, notFound: 3 } as const;

export function buildProgram(): Command {
  const program = new Command('plan-ledger')
    .description('An event-sourced plan ledger over Apache Kafka for long-running agent work')
    .configureOutput({
      // Usage errors are one line too: "plan-ledger: <reason> (see plan-ledger <verb> --help)".
      outputError: (str, write) => write(`plan-ledger: ${str.replace(/^error: /, '').trim()} (add --help for usage)\n`),
    })
    .exitOverride()
    .addHelpText(
      'after',
      `
Connection: PLAN_LEDGER_BROKERS, PLAN_LEDGER_REGISTRY_URL, PLAN_LEDGER_TOPIC_PREFIX (default "plan-ledger"),
or else the running local stack ("plan-ledger stack up").

Exit codes: 0 ok · 1 failure (rejected command, broken chain, unreachable broker, failed plan)
            2 usage or validation (bad flag, invalid plan file) · 3 not found (unknown plan)

Example:
  $ plan-ledger stack up && plan-ledger demo
  $ plan-ledger propose refund.yaml && plan-ledger approve <planId> --digest <digest> --by alice`,
    );
  registerStackCommands(program);
  registerExecutorCommand(program);
  registerServiceCommands(program);
  registerPlanCommands(program);
  registerAuditCommands(program);
  registerMigrateCommand(program);
  registerConfigCommand(program);
  return program;
}

function exitCodeOf(e: LedgerError): number {
  if (e.code === 'VALIDATION') return ExitCode.usage;
  if (e.code === 'NOT_FOUND') return ExitCode.notFound;
  if (e.code === 'REJECTED' && e.details.rejection === 'PLAN_NOT_FOUND') return ExitCode.notFound;
  return ExitCode.failure;
}

/** Every failure ends as one line on stderr and a non-zero exit code, never a stack trace. */
export async function main(argv: string[]): Promise<number> {
  let debug = false;
  try {
    const program = buildProgram();
    // The settings module (zod) loads before a verb's action runs, never for `--help`, which stays quick.
    program.hook('preAction', async () => {
      const { setting } = await import('../src/settings.js');
      debug = setting('PLAN_LEDGER_DEBUG');
      setting('PLAN_LEDGER_USE_DIST'); // bin/plan-ledger.js reads it before anything can load; a bad value fails here
    });
    await program.parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
    if (isLedgerError(e)) {
      process.stderr.write(`plan-ledger: ${e.message}\n`);
      return exitCodeOf(e);
    }
    process.stderr.write(`plan-ledger: ${e instanceof Error ? e.message : String(e)}\n`);
    if (debug && e instanceof Error) process.stderr.write(`${e.stack}\n`);
    return ExitCode.failure;
  }
}

// `plan-ledger audit p | head`: a reader that closes the pipe early ends the output, not with a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
}

const code = await main(process.argv);
// A failed command is over once its line is out: a Kafka handle still trying to connect (a refused
// login, an unreachable broker) would otherwise hold the process until its own timeout.
if (code !== 0) process.exit(code);
process.exitCode = code;
