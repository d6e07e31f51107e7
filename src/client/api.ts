// The client's public interface: what `connectLedger` returns and the shapes its methods take and give.
import { type ErasureRecord } from '../audit/erasure-record.js';
import { type PlanAudit, type PlanReplay, type ReplayFailure } from '../audit/live.js';
import { type AsOfInput } from '../audit/timeline.js';
import type { PlanVerification } from '../audit/verify.js';
import { type LedgerConfig } from '../config.js';
import {
  type ReadStats,
} from '../kafka/index.js';
import { type Logger } from '../logging.js';
import { type PlanEvent, type PlanMode, type PlanState, type PlanStatus } from '../plan/index.js';
import { type ItemInput } from '../plan-input.js';
import type { PlanPage } from '../projection/query.js';
import { type PlanFilter } from './list-plans.js';
import type { ExecutorList } from '../executors/index.js';
import type { StreamOptions } from '../streams/reader.js';
import type { StreamChunk } from '../streams/records.js';

export interface CreatePlanInput {
  goal: string;
  /** `propose`: nothing runs until an operator approves the digest. `execute`: runs at once. */
  mode: PlanMode;
  items?: ItemInput[];
  labels?: Record<string, string>;
  /** Default: a fresh unique id. */
  planId?: string;
}

/** What a command caused: the events the owning executor appended for it. */
export interface CommandOutcome {
  readonly commandId: string;
  readonly planId: string;
  readonly events: PlanEvent[];
}

export interface ForkOptions extends CommandOptions {
  /** The fork point: a seq of the source's log, or an item id. */
  at: number | string;
  /** New inputs for items that will run, by item id. */
  set?: Record<string, unknown>;
  /** The fork's id (default: a fresh one). */
  planId?: string;
  /** Default: the source's mode. */
  mode?: PlanMode;
}

export interface CommandOptions {
  /** Who issues the command (recorded as the events' actor). Default: the client id. */
  by?: string;
  /** How long to wait for the owning executor to decide (default 30 s). */
  timeoutMs?: number;
}

export interface CreatePlanOptions extends CommandOptions {
  /**
   * Refuse the plan, sending nothing, when one of its tools is served by no live executor (or the
   * executors cannot be read): `LedgerError('UNSERVED_TOOL')` naming the tools and the live executors.
   * Default false: the plan is created and the outcome carries the warning.
   */
  strictTools?: boolean;
}

/** What `createPlan` found when it checked the plan's tools against the live executors. */
export interface CreatePlanOutcome extends CommandOutcome {
  readonly digest: string;
  /** The tools no live executor serves (empty when all are served, or when the check could not run). */
  readonly unservedTools: string[];
  /** One line each, for a person: an unserved tool (naming the live executors), or a check that could not run. */
  readonly warnings: string[];
}

export interface ExecutorsOptions {
  /** Hold every executor's heartbeat to this age (ms) instead of three of its own heartbeat intervals. */
  staleAfterMs?: number;
}

export interface EraseOptions {
  /** Why, recorded in the erasure record. Default "erasure requested". */
  reason?: string;
  /** Who asked for it, recorded in the erasure record. Default: the client id. */
  by?: string;
  /** Erase even while the plan is approved or running (its running tools' results are then dropped). */
  force?: boolean;
  /** How long to wait for the owning executor to decide (default 30 s). */
  timeoutMs?: number;
}

/** What an accepted erasure did: no events, the tombstones, and the record on `<prefix>.ledger-audit`. */
export interface EraseOutcome extends CommandOutcome {
  readonly erasure: ErasureRecord;
}

export interface LedgerEventRecord {
  readonly event: PlanEvent;
  readonly partition: number;
  readonly offset: string;
}

export interface AuditOptions {
  /** Stop the timeline at this point and fold the plan as it was there: a seq, an ISO-8601 time or a Date. */
  asOf?: AsOfInput;
}

export interface ReplayOptions {
  /** Rebuild up to this point of each plan: a seq, an ISO-8601 time or a Date. Default: all of it. */
  until?: AsOfInput;
}

