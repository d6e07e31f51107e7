/**
 * Domain fold cost, in process (no Kafka): µs per event of `evolveAll` and of event-by-event `evolve`
 * (what the projector and the executor's restore do), and µs per `decide` step on a 1,000-item plan.
 *
 * Logs are built with the domain's own `decide`, as the executor writes them: `PLANS` plans × 10 items
 * (create, then intent → result → settle per item, one item failing once and retried: 45 events per plan,
 * internal command ids `intent:…`, `result:…`, `settle:…`), and one plan of 1,000 items (chained every
 * tenth item) driven the same way (4,005 events). Median of `ROUNDS` rounds.
 *
 * Run: `npx tsx bench/evolve.ts` (`LABEL=before|after`, `PLANS`, `ROUNDS`). Writes bench/results/evolve.json,
 * keeping the runs of other labels already in it.
 */
import { existsSync, readFileSync } from 'node:fs';
import {
  canonicalJson,
  decide,
  evolve,
  evolveAll,
  idempotencyKey,
  stateDigest,
  type AnyCommand,
  type AnyCommandType,
  type DecidablePayloads,
  type ItemSpec,
  type PlanEvent,
  type PlanState,
} from '../src/plan/index.js';
import { machine, median, writeResults } from './common.js';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const PLANS = Number(process.env.PLANS ?? 1000);
const BIG_ITEMS = 1000;
const LABEL = process.env.LABEL ?? 'after';
const OUT = 'bench/results/evolve.json';

function spec(i: number, planId: string, chain: boolean): ItemSpec {
  const input = { account: `acct-${i}`, months: ['2025-01', '2025-02', '2025-03'], filters: { status: 'open', minAmount: 100 + i }, plan: planId };
  return {
    id: `step-${i}`,
    title: `Fetch open invoices ${i}`,
    why: 'The reconciliation needs every open invoice of the quarter',
    dependsOn: chain && i > 0 && i % 10 === 0 ? [`step-${i - 1}`] : [],
    tool: 'http.get',
    inputJson: canonicalJson(input),
    retry: { maxAttempts: 3, initialBackoffMs: 500, backoffMultiplier: 2, maxBackoffMs: 10_000 },
  };
}

interface Built {
  events: PlanEvent[];
  state: PlanState;
  decideMs: number;
  steps: number;
}

/** Drives one plan through decide as an executor would; `failing` fails once (retryable) and is retried. */
function buildPlan(planId: string, items: number, failing: number | null, chain: boolean): Built {
  let state: PlanState | undefined;
  let now = 1_760_000_000_000;
  const events: PlanEvent[] = [];
  let decideMs = 0;
  let steps = 0;
  const run = <K extends AnyCommandType>(type: K, commandId: string, data: DecidablePayloads[K]): void => {
    now += 7;
    const command = { type, commandId, planId, issuedAt: now, actor: 'executor-1', correlationId: commandId, data } as AnyCommand;
    const t0 = performance.now();
    const d = decide(state, command, { now });
    decideMs += performance.now() - t0;
    steps += 1;
    if (!d.ok) throw new Error(`${type} rejected: ${d.rejection.code} ${d.rejection.message}`);
    for (const e of d.events) {
      state = evolve(state, e);
      events.push(e);
    }
  };
  const specs = Array.from({ length: items }, (_, i) => spec(i, planId, chain));
  run('CreatePlan', `create:${planId}`, { goal: `reconcile ${planId}`, mode: 'execute', labels: { team: 'finance' }, parent: null, items: specs });
  for (const it of specs) {
    for (let attempt = 1; ; attempt++) {
      const key = idempotencyKey(planId, it.id, attempt);
      run('RecordIntent', `intent:${key}`, { itemId: it.id, executorId: 'executor-1', fencingToken: 17 });
      const fail = it.id === `step-${failing}` && attempt === 1;
      run('CommitResult', `result:${key}`, {
        itemId: it.id,
        attempt,
        outcome: fail ? 'failed_retryable' : 'succeeded',
        outputJson: fail ? null : canonicalJson({ invoices: [{ id: `inv-${it.id}`, amount: 1017.5, currency: 'EUR' }], total: 1017.5 }),
        error: fail ? { code: 'TIMEOUT', message: 'upstream timed out', detailsJson: null } : null,
        durationMs: 212,
        executorId: 'executor-1',
        followUps: [],
      });
      run('SettleItem', `settle:${key}`, { itemId: it.id });
      if (!fail) break;
      now += 1000; // past the backoff
    }
  }
  return { events, state: state as PlanState, decideMs, steps };
}

