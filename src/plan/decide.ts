import { FieldProblem, namedType, parseValue, type SchemaNode } from './avro-schema.js';
import { dropNullItemFields } from './absent-fields.js';
import { isCanonicalJsonText, utf8Length } from './canonical.js';
import {
  internalCommandSchemas,
  isCommandType,
  isInternalCommandType,
  type AnyCommand,
  type CommitResult,
  type DelegateItem,
  type ExpireWait,
  type InternalCommandPayloads,
  type RecordCheckpoint,
  type RecordEvidence,
  type RecordIntent,
  type SettleItem,
} from './commands.js';
import { planDigest } from './digest.js';
import { isPlanError, type Rejection } from './errors.js';
import type { EventBody, PlanEvent, UnsealedEvent } from './events.js';
import { initialState } from './evolve.js';
import { Fold, type StatusCounts } from './fold.js';
import { canProgress, nextRetryAt, resolveRetryPolicy, retryDueAt, waitDueAt, type FirstSeen } from './execution.js';
import { planCommandSchema, eventSchemaVersion } from './generated/schemas.js';
import type {
  AddItems,
  ApprovePlan,
  CancelPlan,
  ChildPlanFinished,
  CommandPayloads,
  CreatePlan,
  ErasePlan,
  ForkOrigin,
  InheritedOutput,
  ItemError,
  ItemSpec,
  ProposePlan,
  RejectionCode,
  PolicyDecision,
  RejectPlan,
  RetryItem,
  SignalItem,
} from './generated/types.js';
import { GENESIS_HASH, sealEvent } from './hash-chain.js';
import { eventId, idempotencyKey, isReservedPlanId, isValidId, RESERVED_PLAN_ID_PREFIX } from './ids.js';
import { evaluatePolicy, type ApprovalPolicy } from './policy.js';
import { currentAttempt, getItem, hasAppliedCommand, isPlanFinished, planExists, type ItemState, type PlanState } from './state.js';

/** Limits `decide` enforces. */
export interface DecideLimits {
  /** Max UTF-8 bytes of an inputJson / outputJson / detailsJson. */
  maxPayloadBytes: number;
  /** Max items in a plan. */
  maxItems: number;
}

export const DEFAULT_LIMITS: Readonly<DecideLimits> = Object.freeze({ maxPayloadBytes: 256 * 1024, maxItems: 100_000 });

/** Time, limits and the approval policy arrive as data. */
export interface DecideContext {
  /** Epoch ms; becomes every event's occurredAt. */
  now: number;
  limits?: Partial<DecideLimits>;
  /**
   * The executor's approval policy (see `policy.ts`), evaluated for the items a command adds; its decision is
   * recorded in the events (PlanCreated / PlanProposed `policy`), so replay never evaluates it again. Without
   * one, decisions are exactly those of a ledger without policies.
   */
  policy?: ApprovalPolicy;
  /**
   * When the deciding owner first saw an item's open retry or wait (its memo; see execution.ts): a retry may
   * start, and a wait time out, at min(the recorded time, first seen + the full delay), so an owner whose
   * clock is behind the one that recorded it is never held back by the difference. Without it, the recorded
   * times alone decide.
   */
  firstSeen?: FirstSeen;
}

/**
 * `fault` is set when `decide` itself failed (a programmer error, not bad input): the command must not be
 * recorded as a rejection in the plan's chain; the executor dead-letters it with the message instead.
 */
export type Decision = { ok: true; events: PlanEvent[] } | { ok: false; rejection: Rejection; fault?: string };

class Rejected {
  constructor(readonly rejection: Rejection) {}
}

function reject(code: RejectionCode, message: string, field: string | null = null): never {
  throw new Rejected({ code, message, field });
}

/**
 * Decides what a command means for a plan: the events to append (fully formed: seq, ids, time, causation,
 * hash chain) or a coded rejection. Pure and total: it never throws, whatever `command` is; malformed input
 * becomes `INVALID_FIELD` naming the field path.
 *
 * Idempotent: a client command whose commandId already caused events in this plan (its own rejection
 * included) is accepted with no events, so a redelivered command (after a crash before the offset commit)
 * changes nothing. The executor's internal commands never travel the wire and are not remembered: one
 * seen again is decided on the state, which refuses it (the item has moved on).
 *
 * Plan ids starting with `__` are reserved (the projector keys its watermark snapshot `__watermark`): a
 * command for one is `INVALID_FIELD` on `planId`.
 *
 * @example
 * const d = decide(undefined, { type: 'CreatePlan', commandId: 'c1', planId: 'p1', issuedAt: 0, actor: 'cli',
 *   correlationId: 'c1', data: { goal: 'ship', mode: 'execute', labels: {}, parent: null, items: [] } }, { now: 1000 });
 * // d.ok && d.events[0].type === 'PlanCreated' && d.events[0].seq === 1
 */
export function decide(state: PlanState | undefined, command: AnyCommand | unknown, ctx: DecideContext): Decision {
  try {
    return { ok: true, events: decideOrThrow(state, command, ctx) };
  } catch (e) {
    if (e instanceof Rejected) return { ok: false, rejection: e.rejection };
    if (e instanceof FieldProblem) return { ok: false, rejection: { code: 'INVALID_FIELD', message: `${e.path} ${e.message}`, field: e.path } };
    if (isPlanError(e)) return { ok: false, rejection: { code: 'INVALID_FIELD', message: e.message, field: e.field } };
    // Input is validated against its schema before any rule runs, so anything else thrown here is a
    // defect of the ledger, not of the command: never written into a plan's chain as the client's fault.
    return { ok: false, rejection: { code: 'INVALID_STATE', message: `internal error deciding the command: ${describe(e)}`, field: null }, fault: describe(e) };
  }
}

function describe(e: unknown): string {
  try {
    return e instanceof Error ? e.message : String(e);
  } catch {
    return 'unprintable error';
  }
}

const metadataFields = (planCommandSchema.fields as readonly { name: string; type: SchemaNode }[]).filter((f) => f.name !== 'payload');

const RESERVED_MESSAGE = `must not start with "${RESERVED_PLAN_ID_PREFIX}" (reserved for the ledger's own keys, such as the projector's __watermark)`;

