import { setTimeout as sleep } from 'node:timers/promises';
import { setMaxListeners } from 'node:events';
import { placePayload } from '../src/blobs/index.js';
import { isLedgerError, LedgerError } from '../src/errors.js';
import type { OutRecord } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { getItem, isPlanFinished, pendingRecoveries, type ItemError, type ItemScan, type PlanEvent } from '../src/plan/index.js';
import type { AppendRequest } from './appender.js';
import type { OwnerDeps } from './context.js';
import { faultPoint } from './faults.js';
import { runAttempt, type AttemptOutcome } from './item-runner.js';
import type { Decided, PartitionBook } from './partition-book.js';
import type { PlanWriter } from './plan-writer.js';
import { ProgressRecorder } from './progress.js';
import { decideDelegation } from './delegation.js';
import { placeOutcome } from './payloads.js';
import { ReadinessIndex } from './readiness.js';
import { RetryTimer } from './retry-timer.js';
import type { AttemptTrace, PlanTraces } from './tracing.js';
import type { AttemptStream } from './streams.js';
import type { ToolStream } from '../src/tools.js';

/** `ctx.stream` of an executor without a stream writer: writes nothing. */
const NO_STREAM: ToolStream = { write: async () => {}, text: async () => {}, toolCall: async () => {}, usage: async () => {} };

/** What the scheduler reads of the owner's dependencies. */
export type ItemSchedulerDeps = Pick<OwnerDeps, 'blobs' | 'codec' | 'config' | 'executorId' | 'keys' | 'limits' | 'metrics' | 'now' | 'slots' | 'streams' | 'tools'>;

/**
 * Runs the items of one owned partition: recoveries of items caught mid-protocol, ready items (intent
 * recorded before the tool runs), one attempt at a time per item through {@link runAttempt}, and the
 * step's one transaction — result, completion, the intents it readies. Scheduled retries wait on one
 * timer per partition. Every attempt ends in a recorded outcome, or is abandoned to the next owner when
 * the partition is released; none is dropped and re-invoked.
 */
export class ItemScheduler {
  private readonly inFlight = new Set<string>();
  /** Where each plan's next look for ready items starts, and what it looks at besides. */
  private readonly readiness = new ReadinessIndex();
  private readonly running = new Set<Promise<void>>();
  private readonly retries: RetryTimer;
  /**
   * The partition's release: every running attempt listens on it (removed when the attempt ends), so it
   * has as many listeners as attempts running at once — bounded by the tool slots, not a leak, and never
   * worth Node's warning at eleven.
   */
  private readonly abort = (() => {
    const c = new AbortController();
    setMaxListeners(0, c.signal);
    return c;
  })();
  /** No new work is started. */
  private draining = false;
  /** Released: running steps record nothing more. */
  private stopped = false;

  constructor(
    private readonly partition: number,
    private readonly book: PartitionBook,
    private readonly writer: PlanWriter,
    private readonly d: ItemSchedulerDeps,
    private readonly log: Logger,
    private readonly topics: { commands: string; blobs: string; streams: string },
    /** A step failed (not fenced): the owner must be recreated from the log. */
    private readonly onBroken: (e: unknown) => void,
    /** A newer owner fenced this one: give the partition up. */
    private readonly onFenced: () => void,
    /** The owner's spans (attempt, tool call); absent or without a tracer when tracing is off. */
    private readonly traces?: PlanTraces,
  ) {
    this.retries = new RetryTimer(
      () => this.now(),
      (planId) => {
        this.readiness.rescan(planId);
        this.schedule(planId);
      },
    );
  }

  private now(): number {
    return this.d.now?.() ?? Date.now();
  }

  /**
   * Stops the items: no new work; `graceMs` > 0 lets running items finish their protocol first (a graceful
   * hand-over never makes the next owner repeat an invocation), then aborts the rest through their signal.
   */
  async stop(reason: string, graceMs: number): Promise<void> {
    this.draining = true;
    this.retries.stop();
    if (graceMs > 0 && this.running.size) {
      await Promise.race([Promise.allSettled([...this.running]), sleep(graceMs)]);
    }
    this.stopped = true;
    this.abort.abort(new Error(`partition ${this.partition} released: ${reason}`));
    await Promise.race([Promise.allSettled([...this.running]), sleep(2000)]);
  }

