// JSON schemas of the API's params, queries and bodies (fastify validates them with ajv before a handler runs).

export const id = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } as const;
export const planParams = { type: 'object', required: ['id'], properties: { id } } as const;
export const itemParams = { type: 'object', required: ['id', 'itemId'], properties: { id, itemId: id } } as const;
/** The recorded actor; accepted for compatibility, but the token's principal is what gets recorded. */
export const actor = { type: 'string', minLength: 1, maxLength: 256 } as const;
const digest = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;
const text = (max: number, min = 0) => ({ type: 'string', ...(min ? { minLength: min } : {}), maxLength: max }) as const;

export const healthResponse = { 200: { type: 'object', additionalProperties: true }, 503: { type: 'object', additionalProperties: true } } as const;

export const planListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'array', items: { type: 'string' } },
    label: { type: 'array', items: { type: 'string' } },
    limit: { type: 'integer', minimum: 1, maximum: 500 },
    cursor: { type: 'string', maxLength: 1024 },
  },
} as const;

const seq = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
const pageLimit = { type: 'integer', minimum: 1, maximum: 1000 } as const;

/** `?items=none`: the plan without its items (header, counts, digest, seq, status). */
export const planQuery = { type: 'object', additionalProperties: false, properties: { items: { type: 'string', enum: ['all', 'none'] } } } as const;
/** A page of a plan's items in plan order; `status` any of (repeated or comma-separated), checked by the route. */
export const itemsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    limit: pageLimit,
    status: { type: 'array', maxItems: 16, items: { type: 'string', maxLength: 256 } },
  },
} as const;
export const eventsQuery = { type: 'object', additionalProperties: false, properties: { fromSeq: seq, limit: pageLimit } } as const;
/** `limit` or `before` asks for a window of the timeline (newest first pages); neither: the whole audit. */
export const auditQuery = { type: 'object', additionalProperties: false, properties: { asOf: { type: 'string', maxLength: 64 }, limit: pageLimit, before: seq } } as const;

export const itemSchema = {
  type: 'object',
  required: ['id', 'tool'],
  additionalProperties: false,
  properties: {
    id,
    title: text(1000),
    why: text(10_000),
    dependsOn: { type: 'array', items: id },
    tool: text(256, 1),
    input: {},
    retry: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxAttempts: { type: 'integer', minimum: 1, maximum: 100 },
        initialBackoffMs: { type: 'integer', minimum: 0 },
        backoffMultiplier: { type: 'number', minimum: 1 },
        maxBackoffMs: { type: 'integer', minimum: 0 },
      },
    },
  },
} as const;

export const createPlanBody = {
  type: 'object',
  required: ['goal', 'mode'],
  additionalProperties: false,
  properties: {
    planId: id,
    goal: text(10_000, 1),
    mode: { type: 'string', enum: ['propose', 'execute'] },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    items: { type: 'array', maxItems: 1000, items: itemSchema },
    by: actor,
  },
} as const;

export const approveBody = { type: 'object', required: ['digest'], additionalProperties: false, properties: { digest, by: actor, comment: text(10_000) } } as const;
export const rejectBody = { type: 'object', required: ['reason'], additionalProperties: false, properties: { reason: text(10_000, 1), by: actor, digest } } as const;
export const cancelBody = { type: 'object', required: ['reason'], additionalProperties: false, properties: { reason: text(10_000, 1), by: actor } } as const;
export const signalParams = { type: 'object', required: ['id', 'name'], properties: { id, name: id } } as const;
/** A signal's data (any JSON value, null when left out) and its own id (its idempotency key). */
export const signalBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { data: {}, signalId: text(256, 1), by: actor },
} as const;
/** A fork: its point (a seq or an item id; the ledger checks it and names `at` when it is bad), new inputs by item id, its id and mode. */
export const forkBody = {
  type: 'object',
  required: ['at'],
  additionalProperties: false,
  properties: {
    at: { type: ['string', 'integer'], maxLength: 128 },
    set: { type: 'object', maxProperties: 1000 },
    planId: id,
    mode: { type: 'string', enum: ['propose', 'execute'] },
    by: actor,
  },
} as const;
export const retryBody = { type: ['object', 'null'], additionalProperties: false, properties: { by: actor } } as const;
