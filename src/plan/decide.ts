import { FieldProblem, namedType, parseValue, type SchemaNode } from './avro-schema.js';
import { dropNullItemFields } from './absent-fields.js';
import { Emitter, reject, Rejected, RESERVED_MESSAGE, type DecideLimits } from './decide-kit.js';
import { addItems, approvePlan, cancelPlan, childPlanFinished, createPlan, erasePlan, proposePlan, rejectPlan, retryItem, signalItem } from './decide-plans.js';
import { commitResult, delegateItem, expireWait, recordCheckpoint, recordEvidence, recordIntent, settleItem } from './decide-items.js';
import { internalCommandSchemas, isCommandType, isInternalCommandType, type AnyCommand, type InternalCommandPayloads } from './commands.js';
import { isPlanError, type Rejection } from './errors.js';
import type { PlanEvent } from './events.js';
import type { FirstSeen } from './execution.js';
import { planCommandSchema, eventSchemaVersion } from './generated/schemas.js';
import type { CommandPayloads } from './generated/types.js';
import { GENESIS_HASH, sealEvent } from './hash-chain.js';
import { eventId, isReservedPlanId, isValidId } from './ids.js';
import type { ApprovalPolicy } from './policy.js';
import { hasAppliedCommand, planExists, type PlanState } from './state.js';

export { FORK_LABEL } from './decide-plans.js';
export { MAX_WAIT_MS, type DecideLimits } from './decide-kit.js';
export { MAX_EVIDENCE_PER_ATTEMPT } from './decide-items.js';

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
    default: {
      // Every command type has its rule: a new one that has none fails to compile here.
      const unhandled: never = command;
      reject('INVALID_FIELD', `no rule for command type ${String((unhandled as { type?: unknown }).type)}`, 'type');
    }
  }
  return out.events;
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
