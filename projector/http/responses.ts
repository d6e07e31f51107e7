// JSON schemas of what the routes answer, as their handlers build it. They describe the API (the OpenAPI
// document, docs/reference/http-api.md); they do not shape it: the app serializes every answer with
// JSON.stringify (index.ts), so a field a schema leaves out is still sent. A schema with a `title` is one
// named shape of the document (components.schemas).
import { ItemStatus, PlanStatus } from '../../src/plan/index.js';

type Schema = Record<string, unknown>;

const d = (description?: string) => (description ? { description } : {});
const str = (description?: string) => ({ type: 'string', ...d(description) });
const int = (description?: string) => ({ type: 'integer', ...d(description) });
const bool = (description?: string) => ({ type: 'boolean', ...d(description) });
/** The same type, or null (a named shape stays itself: `anyOf` it and null). */
const orNull = (s: Schema) => (typeof s['type'] === 'string' && s['title'] === undefined ? { ...s, type: [s['type'], 'null'] } : { anyOf: [s, { type: 'null' }] });
const arr = (items: Schema, description?: string) => ({ type: 'array', items, ...d(description) });
const map = (values: Schema, description?: string) => ({ type: 'object', additionalProperties: values, ...d(description) });
/** An object: every property is required unless listed in `optional`. */
const obj = <P extends Record<string, Schema>>(properties: P, opts: { title?: string; description?: string; optional?: readonly string[]; open?: boolean } = {}) => ({
  type: 'object',
  ...(opts.title ? { title: opts.title } : {}),
  ...d(opts.description),
  required: Object.keys(properties).filter((k) => !opts.optional?.includes(k)),
  properties,
  ...(opts.open ? {} : { additionalProperties: false }),
});
const ms = (what: string) => int(`${what} (epoch milliseconds)`);
const offset = (description: string) => str(`${description}; a Kafka offset as a decimal string`);

/** An answer with a JSON body. */
export const json = (description: string, schema: Schema) => ({ description, content: { 'application/json': { schema } } });
/** An answer that is not JSON (a page, a stream, metrics): a string of `type`. */
export const textOf = (description: string, type: string) => ({ description, content: { [type]: { schema: { type: 'string' } } } });

// ---------------------------------------------------------------------------------------------------
// Errors (errors.ts, auth.ts)

/** Every error the API answers: `error` is the kind, `message` says what happened. */
export const errorShape = obj(
  {
    error: str('The kind: bad_request, unauthorized, forbidden, not_found, payload_too_large, rejected, conflict, validation, timeout, unavailable, submit_failed, bad_gateway, internal'),
    message: str('What happened, for a person'),
    field: orNull(str('The parameter or body field at fault (a 400 names it; a rejected command, when the ledger names one)')),
    code: str("The ledger's rejection code of a 409 (STALE_DIGEST, PLAN_FINISHED, NOT_WAITING ...)"),
  },
  { title: 'Error', description: 'The body of every error answer (projector/http/errors.ts, auth.ts).', optional: ['field', 'code'], open: true },
);
export const errorJson = (description: string) => json(description, errorShape);
export const planNotFound = errorJson('The projector does not know the plan (`not_found`)');

// ---------------------------------------------------------------------------------------------------
// Plans

const planStatus = { type: 'string', title: 'PlanStatus', description: "A plan's status.", enum: Object.values(PlanStatus) };
const itemStatus = { type: 'string', title: 'ItemStatus', description: "An item's status.", enum: Object.values(ItemStatus) };
const counts = obj(Object.fromEntries(Object.values(ItemStatus).map((s) => [s, int()])), { title: 'ItemCounts', description: 'Items per status.' });

const stallSummary = obj(
  { code: str(), reason: str(), message: str(), offset: offset('The record that stalled the plan'), heldEvents: int('Records of the plan held back since') },
  { title: 'StallSummary', description: 'Why a plan is stalled: a record of it could not be decoded or applied (it went to the DLQ).' },
);
const stall = obj(
  { ...stallSummary.properties, seq: orNull(int('The seq the record claimed, if readable')), lastHeldOffset: orNull(offset('The last record held back')) },
  { title: 'Stall', description: 'A stalled plan: the record that stalled it and the records held back since.' },
);
const parentRef = obj({ planId: str(), itemId: str('The item that delegated to this plan') }, { title: 'ParentRef', open: true });