/** Validates and normalizes a command (metadata, type, payload against its schema). */
function parseCommand(command: unknown): AnyCommand {
  if (typeof command !== 'object' || command === null || Array.isArray(command)) throw new FieldProblem('command', 'must be an object');
  const raw = command as Record<string, unknown>;
  const allowed = new Set([...metadataFields.map((f) => f.name), 'type', 'data']);
  for (const key of Object.keys(raw)) if (!allowed.has(key)) throw new FieldProblem(key, 'unknown field');
  const out: Record<string, unknown> = {};
  for (const f of metadataFields) {
    if (!Object.prototype.hasOwnProperty.call(raw, f.name)) throw new FieldProblem(f.name, 'is required');
    out[f.name] = parseValue(f.type, raw[f.name], f.name);
  }
  const type = raw['type'];
  let schema: SchemaNode;
  if (isCommandType(type)) schema = namedType(type) as unknown as SchemaNode;
  else if (isInternalCommandType(type)) schema = internalCommandSchemas[type];
  else throw new FieldProblem('type', 'unknown command type');
  out['type'] = type;
  out['data'] = parseValue(schema, raw['data'], 'data');
  dropNullItemFields(out['data']);
  if (!isValidId(out['planId'])) throw new FieldProblem('planId', 'must be 1..128 chars of [A-Za-z0-9._:-]');
  if (isReservedPlanId(out['planId'])) throw new FieldProblem('planId', RESERVED_MESSAGE);
  if (out['commandId'] === '') throw new FieldProblem('commandId', 'must not be empty');
  return out as unknown as AnyCommand;
}

function policyOf(ctx: DecideContext): ApprovalPolicy | undefined {
  const p = ctx.policy;
  if (p === undefined) return undefined;
  if (typeof p !== 'object' || p === null || typeof p.id !== 'string' || typeof p.hash !== 'string' || !Array.isArray(p.rules)) {
    reject('INVALID_FIELD', 'ctx.policy must be a compiled approval policy (loadPolicy / compilePolicy)', 'ctx.policy');
  }
  return p;
}

function limitsOf(ctx: DecideContext): DecideLimits {
  const l = { ...DEFAULT_LIMITS, ...(ctx.limits ?? {}) };
  if (!Number.isSafeInteger(l.maxPayloadBytes) || l.maxPayloadBytes < 0) reject('INVALID_FIELD', 'ctx.limits.maxPayloadBytes must be a non-negative integer', 'ctx.limits.maxPayloadBytes');
  if (!Number.isSafeInteger(l.maxItems) || l.maxItems < 0) reject('INVALID_FIELD', 'ctx.limits.maxItems must be a non-negative integer', 'ctx.limits.maxItems');
  return l;
}

/**
 * Builds events one by one, threading seq, hash chain and state (so later events see earlier ones, and an
 * event `evolve` would refuse fails the decision). The state is folded in place from one copy of the
 * caller's state, which is never touched, as a branch: no plan digest, and changed items kept aside, so a
 * step of a large plan does not copy its items map. Read items with `item()`.
 */
class Emitter {
  readonly events: PlanEvent[] = [];
  private fold: Fold | undefined;
  constructor(
    private readonly start: PlanState | undefined,
    private readonly command: AnyCommand,
    private readonly now: number,
  ) {}

  /** The state after the events so far (materializes the branch: O(items) once; `item()` is cheaper). */
  get state(): PlanState | undefined {
    return this.fold === undefined ? this.start : this.fold.result();
  }

  /** The plan status after the events so far. */
  get status(): PlanState['status'] | undefined {
    return this.fold === undefined ? this.start?.status : this.fold.status;
  }

  /** Items per status after the events so far (after at least one event: O(1)). */
  counts(): StatusCounts | undefined {
    return this.fold?.counts();
  }

  item(id: string): ItemState | undefined {
    if (this.fold !== undefined) return this.fold.item(id);
    return this.start === undefined ? undefined : getItem(this.start, id);
  }

  emit(body: EventBody): void {
    const seq = this.events.length > 0 ? this.events[this.events.length - 1]!.seq + 1 : (this.start?.seq ?? 0) + 1;
    const prevHash = this.events.length > 0 ? this.events[this.events.length - 1]!.hash : (this.start?.lastHash ?? GENESIS_HASH);
    const unsealed = {
      eventId: eventId(this.command.planId, seq),
      planId: this.command.planId,
      seq,
      occurredAt: this.now,
      actor: this.command.actor,
      causationId: this.command.commandId,
      correlationId: this.command.correlationId,
      prevHash,
      schemaVersion: eventSchemaVersion,
      type: body.type,
      data: body.data,
    } as UnsealedEvent;
    const event = sealEvent(unsealed);
    this.fold ??= new Fold(this.start ?? initialState(this.command.planId), true);
    this.fold.apply(event);
    this.events.push(event);
  }
}

function decideOrThrow(state: PlanState | undefined, input: unknown, ctx: DecideContext): PlanEvent[] {
  if (typeof ctx !== 'object' || ctx === null || !Number.isSafeInteger(ctx.now)) reject('INVALID_FIELD', 'ctx.now must be epoch milliseconds', 'ctx.now');
  const limits = limitsOf(ctx);
  const command = parseCommand(input);
  if (state !== undefined && state.planId !== command.planId) reject('INVALID_FIELD', `command is for plan ${command.planId}, state is ${state.planId}`, 'planId');
  if (hasAppliedCommand(state, command.commandId)) return [];
  if (command.type !== 'CreatePlan' && !planExists(state)) reject('PLAN_NOT_FOUND', `plan ${command.planId} does not exist`, 'planId');
  const policy = policyOf(ctx);
  const out = new Emitter(state, command, ctx.now);
  const s = state as PlanState; // exists for every command but CreatePlan
  switch (command.type) {
    case 'CreatePlan':
      createPlan(out, command.data, limits, policy);
      break;
    case 'AddItems':
      addItems(out, s, command.data, limits, policy);
      break;
    case 'ProposePlan':
      proposePlan(out, s, command.data, policy);
      break;
    case 'ApprovePlan':
      approvePlan(out, s, command.data, command.actor);
      break;
    case 'RejectPlan':
      rejectPlan(out, s, command.data);
      break;
    case 'CancelPlan':
      cancelPlan(out, s, command.data);
      break;
    case 'RetryItem':
      retryItem(out, s, command.data, ctx.now);
      break;
    case 'ChildPlanFinished':
      childPlanFinished(out, s, command.data, ctx.now, limits);
      break;
    case 'ErasePlan':
      erasePlan(s, command.data);
      break;
    case 'SignalItem':
      signalItem(out, s, command.data, limits);
      break;
    case 'ExpireWait':
      expireWait(out, s, command.data, ctx.now, ctx.firstSeen);
      break;
    case 'RecordIntent':
      recordIntent(out, s, command.data, ctx.now, ctx.firstSeen);
      break;
    case 'CommitResult':
      commitResult(out, s, command.data, limits, policy);
      break;
    case 'SettleItem':
      settleItem(out, s, command.data, ctx.now);
      break;
    case 'DelegateItem':
      delegateItem(out, s, command.data);
      break;
    case 'RecordCheckpoint':
      recordCheckpoint(out, s, command.data, limits);
      break;
    case 'RecordEvidence':
      recordEvidence(out, s, command.data, limits);
      break;
  }
  return out.events;
}

