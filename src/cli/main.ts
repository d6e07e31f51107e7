import { Command, CommanderError } from 'commander';
import { isLedgerError } from '../errors.js';
import { registerExecutorCommand } from './executor.js';
import { registerStackCommands } from './stack.js';

export function buildProgram(): Command {
  const program = new Command('plan-ledger')
    .description('An event-sourced plan ledger over Apache Kafka for long-running agent work')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride();
  registerStackCommands(program);
  registerExecutorCommand(program);
  return program;
}

/** Every failure ends as one line on stderr and a non-zero exit code, never a stack trace. */
export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv);
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode;
    if (isLedgerError(e)) {
      process.stderr.write(`plan-ledger: ${e.message}\n`);
      return e.code === 'VALIDATION' ? 2 : 1;
    }
    process.stderr.write(`plan-ledger: ${e instanceof Error ? e.message : String(e)}\n`);
    if (process.env.PLAN_LEDGER_DEBUG && e instanceof Error) process.stderr.write(`${e.stack}\n`);
    return 1;
  }
}

process.exitCode = await main(process.argv);