/** The fields a plan's list entry and its state share. */
const planHeader = {
  planId: str(),
  goal: str(),
  mode: orNull({ type: 'string', enum: ['propose', 'execute'] }),
  status: planStatus,
  labels: map(str()),
  parent: orNull(parentRef),
};

export const planSummary = obj(
  {
    ...planHeader,
    seq: int('Events applied'),
    digest: str('What an operator approves'),
    createdAt: orNull(ms('Created')),
    updatedAt: ms('Last event'),
    progress: obj({ total: int(), pending: int(), running: int(), completed: int(), failed: int(), cancelled: int() }, { description: 'Items by state (running: in progress or result committed)' }),
    stalled: orNull(stallSummary),
  },
  { title: 'PlanSummary', description: 'A plan as the list shows it.' },
);

const planStateFields = {
  ...planHeader,
  digest: str('Digest of what an operator reviews, for the current items'),
  approvedDigest: orNull(str()),
  approvals: arr({ type: 'object' }, 'Approvals and rejections of the plan: decision, digest, by, at, seq, note'),
  seq: int('Events applied (the seq of the last one)'),
  lastHash: str('Hash of the last event (the chain head)'),
  rejections: arr({ type: 'object' }, 'The newest rejected commands: seq, at, commandId, commandType, code, message, field'),
  createdAt: orNull(ms('Created')),
  updatedAt: ms('Last event'),
};
const planStateOptional = ['signals', 'forkedFrom', 'rejectionCount'];

/** The whole plan, shown: payloads decrypted when the projector holds the plan's key, secret fields "[secret]". */
const planState = obj(
  {
    ...planStateFields,
    items: map({ type: 'object', description: 'An item (see ItemState)' }, 'The items by id'),
    itemOrder: arr(str(), 'Item ids in the order they were added'),
    appliedCommandIds: map(int(), 'Client command id → seq of the first event it caused'),
    rejectionCount: int('Every rejection recorded, once more than the kept window were'),
    signals: map(int(), 'Signal id → seq of its first ItemSignalled'),
    forkedFrom: { type: 'object', description: 'A fork: the source plan, the fork point and its hash there' },
  },
  { title: 'PlanState', description: "The plan's state as folded from its events (src/plan/state.ts), shown: payloads decrypted when the projector holds the plan's key, secret fields \"[secret]\". Fields not listed here may be present.", optional: planStateOptional, open: true },
);

const planHeaderShape = obj(
  {
    ...planStateFields,
    rejectionCount: int('Rejections the plan holds (`rejections` has the newest 50)'),
    itemCount: int('Items in the plan'),
    counts,
    signals: planState.properties.signals,
    forkedFrom: planState.properties.forkedFrom,
  },
  { title: 'PlanHeader', description: 'The plan without what grows with it: no items, itemOrder or appliedCommandIds, the newest 50 rejections; the item count and counts per status instead.', optional: ['signals', 'forkedFrom'], open: true },
);

const itemState = obj(
  {
    id: str(),
    title: str(),
    why: str(),
    tool: str(),
    dependsOn: arr(str()),
    inputJson: str('The tool input as JSON text (shown: decrypted, secret fields "[secret]")'),
    status: itemStatus,
    addedSeq: int(),
    addedAt: ms('Added'),
    followUpOf: orNull(str('The item whose tool returned this one as a follow-up')),
    attempts: arr({ type: 'object' }, 'Its attempts: intent, then result'),
    retryAt: orNull(ms('A scheduled retry may not start before')),
    attemptBase: int('Attempts made before the last manual retry'),
    outputJson: orNull(str('The completed attempt\'s output as JSON text, shown; the same name in the library (PlanState), `show --json` and MCP (`plan_show`, `plan_wait`)')),
    failure: orNull({ type: 'object', description: 'Why it failed: reason and error' }),
  },
  { title: 'ItemState', description: 'An item of a plan (src/plan/state.ts), shown. Fields not listed here (checkpoint, evidence, retry ...) may be present.', open: true },
);

