// A LangGraph.js checkpoint saver on the ledger (issue 32). What maps to what:
//
//   LangGraph                         the ledger
//   ------------------------------    ----------------------------------------------------------------
//   (scope, thread_id)                one plan, id `lg-<sha256(["plan-ledger/langgraph", scope, thread_id])[:40]>`,
//                                     created by the thread's first put: mode `propose`, never proposed,
//                                     so it stays `draft` and nothing ever runs; labels
//                                     `langgraph:thread` and `langgraph-scope:<scope>`.
//   put(checkpoint, metadata,         AddItems of one item, tool `langgraph.checkpoint`, whose input holds the
//       newVersions)                  thread, namespace, checkpoint id, parent id, the serialized checkpoint
//                                     without its channel values, the metadata, and the values of the
//                                     channels in newVersions only, each with its version (one `ItemAdded`
//                                     event: in the plan's chain). A read gives a checkpoint the value of each
//                                     channel at the version its channel_versions name, as written by the
//                                     first put that carried that version (as the Postgres saver does).
//   putWrites(writes, taskId)         AddItems of one item, tool `langgraph.writes`, with the writes of the
//                                     call, each with its index (WRITES_IDX_MAP for the special channels).
//   checkpoint_ns                     a field of each item: one plan holds every namespace of its thread.
//   getTuple / list                   the plan as the ledger reads it (`ledger.getPlan`: its latest snapshot
//                                     plus its events after the projector's watermark), its items folded
//                                     in order into LangGraph's own in-memory layout (MemorySaver's), which
//                                     then answers — so filters, `before`, `limit`, pending writes and the
//                                     pending-sends migration behave exactly as LangGraph's reference saver.
//   list without thread_id            the scope's plans (`ledger.listPlans` by the scope's label), each read
//                                     as above.
//   fork(config, { threadId })        LangGraph's time travel onto a new thread (fork.ts): `ledger.fork` of the
//                                     thread's plan at the event that added the checkpoint, as the new thread's
//                                     plan (`forkedFrom` names the origin), each copied item's input with the
//                                     new thread's id; the checkpoint's own pending writes stay behind.
//   deleteThread(thread_id)           `ledger.erase`: the plan's events and blobs are tombstoned, its data key
//                                     shredded, and `<prefix>.ledger-audit` records the erasure.
//   interrupt() (an __interrupt__     besides the writes item, an interrupt plan (`lgi-…`, one per interrupted
//       write of putWrites)           task): mode execute, one wait item `answer` waiting for the signal
//                                     `resume` with the interrupt's value as its prompt — a waiting item in
//                                     `show`, the API, the dashboard and MCP. `answerOf` waits for the
//                                     person's answer (`plan-ledger signal <plan> resume --data …`), for the
//                                     app to resume the graph with `new Command({ resume })`.
//
// Payloads above the ledger's inline threshold (64 KiB) go to the blobs topic by reference, and with a
// master key item inputs are encrypted, both as for any item input (the ledger does it, not this file).
// Because a plan's items are only ever added, the saver keeps each plan's fold (for the `maxThreads` threads
// it read last) and applies only the items added since (by `itemOrder`): the read of the plan is the
// ledger's (snapshot + tail, payloads left as references), and only new items' payloads are read back
// (`ledger.readPayload`: a blob fetched and checked against its sha256, decrypted with a master key).
import { createHash, randomBytes } from 'node:crypto';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  copyCheckpoint,
  INTERRUPT,
  RESUME,
  MemorySaver,
  WRITES_IDX_MAP,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { Ledger } from '../client/index.js';
import { isLedgerError, LedgerError } from '../errors.js';
import { forkThread } from './fork.js';
import { invalid, isRejected, key } from './keys.js';
import { Lru } from '../lru.js';
import { applyItem, firstItem, store, type CheckpointInput, type Fold, type Stored, type WritesInput } from './thread-fold.js';

