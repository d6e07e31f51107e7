// Plan pages benchmark (not a test): what the projector's read routes answer for one plan of 100,000 items,
// in bytes and time, whole versus paged. The plan is decided by the domain's own `decide` (CreatePlan +
// AddItems batches of 1,000, then 1,000 items run, 10 fail for good, 5 stay in progress; the plan needs
// at least 1,200 items) and folded with
// `evolveInPlace`; it is seeded into a real ReadModel (its events served by the loader, as after a cache
// miss) behind the real fastify server, called with `inject` (no socket). Medians of the rounds.
// Run: npx tsx bench/plan-pages.ts [--items 100000] [--rounds 5]
import { parseArgs } from 'node:util';
import { buildHttp, HTTP_DEFAULTS } from '../projector/http/index.js';
import { compileTokens } from '../src/api-tokens.js';
import type { ProjectionService } from '../projector/projector.js';
import { ReadModel } from '../projector/read-model.js';
import { silentLogger } from '../src/logging.js';
import { decide, evolveInPlace, type AnyCommand, type ItemSpec, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { PartitionProjection } from '../src/projection/index.js';

const { values } = parseArgs({ options: { items: { type: 'string', default: '100000' }, rounds: { type: 'string', default: '5' } } });
const ITEMS = Number(values.items);
const ROUNDS = Number(values.rounds);
const PLAN = 'bench-big';
const TOKEN = 'bench-plan-pages-token-0123456789';

let n = 0;
let now = 1_700_000_000_000;
const cmd = (type: string, data: unknown) => ({ commandId: `c-${++n}`, planId: PLAN, issuedAt: 0, actor: 'bench', correlationId: 'bench', type, data }) as AnyCommand;
const item = (i: number): ItemSpec => ({ id: `n-${i}`, title: `step ${i}`, why: `step ${i} is part of the big plan`, dependsOn: i % 10 === 0 ? [] : [`n-${i - 1}`], tool: 'noop', inputJson: `{"i":${i}}`, retry: null });
const batch = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => item(from + k));

let state: PlanState | undefined;
const events: PlanEvent[] = [];
function run(c: AnyCommand): void {
  now += 1;
  const d = decide(state, c, { now });
  if (!d.ok) throw new Error(`${c.type} rejected: ${d.rejection.code} ${d.rejection.message}`);
  state = evolveInPlace(state, d.events);
  events.push(...d.events);
}

const t0 = performance.now();
run(cmd('CreatePlan', { goal: 'a plan of many items', mode: 'execute', labels: {}, parent: null, items: batch(0, 1000) }));
for (let from = 1000; from < ITEMS; from += 1000) run(cmd('AddItems', { items: batch(from, Math.min(ITEMS, from + 1000)) }));
const step = (itemId: string, outcome: 'succeeded' | 'failed_terminal') => {
  run(cmd('RecordIntent', { itemId, executorId: 'ex', fencingToken: 1 }));
  run(cmd('CommitResult', { itemId, attempt: 1, outcome, outputJson: outcome === 'succeeded' ? '{"ok":true}' : null, error: outcome === 'succeeded' ? null : { code: 'BOOM', message: 'no', detailsJson: null }, durationMs: 1, executorId: 'ex', followUps: [] }));
  run(cmd('SettleItem', { itemId }));
};
for (let i = 0; i < 1000; i++) step(`n-${i}`, 'succeeded');
// Chain heads (every tenth item) past the completed ones.
const head = (fraction: number) => Math.max(1000, Math.floor((ITEMS * fraction) / 10) * 10);
for (let i = 0; i < 10; i++) step(`n-${head(0.1) + i * 10}`, 'failed_terminal');
for (let i = 0; i < 5; i++) run(cmd('RecordIntent', { itemId: `n-${head(0.2) + 100 + i * 10}`, executorId: 'ex', fencingToken: 1 }));
const built = performance.now() - t0;

const model = new ReadModel({ retainEvents: 1_000_000, loader: () => Promise.resolve(events) });
const projection = new PartitionProjection(0);
projection.seed(state!);
model.setPartition(0, projection);
const app = buildHttp({
  service: { model } as unknown as ProjectionService,
  logger: silentLogger(),
  tokens: compileTokens({ apiTokens: [{ token: TOKEN, principal: 'bench', scopes: ['read'] }] }),
  submitter: () => Promise.reject(new Error('read-only')),
  corsOrigins: [],
  ...HTTP_DEFAULTS,
});
await app.ready();

const routes: Array<[string, string]> = [
  ['plan, whole', `/api/plans/${PLAN}`],
  ['plan, items=none', `/api/plans/${PLAN}?items=none`],
  ['items, first page (100)', `/api/plans/${PLAN}/items`],
  ['items, last page (100)', `/api/plans/${PLAN}/items?offset=${ITEMS - 100}`],
  ['items, status=failed', `/api/plans/${PLAN}/items?status=failed`],
  ['items, status=pending at offset 50,000', `/api/plans/${PLAN}/items?status=pending&offset=50000`],
  ['items, 1,000', `/api/plans/${PLAN}/items?limit=1000`],
  ['audit, whole', `/api/plans/${PLAN}/audit`],
  ['audit, newest 100', `/api/plans/${PLAN}/audit?limit=100`],
  ['audit, 100 before seq 50,000', `/api/plans/${PLAN}/audit?limit=100&before=50000`],
];
const median = (xs: number[]) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rows: Array<{ route: string; bytes: number; ms: number }> = [];
for (const [name, url] of routes) {
  const times: number[] = [];
  let bytes = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${TOKEN}` } });
    times.push(performance.now() - t);
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
    bytes = res.rawPayload.length;
  }
  rows.push({ route: name, bytes, ms: Math.round(median(times) * 10) / 10 });
}
await app.close();
console.log(`plan of ${ITEMS} items, ${events.length} events (decided and folded in ${Math.round(built)} ms); medians of ${ROUNDS} rounds`);
console.table(rows);