const relation = (seqNote: string) => ({ planId: str(), seq: orNull(int(seqNote)), status: orNull(planStatus), goal: str() });

export const planShape = obj(
  {
    planId: str(),
    partition: int('The events partition of the plan'),
    lastOffset: orNull(offset('The last record applied (null for a cold plan)')),
    summary: planSummary,
    stalled: orNull(stall),
    stateDigest: orNull(str('Digest of the whole state (not with items=none: it hashes every item)')),
    items: { type: 'string', enum: ['none'], description: 'Only with items=none' },
    state: orNull({ anyOf: [planState, planHeaderShape], description: 'The plan (PlanState); with items=none its header (PlanHeader); null before its first event applied' }),
    parent: orNull(obj({ planId: str(), itemId: str(), status: orNull(planStatus) }, { description: 'The plan this one runs for, with its status' })),
    children: arr(obj({ planId: str(), itemId: str(), status: orNull(planStatus), goal: str() }), 'Plans its items delegated to'),
    forkedFrom: orNull(obj({ planId: str(), seq: int(), chainHead: str(), status: orNull(planStatus) }, { description: 'The plan and point this one was forked from', open: true })),
    forks: arr(obj(relation('The fork point; null for a cold fork')), 'Plans forked from this one'),
    agent: orNull(
      obj(
        { agent: str(), finished: { description: 'How the run ended; null while it runs' }, pausedOn: orNull(str('The budget wait item the run is paused on')), stopReason: orNull(str()), totals: { type: 'object', description: 'Tokens in, out and in all, and turns' }, unread: int('Completed turns whose output was not readable'), turns: arr({ type: 'object' }, 'One line per recorded turn: itemId, turn, modelId, finishReason, usage, finished, toolCalls') },
        { description: "An agent run's turns and token totals" },
      ),
    ),
  },
  { title: 'Plan', optional: ['stateDigest', 'items'] },
);

export const planPageShape = obj(
  { plans: arr(planSummary), nextCursor: orNull(str('Pass as `cursor` for the next page; null on the last page')), total: int('Plans matching the filter (all pages)'), version: int('The read model\'s change counter') },
  { title: 'PlanPage' },
);

export const itemPageShape = obj(
  {
    planId: str(),
    seq: int('The plan\'s seq the page was read at'),
    offset: int(),
    limit: int(),
    status: arr(itemStatus, 'The statuses kept (any of); empty: all'),
    total: int('Items matching the filter (all pages)'),
    itemCount: int('Items in the plan'),
    counts,
    nextOffset: orNull(int('Pass as `offset` for the next page; null on the last page')),
    items: arr(itemState),
  },
  { title: 'ItemPage' },
);

const eventShape = obj(
  {
    eventId: str('planId:seq'),
    planId: str(),
    seq: int('1, 2, 3 ... per plan, no gaps'),
    occurredAt: ms('When'),
    actor: str(),
    causationId: str('The command that caused the event'),
    correlationId: str(),
    prevHash: str(),
    hash: str(),
    schemaVersion: int(),
    type: str('The event type (PlanCreated, ItemAdded, IntentRecorded ...)'),
    data: { type: 'object', description: 'The event payload (docs/reference/schemas.md), shown' },
  },
  { title: 'PlanEvent', description: 'An event as recorded, shown: payloads decrypted when the projector holds the plan\'s key, secret fields "[secret]"; hashes as recorded.', open: true },
);

export const eventsShape = obj(
  { planId: str(), events: arr(eventShape), nextSeq: orNull(int('Only with `limit`: the fromSeq of the next page; null when none is left')) },
  { title: 'PlanEvents', optional: ['nextSeq'] },
);