/** Tool names of the two kinds of item a saver writes (never run: the plan stays a draft). */
export const CHECKPOINT_TOOL = 'langgraph.checkpoint';
export const WRITES_TOOL = 'langgraph.writes';
/** The label every thread plan carries, and the label key naming its scope. */
export const THREAD_LABEL = 'langgraph';
export const SCOPE_LABEL = 'langgraph-scope';
/** The label value of an interrupt plan, its wait item and the signal that answers it. */
export const INTERRUPT_LABEL = 'interrupt';
export const ANSWER_ITEM = 'answer';
export const RESUME_SIGNAL = 'resume';
/** The task id LangGraph writes a `Command({ resume })` value under (`NULL_TASK_ID` of @langchain/langgraph). */
const NULL_TASK_ID = '00000000-0000-0000-0000-000000000000';
/** Most UTF-8 bytes of an interrupt plan's prompt (the ledger's bound on a wait prompt). */
const MAX_PROMPT_BYTES = 4096;
const SCOPE_RE = /^[A-Za-z0-9._-]{1,64}$/;

export interface LedgerSaverOptions {
  /** A connected ledger (`connectLedger()`); the saver does not close it. Its prefix needs running executors. */
  ledger: Ledger;
  /**
   * Threads with the same id in two scopes are two plans. 1..64 chars of [A-Za-z0-9._-]; default `default`.
   */
  scope?: string;
  /** The actor recorded on the events (default: the ledger client's id). */
  by?: string;
  /** How long a put waits for the owning executor (default: the client's 30 s). */
  timeoutMs?: number;
  /** Threads whose fold the saver keeps between reads (default 256); one read past it folds its thread again. */
  maxThreads?: number;
  serde?: SerializerProtocol;
}

/**
 * A LangGraph checkpoint saver whose threads are plans of the ledger: every `put` and `putWrites` is an
 * event in the thread's plan (Avro through the registry, in its hash chain, covered by `audit` and
 * `verify`), `deleteThread` is the ledger's erase. See the table at the top of this file.
 *
 * @example
 * const ledger = await connectLedger();
 * const graph = builder.compile({ checkpointer: new LedgerSaver({ ledger }) });
 */
export class LedgerSaver extends BaseCheckpointSaver {
  readonly ledger: Ledger;
  readonly scope: string;
  private readonly by: string | undefined;
  private readonly timeoutMs: number | undefined;
  private readonly maxThreads: number;
  /** Each thread's fold; past `maxThreads` the least recently read goes. */
  private readonly folds: Lru<string, Fold>;
  /** Plans this saver knows exist (created or read), so a put tries AddItems first. */
  private readonly known = new Set<string>();
  private readonly folding = new Map<string, Promise<unknown>>();
  /** The CreatePlan in flight per plan (see {@link append}). */
  private readonly creating = new Map<string, Promise<void>>();

  constructor(opts: LedgerSaverOptions) {
    super(opts.serde);
    this.ledger = opts.ledger;
    this.scope = opts.scope ?? 'default';
    if (!SCOPE_RE.test(this.scope)) throw invalid('scope', 'must be 1..64 chars of [A-Za-z0-9._-]');
    this.by = opts.by;
    this.timeoutMs = opts.timeoutMs;
    this.maxThreads = opts.maxThreads ?? 256;
    this.folds = new Lru({ maxWeight: this.maxThreads });
    if (!Number.isInteger(this.maxThreads) || this.maxThreads < 1) throw invalid('maxThreads', 'must be a positive integer');
  }

  /** The plan that holds a thread of this saver's scope. */
  planIdOf(threadId: string): string {
    key('thread_id', threadId);
    return `lg-${createHash('sha256').update(JSON.stringify(['plan-ledger/langgraph', this.scope, threadId])).digest('hex').slice(0, 40)}`;
  }