  /**
   * Looks at a plan and starts whatever can run: with `recover`, recoveries of items mid-protocol first
   * (a full pass: after taking the partition over, and after a command, which may have changed anything);
   * then ready items, from the plan's cursor past its settled front. A step of the owner's own items only
   * looks at what is open, so it costs the same on a 10-item and a 100,000-item plan.
   */
  schedule(planId: string, opts: { recover?: boolean } = {}): void {
    if (this.draining) return;
    const state = this.book.plans.get(planId);
    if (!state || this.book.stalled.has(planId) || isPlanFinished(state.status)) {
      this.readiness.forgetCursor(planId);
      // Finished, its events committed, nothing of it running: its state can leave memory.
      if (state && isPlanFinished(state.status) && !this.busy(planId)) this.book.retire(planId);
      return;
    }
    if (!opts.recover) {
      void this.startReady(planId).catch((e: unknown) => this.onItemError(planId, '(intents)', e));
      return;
    }
    // A command may have changed anything: re-opened an item (a manual retry), added items, approved.
    this.readiness.reset(planId);
    for (const r of pendingRecoveries(state)) {
      const key = `${planId}/${r.itemId}`;
      // A delegated item waits for its child plan, a wait item for its signal (its deadline is noted by the scan).
      if (r.action.kind === 'await_child' || r.action.kind === 'await_signal' || this.inFlight.has(key)) continue;
      if (r.action.kind === 'settle') {
        this.track(key, planId, r.itemId, () => this.settle(planId, r.itemId, r.action.attempt));
      } else {
        this.launchInvocation(planId, r.itemId, r.action.attempt, true);
      }
    }
    void this.startReady(planId).catch((e: unknown) => this.onItemError(planId, '(intents)', e));
  }

  /**
   * Notes when a plan next has an item to start (a scheduled retry), from a scan: a scan that stopped
   * early (it found enough ready items) leaves an earlier wake-up in place; those items' steps look again.
   */
  private noteWakeUp(planId: string, scan: Pick<ItemScan, 'nextWakeUp' | 'complete'>): void {
    if (scan.complete) this.retries.note(planId, scan.nextWakeUp);
    else if (scan.nextWakeUp !== null) this.retries.noteEarliest(planId, scan.nextWakeUp);
  }

  /**
   * Records the intent of every ready item of a plan (as many as there are free tool slots) in ONE
   * append — together with `leading` events, e.g. the result and completion that made them ready — and,
   * once that transaction committed, invokes their tools. In steady state an item step is one
   * transaction: its result, its completion and the intents it readies.
   */
  private async startReady(planId: string, leading: Decided[] = [], afterCommit?: () => void, extra: AppendRequest['extra'] = []): Promise<void> {
    const intents: Array<{ itemId: string; attempt: number }> = [];
    const events: PlanEvent[] = leading.flatMap((d) => d.events);
    const messages: OutRecord[] = leading.flatMap((d) => d.messages);
    const state = this.book.plans.get(planId);
    // Undefined when no look was taken (no free slot): the plan's noted wake-up stays as it is.
    let scan: Pick<ItemScan, 'nextWakeUp' | 'complete'> | undefined;
    // Waits started or timed out in this look: the plan is looked at again (fully) once it committed.
    let waitsChanged = false;
    // Intents only for tool slots that are free: a plan with a step in flight gets none past them (its
    // steps come back here as they end), an idle one one, so no plan starves and none runs ahead of the
    // slots with intents that wait (and that a new owner would have to invoke again).
    if (state) this.readiness.noteChanges(planId, state, events); // whether or not intents are recorded now
    const free = this.d.slots.free;
    const budget = free > 0 ? free : this.busy(planId) ? 0 : 1;
    if (budget > 0 && !this.draining && state && !this.book.stalled.has(planId) && !isPlanFinished(state.status)) {
      const look = this.readiness.look(planId, state, this.now(), budget, this.book.firstSeen.ask, (at) => this.retries.noteEarliest(planId, at));
      const { found, ready } = look;
      scan = look.scan;
      waitsChanged = this.expireWaits(planId, found.expired, events, messages);
      for (const item of ready) {
        if (intents.length >= budget) break;
        const key = `${planId}/${item.itemId}`;
        if (this.inFlight.has(key)) continue;
        const recorded = this.book.decideAndApply(
          this.book.internal('RecordIntent', planId, `intent:${item.idempotencyKey}`, { itemId: item.itemId, executorId: this.d.executorId, fencingToken: this.book.fencingToken }),
          false,
        );
        if (!recorded.events.length) continue;
        if (recorded.events[0]?.type === 'WaitStarted') {
          // A wait item: its attempt waits for a signal, no tool runs and no slot is taken; the plan is looked
          // at again once this commits, for the items the look's budget left out and the wait's deadline.
          events.push(...recorded.events);
          messages.push(...recorded.messages);
          waitsChanged = true;
          continue;
        }
        this.inFlight.add(key);
        events.push(...recorded.events);
        messages.push(...recorded.messages);
        intents.push({ itemId: item.itemId, attempt: item.nextAttempt });
      }
    }
    this.d.slots.reserve(intents.length); // until their invocations are launched, for the other plans' looks
    try {
      try {
        await this.writer.append(planId, { events, messages }, undefined, extra);
      } finally {
        for (const i of intents) this.inFlight.delete(`${planId}/${i.itemId}`);
      }
      afterCommit?.();
      for (const i of intents) {
        faultPoint('after_intent', { planId, itemId: i.itemId, attempt: i.attempt });
        this.launchInvocation(planId, i.itemId, i.attempt, false);
      }
    } finally {
      this.d.slots.unreserve(intents.length);
    }
    if (scan) this.noteWakeUp(planId, scan);
    else if (!state || isPlanFinished(state.status)) this.retries.note(planId, null);
    if (waitsChanged) {
      this.readiness.rescan(planId);
      setImmediate(() => this.schedule(planId));
    }
  }

