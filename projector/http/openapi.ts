// The API's OpenAPI 3.1 document, built from the routes as fastify registers them (its onRoute hook): each
// route's method, path and schema (summary, description, tags, params, querystring, body, response) and the
// scope its token needs (`config.scope`, set by guardRoutes in auth.ts). Nothing is declared twice: the
// document is what the routes validate and enforce, and a route without a schema is still listed.
// Served at GET /api/openapi.json; docs/reference/http-api.md is generated from it (scripts/docs.ts).
import type { RouteOptions } from 'fastify';
import type { Scope } from '../../src/api-tokens.js';
import { errorJson } from './responses.js';

type Schema = Record<string, unknown>;

interface RouteSchema {
  summary?: string;
  description?: string;
  tags?: string[];
  params?: Schema;
  querystring?: Schema;
  body?: Schema;
  response?: Record<string, Schema>;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query';
  required: boolean;
  description?: string;
  schema: Schema;
}

export interface MediaType {
  schema: Schema;
}

export interface Response {
  description: string;
  content?: Record<string, MediaType>;
}

export interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  /** `[{ bearer: [scope] }]` for a route that needs a token with that scope; `[]` for an open route. */
  security: Array<Record<string, string[]>>;
  parameters?: Parameter[];
  requestBody?: { required: boolean; content: Record<string, MediaType> };
  responses: Record<string, Response>;
}

export interface OpenApiDocument {
  openapi: '3.1.0';
  info: { title: string; version: string; description: string };
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, Schema>; schemas: Record<string, Schema> };
}

export const API_DESCRIPTION =
  "The projector's HTTP API (`plan-ledger projector`, or `startProjector`): plans, their events and audits read from the projection, commands submitted through the ledger, the operator's views, and the dashboard. " +
  'Every /api route needs a bearer token with the scope its operation names (`read` or `write`); /healthz, /metrics and the dashboard\'s files are open. ' +
  'Errors are JSON, `{ error, message }`, with `field` naming the parameter or body field at fault in a 400.';

export const TOKEN_DESCRIPTION =
  '`Authorization: Bearer <token>`, never in the URL. No token, or none configured, is a 401; an unknown token, or one without the route\'s scope, is a 403 naming the scope. ' +
  'Tokens have a principal and scopes (`read`, `write`) and come from PLAN_LEDGER_API_TOKENS_FILE (or `startProjector({ apiTokens })`); the older PLAN_LEDGER_API_TOKEN is a read+write token of the principal `api-token`. ' +
  'The actor recorded on every command sent through the API (`by`, the approver) is the token\'s principal. PLAN_LEDGER_API_OPEN_READS=true opens the `read` routes without a token (local development only).';

export const TAGS = [
  { name: 'plans', description: 'Reads over the projection: the plan list, one plan, its items, events and audit, the live stream (a `read` token).' },
  { name: 'commands', description: 'Commands submitted through the ledger client, answered once the owning executor decided (a `write` token).' },
  { name: 'operations', description: "The operator's views, health, metrics and this document." },
  { name: 'dashboard', description: "The dashboard's files (projector/public), open." },
];

/** `/api/plans/:id` as OpenAPI writes it: `/api/plans/{id}`. */
export const openApiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

const methodsOf = (route: RouteOptions) => (Array.isArray(route.method) ? route.method : [route.method]).map((m) => String(m).toUpperCase());

/**
 * Collects the routes of an app (`app.addHook('onRoute', c.onRoute)`, added before any route) and builds
 * the document from them. The document is built when asked, after the app is ready: the hooks of the
 * routes' own plugins (guardRoutes) set their scope after this one saw them.
 */
export function openApiCollector(info: { version: string }) {
  const routes: RouteOptions[] = [];
  return {
    onRoute(route: RouteOptions): void {
      routes.push(route);
    },
    document(): OpenApiDocument {
      return buildDocument(routes, info.version);
    },
  };
}

function buildDocument(routes: readonly RouteOptions[], version: string): OpenApiDocument {
  const schemas: Record<string, Schema> = {};
  const paths: OpenApiDocument['paths'] = {};
  for (const route of routes) {
    // fastify adds a HEAD route beside every GET route: the GET operation stands for both.
    for (const method of methodsOf(route).filter((m) => m !== 'HEAD')) {
      const path = openApiPath(route.url);
      const op = operation((route.schema ?? {}) as RouteSchema, route.config?.scope);
      (paths[path] ??= {})[method.toLowerCase()] = hoistOperation(op, schemas);
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'plan-ledger projector API', version, description: API_DESCRIPTION },
    tags: TAGS,
    paths,
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: TOKEN_DESCRIPTION } },
      schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))),
    },
  };
}

const isObject = (v: unknown): v is Schema => typeof v === 'object' && v !== null && !Array.isArray(v);