/** Every plan of the ledger (the topic prefix), for `replay` and `verify`. */
export interface AllPlans {
  all: true;
}

export interface Ledger {
  readonly config: LedgerConfig;
  /**
   * Creates a plan. Its tools are checked against the live executors (`executors()`): a tool that no live
   * executor serves is a warning in the outcome (`warnings`, `unservedTools`) and in the client's log, or
   * with `strictTools` a refusal (`UNSERVED_TOOL`) before anything is sent.
   */
  createPlan(input: CreatePlanInput, opts?: CreatePlanOptions): Promise<CreatePlanOutcome>;
  /**
   * The executors announced on `<prefix>.plan-executors`: live ones (a heartbeat within three of their
   * intervals, or `staleAfterMs`), stale ones (with the reason: a `kill -9`, a lost host), and the records
   * that could not be read (`invalid`, each with its reason). Executors that stopped cleanly are gone.
   *
   * @example
   * const { live, stale } = await ledger.executors();
   * for (const e of live) console.log(e.executorId, e.tools.join(','), e.partitions.join(','));
   */
  executors(opts?: ExecutorsOptions): Promise<ExecutorList>;
  addItems(planId: string, items: ItemInput[], opts?: CommandOptions): Promise<CommandOutcome>;
  propose(planId: string, opts?: CommandOptions): Promise<CommandOutcome & { digest: string }>;
  approve(planId: string, digest: string, opts?: CommandOptions & { note?: string }): Promise<CommandOutcome>;
  /** Rejects the proposed plan (the current digest unless `digest` names the one reviewed). */
  reject(planId: string, reason: string, opts?: CommandOptions & { digest?: string }): Promise<CommandOutcome>;
  cancel(planId: string, reason?: string, opts?: CommandOptions): Promise<CommandOutcome>;
  retryItem(planId: string, itemId: string, opts?: CommandOptions): Promise<CommandOutcome>;
  /**
   * Delivers signal `name` with `data` (any JSON value; it becomes the output of each item waiting for the
   * name) to a plan: its events are `ItemSignalled` + `ItemCompleted` per waiting item, the actor `by`.
   * Idempotent by `signalId` (default: a fresh id): a second delivery with the same id is `REJECTED` with
   * code `DUPLICATE_SIGNAL`; a signal no item waits for now is `REJECTED` with `NOT_WAITING`, an unknown plan
   * `PLAN_NOT_FOUND` — each recorded in the plan's chain as a `CommandRejected`, never dropped.
   *
   * @example await ledger.signal(planId, 'customer-reply', { address: '1 Main St' }, { signalId: 'webhook-8121' });
   */
  signal(planId: string, name: string, data: unknown, opts?: CommandOptions & { signalId?: string }): Promise<CommandOutcome>;
  /**
   * Creates a new plan from a point of another's history; the source is not touched. `at` is a seq of the
   * source's log (the fork starts from its state after that event) or an item id (the fork point is just
   * before the item's first attempt started; an item that never started: the source's head). The fork has
   * the source's items as of that point: those completed keep their recorded outputs (`ItemInherited`, byte
   * for byte, never run again), every other one is pending again; `set` replaces the input of items that
   * will run. Its first event names the origin, `PlanCreated.forkedFrom { planId, seq, chainHead }` (the
   * hash of the source's event at seq), so an auditor can check what it inherited. Mode and policy apply as
   * to any new plan (`mode` defaults to the source's). A bad `at` or `set` is a `VALIDATION` error naming
   * the field, with nothing sent; an unknown source `NOT_FOUND`.
   *
   * @example const { planId } = await ledger.fork(failedPlan, { at: 'step-39', set: { 'step-39': { retries: 5 } } });
   */
  fork(planId: string, opts: ForkOptions): Promise<CommandOutcome & { digest: string; forkedFrom: { planId: string; seq: number; chainHead: string } }>;
  /**
   * Erases a plan through its owning executor (the only writer of its partition): in one transaction it
   * tombstones every event key `planId:1..seq` and the plan's snapshot and archive record, and records a
   * `PlanErased` entry on `<prefix>.ledger-audit`; then it forgets the plan (a later command for the id
   * is PLAN_NOT_FOUND, except CreatePlan). Compaction then removes the records. Rejected (`REJECTED` with code
   * `INVALID_STATE`) while the plan is approved or running unless `force`; `PLAN_NOT_FOUND` for an
   * unknown or already erased plan.
   */
  erase(planId: string, opts?: EraseOptions): Promise<EraseOutcome>;
  /**
   * The plan as its events say now; undefined if unknown. Read from its latest snapshot (live or archived,
   * located through the client's index of the projector's topics) plus its events after the partition's
   * watermark: the cost follows the tail, not the history. Where no projector has written a watermark,
   * the partition is read from its start (no projector needed, slower). Payloads stored by reference are
   * read back whole (`payloads: 'reference'` keeps the `{"$blob":…}` references the log and digests hold);
   * one that cannot be read (erased, forged) stays a reference, and `verify` names it.
   */
  getPlan(planId: string, opts?: { payloads?: 'resolve' | 'reference' }): Promise<PlanState | undefined>;
  /**
   * The payload a stored payload text stands for: the text itself when inline, the content of a payload
   * stored by reference (`{"$blob":…}`, for inputs and outputs above the inline threshold), read from the
   * blobs topic and checked against its sha256 (INTEGRITY when it does not match, NOT_FOUND once erased).
   *
   * @example JSON.parse(await ledger.readPayload(planId, plan.items.report.outputJson!))
   */
  readPayload(planId: string, json: string): Promise<string>;
  /**
   * Every event of a plan in order, with where it sits in the log: read from the plan's first event (found
   * by the record timestamp of its creation, or the watermark for a plan created after it) to the end.
   */
  planEvents(planId: string): Promise<LedgerEventRecord[]>;
  /**
   * One page of plans, newest first, rebuilt from the log (no projector needed) with the filters, order
   * and cursor of the projector's `GET /api/plans`; `stalled` matches plans with a record that could not
   * be decoded or applied. Pages follow a keyset cursor: a plan added while paging shifts no page. A bad
   * filter is a `VALIDATION` error naming the field.
   *
   * @example
   * let page = await ledger.listPlans({ status: ['running', 'proposed'], label: 'team:payments', limit: 20 });
   * for (;;) {
   *   for (const p of page.plans) console.log(p.planId, p.status, `${p.progress.completed}/${p.progress.total}`);
   *   if (!page.nextCursor) break;
   *   page = await ledger.listPlans({ status: ['running', 'proposed'], label: 'team:payments', limit: 20, cursor: page.nextCursor });
   * }
   */
  listPlans(filter?: PlanFilter): Promise<PlanPage>;
  /**
   * The audit timeline of a plan, read from the log: one row per event with its position, actor,
   * causation, item and attempt, the attempt's idempotency key, the outcome and the time since the
   * attempt's intent (after a crash that includes the take-over) — what `plan-ledger audit` prints. With
   * `asOf` the timeline stops there and `state` is the plan as it was then (time travel); without, the
   * plan now. `NOT_FOUND` for an unknown or erased plan.
   *
   * @example
   * const { rows, state } = await ledger.audit(planId, { asOf: 7 }); // or an ISO time, or a Date
   * for (const r of rows) if (r.type === 'ResultCommitted') console.log(r.itemId, r.attempt, r.idempotencyKey, r.outcome);
   * console.log(state.state?.status, state.stateDigest); // the plan after seq 7
   */
  audit(planId: string, opts?: AuditOptions): Promise<PlanAudit>;
  /**
   * Rebuilds a plan from its events alone with the domain's `evolve` (what `plan-ledger replay` prints):
   * its state, digest and `stateDigest`, up to `until` when given. `NOT_FOUND` for an unknown plan or
   * one that did not exist yet at `until`; `INTEGRITY` when its events do not fold (`verify` names the
   * broken one). With `{ all: true }`, every plan of the prefix that existed at `until`, in log order; a
   * plan that does not fold is an entry with `ok: false` and the reason, not a throw.
   *
   * @example
   * const r = await ledger.replay(planId);
   * // r.stateDigest === stateDigest((await ledger.getPlan(planId))!)
   * const before = await ledger.replay(planId, { until: '2026-01-31T12:00:00Z' });
   * const everything = await ledger.replay({ all: true });
   * const broken = everything.filter((p) => !p.ok);
   */
  replay(planId: string, opts?: ReplayOptions): Promise<PlanReplay>;
  replay(target: AllPlans, opts?: ReplayOptions): Promise<Array<PlanReplay | ReplayFailure>>;
  /**
   * Verifies a plan in the live ledger, as `plan-ledger verify` does: seq contiguous from 1, hash chain
   * intact, independent rebuilds (a straight fold, an Avro round trip, a snapshot hand-over) agree on
   * `stateDigest`, and every snapshot on the snapshots topic agrees with a replay up to its seq. A broken
   * plan is a result with `ok: false` and `firstBroken` naming the first broken event, not a throw;
   * `NOT_FOUND` for an unknown plan. With `{ all: true }`, every plan of the prefix.
   *
   * @example
   * const v = await ledger.verify(planId);
   * if (!v.ok) console.error(`seq ${v.firstBroken?.seq} (${v.firstBroken?.check}): ${v.firstBroken?.reason}`);
   * const failing = (await ledger.verify({ all: true })).filter((p) => !p.ok);
   */
  verify(planId: string): Promise<PlanVerification>;
  verify(target: AllPlans): Promise<PlanVerification[]>;
  /**
   * Resolves with the plan's state once it reaches `status` (or satisfies the predicate): the plan is read
   * once as {@link getPlan} does, then followed on the client's live tail of the events topic (listening
   * starts before the read; events seen by both are applied once, by seq). A plan this client created is
   * not read at all: the client has followed it on the tail since before its first event (the first
   * `waitFor` after `createPlan` takes that state over). Payloads stored by reference are read back whole
   * in the state it returns. `timeoutMs` (default 60 s; `Infinity` for none) ends the wait with TIMEOUT,
   * `signal` with its reason.
   */
  waitFor(planId: string, status: PlanStatus | ((s: PlanState) => boolean), opts?: { timeoutMs?: number; signal?: AbortSignal }): Promise<PlanState>;
  /**
   * The plan's live stream (`<prefix>.plan-streams`): an agent turn's text deltas, tool-call starts and
   * usage, a tool's `ctx.stream.write(...)` progress, and each attempt's end marker (`final` once its result
   * is recorded, `superseded` when a new owner re-runs it after a takeover, `abandoned` when it failed).
   * From the plan's first retained record (default), `'live'`, or a chunk's `cursor` (resume: nothing
   * missed, nothing twice). It follows until `signal` aborts or the loop breaks, and holds a bounded amount
   * however slowly it is read. The stream is a view: the recorded results are the truth (`getPlan`).
   * `VALIDATION` for a bad `from`; `NOT_FOUND` for an unknown or erased plan (also mid-read).
   *
   * @example
   * for await (const c of ledger.stream(planId, { from: savedCursor })) {
   *   if (c.kind === 'text') process.stdout.write(c.text!);
   *   savedCursor = c.cursor;
   *   if (c.kind === 'end' && c.end === 'final' && c.itemId === 'turn-1') break;
   * }
   */
  stream(planId: string, opts?: StreamOptions): AsyncIterableIterator<StreamChunk>;
  close(): Promise<void>;
}

export type { StreamOptions, StreamChunk };

export interface ConnectOptions {
  logger?: Logger;
  /**
   * The master key (32 bytes) that wraps each plan's data key; default PLAN_LEDGER_MASTER_KEY_FILE /
   * PLAN_LEDGER_MASTER_KEY. With one, a new plan gets a random data key and every item input is encrypted
   * before it is sent (the commands topic and the DLQ hold ciphertext only); reads decrypt.
   */
  masterKey?: Buffer;
  /** Counts what the client's reads fetch from the log (records per topic), e.g. to watch read costs. */
  readStats?: ReadStats;
}