  /**
   * Times out the waits whose deadline passed: per attempt `ExpireWait` (a WAIT_TIMEOUT result) and its
   * settlement (a retry that waits anew, or the item's failure), added to the look's append. Whether any was.
   */
  private expireWaits(planId: string, expired: ReadonlyArray<{ itemId: string; attempt: number }>, events: PlanEvent[], messages: OutRecord[]): boolean {
    let any = false;
    for (const w of expired) {
      const key = this.key(planId, w.itemId, w.attempt);
      const timedOut = this.book.decideAndApply(this.book.internal('ExpireWait', planId, `expire:${key}`, { itemId: w.itemId, attempt: w.attempt, executorId: this.d.executorId }), false);
      if (!timedOut.events.length) continue;
      const settled = this.book.decideAndApply(this.book.internal('SettleItem', planId, `settle:${key}`, { itemId: w.itemId }), false);
      for (const d of [timedOut, settled]) {
        events.push(...d.events);
        messages.push(...d.messages);
      }
      this.d.metrics.attempts.inc({ outcome: 'failed_retryable', code: 'WAIT_TIMEOUT' });
      any = true;
    }
    return any;
  }

  /** Stops keeping anything for a plan (finished, stalled, gone). */
  private forget(planId: string): void {
    this.book.firstSeen.forget(planId);
    this.readiness.forget(planId);
  }

  /** Whether a step of this plan is in flight (an intent being recorded, a tool running, a settle). */
  private busy(planId: string): boolean {
    const prefix = `${planId}/`;
    for (const key of this.inFlight) if (key.startsWith(prefix)) return true;
    return false;
  }

  private launchInvocation(planId: string, itemId: string, attempt: number, recovering: boolean): void {
    this.track(`${planId}/${itemId}`, planId, itemId, () => this.invoke(planId, itemId, attempt, recovering));
  }

  /** Runs one item step with in-flight bookkeeping; reschedules the plan when it ends. */
  private track(key: string, planId: string, itemId: string, step: () => Promise<unknown>): void {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    const p: Promise<void> = step()
      .then(() => undefined)
      .catch((e: unknown) => this.onItemError(planId, itemId, e))
      .finally(() => {
        this.inFlight.delete(key);
        this.running.delete(p);
        // Rescheduled on the next turn: a step that recorded nothing must never re-run in a tight loop.
        setImmediate(() => this.schedule(planId));
      });
    this.running.add(p);
  }

  private onItemError(planId: string, itemId: string, e: unknown): void {
    if (this.stopped || this.abort.signal.aborted) return;
    if (isLedgerError(e, 'FENCED')) {
      this.log.warn({ planId }, 'fenced by a newer owner; giving the partition up');
      this.onFenced();
      return;
    }
    this.log.error({ err: e, planId, itemId }, 'item step failed; resetting the partition from the log');
    this.onBroken(e);
  }


  private key(planId: string, itemId: string, attempt: number): string {
    return `${planId}/${itemId}/${attempt}`;
  }