// ---------------------------------------------------------------------------------------------------------
// validation helpers

/** Secret paths: at most 64, each 1..256 chars of dot-separated non-empty segments, no repeats. */
function checkSecretPaths(paths: readonly string[], field: string): void {
  if (paths.length > 64) reject('INVALID_FIELD', `${field} lists at most 64 paths`, field);
  const seen = new Set<string>();
  paths.forEach((p, i) => {
    const f = `${field}[${i}]`;
    if (p.length < 1 || p.length > 256 || p.split('.').some((s) => s === '')) reject('INVALID_FIELD', `${f} must be 1..256 chars of dot-separated, non-empty segments`, f);
    if (seen.has(p)) reject('INVALID_FIELD', `${f} repeats ${p}`, f);
    seen.add(p);
  });
}

function checkJson(text: string | null, field: string, limits: DecideLimits): void {
  if (text === null) return;
  if (utf8Length(text) > limits.maxPayloadBytes) reject('PAYLOAD_TOO_LARGE', `${field} exceeds ${limits.maxPayloadBytes} bytes`, field);
  if (!isCanonicalJsonText(text)) reject('INVALID_FIELD', `${field} must be canonical JSON (sorted keys, no whitespace)`, field);
}

function checkError(error: ItemError | null, field: string, limits: DecideLimits): void {
  if (error !== null) checkJson(error.detailsJson, `${field}.detailsJson`, limits);
}

function nonEmpty(value: string, field: string): void {
  if (value.trim() === '') reject('INVALID_FIELD', `${field} must not be empty`, field);
}

/**
 * Validates items about to be added to `existing` (undefined for a new plan): ids, duplicates, tool,
 * input payload, retry policy, dependencies (on existing items or items of the same batch), cycles, count.
 */
function validateItems(existing: PlanState | undefined, items: readonly ItemSpec[], field: string, limits: DecideLimits): void {
  const existingCount = existing?.itemOrder.length ?? 0;
  if (existingCount + items.length > limits.maxItems) reject('PAYLOAD_TOO_LARGE', `a plan holds at most ${limits.maxItems} items`, field);
  const batch = new Map<string, ItemSpec>();
  items.forEach((item, i) => {
    const f = `${field}[${i}]`;
    if (!isValidId(item.id)) reject('INVALID_FIELD', `${f}.id must be 1..128 chars of [A-Za-z0-9._:-]`, `${f}.id`);
    if (batch.has(item.id) || (existing !== undefined && getItem(existing, item.id) !== undefined)) reject('DUPLICATE_ITEM', `item ${item.id} exists`, `${f}.id`);
    batch.set(item.id, item);
    nonEmpty(item.tool, `${f}.tool`);
    checkJson(item.inputJson, `${f}.inputJson`, limits);
    if (item.wait != null) {
      if (!isValidId(item.wait.signal)) reject('INVALID_FIELD', `${f}.wait.signal must be 1..128 chars of [A-Za-z0-9._:-]`, `${f}.wait.signal`);
      const t = item.wait.timeoutMs;
      if (t != null && (t < 1 || t > MAX_WAIT_MS)) reject('INVALID_FIELD', `${f}.wait.timeoutMs must be 1..${MAX_WAIT_MS} (365 days) or null`, `${f}.wait.timeoutMs`);
      if (item.wait.prompt != null && utf8Length(item.wait.prompt) > 4096) reject('PAYLOAD_TOO_LARGE', `${f}.wait.prompt exceeds 4096 bytes`, `${f}.wait.prompt`);
    }
    if (item.secret != null) checkSecretPaths(item.secret, `${f}.secret`);
    if (item.retry !== null) {
      const r = item.retry;
      if (r.maxAttempts < 1 || r.maxAttempts > 100) reject('INVALID_FIELD', `${f}.retry.maxAttempts must be 1..100`, `${f}.retry.maxAttempts`);
      if (r.initialBackoffMs < 0) reject('INVALID_FIELD', `${f}.retry.initialBackoffMs must be >= 0`, `${f}.retry.initialBackoffMs`);
      if (r.backoffMultiplier < 1) reject('INVALID_FIELD', `${f}.retry.backoffMultiplier must be >= 1`, `${f}.retry.backoffMultiplier`);
      if (r.maxBackoffMs < 0) reject('INVALID_FIELD', `${f}.retry.maxBackoffMs must be >= 0`, `${f}.retry.maxBackoffMs`);
    }
  });
  items.forEach((item, i) => {
    const seen = new Set<string>();
    item.dependsOn.forEach((dep, j) => {
      const f = `${field}[${i}].dependsOn[${j}]`;
      if (seen.has(dep)) reject('INVALID_FIELD', `${f} repeats ${dep}`, f);
      seen.add(dep);
      if (dep === item.id) reject('DEPENDENCY_CYCLE', `item ${item.id} depends on itself`, f);
      if (!batch.has(dep) && (existing === undefined || getItem(existing, dep) === undefined)) reject('UNKNOWN_DEPENDENCY', `item ${item.id} depends on unknown item ${dep}`, f);
    });
  });
  // Existing items only depend on existing items, so a cycle can only run through the batch.
  const state = new Map<string, 'visiting' | 'done'>();
  const index = new Map(items.map((item, i) => [item.id, i]));
  const visit = (id: string, trail: string[]): void => {
    const mark = state.get(id);
    if (mark === 'done') return;
    if (mark === 'visiting') {
      const cycle = [...trail.slice(trail.indexOf(id)), id];
      reject('DEPENDENCY_CYCLE', `dependency cycle ${cycle.join(' -> ')}`, `${field}[${index.get(id) ?? 0}].dependsOn`);
    }
    state.set(id, 'visiting');
    for (const dep of batch.get(id)?.dependsOn ?? []) if (batch.has(dep)) visit(dep, [...trail, id]);
    state.set(id, 'done');
  };
  for (const item of items) visit(item.id, []);
}