const timelineEntry = obj(
  { seq: int(), at: ms('When'), type: str(), actor: str(), causationId: str(), correlationId: str(), itemId: orNull(str()), attempt: orNull(int()), summary: str('One line for a person'), hash: str() },
  { title: 'TimelineEntry' },
);
const takeoverShape = obj(
  {
    itemId: str(),
    attempt: int(),
    idempotencyKey: str('The key both owners invoked the tool with'),
    kind: { type: 'string', enum: ['invoked', 'settled'], description: '`invoked`: the new owner ran the tool again with the same key and committed its result; `settled`: the first owner had committed it, the new owner only settled it' },
    from: str('The executor that lost the attempt'),
    fromAt: str('When it last acted on the attempt, ISO-8601'),
    to: str('The executor that went on with it'),
    at: str("When the new owner's step was recorded, ISO-8601"),
    seq: int(),
  },
  { title: 'Takeover', description: 'An attempt another executor went on with after taking the plan over.' },
);

const attempt = obj(
  {
    itemId: str(),
    attempt: int(),
    executorId: str(),
    intentAt: ms('Intent recorded'),
    intentSeq: int(),
    resultAt: orNull(ms('Result committed')),
    outcome: orNull(str()),
    toolMs: orNull(int('The tool\'s own duration')),
    settledAt: orNull(ms('Settled')),
    settlement: orNull({ type: 'string', enum: ['completed', 'failed', 'retry'] }),
    childPlanId: orNull(str('The plan the attempt delegated to')),
    totalMs: orNull(int('Intent → settled (or → result while unsettled)')),
    takeover: orNull(takeoverShape),
  },
  { title: 'AttemptTimeline', description: 'An attempt from the events; `takeover` when a new owner re-invoked or settled it after a take-over (the executor column is the one that recorded the intent).' },
);

const payloadShape = obj(
  {
    name: str('`input`, `output`, `checkpoint`, `attempt-<n>`, `evidence-<i>`: the download route\'s name'),
    label: str('For a person'),
    bytes: int('UTF-8 bytes of the payload as served (by reference: as stored)'),
    text: orNull(str('The first 16 KiB characters; null when stored by reference')),
    truncated: bool('Whether `text` is shorter than the payload'),
    reference: orNull(obj({ sha256: str(), bytes: int(), chunks: int() }, { description: 'Stored by reference in `<prefix>.plan-blobs`' })),
    sealed: bool("Sealed with the plan's key, which this projector does not hold: shown as stored"),
    download: str('The route that serves the whole payload'),
  },
  { title: 'PayloadPreview' },
);

export const itemViewShape = obj(
  {
    planId: str(),
    planStatus: planStatus,
    seq: int("The plan's seq the view was read at"),
    item: { type: 'object', description: 'The item (ItemState) without its payloads: no inputJson, outputJson, attempts[].outputJson, checkpoint.stateJson, evidence[].valueJson (see `payloads`); `checkpoint` null and `evidence` empty when it has none' },
    payloads: arr(payloadShape, 'Input, output, attempts\' own outputs, checkpoint, evidence'),
    attempts: arr(attempt, "The item's attempts from its events"),
    takeovers: arr(takeoverShape),
    timeline: arr(timelineEntry, 'The newest 200 of its events'),
    eventCount: int('Its events in all'),
    dependants: obj({ ids: arr(str(), 'The first 100'), total: int() }, { description: 'Items that depend on it' }),
    turn: orNull(
      obj(
        {
          agent: str(),
          turn: int(),
          modelId: str(),
          text: str("The model's text (at most 64 KiB here)"),
          textBytes: int("UTF-8 bytes of the model's whole text"),
          textTruncated: bool('The agent cut the text at its maxTextBytes'),
          textCut: bool('This view cut it at 64 KiB'),
          finishReason: str(),
          usage: { type: 'object', description: 'inputTokens, outputTokens, totalTokens of the turn' },
          totals: { type: 'object', description: 'The run\'s totals after the turn, and turns' },
          finished: { description: 'answer, maxTurns or budget on the run\'s last turn; null otherwise' },
          next: orNull(str('The next turn\'s item')),
          stopReason: orNull(str()),
          toolCalls: arr(obj({ toolCallId: str(), toolName: str(), input: str('Its arguments as JSON (at most 2 KiB)'), inputCut: bool(), itemId: orNull(str('The item that runs it')), error: orNull(obj({ code: str(), message: str() })), notRun: bool() })),
        },
        { description: "An agent's model turn as recorded (null for other items, while the turn runs, or when unreadable: see turnUnread)" },
      ),
    ),
    turnUnread: orNull(str('Why a recorded turn could not be read here')),
  },
  { title: 'ItemView' },
);