  /** Settles an item whose result is committed (recovery, a child's result), with the next ready intents. */
  private async settle(planId: string, itemId: string, attempt: number): Promise<void> {
    const settled = this.book.decideAndApply(this.book.internal('SettleItem', planId, `settle:${this.key(planId, itemId, attempt)}`, { itemId }), false);
    await this.startReady(planId, [settled]);
  }

  /**
   * Invokes the tool of an item whose intent is committed, then records the outcome: result, completion
   * (or retry / failure) and the intents it readies, in one transaction. The attempt always ends in a
   * recorded outcome or is abandoned to the next owner (a hand-over); it is never dropped and re-invoked.
   */
  private async invoke(planId: string, itemId: string, attempt: number, recovering: boolean): Promise<void> {
    if (this.stopped) return;
    const state = this.book.plans.get(planId);
    const item = state && getItem(state, itemId);
    if (!state || !item || item.status !== 'in_progress') return;
    const span = this.traces?.attempt({ planId, itemId, attempt, idempotencyKey: this.key(planId, itemId, attempt), tool: item.tool, recovering });
    if (span === undefined) {
      await this.invokeStep(planId, itemId, attempt, recovering, state, item, undefined);
      return;
    }
    try {
      const ended = await this.invokeStep(planId, itemId, attempt, recovering, state, item, span);
      span.end(ended === 'recorded' ? { committed: true } : ended === 'delegated' ? { committed: true, outcome: 'delegated' } : { committed: false, outcome: ended });
    } catch (e) {
      span.end({ committed: false, error: e });
      throw e;
    }
  }

  /** {@link invoke}'s step: how it ended (recorded, delegated to a child plan, abandoned to the next owner, or not recordable). */
  private async invokeStep(
    planId: string,
    itemId: string,
    attempt: number,
    recovering: boolean,
    state: NonNullable<ReturnType<PartitionBook['plans']['get']>>,
    item: NonNullable<ReturnType<typeof getItem>>,
    span: AttemptTrace | undefined,
  ): Promise<'recorded' | 'delegated' | 'abandoned' | 'unrecorded'> {
    const tool = this.d.tools.get(item.tool);
    const log = this.log.child({ planId, itemId, attempt, tool: item.tool });
    const idempotencyKey = this.key(planId, itemId, attempt);
    // Payloads stored by reference are read before the tool runs; one that cannot be read fails the attempt.
    let inputJson: string;
    const deps: Record<string, unknown> = {};
    let lastCheckpoint: unknown;
    try {
      // An encrypted payload is opened with the plan's key (a destroyed key is NOT_FOUND: terminal).
      const read = async (json: string) => {
        const text = await this.d.blobs.resolve(planId, json);
        return this.d.keys ? this.d.keys.open(planId, text) : text;
      };
      inputJson = await read(item.inputJson);
      if (item.checkpoint !== undefined) lastCheckpoint = JSON.parse(await read(item.checkpoint.stateJson));
      for (const dep of item.dependsOn) {
        const out = getItem(state, dep)?.outputJson;
        deps[dep] = out == null ? null : JSON.parse(await read(out));
      }
    } catch (e) {
      if (this.stopped) return 'abandoned';
      const terminal = isLedgerError(e, 'NOT_FOUND') || isLedgerError(e, 'INTEGRITY');
      log.error({ err: e }, 'a payload stored by reference could not be read');
      return this.record(planId, itemId, attempt, {
        kind: 'result',
        outcome: terminal ? 'failed_terminal' : 'failed_retryable',
        outputJson: null,
        error: { code: terminal ? 'PAYLOAD_UNREADABLE' : 'PAYLOAD_UNAVAILABLE', message: `a payload of this item could not be read: ${(e as Error).message}`, detailsJson: null },
        followUps: [],
        durationMs: 0,
      }, log, span);
    }
    // The attempt's live stream: a re-run after a takeover first marks the earlier run superseded.
    const stream = this.d.streams?.attempt({ planId, itemId, attempt, run: this.book.fencingToken, partition: this.partition, alive: () => this.book.plans.has(planId) && !this.stopped });
    if (stream !== undefined && recovering && tool !== undefined) await stream.supersede();
    const ended = await runAttempt(
      {
        tool,
        toolName: item.tool,
        inputJson,
        ctx: { planId, itemId, attempt, idempotencyKey, fencingToken: this.book.fencingToken, log, dependencies: deps, recovering, lastCheckpoint, stream: stream ?? NO_STREAM },
        progress: (signal) => new ProgressRecorder((kind, json, name) => this.recordProgress(planId, itemId, attempt, kind, json, name), this.d.limits.checkpointIntervalMs, signal),
        release: this.abort.signal,
        timeoutMs: tool?.timeoutMs ?? this.d.limits.toolTimeoutMs,
        abortGraceMs: this.d.limits.abortGraceMs,
        slots: this.d.slots,
        maxOutputBytes: this.d.limits.payload.maxPayloadBytes,
        executorId: this.d.executorId,
        trace: span,
      },
      log,
    );
    // Every stream record of the run acknowledged before its end marker is written.
    await stream?.close();
    faultPoint('after_tool', { planId, itemId, attempt });
    if (this.stopped || ended.kind === 'abandoned') return 'abandoned';
    const marked = stream !== undefined && (stream.used || recovering) ? stream : undefined;
    if (ended.kind === 'delegate') {
      await this.delegate(planId, itemId, attempt, ended, log, span);
      if (marked) await this.d.streams!.send([marked.endRecord('final', 'delegated to a child plan')]).catch(() => {});
      return 'delegated';
    }

    if (ended.error?.code === 'TIMEOUT') this.d.metrics.toolTimeouts.inc({ tool: item.tool });
    return this.record(planId, itemId, attempt, ended, log, span, marked);
  }