function requireNotFinished(s: PlanState, allowFailed = false): void {
  if (s.status === 'completed' || s.status === 'cancelled' || (!allowFailed && s.status === 'failed')) {
    reject('PLAN_FINISHED', `plan ${s.planId} is ${s.status}`, null);
  }
}

function requireItem(s: PlanState, id: string, field: string) {
  return getItem(s, id) ?? reject('ITEM_NOT_FOUND', `item ${id} not found in plan ${s.planId}`, field);
}

// ---------------------------------------------------------------------------------------------------------
// client commands

/** The label a fork carries with its source's plan id: how a source's forks are found. */
export const FORK_LABEL = 'forkedFrom';

function createPlan(out: Emitter, data: CreatePlan, limits: DecideLimits, policy: ApprovalPolicy | undefined): void {
  if (planExists(out.state)) reject('PLAN_EXISTS', `plan ${out.state.planId} exists`, 'planId');
  nonEmpty(data.goal, 'data.goal');
  if (data.parent !== null) {
    if (!isValidId(data.parent.planId)) reject('INVALID_FIELD', 'data.parent.planId is not a valid id', 'data.parent.planId');
    if (isReservedPlanId(data.parent.planId)) reject('INVALID_FIELD', `data.parent.planId ${RESERVED_MESSAGE}`, 'data.parent.planId');
    if (!isValidId(data.parent.itemId)) reject('INVALID_FIELD', 'data.parent.itemId is not a valid id', 'data.parent.itemId');
  }
  validateItems(undefined, data.items, 'data.items', limits);
  const forkedFrom = data.forkedFrom ?? null;
  const inherited = data.inherited ?? [];
  if (forkedFrom !== null) checkFork(forkedFrom, data, inherited, limits);
  else if (inherited.length > 0) reject('INVALID_FIELD', 'data.inherited needs data.forkedFrom', 'data.inherited');
  // The label lists a source's forks (show, the API, the dashboard): only a fork carries it, naming its source.
  const forkLabel = data.labels[FORK_LABEL];
  if (forkLabel !== undefined && forkLabel !== forkedFrom?.planId) {
    reject('INVALID_FIELD', `label ${FORK_LABEL} is a fork's own: it must name data.forkedFrom.planId`, `data.labels.${FORK_LABEL}`);
  }
  const decision = policy === undefined ? null : evaluatePolicy(policy, { labels: data.labels, items: data.items, itemCount: data.items.length });
  out.emit({ type: 'PlanCreated', data: { goal: data.goal, mode: data.mode, labels: data.labels, parent: data.parent, policy: decision, ...(forkedFrom !== null ? { forkedFrom } : {}) } });
  for (const item of data.items) out.emit({ type: 'ItemAdded', data: { item, followUpOf: null } });
  // A fork's items finished before its fork point: completed with the source's outputs, never run again.
  for (const i of inherited) out.emit({ type: 'ItemInherited', data: { itemId: i.itemId, outputJson: i.outputJson } });
  // An execute plan the policy covers does not run: it is proposed at once (the client's mode cannot bypass
  // the policy). A propose plan is proposed by its client, as always.
  if (decision?.required === true && data.mode === 'execute') proposeForPolicy(out, decision);
}

/**
 * A fork's origin and inherited items: the origin names a valid plan (not the new one), a seq and a sha256
 * hash; each inherited item is one of the fork's items, once, with every dependency inherited too (it
 * finished, so they had), and at least one item is left to run.
 */
function checkFork(origin: ForkOrigin, data: CreatePlan, inherited: readonly InheritedOutput[], limits: DecideLimits): void {
  if (!isValidId(origin.planId) || isReservedPlanId(origin.planId)) reject('INVALID_FIELD', 'data.forkedFrom.planId is not a valid plan id', 'data.forkedFrom.planId');
  if (!Number.isSafeInteger(origin.seq) || origin.seq < 1) reject('INVALID_FIELD', 'data.forkedFrom.seq must be a seq (>= 1)', 'data.forkedFrom.seq');
  if (!/^[0-9a-f]{64}$/.test(origin.chainHead)) reject('INVALID_FIELD', 'data.forkedFrom.chainHead must be a sha256 hash (64 hex digits)', 'data.forkedFrom.chainHead');
  if (data.parent !== null) reject('INVALID_FIELD', 'a fork is not a child plan', 'data.parent');
  const specs = new Map(data.items.map((it) => [it.id, it]));
  const kept = new Set<string>();
  inherited.forEach((i, n) => {
    const f = `data.inherited[${n}]`;
    if (!specs.has(i.itemId)) reject('ITEM_NOT_FOUND', `inherited item ${i.itemId} is not an item of the fork`, `${f}.itemId`);
    if (kept.has(i.itemId)) reject('INVALID_FIELD', `${f} repeats ${i.itemId}`, `${f}.itemId`);
    kept.add(i.itemId);
    checkJson(i.outputJson, `${f}.outputJson`, limits);
  });
  inherited.forEach((i, n) => {
    const open = specs.get(i.itemId)!.dependsOn.filter((d) => !kept.has(d));
    if (open.length > 0) reject('INVALID_FIELD', `inherited item ${i.itemId} depends on ${open.join(', ')}, which the fork runs again`, `data.inherited[${n}].itemId`);
  });
  if (data.items.length > 0 && kept.size === data.items.length) reject('INVALID_FIELD', 'every item is inherited: the fork has nothing to run', 'data.inherited');
}

/** Pauses (or opens) the plan for review at the digest after the events so far: PlanProposed with the decision. */
function proposeForPolicy(out: Emitter, decision: PolicyDecision | null): void {
  const after = out.state as PlanState;
  out.emit({ type: 'PlanProposed', data: { digest: planDigest(after), itemCount: after.itemOrder.length, policy: decision } });
}

