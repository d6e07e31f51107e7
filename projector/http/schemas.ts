// JSON schemas of the API's params, queries and bodies (fastify validates them with ajv before a handler runs).
// Their `description`s and `title`s are the API's reference (the OpenAPI document, docs/reference/http-api.md);
// no `default` keyword: ajv runs with useDefaults and would fill it in. The answers' schemas are in responses.ts.
import { PAYLOAD_NAME } from './item-view.js';

export const id = { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' } as const;
export const planParams = { type: 'object', required: ['id'], properties: { id: { ...id, description: 'The plan id' } } } as const;
export const itemParams = { type: 'object', required: ['id', 'itemId'], properties: { id: { ...id, description: 'The plan id' }, itemId: { ...id, description: 'The item id' } } } as const;
/** One payload of an item: `input`, `output`, `checkpoint`, `attempt-<n>`, `evidence-<i>`. */
export const payloadParams = {
  type: 'object',
  required: ['id', 'itemId', 'name'],
  properties: { ...itemParams.properties, name: { type: 'string', pattern: PAYLOAD_NAME, description: 'The payload: `input`, `output`, `checkpoint`, `attempt-<n>` (that attempt\'s own output) or `evidence-<i>` (0-based)' } },
} as const;
/** The recorded actor; accepted for compatibility, but the token's principal is what gets recorded. */
export const actor = { type: 'string', minLength: 1, maxLength: 256, description: "Ignored: the token's principal is recorded (accepted for older clients)" } as const;
const digest = { type: 'string', pattern: '^[0-9a-f]{64}$' } as const;
const text = (max: number, min = 0) => ({ type: 'string', ...(min ? { minLength: min } : {}), maxLength: max }) as const;


export const planListQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    status: { type: 'array', items: { type: 'string' }, description: 'Plan statuses, any of (repeated or comma-separated); `stalled` for stalled plans' },
    label: { type: 'array', items: { type: 'string' }, description: '`key:value`; repeated, every one must match' },
    q: { type: 'string', maxLength: 200, description: 'Text to find, case-insensitive, in the plan id, the goal or a label (`key:value`); at most 200 characters, no control characters' },
    limit: { type: 'integer', minimum: 1, maximum: 500, description: 'Plans per page (default 50)' },
    cursor: { type: 'string', maxLength: 1024, description: '`nextCursor` of the previous page' },
  },
} as const;

const seq = { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER } as const;
const pageLimit = { type: 'integer', minimum: 1, maximum: 1000 } as const;

/** `?items=none`: the plan without its items (header, counts, digest, seq, status). */
export const planQuery = { type: 'object', additionalProperties: false, properties: { items: { type: 'string', enum: ['all', 'none'], description: '`none`: the plan without its items (`state` is its header), the same few KB whatever its size' } } } as const;
/** A page of a plan's items in plan order; `status` any of (repeated or comma-separated), checked by the route. */
export const itemsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    offset: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Items to skip (default 0); `nextOffset` of the previous page' },
    limit: { ...pageLimit, description: 'Items per page (default 100)' },
    status: { type: 'array', maxItems: 16, items: { type: 'string', maxLength: 256 }, description: 'Item statuses, any of (repeated or comma-separated)' },
  },
} as const;
export const eventsQuery = { type: 'object', additionalProperties: false, properties: { fromSeq: { ...seq, description: 'The first seq (default 1); `nextSeq` of the previous page' }, limit: { ...pageLimit, description: 'At most this many events, with `nextSeq` (default: all)' } } } as const;
/** `limit` or `before` asks for a window of the timeline (newest first pages); neither: the whole audit. */
export const auditQuery = {
  type: 'object',
  additionalProperties: false,
  properties: {
    asOf: { type: 'string', maxLength: 64, description: 'The plan as of a seq (digits) or an ISO-8601 time (default: now)' },
    limit: { ...pageLimit, description: 'A window of the timeline: its newest `limit` events (default 100 when `before` is given)' },
    before: { ...seq, description: 'A window of the timeline: events before this seq; `page.nextBefore` of the newer window' },
  },
} as const;

export const itemSchema = {
  type: 'object',
  title: 'ItemSpec',
  description: 'An item of a new plan: the tool it runs, its input and the items it depends on.',
  required: ['id', 'tool'],
  additionalProperties: false,
  properties: {
    id,
    title: { ...text(1000), description: 'For a person' },
    why: { ...text(10_000), description: 'The context that explains why the item exists' },
    dependsOn: { type: 'array', items: id, description: 'Item ids that must complete first' },
    tool: { ...text(256, 1), description: 'The tool an executor runs' },
    input: { description: 'The tool input (any JSON)' },
    retry: {
      type: 'object',
      description: 'The retry policy: attempts and backoff (default: the default policy)',
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
    planId: { ...id, description: 'The plan id (default: a fresh one)' },
    goal: { ...text(10_000, 1), description: 'What the plan is for' },
    mode: { type: 'string', enum: ['propose', 'execute'], description: '`propose`: waits for approval of its digest; `execute`: runs' },
    labels: { type: 'object', additionalProperties: { type: 'string' }, description: 'Labels to list and filter plans by (`label=key:value`)' },
    items: { type: 'array', maxItems: 1000, items: itemSchema, description: 'The items, in plan order' },
    by: actor,
  },
} as const;

export const approveBody = { type: 'object', required: ['digest'], additionalProperties: false, properties: { digest: { ...digest, description: 'The digest approved (a stale one is a 409 STALE_DIGEST)' }, by: actor, comment: { ...text(10_000), description: "Recorded as the approval's note" } } } as const;
export const rejectBody = { type: 'object', required: ['reason'], additionalProperties: false, properties: { reason: { ...text(10_000, 1), description: 'Why, recorded with the rejection' }, by: actor, digest: { ...digest, description: 'The digest rejected' } } } as const;
export const cancelBody = { type: 'object', required: ['reason'], additionalProperties: false, properties: { reason: { ...text(10_000, 1), description: 'Why, recorded with the cancellation' }, by: actor } } as const;
export const signalParams = { type: 'object', required: ['id', 'name'], properties: { id: { ...id, description: 'The plan id' }, name: { ...id, description: 'The signal the items wait for' } } } as const;
/** A signal's data (any JSON value, null when left out) and its own id (its idempotency key). */
export const signalBody = {
  type: ['object', 'null'],
  additionalProperties: false,
  properties: { data: { description: 'The signal data (any JSON; null when left out)' }, signalId: { ...text(256, 1), description: 'Its id, the idempotency key (default: a fresh one)' }, by: actor },
} as const;
/** A fork: its point (a seq or an item id; the ledger checks it and names `at` when it is bad), new inputs by item id, its id and mode. */
export const forkBody = {
  type: 'object',
  required: ['at'],
  additionalProperties: false,
  properties: {
    at: { type: ['string', 'integer'], maxLength: 128, description: 'The fork point: a seq of the source plan, or an item id' },
    set: { type: 'object', maxProperties: 1000, description: 'New inputs for items that will run, by item id' },
    planId: { ...id, description: "The fork's id (default: a fresh one)" },
    mode: { type: 'string', enum: ['propose', 'execute'], description: "The fork's mode (default: the source's)" },
    by: actor,
  },
} as const;
export const retryBody = { type: ['object', 'null'], additionalProperties: false, properties: { by: actor } } as const;