  /**
   * Records an attempt's outcome: large output and follow-up inputs go by reference (their chunks in the
   * same transaction), then result, completion (or retry / failure) and the intents it readies, in one
   * transaction. A result the ledger refuses becomes a terminal failure with the refusal's code.
   */
  private async record(planId: string, itemId: string, attempt: number, outcome: Extract<AttemptOutcome, { kind: 'result' }>, log: Logger, span?: AttemptTrace, stream?: AttemptStream): Promise<'recorded' | 'unrecorded'> {
    const idempotencyKey = this.key(planId, itemId, attempt);
    const { ended, blobs } = placeOutcome(planId, outcome, await this.sealer(planId), this.d.limits.payload, this.now(), this.partition);
    let committed = this.commitResult(planId, itemId, attempt, ended);
    if (committed.rejection && this.book.plans.get(planId) && getItem(this.book.plans.get(planId)!, itemId)?.status === 'in_progress') {
      // The ledger refused what the tool returned (follow-ups that do not fit the plan, a payload past a
      // limit): the attempt fails terminally with the refusal's code, after this one invocation.
      const r = committed.rejection;
      log.warn({ rejection: r }, 'the ledger refused the tool result; recording the attempt as failed');
      committed = this.commitResult(planId, itemId, attempt, {
        kind: 'result',
        outcome: 'failed_terminal',
        outputJson: null,
        error: { code: r.code === 'PAYLOAD_TOO_LARGE' ? 'OUTPUT_TOO_LARGE' : `RESULT_${r.code}`, message: `the ledger refused the tool's result: ${r.message}`, detailsJson: null },
        followUps: [],
        durationMs: ended.durationMs,
      });
    }
    if (!committed.events.length) {
      // Nothing could be recorded although the item still waits for this attempt: stall the plan with the
      // reason (visible, and nothing re-invokes the tool) rather than loop.
      const still = this.book.plans.get(planId);
      if (still && getItem(still, itemId)?.status === 'in_progress') this.book.stall(planId, `the result of ${idempotencyKey} could not be recorded: ${committed.fault ?? committed.rejection?.message ?? 'unknown'}`);
      return 'unrecorded';
    }
    const result = committed.events[0]?.type === 'ResultCommitted' ? (committed.events[0].data as { outcome: string; error: ItemError | null; outputJson: string | null }) : undefined;
    this.d.metrics.attempts.inc({ outcome: result?.outcome ?? ended.outcome, code: result?.error?.code ?? '' });
    span?.result(result?.outcome ?? ended.outcome, result?.error?.code);
    const settled = this.book.decideAndApply(this.book.internal('SettleItem', planId, `settle:${idempotencyKey}`, { itemId }), false);
    // Only chunks the recorded result refers to (a refused result was replaced by a failure).
    const used = blobs.filter((b) => b.refJson === result?.outputJson || committed.events.some((e) => e.type === 'ItemAdded' && e.data.item.inputJson === b.refJson));
    const extra = used.length ? [{ topic: this.topics.blobs, messages: used.flatMap((b) => b.messages) }] : [];
    // The stream's end marker commits with the result: a reader sees `final` exactly when the result is recorded.
    if (stream !== undefined) {
      const succeeded = result?.outcome === 'succeeded';
      extra.push({ topic: this.topics.streams, messages: [stream.endRecord(succeeded ? 'final' : 'abandoned', succeeded ? undefined : `${result?.outcome ?? ended.outcome}: ${result?.error?.code ?? ''} ${result?.error?.message ?? ''}`.trim())] });
    }
    await this.startReady(planId, [committed, settled], () => faultPoint('after_result', { planId, itemId, attempt }), extra);
    return 'recorded';
  }