/** The plan's current review decision without its seq (to carry it into a new proposal), or null. */
function currentDecision(s: PlanState): PolicyDecision | null {
  if (s.policy === undefined) return null;
  const { seq: _seq, ...decision } = s.policy;
  return decision;
}

/**
 * After items were added to a plan (by a client's AddItems, or as a tool's follow-ups): when the policy
 * covers them and the plan may start items (running or approved), the plan pauses for a new approval of the
 * new digest — items in flight finish, nothing new starts. A plan already waiting for a policy review
 * (proposed) is proposed again at the new digest, so the pending review covers the new items too.
 */
function reviewAddedItems(out: Emitter, s: PlanState, items: readonly ItemSpec[], policy: ApprovalPolicy | undefined, byTool: boolean): void {
  if (items.length === 0 || isPlanFinished(s.status)) return;
  const decision = policy === undefined ? null : evaluatePolicy(policy, { labels: s.labels, items, itemCount: s.itemOrder.length + items.length });
  const required = decision?.required === true ? decision : null;
  if ((s.status === 'running' || s.status === 'approved') && required !== null) proposeForPolicy(out, required);
  else if (s.status === 'proposed' && (s.mode === 'execute' || byTool)) proposeForPolicy(out, required ?? currentDecision(s));
}

function addItems(out: Emitter, s: PlanState, data: AddItems, limits: DecideLimits, policy: ApprovalPolicy | undefined): void {
  requireNotFinished(s);
  if (s.mode === 'propose' && (s.status === 'approved' || s.status === 'running')) {
    reject('REAPPROVAL_REQUIRED', `plan ${s.planId} was approved at digest ${s.approvedDigest ?? ''}; a structural change needs a new approval`, 'data.items');
  }
  if (data.items.length === 0) reject('INVALID_FIELD', 'data.items must not be empty', 'data.items');
  validateItems(s, data.items, 'data.items', limits);
  for (const item of data.items) out.emit({ type: 'ItemAdded', data: { item, followUpOf: null } });
  reviewAddedItems(out, s, data.items, policy, false);
}

/**
 * Propose-mode plans are reviewed; so is an execute plan a policy paused (proposed, or draft after a rejection).
 * An execute plan is never draft or proposed otherwise.
 */
function requireReviewable(s: PlanState): void {
  if (s.mode !== 'propose' && s.status !== 'proposed' && s.status !== 'draft') {
    reject('INVALID_STATE', `plan ${s.planId} is in ${s.mode ?? 'no'} mode; only propose-mode plans and plans a policy paused are reviewed`, null);
  }
}

function proposePlan(out: Emitter, s: PlanState, _data: ProposePlan, policy: ApprovalPolicy | undefined): void {
  requireNotFinished(s);
  requireReviewable(s);
  if (s.status !== 'draft') reject('INVALID_STATE', `plan ${s.planId} is ${s.status}, not draft`, null);
  const items = s.itemOrder.map((id) => getItem(s, id) as ItemState);
  const decision = policy === undefined ? null : evaluatePolicy(policy, { labels: s.labels, items, itemCount: items.length });
  out.emit({ type: 'PlanProposed', data: { digest: s.digest, itemCount: s.itemOrder.length, policy: decision } });
}

function checkReview(s: PlanState, digest: string, by: string): void {
  requireNotFinished(s);
  requireReviewable(s);
  if ((s.status === 'draft' || s.status === 'proposed') && digest !== s.digest) {
    reject('STALE_DIGEST', `digest ${digest} is not the current digest ${s.digest}`, 'data.digest');
  }
  if (s.status !== 'proposed') reject('INVALID_STATE', `plan ${s.planId} is ${s.status}, not proposed`, null);
  nonEmpty(by, 'data.by');
}

/**
 * One approval. Without a policy review it approves the plan (PlanApproved). A policy review counts distinct
 * approvers of the current digest since the proposal: fewer than `approvers` so far gives ApprovalRecorded
 * (the plan stays proposed), the last one PlanApproved. The same approver twice is DUPLICATE_APPROVER; the
 * plan's creator, when the policy forbids self-approval, SELF_APPROVAL_FORBIDDEN.
 */
function approvePlan(out: Emitter, s: PlanState, data: ApprovePlan, actor: string): void {
  checkReview(s, data.digest, data.by);
  const review = s.policy;
  if (review === undefined) {
    out.emit({ type: 'PlanApproved', data: { digest: data.digest, by: data.by, comment: data.comment } });
    return;
  }
  if (review.forbidSelfApproval && s.createdBy !== undefined && (data.by === s.createdBy || actor === s.createdBy)) {
    reject('SELF_APPROVAL_FORBIDDEN', `policy ${review.policyId} forbids self-approval: ${s.createdBy} created plan ${s.planId}`, 'data.by');
  }
  const approvers = new Set<string>();
  for (const a of s.approvals) if (a.decision === 'approved' && a.seq > review.seq && a.digest === s.digest) approvers.add(a.by);
  if (approvers.has(data.by)) reject('DUPLICATE_APPROVER', `${data.by} already approved digest ${s.digest}; policy ${review.policyId} needs ${review.approvers} distinct approvers`, 'data.by');
  const count = approvers.size + 1;
  const required = Math.max(1, review.approvers);
  if (count < required) {
    out.emit({ type: 'ApprovalRecorded', data: { digest: data.digest, by: data.by, comment: data.comment, approvals: count, required } });
    return;
  }
  out.emit({ type: 'PlanApproved', data: { digest: data.digest, by: data.by, comment: data.comment } });
  // An item that was in flight when a policy paused the plan may have failed meanwhile (a plan settles only
  // while running): if that blocks every remaining item, the approval must not leave the plan approved forever.
  const failed = s.itemOrder.filter((id) => getItem(s, id)?.status === 'failed');
  if (failed.length > 0 && !canProgress(out.state as PlanState)) {
    out.emit({ type: 'PlanFailed', data: { failedItemIds: failed, reason: `item${failed.length > 1 ? 's' : ''} ${failed.join(', ')} failed while the plan waited for approval; nothing else can progress` } });
  }
}

