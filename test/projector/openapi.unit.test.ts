// The API's OpenAPI document against the app it describes (built without Kafka): every route fastify
// registered is in it and nothing else, the scope each operation names is the one its hook enforces, it is
// served at GET /api/openapi.json behind a read token, and a request that fails a route's schema gets the
// API's error format with the field named.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { buildOfflineHttp, type OfflineHttpOptions } from '../../projector/http/offline.js';
import { hoist, type OpenApiDocument, type Operation } from '../../projector/http/openapi.js';

const READ = 'reader-token-0123456789';
const WRITE = 'writer-token-0123456789';
const auth = { apiTokens: [{ token: READ, principal: 'reader', scopes: ['read'] as const }, { token: WRITE, principal: 'writer', scopes: ['write'] as const }] };
const ORIGIN = 'https://dashboard.example';

const apps: Array<ReturnType<typeof buildOfflineHttp>> = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((a) => a.close()));
});

async function app(opts: OfflineHttpOptions = {}) {
  const a = buildOfflineHttp({ auth, corsOrigins: [ORIGIN], ...opts });
  apps.push(a);
  await a.ready();
  return a;
}

async function documentOf(a: Awaited<ReturnType<typeof app>>): Promise<OpenApiDocument> {
  const res = await a.inject({ method: 'GET', url: '/api/openapi.json', headers: { authorization: `Bearer ${READ}` } });
  expect(res.statusCode).toBe(200);
  return res.json<OpenApiDocument>();
}

const operations = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([path, byMethod]) => Object.entries(byMethod).map(([m, op]) => ({ method: m.toUpperCase(), path, op: op as Operation })));

/** fastify's route table (`printRoutes`, a radix tree) as "METHOD /url" lines, without the HEAD twins of GET routes. */
function routeTable(tree: string): string[] {
  const out: string[] = [];
  const prefixes: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^([│├└─\s]*)(\S+?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    const path = (prefixes[depth - 1] ?? '') + m[2]!;
    prefixes.length = depth;
    prefixes[depth] = path;
    for (const method of (m[3] ?? '').split(',').map((s) => s.trim())) if (method && method !== 'HEAD') out.push(`${method} ${path}`);
  }
  return out.sort();
}

/** A concrete URL for an OpenAPI path. */
const urlOf = (path: string) => path.replace(/\{[^}]+\}/g, 'p1').replace('/*', '/anything');

describe('the OpenAPI document', () => {
  it("lists every route in fastify's route table, and only those", async () => {
    const a = await app();
    const doc = await documentOf(a);
    const table = routeTable(a.printRoutes({ commonPrefix: false }));
    expect(table.length).toBeGreaterThanOrEqual(24);
    expect(operations(doc).map((o) => `${o.method} ${o.path.replace(/\{([^}]+)\}/g, ':$1')}`).sort()).toEqual(table);
    for (const { method, path, op } of operations(doc)) {
      expect(op.summary, `${method} ${path} has a summary`).toBeTruthy();
      expect(op.tags?.length, `${method} ${path} has a tag`).toBe(1);
    }
    // Without CORS origins there is no preflight route, and the document says so.
    const closed = await documentOf(await app({ corsOrigins: [] }));
    expect(closed.paths['/*']).toBeUndefined();
    expect(Object.keys(closed.paths)).toHaveLength(Object.keys(doc.paths).length - 1);
  });

  it('is OpenAPI 3.1 with every $ref resolving to a named shape', async () => {
    const doc = await documentOf(await app());
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+/);
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const r of new Set(refs)) expect(doc.components.schemas, r).toHaveProperty(r);
    // Errors have one shape, named once.
    expect(doc.paths['/api/plans']!['post']!.responses['400']!.content!['application/json']!.schema).toEqual({ $ref: '#/components/schemas/Error' });
  });

  it('is served at GET /api/openapi.json with a read token, like every /api route', async () => {
    const a = await app();
    expect((await a.inject({ method: 'GET', url: '/api/openapi.json' })).json()).toEqual({ error: 'unauthorized', message: 'missing bearer token (Authorization: Bearer <token>)' });
    const doc = await documentOf(a);
    expect(doc.paths['/api/openapi.json']!['get']!.security).toEqual([{ bearer: ['read'] }]);
    // Open reads open it too (the docs generator reads it that way).
    const open = await app({ auth: { openReads: true } });
    expect((await open.inject({ method: 'GET', url: '/api/openapi.json' })).statusCode).toBe(200);
  });

  it('names the scope each route enforces', async () => {
    const a = await app();
    const ops = operations(await documentOf(a));
    const scoped = ops.filter((o) => o.op.security.length > 0);
    expect(scoped.filter((o) => o.op.security[0]!['bearer']![0] === 'write').map((o) => `${o.method} ${o.path}`)).toHaveLength(7);
    for (const { method, path, op } of ops) {
      const url = urlOf(path);
      const scope = op.security[0]?.['bearer']?.[0];
      const none = await a.inject({ method: method as 'GET', url, headers: { origin: ORIGIN } });
      if (scope === undefined) {
        expect([401, 403], `${method} ${path} is open`).not.toContain(none.statusCode);
        continue;
      }
      expect(none.statusCode, `${method} ${path} without a token`).toBe(401);
      expect(op.responses['401']).toBeDefined();
      const [other, holder] = scope === 'read' ? [WRITE, 'writer'] : [READ, 'reader'];
      const wrong = await a.inject({ method: method as 'GET', url, headers: { authorization: `Bearer ${other}` } });
      expect(wrong.json(), `${method} ${path} with a token without ${scope}`).toEqual({ error: 'forbidden', message: `the token of ${holder} has no ${scope} scope` });
    }
  });

  it('describes the parameters and bodies the routes validate', async () => {
    const doc = await documentOf(await app());
    const items = doc.paths['/api/plans/{id}/items']!['get']!;
    expect(items.parameters!.map((p) => `${p.in}:${p.name}${p.required ? '!' : ''}`)).toEqual(['path:id!', 'query:offset', 'query:limit', 'query:status']);
    expect(items.parameters!.find((p) => p.name === 'limit')!.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000 });
    const create = doc.paths['/api/plans']!['post']!;
    expect(create.requestBody!.required).toBe(true);
    expect(create.responses['202']).toBeDefined();
    // A signal's body may be left out (null data).
    expect(doc.paths['/api/plans/{id}/signals/{name}']!['post']!.requestBody!.required).toBe(false);
  });
});