function parameters(schema: Schema | undefined, where: 'path' | 'query'): Parameter[] {
  if (!schema || !isObject(schema['properties'])) return [];
  const required = new Set((schema['required'] as string[] | undefined) ?? []);
  return Object.entries(schema['properties']).map(([name, s]) => {
    const { description, ...rest } = s as Schema;
    return { name, in: where, required: where === 'path' || required.has(name), ...(typeof description === 'string' ? { description } : {}), schema: rest };
  });
}

/** A body is optional when its schema allows null (fastify then passes no body as null). */
const allowsNull = (s: Schema) => s['type'] === 'null' || (Array.isArray(s['type']) && s['type'].includes('null'));

function operation(schema: RouteSchema, scope: Scope | undefined): Operation {
  const params = [...parameters(schema.params, 'path'), ...parameters(schema.querystring, 'query')];
  const responses: Record<string, Response> = {};
  for (const [status, r] of Object.entries(schema.response ?? {})) {
    if (isObject(r['content'])) responses[status] = { description: String(r['description'] ?? ''), content: r['content'] as Record<string, MediaType> };
    else {
      // `{ description }` alone: an answer without a body (a 204).
      const { description, ...rest } = r;
      responses[status] = { description: String(description ?? ''), ...(Object.keys(rest).length ? { content: { 'application/json': { schema: rest } } } : {}) };
    }
  }
  // What every route of its kind may answer besides its own answers (errors.ts, auth.ts, fastify's limits).
  const generic: Record<string, Response> = {};
  if (schema.params || schema.querystring || schema.body) generic['400'] = errorJson('A parameter or body field fails its schema (`bad_request`, `field` names it)');
  if (scope) {
    generic['401'] = errorJson('No bearer token, or no token configured (`unauthorized`)');
    generic['403'] = errorJson(`A wrong token, or one without the \`${scope}\` scope (\`forbidden\`)`);
  }
  if (schema.body) generic['413'] = errorJson('The body is over PLAN_LEDGER_API_BODY_LIMIT bytes (`payload_too_large`)');
  generic['500'] = errorJson('An internal error (`internal`)');
  for (const [status, r] of Object.entries(generic)) responses[status] ??= r;
  const body = schema.body;
  return {
    ...(schema.summary ? { summary: schema.summary } : {}),
    ...(schema.description ? { description: schema.description } : {}),
    ...(schema.tags ? { tags: schema.tags } : {}),
    security: scope ? [{ bearer: [scope] }] : [],
    ...(params.length ? { parameters: params } : {}),
    ...(body ? { requestBody: { required: !allowsNull(body), content: { 'application/json': { schema: body } } } } : {}),
    responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b))),
  };
}

// ---------------------------------------------------------------------------------------------------
// Named shapes: a schema with a `title` goes to components.schemas once and is referenced from there.

const SUBSCHEMA_MAPS = ['properties', 'patternProperties'];
const SUBSCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const SUBSCHEMAS = ['items', 'additionalProperties', 'not', 'contains'];

/** The schema with every titled subschema (itself included) replaced by a `$ref` into `named`. */
export function hoist(schema: Schema, named: Record<string, Schema>): Schema {
  const out: Schema = { ...schema };
  for (const k of SUBSCHEMA_MAPS) if (isObject(out[k])) out[k] = Object.fromEntries(Object.entries(out[k]).map(([n, s]) => [n, isObject(s) ? hoist(s, named) : s]));
  for (const k of SUBSCHEMA_LISTS) if (Array.isArray(out[k])) out[k] = (out[k] as unknown[]).map((s) => (isObject(s) ? hoist(s, named) : s));
  for (const k of SUBSCHEMAS) if (isObject(out[k])) out[k] = hoist(out[k], named);
  const title = out['title'];
  if (typeof title !== 'string') return out;
  const known = named[title];
  if (known !== undefined && JSON.stringify(known) !== JSON.stringify(out)) throw new Error(`OpenAPI: two different schemas are titled ${title}`);
  named[title] = out;
  return { $ref: `#/components/schemas/${title}` };
}

function hoistOperation(op: Operation, named: Record<string, Schema>): Operation {
  const media = (content: Record<string, MediaType>) => Object.fromEntries(Object.entries(content).map(([type, m]) => [type, { ...m, schema: hoist(m.schema, named) }]));
  return {
    ...op,
    ...(op.parameters ? { parameters: op.parameters.map((p) => ({ ...p, schema: hoist(p.schema, named) })) } : {}),
    ...(op.requestBody ? { requestBody: { ...op.requestBody, content: media(op.requestBody.content) } } : {}),
    responses: Object.fromEntries(Object.entries(op.responses).map(([s, r]) => [s, r.content ? { ...r, content: media(r.content) } : r])),
  };
}