  // ------------------------------------------------------------------------------------------------
  // Writes

  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const threadId = key('thread_id', config.configurable?.thread_id);
    const ns = key('checkpoint_ns', config.configurable?.checkpoint_ns ?? '', { allowEmpty: true });
    const id = key('checkpoint.id', checkpoint.id);
    const parentRaw: unknown = config.configurable?.checkpoint_id;
    const parent = parentRaw === undefined || parentRaw === null || parentRaw === '' ? null : key('checkpoint_id', parentRaw);
    const { channel_values: channelValues, ...rest } = copyCheckpoint(checkpoint);
    const values = await Promise.all(
      Object.entries(newVersions ?? {}).map(async ([channel, version]): Promise<[string, string | number, Stored | null]> => {
        if (!(channel in channelValues)) return [channel, version, null];
        const [type, bytes] = await this.serde.dumpsTyped(channelValues[channel]);
        return [channel, version, store(type, bytes)];
      }),
    );
    const [[cpType, cpBytes], [mdType, mdBytes]] = await Promise.all([this.serde.dumpsTyped({ ...rest, channel_values: {} }), this.serde.dumpsTyped(metadata)]);
    const input: CheckpointInput = { langgraph: 'checkpoint', thread: threadId, ns, id, parent, checkpoint: store(cpType, cpBytes), metadata: store(mdType, mdBytes), values };
    await this.append(threadId, { kind: 'c', tool: CHECKPOINT_TOOL, title: `checkpoint ${id}${ns ? ` in ${ns}` : ''}`, why: `LangGraph put (step ${String(metadata.step ?? '?')}, ${String(metadata.source ?? '?')})`, input });
    return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: id } };
  }

  async putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    const threadId = key('thread_id', config.configurable?.thread_id);
    const ns = key('checkpoint_ns', config.configurable?.checkpoint_ns ?? '', { allowEmpty: true });
    const checkpointId = key('checkpoint_id', config.configurable?.checkpoint_id);
    const task = key('task_id', taskId);
    const stored = await Promise.all(
      writes.map(async ([channel, value], i): Promise<[string, number, Stored]> => {
        const [type, bytes] = await this.serde.dumpsTyped(value);
        return [channel, WRITES_IDX_MAP[channel] ?? i, store(type, bytes)];
      }),
    );
    const input: WritesInput = { langgraph: 'writes', thread: threadId, ns, checkpoint: checkpointId, task, path: taskPath ?? '', writes: stored };
    await this.append(threadId, { kind: 'w', tool: WRITES_TOOL, title: `writes of task ${task.slice(0, 64)} at ${checkpointId}`, why: `LangGraph putWrites (${writes.length} writes)`, input });
    const interrupts = writes.filter(([channel]) => channel === INTERRUPT).flatMap(([, value]) => (Array.isArray(value) ? value : [value]) as unknown[]);
    if (interrupts.length > 0) await this.openInterrupt(threadId, ns, checkpointId, task, interrupts);
    const resume = writes.find(([channel]) => channel === RESUME);
    if (resume && task === NULL_TASK_ID) await this.closeInterrupts({ configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId } }, resume[1]);
  }

  /**
   * The graph resumed with `Command({ resume: value })` without the ledger's answer (the app answered
   * itself): each interrupt plan of the checkpoint still waiting gets `value` as its answer, sent by this
   * saver's actor, so no wait stays open. One answered already is left as it is; a value that is not
   * JSON leaves it waiting.
   */
  private async closeInterrupts(config: RunnableConfig, value: unknown): Promise<void> {
    const tuple = await this.getTuple(config);
    const c = tuple?.config.configurable;
    if (!tuple || !c) return;
    const tasks = new Set(tuple.pendingWrites?.filter(([, channel]) => channel === INTERRUPT).map(([task]) => task));
    for (const task of tasks) {
      const planId = this.interruptPlanId(c.thread_id as string, (c.checkpoint_ns as string | undefined) ?? '', c.checkpoint_id as string, task);
      const item = (await this.ledger.getPlan(planId, { payloads: 'reference' }))?.items[ANSWER_ITEM];
      if (!item || item.status !== 'in_progress') continue;
      try {
        await this.ledger.signal(planId, RESUME_SIGNAL, value ?? null, { signalId: `resumed-by-graph.${planId}`, ...(this.by ? { by: this.by } : {}), ...(this.timeoutMs ? { timeoutMs: this.timeoutMs } : {}) });
      } catch (e) {
        if (isLedgerError(e, 'VALIDATION') || isRejected(e, 'NOT_WAITING') || isRejected(e, 'DUPLICATE_SIGNAL')) continue;
        throw e;
      }
    }
  }

  /** The interrupt plan of an interrupted task (deterministic: a write put again finds the same plan). */
  interruptPlanId(threadId: string, checkpointNs: string, checkpointId: string, taskId: string): string {
    key('thread_id', threadId);
    return `lgi-${createHash('sha256').update(JSON.stringify(['plan-ledger/langgraph/interrupt', this.scope, threadId, checkpointNs, checkpointId, taskId])).digest('hex').slice(0, 40)}`;
  }

  private async openInterrupt(threadId: string, ns: string, checkpointId: string, task: string, interrupts: unknown[]): Promise<void> {
    const planId = this.interruptPlanId(threadId, ns, checkpointId, task);
    const values = interrupts.map((i) => (typeof i === 'object' && i !== null && 'value' in i ? (i as { value: unknown }).value : i));
    let prompt = values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join('\n');
    while (Buffer.byteLength(prompt, 'utf8') > MAX_PROMPT_BYTES) prompt = `${prompt.slice(0, Math.floor(prompt.length * 0.9))}…`;
    const opts = { ...(this.by ? { by: this.by } : {}), ...(this.timeoutMs ? { timeoutMs: this.timeoutMs } : {}) };
    try {
      await this.ledger.createPlan(
        {
          planId,
          goal: `LangGraph thread ${JSON.stringify(threadId).slice(0, 200)} waits for an answer`,
          mode: 'execute',
          labels: { [THREAD_LABEL]: INTERRUPT_LABEL, [SCOPE_LABEL]: this.scope, 'langgraph-thread-plan': this.planIdOf(threadId) },
          items: [{ id: ANSWER_ITEM, title: 'Answer the graph', why: `task ${task.slice(0, 64)} of checkpoint ${checkpointId}${ns ? ` in ${ns}` : ''} called interrupt()`, wait: { signal: RESUME_SIGNAL, prompt } }],
        },
        opts,
      );
    } catch (e) {
      if (!isRejected(e, 'PLAN_EXISTS')) throw e; // the same write put again: its plan is there
    }
  }

  /**
   * The answer to the thread's pending interrupt, once a person gave it (`plan-ledger signal <plan> resume
   * --data …`, the dashboard's form, MCP's plan_signal): the signal's data, for
   * `graph.invoke(new Command({ resume: answer }), config)`. Waits up to `timeoutMs` (TIMEOUT past it);
   * NOT_FOUND when the thread's latest checkpoint has no pending interrupt.
   */
  async answerOf(config: RunnableConfig, opts: { timeoutMs?: number } = {}): Promise<unknown> {
    const tuple = await this.getTuple(config);
    const pending = tuple?.pendingWrites?.find(([, channel]) => channel === INTERRUPT);
    if (!tuple || !pending) throw new LedgerError('NOT_FOUND', 'langgraph: the thread has no pending interrupt', { field: 'thread_id' });
    const c = tuple.config.configurable!;
    const planId = this.interruptPlanId(c.thread_id as string, (c.checkpoint_ns as string | undefined) ?? '', c.checkpoint_id as string, pending[0]);
    const done = await this.ledger.waitFor(planId, (p) => p.items[ANSWER_ITEM]?.status === 'completed', opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {});
    return JSON.parse(done.items[ANSWER_ITEM]!.outputJson ?? 'null') as unknown;
  }

  /**
   * LangGraph's time travel onto a new thread, as the ledger's fork: `threadId` gets the thread's history
   * up to checkpoint `config.configurable.checkpoint_id` (default: its latest), and continues from there —
   * `graph.invoke(null, { configurable: { thread_id: threadId } })` runs the nodes after that checkpoint —
   * while the thread itself is not touched. The new thread's plan is `ledger.fork` of the thread's plan at
   * the event that added the checkpoint, so its first event names where it came from (`forkedFrom`: `show`,
   * `audit`, `verify`'s lineage check). Returns the new thread's config at the fork point. NOT_FOUND (field
   * `thread_id` / `checkpoint_id`) for a thread with no checkpoints (never written, or deleted) or a
   * checkpoint it does not have; CONFLICT (field `threadId`) when `threadId` already has checkpoints;
   * VALIDATION for a bad id or a subgraph's namespace. See fork.ts.
   */
  async fork(config: RunnableConfig, opts: { threadId: string }): Promise<RunnableConfig> {
    const out = await forkThread(
      { ledger: this.ledger, scope: this.scope, by: this.by, timeoutMs: this.timeoutMs, planIdOf: (t) => this.planIdOf(t), getTuple: (c) => this.getTuple(c), itemTools: [CHECKPOINT_TOOL, WRITES_TOOL] },
      config,
      opts,
    );
    this.folds.delete(out.planId);
    this.known.add(out.planId);
    return out.config;
  }

  /** Erases the thread's plan and its interrupt plans (`ledger.erase`); a thread never written is a no-op. */
  async deleteThread(threadId: string): Promise<void> {
    const planId = this.planIdOf(threadId);
    this.folds.delete(planId);
    this.known.delete(planId);
    const interrupts: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.ledger.listPlans({ label: [`${THREAD_LABEL}:${INTERRUPT_LABEL}`, `langgraph-thread-plan:${planId}`], limit: 500, ...(cursor ? { cursor } : {}) });
      interrupts.push(...page.plans.map((p) => p.planId));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const opts = { reason: 'LangGraph deleteThread', ...(this.by ? { by: this.by } : {}), ...(this.timeoutMs ? { timeoutMs: this.timeoutMs } : {}) };
    for (const id of [...interrupts, planId]) {
      try {
        // An interrupt plan still waiting for its answer is running: erased with force.
        await this.ledger.erase(id, { ...opts, force: id !== planId });
      } catch (e) {
        if (isRejected(e, 'PLAN_NOT_FOUND') || isLedgerError(e, 'NOT_FOUND')) continue;
        throw e;
      }
    }
  }

  private async append(threadId: string, it: { kind: 'c' | 'w'; tool: string; title: string; why: string; input: CheckpointInput | WritesInput }): Promise<void> {
    const planId = this.planIdOf(threadId);
    // A fresh id per put: a checkpoint put again under the same id is a later item, and the later wins on read.
    const item = { id: `${it.kind}.${randomBytes(12).toString('hex')}`, title: it.title, why: it.why, tool: it.tool, input: it.input };
    const opts = { ...(this.by ? { by: this.by } : {}), ...(this.timeoutMs ? { timeoutMs: this.timeoutMs } : {}) };
    for (;;) {
      // LangGraph writes a step's writes and checkpoint concurrently: the first writes of a new thread wait
      // for its one CreatePlan instead of each sending one (the others would be refused PLAN_EXISTS).
      const pending = this.creating.get(planId);
      if (pending) {
        await pending;
        continue;
      }
      if (!this.known.has(planId)) break;
      try {
        await this.ledger.addItems(planId, [item], opts);
        return;
      } catch (e) {
        if (!isRejected(e, 'PLAN_NOT_FOUND')) throw e;
        this.known.delete(planId); // erased meanwhile (by another saver): created again below
      }
    }
    const created = (async () => {
      try {
        await this.ledger.createPlan({ planId, goal: `LangGraph thread ${JSON.stringify(threadId).slice(0, 200)}`, mode: 'propose', labels: { [THREAD_LABEL]: 'thread', [SCOPE_LABEL]: this.scope }, items: [item] }, opts);
      } catch (e) {
        // Another saver (process) created it first: its refusal is a CommandRejected in the chain; add to it.
        if (!isRejected(e, 'PLAN_EXISTS')) throw e;
        await this.ledger.addItems(planId, [item], opts);
      }
      this.known.add(planId);
    })();
    const settled = created.then(
      () => undefined,
      () => undefined,
    );
    this.creating.set(planId, settled);
    try {
      await created;
    } finally {
      if (this.creating.get(planId) === settled) this.creating.delete(planId);
    }
  }

  // ------------------------------------------------------------------------------------------------
  // Reads

  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const raw: unknown = config.configurable?.thread_id;
    if (raw === undefined || raw === null) return undefined; // as every LangGraph saver: no thread, no checkpoint
    const threadId = key('thread_id', raw);
    const view = await this.view([this.planIdOf(threadId)]);
    return view.getTuple(config);
  }

  async *list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    const filter: unknown = options?.filter;
    if (filter !== undefined && filter !== null && (typeof filter !== 'object' || Array.isArray(filter))) throw invalid('filter', `must be an object of metadata values (got ${Array.isArray(filter) ? 'an array' : typeof filter})`);
    const before = options?.before?.configurable?.checkpoint_id as unknown;
    if (before !== undefined) key('before.checkpoint_id', before);
    if (options?.limit !== undefined && (!Number.isInteger(options.limit) || options.limit < 0)) throw invalid('limit', `must be a non-negative integer (got ${String(options.limit)})`);
    const threadId: unknown = config.configurable?.thread_id;
    const planIds = threadId === undefined || threadId === null ? await this.scopePlans() : [this.planIdOf(key('thread_id', threadId))];
    const view = await this.view(planIds);
    yield* view.list(config, options);
  }

  override async getDeltaChannelHistory(options: { config: RunnableConfig; channels: string[] }): Promise<Record<string, DeltaChannelHistory>> {
    const threadId = key('thread_id', options.config.configurable?.thread_id);
    const view = await this.view([this.planIdOf(threadId)]);
    return view.getDeltaChannelHistory(options);
  }

  /** Every plan of this saver's scope, through the ledger's plan listing (by label). */
  private async scopePlans(): Promise<string[]> {
    const out: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.ledger.listPlans({ label: [`${THREAD_LABEL}:thread`, `${SCOPE_LABEL}:${this.scope}`], limit: 500, ...(cursor ? { cursor } : {}) });
      out.push(...page.plans.map((p) => p.planId));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return out;
  }

  /** A MemorySaver over the given plans as the ledger holds them now (read-only: nothing writes to it). */
  private async view(planIds: readonly string[]): Promise<MemorySaver> {
    const view = new MemorySaver(this.serde);
    const folds = await Promise.all(planIds.map((p) => this.fold(p)));
    for (const f of folds) {
      if (f?.threadId === undefined) continue;
      view.storage[f.threadId] = f.storage;
      Object.assign(view.writes, f.writes);
    }
    return view;
  }

  /** One fold of a plan at a time (reads of one plan in parallel would apply an item twice). */
  private fold(planId: string): Promise<Fold | undefined> {
    const next = (this.folding.get(planId) ?? Promise.resolve()).then(() => this.foldNow(planId));
    const settled = next.catch(() => undefined);
    this.folding.set(planId, settled);
    void settled.then(() => {
      if (this.folding.get(planId) === settled) this.folding.delete(planId);
    });
    return next;
  }

  private async foldNow(planId: string): Promise<Fold | undefined> {
    const plan = await this.ledger.getPlan(planId, { payloads: 'reference' });
    if (plan === undefined) {
      this.folds.delete(planId);
      this.known.delete(planId);
      return undefined;
    }
    this.known.add(planId);
    let f = this.folds.get(planId);
    // A plan erased and created again has another history: fold it from its first item.
    if (f === undefined || f.firstItemId !== firstItem(plan) || f.applied > plan.itemOrder.length) {
      f = { seq: 0, firstItemId: firstItem(plan), applied: 0, threadId: undefined, storage: Object.create(null) as Fold['storage'], writes: Object.create(null) as Fold['writes'], values: new Map() };
    }
    this.folds.set(planId, f);
    for (; f.applied < plan.itemOrder.length; f.applied++) {
      const item = plan.items[plan.itemOrder[f.applied]!];
      if (!item || (item.tool !== CHECKPOINT_TOOL && item.tool !== WRITES_TOOL)) continue;
      await applyItem(this.serde, f, plan.planId, item.id, await this.ledger.readPayload(planId, item.inputJson));
    }
    f.seq = plan.seq;
    return f;
  }
}