describe('requests that fail a route schema', () => {
  it('get the API error format, naming the field', async () => {
    const a = await app();
    const write = { authorization: `Bearer ${WRITE}` };
    const read = { authorization: `Bearer ${READ}` };
    const goal = await a.inject({ method: 'POST', url: '/api/plans', headers: write, payload: { goal: 42, mode: 'execute' } });
    expect(goal.statusCode).toBe(400);
    expect(goal.json()).toEqual({ error: 'bad_request', field: 'goal', message: 'body: goal must be string' });
    const extra = await a.inject({ method: 'POST', url: '/api/plans/p1/cancel', headers: write, payload: { reason: 'stop', force: true } });
    expect(extra.json()).toEqual({ error: 'bad_request', field: 'force', message: 'body: force is not allowed' });
    const limit = await a.inject({ method: 'GET', url: '/api/plans/p1/items?limit=5000', headers: read });
    // The example the reference page gives.
    expect(limit.json()).toEqual({ error: 'bad_request', field: 'limit', message: 'querystring: limit must be <= 1000' });
    const id = await a.inject({ method: 'GET', url: '/api/plans/bad%20id', headers: read });
    expect(id.statusCode).toBe(400);
    expect(id.json()).toMatchObject({ error: 'bad_request', field: 'id' });
  });

  it('and valid requests are answered as before: a field no schema names is still sent', async () => {
    const a = await app({ auth: { openReads: true } });
    expect((await a.inject({ method: 'GET', url: '/api/whoami' })).json()).toEqual({ principal: null, scopes: ['read'] });
    const health = await a.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toEqual({ status: 'ok', reason: null, partitions: [], plans: {}, dlqRecords: 0 });
    expect((await a.inject({ method: 'GET', url: '/api/plans?status=running' })).json()).toEqual({ plans: [], nextCursor: null, total: 0, version: 0 });
    expect((await a.inject({ method: 'GET', url: '/api/plans/p1' })).json()).toEqual({ error: 'not_found', message: 'plan p1 is not known to this projector' });
    // What is not JSON is sent as it is, whatever its schema says.
    const page = await a.inject({ method: 'GET', url: '/' });
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).toBe(readFileSync(new URL('../../projector/public/index.html', import.meta.url), 'utf8'));
    const metrics = await a.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.body).toContain('# HELP plan_ledger_projector_');
  });
});

describe('named shapes', () => {
  it('are hoisted once, and two different shapes with one title fail', () => {
    const named: Record<string, Record<string, unknown>> = {};
    const shape = { type: 'object', title: 'A', properties: { b: { type: 'string', title: 'B' } } };
    expect(hoist({ type: 'array', items: shape }, named)).toEqual({ type: 'array', items: { $ref: '#/components/schemas/A' } });
    expect(named['A']).toEqual({ type: 'object', title: 'A', properties: { b: { $ref: '#/components/schemas/B' } } });
    expect(() => hoist({ type: 'string', title: 'A' }, named)).toThrow('two different schemas are titled A');
  });
});