function rejectPlan(out: Emitter, s: PlanState, data: RejectPlan): void {
  checkReview(s, data.digest, data.by);
  out.emit({ type: 'PlanRejected', data: { digest: data.digest, by: data.by, reason: data.reason } });
}

function cancelPlan(out: Emitter, s: PlanState, data: CancelPlan): void {
  requireNotFinished(s, true);
  // A waiting item has nothing running that could still report: it is cancelled with the pending ones.
  const cancelledItemIds = s.itemOrder.filter((id) => {
    const it = getItem(s, id);
    return it?.status === 'pending' || (it?.status === 'in_progress' && currentAttempt(it)?.wait !== undefined);
  });
  out.emit({ type: 'PlanCancelled', data: { reason: data.reason, cancelledItemIds } });
}

function retryItem(out: Emitter, s: PlanState, data: RetryItem, now: number): void {
  requireNotFinished(s, true);
  const item = requireItem(s, data.itemId, 'data.itemId');
  if (item.status !== 'failed') reject('INVALID_STATE', `item ${item.id} is ${item.status}, not failed`, 'data.itemId');
  out.emit({ type: 'ItemRetryScheduled', data: { itemId: item.id, attempt: item.attempts.length, retryAt: now, manual: true } });
}

function childPlanFinished(out: Emitter, s: PlanState, data: ChildPlanFinished, now: number, limits: DecideLimits): void {
  const item = requireItem(s, data.parentItemId, 'data.parentItemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt === undefined || attempt.childPlanId !== data.childPlanId) {
    reject('INVALID_STATE', `item ${item.id} is not waiting for child plan ${data.childPlanId}`, 'data.childPlanId');
  }
  checkJson(data.outputJson, 'data.outputJson', limits);
  checkError(data.error, 'data.error', limits);
  const succeeded = data.status === 'completed';
  out.emit({
    type: 'ResultCommitted',
    data: {
      itemId: item.id,
      attempt: attempt.attempt,
      outcome: succeeded ? 'succeeded' : 'failed_terminal',
      outputJson: succeeded ? data.outputJson : null,
      error: succeeded
        ? null
        : (data.error ?? { code: `CHILD_PLAN_${data.status.toUpperCase()}`, message: `child plan ${data.childPlanId} ${data.status}`, detailsJson: null }),
      durationMs: Math.max(0, now - attempt.startedAt),
      executorId: attempt.executorId,
      followUpIds: [],
    },
  });
}

/**
 * ErasePlan decides no events: it is accepted (the owning executor then tombstones the plan's events and
 * snapshot and records the erasure on the ledger-audit topic) or refused. A plan whose items may be
 * running (approved or running) is only erased with `force`.
 */
function erasePlan(s: PlanState, data: ErasePlan): void {
  nonEmpty(data.by, 'data.by');
  if ((s.status === 'running' || s.status === 'approved') && !data.force) {
    reject('INVALID_STATE', `plan ${s.planId} is ${s.status}; erase --force to erase it anyway`, null);
  }
}

// ---------------------------------------------------------------------------------------------------------
// executor commands

function recordIntent(out: Emitter, s: PlanState, data: RecordIntent, now: number, firstSeen: FirstSeen | undefined): void {
  requireNotFinished(s);
  if (s.status !== 'running' && s.status !== 'approved') reject('INVALID_STATE', `plan ${s.planId} is ${s.status}; nothing runs before approval`, null);
  const item = requireItem(s, data.itemId, 'data.itemId');
  if (item.status !== 'pending') reject('INVALID_STATE', `item ${item.id} is ${item.status}, not pending`, 'data.itemId');
  const waiting = item.dependsOn.filter((d) => getItem(s, d)?.status !== 'completed');
  if (waiting.length > 0) reject('INVALID_STATE', `item ${item.id} waits for ${waiting.join(', ')}`, 'data.itemId');
  const due = retryDueAt(s, item, firstSeen);
  if (due !== null && due > now) reject('INVALID_STATE', `item ${item.id} may not retry before ${due}`, 'data.itemId');
  nonEmpty(data.executorId, 'data.executorId');
  const attempt = item.attempts.length + 1;
  if (item.wait != null) {
    // A wait item runs no tool: its attempt waits for the signal, with its deadline on record.
    const t = item.wait.timeoutMs ?? null;
    out.emit({ type: 'WaitStarted', data: { itemId: item.id, attempt, signal: item.wait.signal, deadline: t === null ? null : now + t, executorId: data.executorId } });
    return;
  }
  out.emit({
    type: 'IntentRecorded',
    data: {
      itemId: item.id,
      attempt,
      idempotencyKey: idempotencyKey(s.planId, item.id, attempt),
      executorId: data.executorId,
      fencingToken: data.fencingToken,
    },
  });
}

function commitResult(out: Emitter, s: PlanState, data: CommitResult, limits: DecideLimits, policy: ApprovalPolicy | undefined): void {
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not in_progress`, 'data.itemId');
  if (attempt.attempt !== data.attempt) reject('INVALID_STATE', `attempt ${data.attempt} is not the current attempt ${attempt.attempt} of ${item.id}`, 'data.attempt');
  if (attempt.childPlanId !== null) reject('INVALID_STATE', `item ${item.id} is delegated to ${attempt.childPlanId}; its result comes from ChildPlanFinished`, 'data.itemId');
  if (attempt.wait !== undefined) reject('INVALID_STATE', `item ${item.id} waits for signal ${attempt.wait.signal}; its result comes from SignalItem or its timeout`, 'data.itemId');
  if (data.durationMs < 0) reject('INVALID_FIELD', 'data.durationMs must be >= 0', 'data.durationMs');
  nonEmpty(data.executorId, 'data.executorId');
  checkJson(data.outputJson, 'data.outputJson', limits);
  checkError(data.error, 'data.error', limits);
  if (data.followUps.length > 0 && data.outcome !== 'succeeded') reject('INVALID_FIELD', 'follow-up items need outcome succeeded', 'data.followUps');
  // A cancelled plan takes no new work: the result is recorded, follow-ups are dropped.
  const followUps = isPlanFinished(s.status) ? [] : data.followUps;
  validateItems(s, followUps, 'data.followUps', limits);
  out.emit({
    type: 'ResultCommitted',
    data: {
      itemId: item.id,
      attempt: attempt.attempt,
      outcome: data.outcome,
      outputJson: data.outputJson,
      error: data.error,
      durationMs: data.durationMs,
      executorId: data.executorId,
      followUpIds: followUps.map((f) => f.id),
    },
  });
  for (const f of followUps) out.emit({ type: 'ItemAdded', data: { item: f, followUpOf: item.id } });
  reviewAddedItems(out, s, followUps, policy, true);
}

function settleItem(out: Emitter, s: PlanState, data: SettleItem, now: number): void {
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'result_committed' || attempt === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not result_committed`, 'data.itemId');
  const base = { itemId: item.id, attempt: attempt.attempt };
  if (attempt.outcome === 'succeeded') {
    out.emit({ type: 'ItemCompleted', data: base });
  } else if (s.status === 'cancelled') {
    out.emit({ type: 'ItemFailed', data: { ...base, reason: 'plan_cancelled', error: attempt.error } });
  } else if (attempt.outcome === 'failed_terminal') {
    out.emit({ type: 'ItemFailed', data: { ...base, reason: 'terminal', error: attempt.error } });
  } else {
    const used = attempt.attempt - item.attemptBase;
    const policy = resolveRetryPolicy(item.retry);
    if (used >= policy.maxAttempts) out.emit({ type: 'ItemFailed', data: { ...base, reason: 'retries_exhausted', error: attempt.error } });
    else out.emit({ type: 'ItemRetryScheduled', data: { ...base, retryAt: nextRetryAt(policy, used, now), manual: false } });
  }
  settlePlan(out, s);
}