export const auditShape = obj(
  {
    planId: str(),
    asOf: obj({ seq: int('The last event folded (0: none)'), at: orNull(ms('Its time')) }),
    state: orNull({ anyOf: [planState, planHeaderShape], description: 'The plan as of that point (the whole audit), or its header (a window)' }),
    stateDigest: orNull(str('Whole audit only: the digest of the real state as of that point')),
    timeline: arr(timelineEntry),
    attempts: arr(attempt),
    page: obj(
      { limit: int(), before: orNull(int()), nextBefore: orNull(int('Pass as `before` for the next older window; null at the first event')), events: int('Events up to the as-of point (all windows)'), attempts: int('Attempts up to the as-of point') },
      { description: 'A window only' },
    ),
    stalled: orNull(stall),
  },
  { title: 'Audit', optional: ['stateDigest', 'page'] },
);

export const verifyShape = obj(
  {
    planId: str(),
    ok: bool(),
    events: int('Events read'),
    head: orNull(str('Hash of the last event; null when the chain is broken')),
    stateDigest: orNull(str('The digest of the plan rebuilt from its events')),
    checks: arr(obj({ name: str(), ok: bool(), detail: str() })),
    firstBroken: orNull(obj({ check: str(), seq: orNull(int()), eventId: orNull(str()), partition: orNull(int()), offset: orNull(str()), reason: str() })),
  },
  { title: 'Verification', description: "A plan's verification read from the log now: the hash chain, determinism, snapshots." },
);

// ---------------------------------------------------------------------------------------------------
// Operations, health, identity

const partitionShape = obj(
  { partition: int(), nextOffset: offset('The next record to apply'), endOffset: orNull(offset('The end last seen')), watermark: orNull(str()), plans: int() },
  { title: 'ProjectedPartition' },
);

export const healthShape = obj(
  { status: { type: 'string', enum: ['ok', 'unhealthy'] }, reason: orNull(str('Why it is unhealthy')), partitions: arr(partitionShape, 'The partitions this projector projects'), plans: map(int(), 'Plans by status (and `stalled`)'), dlqRecords: int('Records this projector sent to the DLQ') },
  { title: 'Health' },
);

export const whoamiShape = obj(
  { principal: orNull(str('The token\'s holder; null without a token (open reads)')), scopes: arr({ type: 'string', enum: ['read', 'write'] }) },
  { title: 'Whoami' },
);

export const problemsShape = obj(
  {
    stalled: arr(obj({ planId: str(), partition: int(), goal: orNull(str()), status: orNull(planStatus), stall: obj({ code: str(), reason: str(), message: str(), offset: str(), seq: orNull(int()), heldEvents: int() }) })),
    failed: arr(obj({ planId: str(), goal: str(), status: planStatus, items: arr(obj({ itemId: str(), title: str(), attempts: int(), reason: orNull(str()), error: orNull(str()) })) }), 'Failed plans and plans with failed items'),
    deadLetters: arr(
      obj({
        partition: int(),
        offset: str(),
        planId: orNull(str('From the record key; null when unreadable')),
        known: bool('Whether this projector knows the plan'),
        bytes: int(),
        cause: orNull(obj({ sourceTopic: str(), sourcePartition: int(), sourceOffset: str(), code: str(), reason: str(), message: str() })),
      }),
      'The newest 200 DLQ records, newest first',
    ),
    deadLettersTotal: int(),
  },
  { title: 'Problems' },
);

