// Verb registration only: commander and nothing heavy. Every action imports its module when it runs, so
// `plan-ledger stack ...` and `--help` stay fast.
import { InvalidArgumentError, Option, type Command } from 'commander';

const int = (flag: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`${flag} must be a non-negative integer, got "${v}"`);
  return n;
};

const timeout = () => new Option('--timeout <ms>', 'how long to wait for the owning executor').argParser(int('--timeout')).default(30_000);
const json = () => new Option('--json', 'machine-readable output (JSON)');
const strictTools = () => new Option('--strict-tools', 'refuse the plan (UNSERVED_TOOL, nothing sent) when a tool it names is served by no live executor, instead of warning');

function example(...lines: string[]): string {
  return `\nExample:\n${lines.map((l) => `  $ ${l}`).join('\n')}`;
}

export function registerPlanCommands(program: Command): void {
  program
    .command('run')
    .description('create a plan from a YAML/JSON file (execute mode runs at once; propose mode waits for approval)')
    .argument('<file>', 'plan file: goal, mode, labels, items (id, title, why, dependsOn, tool, input, retry)')
    .option('--wait', 'wait until the plan completes, fails or is cancelled (exit 1 unless completed)')
    .option('--wait-timeout <ms>', 'with --wait: give up after this long', int('--wait-timeout'), 600_000)
    .addOption(strictTools())
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', `\nA tool that no live executor serves (plan-ledger executors) is a warning on stderr, or with --strict-tools a refusal (UNSERVED_TOOL, exit 1) before anything is sent.${example('plan-ledger run examples/refund.yaml --wait', 'plan-ledger run examples/refund.yaml --strict-tools')}`)
    .action(async (file: string, o) => (await import('./plan-actions.js')).run(file, o));

  program
    .command('wait')
    .description('wait until a plan reaches a status (default completed) and print where it ended, with the cause when it failed')
    .argument('<planId>')
    .addOption(new Option('--status <status>', 'the status to wait for; a plan that finishes in another one ends the wait (exit 1)').choices(['draft', 'proposed', 'approved', 'running', 'completed', 'failed', 'cancelled']).default('completed'))
    .option('--timeout <ms>', 'give up after this long (exit 1); like every --timeout of the CLI, in milliseconds', int('--timeout'), 600_000)
    .addOption(json())
    .addHelpText('after', example('plan-ledger wait plan-mx1p8mq3-96272e4a', 'plan-ledger wait plan-mx1p8mq3-96272e4a --status running --timeout 30000'))
    .action(async (planId: string, o) => (await import('./plan-actions.js')).waitPlan(planId, o));

  program
    .command('propose')
    .description('create a plan from a file in propose mode and propose it: prints the digest to approve')
    .argument('<file>', 'plan file (YAML or JSON)')
    .addOption(strictTools())
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger propose examples/refund.yaml', 'plan-ledger approve <planId> --digest <digest> --by alice'))
    .action(async (file: string, o) => (await import('./plan-actions.js')).propose(file, o));

  program
    .command('agent')
    .description('start a run of an agent the executors have registered (agentTools): a plan whose first item is its first model turn')
    .argument('<name>', 'the agent\'s name (defineAgent({ name }))')
    .requiredOption('--goal <text>', 'what the agent is asked to do (its first message and the plan\'s goal)')
    .option('--propose', 'propose the run and print the digest to approve instead of running it at once')
    .option('--max-turns <n>', 'model turns for this run (default: the agent\'s)', int('--max-turns'))
    .option('--budget-tokens <n>', 'tokens (in + out) the run may spend; past them it pauses before its next model turn until raised (plan-ledger signal <plan> budget --data \'{"tokens": N}\')', int('--budget-tokens'))
    .option('--wait', 'wait until the run ends (or pauses for its budget) and print its turns and usage (exit 1 unless completed)')
    .option('--wait-timeout <ms>', 'with --wait: give up after this long', int('--wait-timeout'), 600_000)
    .addOption(json())
    .addHelpText('after', example('plan-ledger agent support --goal "Refund order 42" --wait'))
    .action(async (name: string, o) => (await import('./agent-actions.js')).agent(name, o));

  program
    .command('mcp')
    .description('serve the ledger as an MCP server (stdio, or --http): tools plan_create, plan_propose, plan_approve, plan_add_items, plan_signal, plan_fork, plan_show, plan_wait, plan_audit, plan_verify, plan_list; plans as plan:// resources')
    .option('--by <name>', 'stdio: actor recorded on the commands the MCP client sends', 'mcp')
    .option('--http <port>', 'serve Streamable HTTP at /mcp instead, behind the API tokens (PLAN_LEDGER_API_TOKEN / PLAN_LEDGER_API_TOKENS_FILE; a token\'s principal is the actor)', int('--http'))
    .option('--host <host>', 'with --http: the address to listen on', '127.0.0.1')
    .addHelpText('after', example('plan-ledger mcp   # in an MCP client\'s config: { "command": "npx", "args": ["plan-ledger", "mcp"] }', 'PLAN_LEDGER_API_TOKENS_FILE=tokens.jsonl plan-ledger mcp --http 8788'))
    .action(async (o) => (await import('./mcp-action.js')).mcp(o));

  program
    .command('show')
    .description('the plan as its events say now, rebuilt from the log, with its lineage (the plan it was forked from, the plans forked from it)')
    .argument('<planId>')
    .addOption(json())
    .addHelpText('after', example('plan-ledger show plan-mx1p8mq3-96272e4a', 'plan-ledger show plan-mx1p8mq3-96272e4a --json | jq .status'))
    .action(async (planId: string, o) => (await import('./plan-actions.js')).show(planId, o));

  program
    .command('approve')
    .description('approve a proposed plan at the digest you reviewed')
    .argument('<planId>')
    .requiredOption('--digest <digest>', 'the digest you reviewed (from propose/show); a changed plan has another one')
    .option('--by <name>', 'operator name recorded in the ledger', process.env.USER || 'operator')
    .option('--note <text>', 'approval comment')
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger approve plan-mx1p8mq3-96272e4a --digest 0ecfdba2caf5e331... --by alice'))
    .action(async (planId: string, o) => (await import('./plan-actions.js')).approve(planId, o));

  program
    .command('reject')
    .description('reject a proposed plan (it goes back to draft)')
    .argument('<planId>')
    .requiredOption('--reason <text>', 'why, recorded in the ledger')
    .option('--by <name>', 'operator name recorded in the ledger', process.env.USER || 'operator')
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger reject plan-mx1p8mq3-96272e4a --reason "refund exceeds policy"'))
    .action(async (planId: string, o) => (await import('./plan-actions.js')).reject(planId, o));

  program
    .command('cancel')
    .description('cancel a plan: pending items are cancelled; an item already running finishes and its result is recorded')
    .argument('<planId>')
    .option('--reason <text>', 'why, recorded in the ledger', 'cancelled by operator')
    .option('--by <name>', 'operator name recorded in the ledger', process.env.USER || 'operator')
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger cancel plan-mx1p8mq3-96272e4a --reason "customer withdrew"'))
    .action(async (planId: string, o) => (await import('./plan-actions.js')).cancel(planId, o));

  program
    .command('retry')
    .description('make a failed item pending again (a fresh attempt budget)')
    .argument('<planId>')
    .argument('<itemId>')
    .option('--by <name>', 'operator name recorded in the ledger', process.env.USER || 'operator')
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger retry plan-mx1p8mq3-96272e4a refund-payment'))
    .action(async (planId: string, itemId: string, o) => (await import('./plan-actions.js')).retry(planId, itemId, o));

  program
    .command('signal')
    .description('deliver a named signal to the items of a plan that wait for it (its data becomes their output)')
    .argument('<planId>')
    .argument('<name>', 'the signal name the wait items wait for')
    .option('--data <json|@file>', 'the signal data: JSON text, or @file to read it from a file (- for stdin)', 'null')
    .option('--signal-id <id>', "the signal's own id: a second delivery with the same id is rejected (DUPLICATE_SIGNAL)")
    .option('--by <name>', 'who sends the signal, recorded in the ledger', process.env.USER || 'operator')
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger signal plan-mx1p8mq3-96272e4a customer-reply --data @reply.json --signal-id mail-4411'))
    .action(async (planId: string, name: string, o) => (await import('./plan-actions.js')).signal(planId, name, o));

  program
    .command('fork')
    .description('a new plan from a point of another: items finished before it keep their outputs, the rest runs again; the source is untouched')
    .argument('<planId>', 'the source plan')
    .requiredOption('--at <seq|itemId>', "the fork point: a seq of the source's log, or an item id (just before its first attempt)")
    .option('--set <item.input=@file>', 'a new input for an item that runs again (JSON text or @file); repeatable', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--id <planId>', "the fork's id (default: a fresh one)")
    .addOption(new Option('--mode <mode>', "the fork's mode (default: the source's)").choices(['propose', 'execute']))
    .option('--by <name>', 'who forks, recorded in the ledger', process.env.USER || 'operator')
    .addOption(timeout())
    .addOption(json())
    .addHelpText('after', example('plan-ledger fork plan-mx1p8mq3-96272e4a --at refund-payment --set refund-payment.input=@fixed.json', 'plan-ledger fork plan-mx1p8mq3-96272e4a --at 12 --mode propose'))
    .action(async (planId: string, o) => (await import('./plan-actions.js')).fork(planId, o));
}

export function registerAuditCommands(program: Command): void {
  program
    .command('audit')
    .description('the timeline of a plan: every event with time, seq, offset, actor, causation, attempt, key, outcome, durations')
    .argument('<planId>')
    .option('--as-of <seq|ISO time>', 'also show the plan as it was then (time travel); the timeline stops there')
    .option('--json', 'JSON lines: one {"kind":"event"} per event, then one {"kind":"state"}')
    .addHelpText('after', example('plan-ledger audit plan-mx1p8mq3-96272e4a', 'plan-ledger audit plan-mx1p8mq3-96272e4a --as-of 7', 'plan-ledger audit plan-mx1p8mq3-96272e4a --as-of 2026-01-31T12:00:00Z --json'))
    .action(async (planId: string, o) => (await import('./audit-actions.js')).audit(planId, o));

  program
    .command('tail')
    .description('a stream of events, one line each (time, plan, seq, type, item#attempt, actor, summary): a plan\'s history, or new events of every plan with --follow')
    .argument('[planId]', 'one plan (its history first); without it every plan of the prefix')
    .option('-f, --follow', 'keep printing new events as they are appended, until Ctrl-C')
    .option('--from-beginning', 'without a plan: every plan\'s history first (reads the whole events topic)')
    .option('--as-of <seq|ISO time>', 'start after this point: the events `audit --as-of` does not show (a seq needs a plan)')
    .option('--json', 'JSON lines: the audit row of each event with its planId (with --stream: each stream chunk with its cursor)')
    .option('--stream', 'with a plan: its live output instead of its events (agent turns\' text as it comes, tool progress, each attempt\'s end), until the plan ends (or Ctrl-C with --follow)')
    .option('--from <cursor>', 'with --stream: resume after the chunk whose cursor this is (`live`: only new output)')
    .addHelpText(
      'after',
      `\nWithout a plan and without --from-beginning / --as-of it starts at the end: only new events (needs --follow).
Colors only on a terminal (NO_COLOR turns them off).${example('plan-ledger tail plan-mx1p8mq3-96272e4a --follow', 'plan-ledger tail --follow', 'plan-ledger tail --as-of 2026-01-31T12:00:00Z --json | jq -r .type', 'plan-ledger tail plan-mx1p8mq3-96272e4a --stream')}`,
    )
    .action(async (planId: string | undefined, o) => (o.stream ? (await import('./tail-actions.js')).tailStream(planId, o) : (await import('./tail-actions.js')).tail(planId, o)));

  program
    .command('replay')
    .description('rebuild plans from the events log alone (no projector) and print their state and digests')
    .argument('[planId]')
    .option('--all', 'every plan on the topic prefix')
    .option('--until <seq|ISO time>', 'stop at this seq or time (per plan)')
    .option('--state', 'print the full rebuilt state (JSON)')
    .option('--json', 'JSON lines, one per plan')
    .addHelpText('after', example('plan-ledger replay plan-mx1p8mq3-96272e4a --until 5', 'plan-ledger replay --all --json'))
    .action(async (planId: string | undefined, o) => (await import('./audit-actions.js')).replay(planId, o));

  program
    .command('verify')
    .description('hash chain, seq, duplicate records, determinism and snapshots of plans in the ledger, or an export bundle offline')
    .argument('[planId]')
    .option('--all', 'every plan on the topic prefix')
    .option('--bundle <file>', 'verify an export bundle offline (no broker, no registry)')
    .option('--json', 'JSON lines, one per plan')
    .addHelpText('after', example('plan-ledger verify plan-mx1p8mq3-96272e4a', 'plan-ledger verify --all', 'plan-ledger verify --bundle plan.bundle.json'))
    .action(async (planId: string | undefined, o) => (await import('./audit-actions.js')).verify(planId, o));

  program
    .command('export')
    .description('a self-contained JSON bundle of a plan (events, writer schemas, hashes, chain head, digests)')
    .argument('<planId>')
    .option('-o, --output <file>', 'write the bundle here (default: stdout)')
    .option('--json', 'with -o: print a JSON summary')
    .addHelpText('after', example('plan-ledger export plan-mx1p8mq3-96272e4a -o plan.bundle.json', 'plan-ledger verify --bundle plan.bundle.json'))
    .action(async (planId: string, o) => (await import('./audit-actions.js')).exportPlan(planId, o));

  program
    .command('erase')
    .description('erase a plan through its owning executor: tombstones for every event, the snapshot and the archive record (compaction removes them), recorded on <prefix>.ledger-audit')
    .argument('<planId>')
    .option('--force', 'erase even while the plan is approved or running')
    .addOption(timeout())
    .option('--reason <text>', 'why, recorded in the erasure record', 'erasure requested')
    .option('--by <name>', 'who asked, recorded in the erasure record', process.env.USER || 'operator')
    .option('--json', 'print the erasure record as JSON')
    .addHelpText('after', example('plan-ledger erase plan-mx1p8mq3-96272e4a --reason "GDPR request #481"'))
    .action(async (planId: string, o) => (await import('./audit-actions.js')).erase(planId, o));
}

export function registerServiceCommands(program: Command): void {
  program
    .command('projector')
    .description('run the projector: read side, snapshots, HTTP API and web dashboard')
    .option('--port <n>', 'HTTP port (default PLAN_LEDGER_HTTP_PORT or 8787; 0 = any free port)', int('--port'))
    .addHelpText(
      'after',
      `\nThe API and the dashboard need a bearer token: PLAN_LEDGER_API_TOKEN (read+write) or PLAN_LEDGER_API_TOKENS_FILE (principals and scopes).\n${example('plan-ledger projector --port 8787')}`,
    )
    .action(async (o: { port?: number }) => (await import('./service-actions.js')).projector(o));

  program
    .command('executors')
    .description('the executors announced on <prefix>.plan-executors: live or stale (no heartbeat within three of its intervals), partitions, tools, agents, host, version')
    .option('--stale-after <ms>', 'count an executor stale after this long without a heartbeat (default: three of its own heartbeat intervals)', int('--stale-after'))
    .addOption(json())
    .addHelpText(
      'after',
      `\nExecutors that stopped cleanly are gone (their records are tombstoned); a record that cannot be read is listed as skipped, with the reason.${example('plan-ledger executors', 'plan-ledger executors --json | jq \'.live[].tools\'')}`,
    )
    .action(async (o: { json?: boolean; staleAfter?: number }) => (await import('./executors-actions.js')).executors(o));

  program
    .command('demo')
    .description('the guided demo: an agent refunds an order, its executor is killed mid-payment, exactly one refund happens')
    .option('--keep-open', 'keep the projector (dashboard) running after the demo until Ctrl-C')
    .option('--stop-stack', 'stop the local stack at the end if the demo started it')
    .option('--agent', 'the same refund asked of a support agent (a scripted AI SDK test model, offline), its words printed as it says them: killed mid-refund, no finished turn asked again')
    .addHelpText(
      'after',
      `
With no PLAN_LEDGER_BROKERS the demo brings the local stack up (plan-ledger stack up) and leaves it running
for the next run; "plan-ledger stack down" stops it. Every run uses a fresh topic prefix. It runs from an
installed package (npx plan-ledger demo) as from a checkout (npm run demo).${example('npx plan-ledger demo', 'plan-ledger demo --keep-open', 'plan-ledger demo --agent')}`,
    )
    .action(async (o: { keepOpen?: boolean; stopStack?: boolean; agent?: boolean }) => {
      (await import('./native-addon.js')).ensureKafkaClient();
      if (o.agent) {
        const { runAgentDemo } = await import('../demo/agent-demo.js');
        process.exitCode = await runAgentDemo(o);
        return;
      }
      const { runDemo } = await import('../demo/demo.js');
      process.exitCode = await runDemo(o);
    });
}
