// Hostile commands through the projector's HTTP API (POST routes, bearer token), against the real stack
// with an executor in a child process. The property for every generated case: one of the answers listed
// for it (test/hostile/commands.ts `http` for the plan bodies): a 4xx with a listed error, a 409 with a
// listed rejection code, or 202 for a plan that then completes (valid) or fails with a listed code; an
// invalid command accepted and completed, a code not listed, a 5xx or a hang is a violation; the same partition then serves a normal plan (time recorded in
// test-results/hostile.json); no attempt key invoked twice; every plan verifies at the end.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { startProjector, type ProjectorHandle } from '../../projector/index.js';
import { partitionFor } from '../../src/kafka/partitioner.js';
import { testLogger } from '../support/helpers.js';
import { cleanup } from '../projector/support.js';
import { jsonBody, sampleCommands } from './commands.js';
import { endingOfPlan, hostileStack, judge, maxInvocationsPerAttempt, recordResults, runCases, violations, type CaseRow, type Ending, type Expected, type HostileStack } from './support.js';

const SEED = 90_002;
const TOKEN = 'hostile-token-0123456789';
const rows: CaseRow[] = [];
let extra: Record<string, unknown> = {};
afterAll(() => recordResults('HTTP API (test/hostile/http.e2e.test.ts)', rows, extra));

