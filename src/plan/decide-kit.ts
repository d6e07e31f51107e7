// What every rule of `decide` uses: the rejection it throws, the emitter that builds events one by one, the
// field checks, the approval policy's review of added items, and the plan settling after an item did.
import { isCanonicalJsonText, utf8Length } from './canonical.js';
import { type AnyCommand } from './commands.js';
import { planDigest } from './digest.js';
import { type Rejection } from './errors.js';
import type { EventBody, PlanEvent, UnsealedEvent } from './events.js';
import { initialState } from './evolve.js';
import { Fold, type StatusCounts } from './fold.js';
import { canProgress } from './execution.js';
import { eventSchemaVersion } from './generated/schemas.js';
import type { ItemError, ItemSpec, RejectionCode, PolicyDecision } from './generated/types.js';
import { GENESIS_HASH, sealEvent } from './hash-chain.js';
import { eventId, isValidId, RESERVED_PLAN_ID_PREFIX } from './ids.js';
import { evaluatePolicy, type ApprovalPolicy } from './policy.js';
import { getItem, isPlanFinished, type ItemState, type PlanState } from './state.js';


/** Limits `decide` enforces. */
export interface DecideLimits {
  /** Max UTF-8 bytes of an inputJson / outputJson / detailsJson. */
  maxPayloadBytes: number;
  /** Max items in a plan. */
  maxItems: number;
}


export const RESERVED_MESSAGE = `must not start with "${RESERVED_PLAN_ID_PREFIX}" (reserved for the ledger's own keys, such as the projector's __watermark)`;

/** Longest wait timeout: 365 days. */
export const MAX_WAIT_MS = 365 * 24 * 3600 * 1000;


export class Rejected {
  constructor(readonly rejection: Rejection) {}
}

export function reject(code: RejectionCode, message: string, field: string | null = null): never {
  throw new Rejected({ code, message, field });
}

/**
 * Builds events one by one, threading seq, hash chain and state (so later events see earlier ones, and an
 * event `evolve` would refuse fails the decision). The state is folded in place from one copy of the
 * caller's state, which is never touched, as a branch: no plan digest, and changed items kept aside, so a
 * step of a large plan does not copy its items map. Read items with `item()`.
 */
export class Emitter {
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

// ---------------------------------------------------------------------------------------------------------
// validation helpers

/** Secret paths: at most 64, each 1..256 chars of dot-separated non-empty segments, no repeats. */
export function checkSecretPaths(paths: readonly string[], field: string): void {
  if (paths.length > 64) reject('INVALID_FIELD', `${field} lists at most 64 paths`, field);
  const seen = new Set<string>();
  paths.forEach((p, i) => {
    const f = `${field}[${i}]`;
    if (p.length < 1 || p.length > 256 || p.split('.').some((s) => s === '')) reject('INVALID_FIELD', `${f} must be 1..256 chars of dot-separated, non-empty segments`, f);
    if (seen.has(p)) reject('INVALID_FIELD', `${f} repeats ${p}`, f);
    seen.add(p);
  });
}

export function checkJson(text: string | null, field: string, limits: DecideLimits): void {
  if (text === null) return;
  if (utf8Length(text) > limits.maxPayloadBytes) reject('PAYLOAD_TOO_LARGE', `${field} exceeds ${limits.maxPayloadBytes} bytes`, field);
  if (!isCanonicalJsonText(text)) reject('INVALID_FIELD', `${field} must be canonical JSON (sorted keys, no whitespace)`, field);
}

export function checkError(error: ItemError | null, field: string, limits: DecideLimits): void {
  if (error !== null) checkJson(error.detailsJson, `${field}.detailsJson`, limits);
}

export function nonEmpty(value: string, field: string): void {
  if (value.trim() === '') reject('INVALID_FIELD', `${field} must not be empty`, field);
}

/**
 * Validates items about to be added to `existing` (undefined for a new plan): ids, duplicates, tool,
 * input payload, retry policy, dependencies (on existing items or items of the same batch), cycles, count.
 */
export function validateItems(existing: PlanState | undefined, items: readonly ItemSpec[], field: string, limits: DecideLimits): void {
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

export function requireNotFinished(s: PlanState, allowFailed = false): void {
  if (s.status === 'completed' || s.status === 'cancelled' || (!allowFailed && s.status === 'failed')) {
    reject('PLAN_FINISHED', `plan ${s.planId} is ${s.status}`, null);
  }
}

export function requireItem(s: PlanState, id: string, field: string) {
  return getItem(s, id) ?? reject('ITEM_NOT_FOUND', `item ${id} not found in plan ${s.planId}`, field);
}

// ---------------------------------------------------------------------------------------------------------
// client commands

/** Pauses (or opens) the plan for review at the digest after the events so far: PlanProposed with the decision. */
export function proposeForPolicy(out: Emitter, decision: PolicyDecision | null): void {
  const after = out.state as PlanState;
  out.emit({ type: 'PlanProposed', data: { digest: planDigest(after), itemCount: after.itemOrder.length, policy: decision } });
}

/** The plan's current review decision without its seq (to carry it into a new proposal), or null. */
export function currentDecision(s: PlanState): PolicyDecision | null {
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
export function reviewAddedItems(out: Emitter, s: PlanState, items: readonly ItemSpec[], policy: ApprovalPolicy | undefined, byTool: boolean): void {
  if (items.length === 0 || isPlanFinished(s.status)) return;
  const decision = policy === undefined ? null : evaluatePolicy(policy, { labels: s.labels, items, itemCount: s.itemOrder.length + items.length });
  const required = decision?.required === true ? decision : null;
  if ((s.status === 'running' || s.status === 'approved') && required !== null) proposeForPolicy(out, required);
  else if (s.status === 'proposed' && (s.mode === 'execute' || byTool)) proposeForPolicy(out, required ?? currentDecision(s));
}

/** After an item settled: PlanCompleted when every item completed, PlanFailed when a failure blocks the rest. */
export function settlePlan(out: Emitter, s: PlanState): void {
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
