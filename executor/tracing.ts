import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span, type Tracer } from '@opentelemetry/api';
import type { LogRecord, OutRecord } from '../src/kafka/index.js';
import type { PlanCommand } from '../src/plan/index.js';
import { contextFromTraceparent, spanContextFromTraceparent, traceparentOf, TRACEPARENT_HEADER } from '../src/trace-context.js';
import type { ToolTrace } from './item-runner.js';

/**
 * The executor's spans, for one owned partition: a `plan-ledger.command` span per command decision, a
 * `plan-ledger.attempt` span per item attempt with a child span per tool call. Each plan has one trace: its
 * context (a W3C `traceparent`) is taken from the command that created it, kept per plan, and written as a
 * header on every event record the owner appends for the plan, so an owner that restores the partition
 * after a crash reads it back and a resumed attempt continues the same trace. Without a tracer (tracing
 * off) every method returns undefined at once: nothing is allocated for tracing on the hot paths.
 */
export class PlanTraces {
  /** planId → the plan's trace context (`traceparent`). */
  private readonly byPlan = new Map<string, string>();

  constructor(
    readonly tracer: Tracer | undefined,
    readonly executorId: string,
  ) {}

  /** Trace contexts read back from the partition's records (see restore). */
  seed(traceparents: ReadonlyMap<string, string> | undefined): void {
    if (this.tracer === undefined || traceparents === undefined) return;
    for (const [planId, tp] of traceparents) this.byPlan.set(planId, tp);
  }

  /** The plan's trace context, if it has one. */
  get(planId: string): string | undefined {
    return this.tracer === undefined ? undefined : this.byPlan.get(planId);
  }

  forget(planId: string): void {
    this.byPlan.delete(planId);
  }

  /** The plan's event records with its trace context as a `traceparent` header (the same records when it has none). */
  withHeaders(planId: string, messages: OutRecord[]): OutRecord[] {
    if (this.tracer === undefined || messages.length === 0) return messages;
    const tp = this.byPlan.get(planId);
    if (tp === undefined) return messages;
    return messages.map((m) => (m.value == null ? m : { ...m, headers: { ...m.headers, [TRACEPARENT_HEADER]: tp } }));
  }

  /** A command's decision span (started once the command is decoded); undefined when tracing is off. */
  command(m: LogRecord): CommandTrace | undefined {
    return this.tracer === undefined ? undefined : new CommandTrace(this, this.tracer, m);
  }

  /** Notes the plan's trace context once a command for it was accepted (the first one: its CreatePlan). */
  noteAccepted(planId: string, span: Span): void {
    if (!this.byPlan.has(planId)) {
      const tp = traceparentOf(span);
      if (tp !== undefined) this.byPlan.set(planId, tp);
    }
  }

  /** An item attempt's span, from its intent to its completion; undefined when tracing is off. */
  attempt(a: { planId: string; itemId: string; attempt: number; idempotencyKey: string; tool: string; recovering: boolean }): AttemptTrace | undefined {
    if (this.tracer === undefined) return undefined;
    return new AttemptTrace(this.tracer, this.byPlan.get(a.planId), a, this.executorId);
  }
}

/** One command decision: `plan-ledger.command`, outcome accepted / rejected (with its code) / dead_lettered (with its reason). */
export class CommandTrace {
  private span: Span | undefined;
  private outcome: Attributes | undefined;

  constructor(
    private readonly traces: PlanTraces,
    private readonly tracer: Tracer,
    private readonly m: LogRecord,
  ) {}

  /**
   * Starts the span once the command is known (undefined: it could not be decoded). Its parent is the
   * client's `traceparent` header when there is one, else the plan's trace, else it starts the plan's trace;
   * a client trace that is not the plan's is linked to the plan's.
   */
  start(command: PlanCommand | undefined): void {
    if (this.span !== undefined) return;
    // A header that is not a valid traceparent (malformed, hostile) counts as absent.
    const header = this.m.headers[TRACEPARENT_HEADER];
    const client = spanContextFromTraceparent(header);
    const fromClient = client === undefined ? undefined : header;
    const ofPlan = command === undefined ? undefined : this.traces.get(command.planId);
    const parent = fromClient ?? ofPlan;
    const links: Link[] = [];
    const planContext = client !== undefined ? spanContextFromTraceparent(ofPlan) : undefined;
    if (planContext !== undefined && planContext.traceId !== client!.traceId) links.push({ context: planContext });
    const attributes: Attributes = { 'plan_ledger.executor_id': this.traces.executorId, 'plan_ledger.command.offset': this.m.offset };
    if (command !== undefined) {
      attributes['plan_ledger.command.type'] = command.type;
      attributes['plan_ledger.plan_id'] = command.planId;
      attributes['plan_ledger.command_id'] = command.commandId;
    }
    this.span = this.tracer.startSpan('plan-ledger.command', { kind: SpanKind.CONSUMER, attributes, links }, contextFromTraceparent(parent));
  }