async function post(p: ProjectorHandle, path: string, body: string): Promise<{ status: number; json: Record<string, unknown> | null; text: string }> {
  const res = await fetch(`${p.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  let json: Record<string, unknown> | null = null;
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: judged below
  }
  return { status: res.status, json, text: text.slice(0, 300) };
}

/** What an HTTP answer ends as (202: the plan must end too). */
async function endingOfAnswer(s: HostileStack, planId: string | null, r: Awaited<ReturnType<typeof post>>): Promise<Ending> {
  const error = typeof r.json?.['error'] === 'string' ? (r.json['error'] as string) : null;
  if (r.status === 202 && planId !== null) return endingOfPlan(s, planId);
  if (r.status === 202) return { kind: 'http', status: 202, error: 'accepted' };
  if (r.status === 409 && error === 'rejected' && typeof r.json?.['code'] === 'string') return { kind: 'rejected', code: r.json['code'] as string };
  if (r.status >= 400 && r.status < 500 && error !== null) return { kind: 'http', status: r.status, error, ...(typeof r.json?.['code'] === 'string' ? { code: r.json['code'] as string } : {}) };
  return { kind: 'violation', message: `HTTP ${r.status}: ${r.text}` };
}

interface HttpCase {
  readonly name: string;
  readonly path: (s: HostileStack) => string;
  readonly body: string;
  /** The plan a 202 creates (it must then end), when the route creates one. */
  readonly planId: string | null;
  /** Sent twice (a duplicate plan id). */
  readonly twice?: boolean;
  readonly partition: (partitions: number) => number;
  /** The answers this case accepts. */
  readonly expected: readonly Expected[];
}

const badRequest: Expected = { kind: 'http', status: 400, errors: ['bad_request'] };
const notFound: Expected = { kind: 'http', status: 404, errors: ['not_found'] };
/** fastify's router answers before the API's handlers, in its own shape (`error` is the status text). */
const routerRefused = (status: number): Expected => ({ kind: 'http', status, errors: ['Bad Request'] });

/** Each stack gets its projector (the HTTP API under test). */
const projectors = new WeakMap<HostileStack, ProjectorHandle>();
async function stackWithApi(): Promise<HostileStack> {
  const s = await hostileStack();
  const projector = await startProjector({ config: s.config, logger: testLogger, port: 0, apiToken: TOKEN, watermarkIntervalMs: 500, defaultMetrics: false });
  cleanup(() => projector.stop());
  projectors.set(s, projector);
  // A proposed plan for the plan-command routes.
  await s.ledger.createPlan({ planId: TARGET, goal: 'a proposed plan', mode: 'propose', items: [{ id: 'a', title: 'a', why: 'a', tool: 'counted', input: {} }] });
  await s.ledger.propose(TARGET);
  return s;
}

const TARGET = 'hz-http-target';

function httpCases(): HttpCase[] {
  const out: HttpCase[] = [];
  // POST /api/plans: the same generated commands as through the client.
  for (const c of sampleCommands(2, SEED)) {
    const { __twice, ...input } = c.input as Record<string, unknown> & { __twice?: boolean };
    const body = jsonBody(c, input);
    out.push({ name: `POST /api/plans: ${c.name} (${body.length} bytes)`, path: () => '/api/plans', body, planId: c.planId, twice: __twice === true, partition: (n) => partitionFor(c.planId, n), expected: c.http });
  }
  // The plan-command routes with hostile bodies and ids: the proposed plan, and ids that do not exist.
  const routes = ['approve', 'reject', 'cancel', 'items/a/retry', 'items/%00/retry'];
  // [path segment, the id it stands for]; '%ED%A0%80' is a lone surrogate's bytes (not UTF-8).
  const ids: Array<[string, string]> = [[TARGET, TARGET], ['no-such-plan', 'no-such-plan'], ['%ED%A0%80x', '\ud800x'], [encodeURIComponent('\u202eevil'), '\u202eevil'], ['x'.repeat(300), 'x'.repeat(300)]];
  const bodies = fc.sample(fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.record({ digest: fc.string(), by: fc.string({ unit: 'binary' }), reason: fc.string({ unit: 'binary' }) })), { numRuns: 8, seed: SEED });
  bodies.forEach((b, i) => {
    const [segment, id] = ids[i % ids.length]!;
    const route = routes[i % routes.length]!;
    const body = JSON.stringify(b) ?? 'null';
    // A path that is not UTF-8 is refused by the router (400 FST_ERR_BAD_URL), an id past the router's
    // parameter length by it too (414); otherwise every generated body breaks its route's schema (a record
    // of digest, by and reason fits none of them; a bare JSON value is not an object of the route's
    // fields): 400, or 404 for a well-formed id no plan has.
    const expected: Expected[] = segment.startsWith('%ED%A0%80') ? [routerRefused(400)] : id.length > 128 ? [routerRefused(414)] : [badRequest, notFound];
    out.push({ name: `POST /api/plans/${segment.slice(0, 40)}/${route} ${body.slice(0, 80)}`, path: () => `/api/plans/${segment}/${route}`, body, planId: null, partition: (n) => partitionFor(id, n), expected });
  });
  // Raw bodies that are not JSON, or JSON of the wrong shape, or nested 5,000 levels.
  for (const raw of ['{', 'null', '[]', '"x"', '\u0000', '{"goal":"g","mode":"execute","items":[' + '['.repeat(5000) + ']'.repeat(5000) + ']}']) {
    out.push({ name: `POST /api/plans raw body ${JSON.stringify(raw.slice(0, 40))} (${raw.length} bytes)`, path: () => '/api/plans', body: raw, planId: null, partition: () => 0, expected: [badRequest] });
  }
  return out;
}

describe('hostile commands through the HTTP API', () => {
  it('every generated POST ends in a coded answer or a plan that ends, and its partition serves the next plan', { timeout: 900_000 }, async () => {
    const cases = httpCases();
    const stacks = await runCases(cases, rows, stackWithApi, async (s, c) => {
      const projector = projectors.get(s)!;
      let r = await post(projector, c.path(s), c.body).catch((e: unknown) => ({ status: 0, json: null, text: String(e) }));
      if (c.twice && r.status === 202) r = await post(projector, c.path(s), c.body);
      return { ending: judge(await endingOfAnswer(s, c.planId, r), c.expected), partition: c.partition(s.config.partitions) };
    });
    const invocations = maxInvocationsPerAttempt(...stacks.map((s) => s.effects));
    const broken: string[] = [];
    for (const s of stacks) broken.push(...(await s.ledger.verify({ all: true })).filter((v) => !v.ok).map((v) => v.planId));
    extra = { seed: SEED, stacks: stacks.length, maxInvocationsPerAttempt: invocations, verifyAllBroken: broken };
    expect(violations(rows)).toEqual([]);
    expect(invocations.max).toBe(1);
    expect(broken).toEqual([]);
  });
});