function time(f: () => void): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

const foldAll = (logs: PlanEvent[][]): PlanState[] => logs.map((events) => evolveAll(undefined, events) as PlanState);
const foldOneByOne = (logs: PlanEvent[][]): PlanState[] =>
  logs.map((events) => {
    let s: PlanState | undefined;
    for (const e of events) s = evolve(s, e);
    return s as PlanState;
  });

interface Round {
  smallEvolveAllUs: number;
  smallEvolveUs: number;
  bigEvolveAllUs: number;
  bigEvolveUs: number;
  bigDecideUsPerStep: number;
}

function main(): void {
  const small = Array.from({ length: PLANS }, (_, p) => buildPlan(`plan-${p}`, 10, 3, false));
  const smallLogs = small.map((b) => b.events);
  const smallEvents = smallLogs.reduce((n, l) => n + l.length, 0);
  const expected = small.map((b) => stateDigest(b.state));
  console.log(`${PLANS} plans × 10 items: ${smallEvents} events; 1 plan × ${BIG_ITEMS} items, rounds ${ROUNDS}, label ${LABEL}`);

  const rounds: Round[] = [];
  let bigEvents = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const big = buildPlan('plan-big', BIG_ITEMS, 500, true); // decide is timed while building
    bigEvents = big.events.length;
    let a: PlanState[] = [];
    let b: PlanState[] = [];
    const smallAll = time(() => (a = foldAll(smallLogs)));
    const smallOne = time(() => (b = foldOneByOne(smallLogs)));
    let bigA: PlanState[] = [];
    let bigB: PlanState[] = [];
    const bigAll = time(() => (bigA = foldAll([big.events])));
    const bigOne = time(() => (bigB = foldOneByOne([big.events])));
    // A bench that folds wrongly measures nothing: every fold must give the decide-time state.
    a.forEach((s, i) => {
      if (stateDigest(s) !== expected[i] || stateDigest(b[i]!) !== expected[i]) throw new Error(`plan ${i}: fold differs from decide-time state`);
    });
    const bigDigest = stateDigest(big.state);
    if (stateDigest(bigA[0]!) !== bigDigest || stateDigest(bigB[0]!) !== bigDigest) throw new Error('big plan: fold differs from decide-time state');
    const round: Round = {
      smallEvolveAllUs: (smallAll * 1000) / smallEvents,
      smallEvolveUs: (smallOne * 1000) / smallEvents,
      bigEvolveAllUs: (bigAll * 1000) / bigEvents,
      bigEvolveUs: (bigOne * 1000) / bigEvents,
      bigDecideUsPerStep: (big.decideMs * 1000) / big.steps,
    };
    rounds.push(round);
    console.log(`round ${r + 1}: ${Object.entries(round).map(([k, v]) => `${k}=${v.toFixed(2)}`).join(' ')}`);
  }
  const med = (k: keyof Round) => Number(median(rounds.map((r) => r[k])).toFixed(3));
  const result = {
    label: LABEL,
    machine: machine(),
    config: { plans: PLANS, itemsPerPlan: 10, smallEvents, bigItems: BIG_ITEMS, bigEvents, rounds: ROUNDS },
    median: {
      'evolveAll µs/event (1,000 × 10 items)': med('smallEvolveAllUs'),
      'evolve one by one µs/event (1,000 × 10 items)': med('smallEvolveUs'),
      'evolveAll µs/event (1 × 1,000 items)': med('bigEvolveAllUs'),
      'evolve one by one µs/event (1 × 1,000 items)': med('bigEvolveUs'),
      'decide µs/step (1 × 1,000 items)': med('bigDecideUsPerStep'),
    },
    rounds,
  };
  console.table(result.median);
  const previous = existsSync(OUT) ? (JSON.parse(readFileSync(OUT, 'utf8')) as { runs?: Record<string, unknown> }) : {};
  writeResults(OUT, { runs: { ...(previous.runs ?? {}), [LABEL]: result } });
}

main();