/** After an item settled: PlanCompleted when every item completed, PlanFailed when a failure blocks the rest. */
function settlePlan(out: Emitter, s: PlanState): void {
  // The settle event changed one item (and maybe the status), never the item order.
  if (out.status !== 'running') return;
  // Counted by the fold, so a step of a 100,000-item plan does not look at every item; only a plan with a
  // failed item is walked (to name them and ask whether anything can still progress).
  const counts = out.counts();
  const total = s.itemOrder.length;
  const allCompleted = counts !== undefined ? total > 0 && counts.completed === total : total > 0 && s.itemOrder.every((id) => out.item(id)?.status === 'completed');
  const failed: string[] = counts !== undefined && counts.failed === 0 ? [] : s.itemOrder.filter((id) => out.item(id)?.status === 'failed');
  if (allCompleted) {
    out.emit({ type: 'PlanCompleted', data: { itemCount: s.itemOrder.length } });
    return;
  }
  if (failed.length > 0 && !canProgress(out.state as PlanState)) {
    out.emit({ type: 'PlanFailed', data: { failedItemIds: failed, reason: `item${failed.length > 1 ? 's' : ''} ${failed.join(', ')} failed; nothing else can progress` } });
  }
}

/** The in-progress, undelegated current attempt `attempt` of an item, or a coded rejection. */
function runningAttempt(s: PlanState, itemId: string, attempt: number) {
  const item = requireItem(s, itemId, 'data.itemId');
  const current = currentAttempt(item);
  if (item.status !== 'in_progress' || current === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not in_progress`, 'data.itemId');
  if (current.attempt !== attempt) reject('INVALID_STATE', `attempt ${attempt} is not the current attempt ${current.attempt} of ${item.id}`, 'data.attempt');
  if (current.childPlanId !== null) reject('INVALID_STATE', `item ${item.id} is delegated to ${current.childPlanId}`, 'data.itemId');
  if (current.wait !== undefined) reject('INVALID_STATE', `item ${item.id} waits for signal ${current.wait.signal}; no tool runs`, 'data.itemId');
  return item;
}

function recordCheckpoint(out: Emitter, s: PlanState, data: RecordCheckpoint, limits: DecideLimits): void {
  requireNotFinished(s, true);
  const item = runningAttempt(s, data.itemId, data.attempt);
  checkJson(data.stateJson, 'data.stateJson', limits);
  out.emit({ type: 'ItemCheckpointed', data: { itemId: item.id, attempt: data.attempt, checkpoint: (item.checkpoint?.checkpoint ?? 0) + 1, stateJson: data.stateJson } });
}

/** Most evidence records one attempt may attach. */
export const MAX_EVIDENCE_PER_ATTEMPT = 1000;

function recordEvidence(out: Emitter, s: PlanState, data: RecordEvidence, limits: DecideLimits): void {
  requireNotFinished(s, true);
  const item = runningAttempt(s, data.itemId, data.attempt);
  if (data.name.trim() === '' || data.name.length > 128) reject('INVALID_FIELD', 'data.name must be 1..128 characters', 'data.name');
  checkJson(data.valueJson, 'data.valueJson', limits);
  const count = (item.evidence ?? []).filter((e) => e.attempt === data.attempt).length;
  if (count >= MAX_EVIDENCE_PER_ATTEMPT) reject('PAYLOAD_TOO_LARGE', `an attempt may attach at most ${MAX_EVIDENCE_PER_ATTEMPT} evidence records`, 'data.name');
  out.emit({ type: 'EvidenceRecorded', data: { itemId: item.id, attempt: data.attempt, name: data.name, valueJson: data.valueJson } });
}

/** Longest wait timeout: 365 days. */
export const MAX_WAIT_MS = 365 * 24 * 3600 * 1000;

/** The items waiting for a signal (in progress, their current attempt a wait for it), in item order. */
function waitingFor(s: PlanState, signal: string): ItemState[] {
  const out: ItemState[] = [];
  for (const id of s.itemOrder) {
    const it = getItem(s, id);
    if (it?.status === 'in_progress' && currentAttempt(it)?.wait?.signal === signal) out.push(it);
  }
  return out;
}

/**
 * A signal for the items waiting for it: each gets `ItemSignalled` (its attempt succeeded, the data its
 * output) and `ItemCompleted`, then the plan settles as after any completion. Idempotent by `signalId`
 * (DUPLICATE_SIGNAL names the first delivery, also once the plan finished); NOT_WAITING when no item waits for the name now (pending,
 * already signalled, timed out, or no such wait) — a signal is never dropped silently.
 */
function signalItem(out: Emitter, s: PlanState, data: SignalItem, limits: DecideLimits): void {
  if (!isValidId(data.signal)) reject('INVALID_FIELD', 'data.signal must be 1..128 chars of [A-Za-z0-9._:-]', 'data.signal');
  if (data.signalId.trim() === '' || data.signalId.length > 256) reject('INVALID_FIELD', 'data.signalId must be 1..256 characters', 'data.signalId');
  // Before PLAN_FINISHED: a redelivered signal is told it was delivered, even once the plan it finished is over.
  const first = s.signals !== undefined && Object.prototype.hasOwnProperty.call(s.signals, data.signalId) ? s.signals[data.signalId] : undefined;
  if (first !== undefined) reject('DUPLICATE_SIGNAL', `signal ${data.signalId} was delivered to plan ${s.planId} at seq ${first}`, 'data.signalId');
  requireNotFinished(s, true);
  checkJson(data.dataJson, 'data.dataJson', limits);
  const items = waitingFor(s, data.signal);
  if (items.length === 0) {
    const names = [...new Set(s.itemOrder.flatMap((id) => {
      const it = getItem(s, id);
      const w = it?.status === 'in_progress' ? currentAttempt(it)?.wait : undefined;
      return w === undefined ? [] : [w.signal];
    }))];
    reject('NOT_WAITING', `no item of plan ${s.planId} waits for signal ${data.signal}${names.length ? ` (waiting: ${names.join(', ')})` : ''}`, 'data.signal');
  }
  for (const it of items) {
    const attempt = (currentAttempt(it) as { attempt: number }).attempt;
    out.emit({ type: 'ItemSignalled', data: { itemId: it.id, attempt, signal: data.signal, signalId: data.signalId, dataJson: data.dataJson } });
    out.emit({ type: 'ItemCompleted', data: { itemId: it.id, attempt } });
  }
  settlePlan(out, s);
}

/** A waiting attempt's deadline passed: it fails, retryably, with WAIT_TIMEOUT (SettleItem applies the retry policy). */
function expireWait(out: Emitter, s: PlanState, data: ExpireWait, now: number, firstSeen: FirstSeen | undefined): void {
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt?.wait === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not waiting`, 'data.itemId');
  if (attempt.attempt !== data.attempt) reject('INVALID_STATE', `attempt ${data.attempt} is not the current attempt ${attempt.attempt} of ${item.id}`, 'data.attempt');
  const deadline = attempt.wait.deadline;
  const due = waitDueAt(s, item, firstSeen);
  if (deadline === null || due === null || due > now) reject('INVALID_STATE', `the wait of ${item.id} has ${deadline === null ? 'no deadline' : `its deadline at ${due ?? deadline}`}`, 'data.itemId');
  nonEmpty(data.executorId, 'data.executorId');
  out.emit({
    type: 'ResultCommitted',
    data: {
      itemId: item.id,
      attempt: attempt.attempt,
      outcome: 'failed_retryable',
      outputJson: null,
      error: { code: 'WAIT_TIMEOUT', message: `no signal ${attempt.wait.signal} arrived before the deadline ${new Date(deadline).toISOString()}`, detailsJson: null },
      durationMs: Math.max(0, now - attempt.startedAt),
      executorId: data.executorId,
      followUpIds: [],
    },
  });
}