export const overviewShape = obj(
  {
    at: ms('Now'),
    plansByStatus: map(int()),
    activity: obj({ bucketMs: int(), buckets: arr(obj({ at: ms('Window start'), events: int(), itemsCompleted: int(), itemsFailed: int(), retries: int() })) }, { description: 'Events, completions, failures and retries per 10 s over the last minutes' }),
    groups: arr(
      obj({
        groupId: str(),
        state: str(),
        members: arr(obj({ memberId: str(), clientId: str(), host: str(), partitions: map(arr(int()), 'Topic → partitions') })),
        lag: arr(obj({ topic: str(), total: int(), partitions: arr(obj({ partition: int(), committed: str(), end: str(), lag: int() })) })),
      }),
      'The ledger\'s consumer groups (`<prefix>.*`)',
    ),
    partitions: arr(partitionShape),
  },
  { title: 'Overview' },
);

const executorShape = obj(
  {
    executorId: str(),
    version: str("The plan-ledger version it runs"),
    host: str(),
    pid: int(),
    tools: arr(str(), 'The tools it serves, sorted'),
    toolsOmitted: int('Tools its announcement left out to stay under 256 KiB (0: all listed)'),
    agents: arr(str(), 'The agents it serves (its `agent:<name>` tools)'),
    partitions: arr(int(), 'The partitions of the commands topic it owned at its last heartbeat'),
    startedAt: str('ISO-8601'),
    heartbeatMs: int('Its heartbeat interval (ms)'),
    lastHeartbeatAt: str("ISO-8601, the broker's timestamp of its last heartbeat"),
    heartbeatAgeMs: int('Age of the last heartbeat when read (ms)'),
    staleAfterMs: int('The age past which it is stale (ms): three of its heartbeat intervals'),
    live: bool(),
    staleReason: str('Why it is stale (only when stale)'),
  },
  { title: 'Executor', optional: ['staleReason'] },
);

export const executorsShape = obj(
  {
    at: str('When it was read (ISO-8601)'),
    topic: str('`<prefix>.plan-executors`'),
    live: arr(executorShape),
    stale: arr(executorShape, 'Announced, but no heartbeat within the bound (a killed process, a lost host); one that stopped cleanly is gone'),
    invalid: arr(obj({ key: orNull(str()), offset: offset('Where the record is'), reason: str() }), 'Records that could not be read (corrupt, foreign, too large), skipped with the reason'),
  },
  { title: 'Executors' },
);

// ---------------------------------------------------------------------------------------------------
// Commands (sendOutcome in errors.ts)

const eventRef = obj({ seq: int(), type: str() });
export const acceptedShape = obj(
  { planId: str(), commandId: str(), events: arr(eventRef, 'The events the command caused'), digest: str('The plan\'s digest, for a command that returns one (create, fork)') },
  { title: 'CommandAccepted', description: 'The owning executor decided the command: the events it caused.', optional: ['digest'] },
);
export const rejectedShape = obj(
  {
    error: { type: 'string', enum: ['rejected', 'conflict'] },
    code: str("The ledger's rejection code (STALE_DIGEST, PLAN_FINISHED, NOT_WAITING, DUPLICATE_SIGNAL ...)"),
    message: str(),
    field: orNull(str()),
    planId: str(),
    commandId: str(),
    events: arr(eventRef),
    digest: str(),
  },
  { title: 'CommandRejected', description: 'The ledger refused the command: its code and message, and the CommandRejected event when one was recorded.', optional: ['code', 'field', 'planId', 'commandId', 'events', 'digest'] },
);

/** The answers of every command route. */
export const commandResponses = {
  400: errorJson('A field fails its schema (`bad_request`, `field` names it) or the ledger refused the input (`validation`, with `field`)'),
  202: json('Decided: the events the command caused', acceptedShape),
  409: json('Rejected by the ledger (`rejected`, with its `code`) or a conflict', rejectedShape),
  502: errorJson('The command could not be submitted (`submit_failed`)'),
  503: errorJson('Kafka is unavailable (`unavailable`); the command may still be decided'),
  504: errorJson('No decision in time (`timeout`); the command may still be decided'),
} as const;