  /** Seals a plan's new payloads with its key; identity when no master key is configured or the plan has no key. */
  private async sealer(planId: string): Promise<(json: string) => string> {
    return (this.d.keys ? await this.d.keys.sealer(planId) : undefined) ?? ((json: string) => json);
  }

  /**
   * One progress write of a running attempt: an `ItemCheckpointed` or `EvidenceRecorded` in its own
   * transaction (a large state by reference, its chunks in the same transaction). A refusal (the attempt is
   * over, the plan finished, too much evidence) rejects the tool's call with the reason.
   */
  private async recordProgress(planId: string, itemId: string, attempt: number, kind: 'checkpoint' | 'evidence', plain: string, name?: string): Promise<void> {
    if (this.stopped) throw new LedgerError('CONFLICT', `partition ${this.partition} was released: nothing more is recorded for ${this.key(planId, itemId, attempt)}`);
    const json = (await this.sealer(planId))(plain);
    const { json: payload, blob } = placePayload(planId, json, kind === 'checkpoint' ? 'checkpoint' : `evidence ${name ?? ''}`, this.d.limits.payload, this.now(), this.partition);
    const decided =
      kind === 'checkpoint'
        ? this.book.decideAndApply(this.book.internal('RecordCheckpoint', planId, `checkpoint:${this.key(planId, itemId, attempt)}`, { itemId, attempt, stateJson: payload }), false)
        : this.book.decideAndApply(this.book.internal('RecordEvidence', planId, `evidence:${this.key(planId, itemId, attempt)}`, { itemId, attempt, name: name ?? '', valueJson: payload }), false);
    if (decided.rejection) throw new LedgerError('REJECTED', `${kind} refused: ${decided.rejection.code}: ${decided.rejection.message}`, { rejection: decided.rejection.code, field: decided.rejection.field });
    if (decided.fault !== undefined) throw new LedgerError('INTERNAL', `${kind} could not be decided: ${decided.fault}`);
    await this.writer.append(planId, decided, undefined, blob ? [{ topic: this.topics.blobs, messages: blob.messages }] : []);
  }

  private commitResult(planId: string, itemId: string, attempt: number, r: Extract<AttemptOutcome, { kind: 'result' }>): Decided {
    return this.book.decideAndApply(
      this.book.internal('CommitResult', planId, `result:${this.key(planId, itemId, attempt)}`, {
        itemId,
        attempt,
        outcome: r.outcome,
        outputJson: r.outputJson,
        error: r.error,
        durationMs: r.durationMs,
        executorId: this.d.executorId,
        followUps: r.followUps,
      }),
      false,
    );
  }

  /** The tool handed the item to a child plan: ItemDelegated, and the child's CreatePlan in the same transaction. */
  private async delegate(planId: string, itemId: string, attempt: number, ended: Extract<AttemptOutcome, { kind: 'delegate' }>, log: Logger, span?: AttemptTrace): Promise<void> {
    const key = this.key(planId, itemId, attempt);
    const step = decideDelegation({ book: this.book, codec: this.d.codec, partitions: this.d.config.partitions, executorId: this.d.executorId, now: this.now(), ...(span !== undefined ? { span } : {}) }, planId, itemId, attempt, key, ended);
    if (step.kind === 'delegated') return this.writer.append(planId, step.decided, undefined, [{ topic: this.topics.commands, messages: [step.message] }]);
    if (step.kind === 'none') return;
    log.warn({ err: step.error }, 'the tool delegated to a child plan that cannot be created; recording the attempt as failed');
    const committed = this.commitResult(planId, itemId, attempt, {
      kind: 'result',
      outcome: 'failed_terminal',
      outputJson: null,
      error: { code: 'INVALID_DELEGATION', message: `the child plan cannot be created: ${step.error.message}`, detailsJson: null },
      followUps: [],
      durationMs: ended.durationMs,
    });
    const settled = this.book.decideAndApply(this.book.internal('SettleItem', planId, `settle:${key}`, { itemId }), false);
    await this.startReady(planId, [committed, settled]);
  }
}