function delegateItem(out: Emitter, s: PlanState, data: DelegateItem): void {
  requireNotFinished(s);
  const item = requireItem(s, data.itemId, 'data.itemId');
  const attempt = currentAttempt(item);
  if (item.status !== 'in_progress' || attempt === undefined) reject('INVALID_STATE', `item ${item.id} is ${item.status}, not in_progress`, 'data.itemId');
  if (attempt.attempt !== data.attempt) reject('INVALID_STATE', `attempt ${data.attempt} is not the current attempt ${attempt.attempt} of ${item.id}`, 'data.attempt');
  if (attempt.childPlanId !== null) reject('INVALID_STATE', `item ${item.id} is already delegated to ${attempt.childPlanId}`, 'data.itemId');
  if (!isValidId(data.childPlanId)) reject('INVALID_FIELD', 'data.childPlanId is not a valid id', 'data.childPlanId');
  if (isReservedPlanId(data.childPlanId)) reject('INVALID_FIELD', `data.childPlanId ${RESERVED_MESSAGE}`, 'data.childPlanId');
  if (data.childPlanId === s.planId) reject('INVALID_FIELD', 'a plan cannot delegate to itself', 'data.childPlanId');
  out.emit({ type: 'ItemDelegated', data: { itemId: item.id, attempt: attempt.attempt, childPlanId: data.childPlanId } });
}

// ---------------------------------------------------------------------------------------------------------

function str(value: unknown, fallback: string, max = 256): string {
  return typeof value === 'string' ? value.slice(0, max) : fallback;
}

/**
 * The `CommandRejected` event for a rejected command. It is part of the plan's chain (next seq, next hash)
 * even when the plan does not exist yet, so a client watching the plan sees why. Never throws; metadata
 * that is missing or garbled in the command is replaced by placeholders.
 */
export function rejectionEvent(state: PlanState | undefined, command: AnyCommand | unknown, rejection: Rejection, ctx: DecideContext): PlanEvent {
  const raw = (typeof command === 'object' && command !== null ? command : {}) as Record<string, unknown>;
  const get = (key: string): unknown => {
    try {
      return Object.prototype.hasOwnProperty.call(raw, key) ? raw[key] : undefined;
    } catch {
      return undefined;
    }
  };
  const planId = state?.planId ?? str(get('planId'), '');
  const commandId = str(get('commandId'), '');
  const seq = (state?.seq ?? 0) + 1;
  return sealEvent({
    eventId: eventId(planId, seq),
    planId,
    seq,
    occurredAt: typeof ctx === 'object' && ctx !== null && Number.isSafeInteger(ctx.now) ? ctx.now : 0,
    actor: str(get('actor'), 'unknown'),
    causationId: commandId,
    correlationId: str(get('correlationId'), commandId),
    prevHash: state?.lastHash ?? GENESIS_HASH,
    schemaVersion: eventSchemaVersion,
    type: 'CommandRejected',
    data: {
      commandId,
      commandType: str(get('type'), 'unknown', 128),
      code: rejection.code,
      message: String(rejection.message),
      field: rejection.field === null ? null : String(rejection.field),
    },
  });
}

/** Payload types of every command `decide` accepts (client and internal). */
export type DecidablePayloads = CommandPayloads & InternalCommandPayloads;