  accepted(planId: string): void {
    this.start(undefined);
    this.outcome = { 'plan_ledger.outcome': 'accepted' };
    this.traces.noteAccepted(planId, this.span!);
  }

  rejected(code: string): void {
    this.start(undefined);
    this.outcome = { 'plan_ledger.outcome': 'rejected', 'plan_ledger.rejection_code': code };
  }

  deadLettered(reason: string, code: string): void {
    this.start(undefined);
    this.outcome = { 'plan_ledger.outcome': 'dead_lettered', 'plan_ledger.dlq_reason': reason, 'plan_ledger.error_code': code };
    this.span!.setStatus({ code: SpanStatusCode.ERROR, message: `dead-lettered: ${reason}` });
  }

  /** Ends the span when the command's append settles (committed, or failed: the batch is retried). */
  end(appended: Promise<void>): Promise<void> {
    return appended.then(
      () => {
        this.start(undefined);
        if (this.outcome) this.span!.setAttributes(this.outcome);
        this.span!.end();
      },
      (e: unknown) => {
        this.start(undefined);
        if (this.outcome) this.span!.setAttributes(this.outcome);
        this.span!.setAttribute('plan_ledger.outcome', 'not_appended');
        this.span!.recordException(e instanceof Error ? e : String(e));
        this.span!.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.message : String(e) });
        this.span!.end();
        throw e;
      },
    );
  }
}

/** One attempt of an item: `plan-ledger.attempt`, events intent → result → complete, the tool call as a child. */
export class AttemptTrace {
  readonly span: Span;

  constructor(
    private readonly tracer: Tracer,
    planTraceparent: string | undefined,
    private readonly a: { planId: string; itemId: string; attempt: number; idempotencyKey: string; tool: string; recovering: boolean },
    executorId: string,
  ) {
    const attributes: Attributes = {
      'plan_ledger.plan_id': a.planId,
      'plan_ledger.item_id': a.itemId,
      'plan_ledger.attempt': a.attempt,
      'plan_ledger.idempotency_key': a.idempotencyKey,
      'plan_ledger.executor_id': executorId,
      'plan_ledger.tool': a.tool,
      'plan_ledger.recovering': a.recovering,
      // False: the plan's trace context was not found (see docs/guides/tracing.md): this span starts a new trace.
      'plan_ledger.plan_trace': planTraceparent !== undefined,
    };
    const parent = planTraceparent === undefined ? ROOT_CONTEXT : contextFromTraceparent(planTraceparent);
    this.span = tracer.startSpan('plan-ledger.attempt', { kind: SpanKind.INTERNAL, attributes }, parent);
    this.span.addEvent('intent', { 'plan_ledger.recovering': a.recovering });
  }

  tool(): ToolTrace {
    const span = this.tracer.startSpan(this.a.tool, { kind: SpanKind.INTERNAL, attributes: { 'plan_ledger.tool': this.a.tool, 'plan_ledger.idempotency_key': this.a.idempotencyKey } }, trace.setSpan(ROOT_CONTEXT, this.span));
    return {
      traceparent: traceparentOf(span),
      end: (outcome) => {
        if (outcome.kind === 'result') {
          span.setAttribute('plan_ledger.outcome', outcome.outcome);
          if (outcome.error) {
            span.setAttribute('plan_ledger.error_code', outcome.error.code);
            span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error.code });
          }
        } else {
          span.setAttribute('plan_ledger.outcome', outcome.kind === 'delegate' ? 'delegated' : 'abandoned');
        }
        span.end();
      },
    };
  }

  /** A command this attempt sends (a child plan's CreatePlan) with the attempt's `traceparent` header. */
  onCommand(m: OutRecord): OutRecord {
    const tp = traceparentOf(this.span);
    return tp === undefined ? m : { ...m, headers: { ...m.headers, [TRACEPARENT_HEADER]: tp } };
  }

  /** The attempt's outcome as decided (recorded with the step's transaction). */
  result(outcome: string, errorCode: string | undefined): void {
    this.span.addEvent('result', { 'plan_ledger.outcome': outcome, ...(errorCode ? { 'plan_ledger.error_code': errorCode } : {}) });
    this.span.setAttribute('plan_ledger.outcome', outcome);
    if (errorCode) {
      this.span.setAttribute('plan_ledger.error_code', errorCode);
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: errorCode });
    }
  }

  /** Ends the span: `complete` once the step committed; otherwise with the outcome it ended in (abandoned, …). */
  end(ended: { committed: boolean; outcome?: string; error?: unknown }): void {
    if (ended.committed) this.span.addEvent('complete');
    if (ended.outcome !== undefined) this.span.setAttribute('plan_ledger.outcome', ended.outcome);
    if (ended.error !== undefined) {
      this.span.recordException(ended.error instanceof Error ? ended.error : String(ended.error));
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: ended.error instanceof Error ? ended.error.message : String(ended.error) });
    }
    this.span.end();
  }
}
