import type { LedgerCodec } from '../codec/index.js';
import { topicNames, type LedgerConfig } from '../config.js';
import { LedgerError } from '../errors.js';
import type { KafkaClient, LogRecord, ReadStats } from '../kafka/index.js';
import type { Logger } from '../logging.js';
import type { PlanStatus } from '../plan/index.js';
import { PartitionProjection } from '../projection/partition.js';
import { parseEventKey, stallOf } from '../projection/poison.js';
import { decodeCursor, DEFAULT_LIMIT, encodeCursor, parsePlanQuery, QueryError, summarize, type PlanPage, type PlanQuery, type PlanSummary } from '../projection/query.js';
import { processEventBatch } from '../projection/records.js';
import { restorePartition } from '../projection/restore.js';
import { compareOrder, type IndexedPlan, type PlanIndex } from './plan-index.js';

/** A plan status to filter on, or `stalled` (a record of the plan could not be decoded or applied). */
export type PlanStatusFilter = PlanStatus | 'stalled';

/** Which plans {@link Ledger.listPlans} returns: the filters of the projector's `GET /api/plans`. */
export interface PlanFilter {
  /** Keep plans in any of these statuses. Default: every status. */
  status?: PlanStatusFilter | readonly PlanStatusFilter[];
  /** `key:value`; with several, every one must match. */
  label?: string | readonly string[];
  /** Plans per page, 1..500 (default 50). */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface ListPlansDeps {
  kafka: KafkaClient;
  codec: LedgerCodec;
  config: LedgerConfig;
  logger: Logger;
  index: PlanIndex;
  stats?: ReadStats;
}

function parseFilter(filter: PlanFilter): PlanQuery {
  try {
    return parsePlanQuery({
      status: typeof filter.status === 'string' ? filter.status : filter.status && [...filter.status],
      label: typeof filter.label === 'string' ? filter.label : filter.label && [...filter.label],
      limit: filter.limit,
      cursor: filter.cursor,
    });
  } catch (e) {
    if (e instanceof QueryError) throw new LedgerError('VALIDATION', e.message, { field: e.field });
    throw e;
  }
}

/**
 * The plans that changed since the index's snapshots, as summaries: for each partition with a watermark,
 * the events after it folded onto the snapshots of the plans they touch (null: erased), and the plans
 * its dead letters stall. A partition without a watermark (no projector has run on it), or with a
 * snapshot that does not verify, is restored from the log as the projector would (`rebuilt`).
 */
async function changesSinceSnapshots(deps: ListPlansDeps): Promise<{ overrides: Map<string, PlanSummary | null>; rebuilt: Set<number> }> {
  const { index, config } = deps;
  const names = topicNames(config.topicPrefix);
  const overrides = new Map<string, PlanSummary | null>();
  const rebuilt = new Set<number>();
  const from = new Map<number, string>();
  for (let p = 0; p < config.partitions; p++) {
    const w = index.watermark(p);
    if (w === null || index.hasUntrusted(p)) rebuilt.add(p);
    else from.set(p, (BigInt(w) + 1n).toString());
  }
  const restored = await Promise.all(
    [...rebuilt].map((partition) => restorePartition({ kafka: deps.kafka, codec: deps.codec, config, partition, logger: deps.logger })),
  );
  for (const r of restored) for (const view of r.projection.plans.values()) overrides.set(view.planId, summarize(view));

  const tails = new Map<number, LogRecord[]>();
  if (from.size) {
    await deps.kafka.readToEnd({
      topic: names.events,
      partitions: [...from.keys()],
      from,
      ...(deps.stats ? { stats: deps.stats } : {}),
      onRecords: (records) => {
        for (const r of records) {
          let list = tails.get(r.partition);
          if (!list) tails.set(r.partition, (list = []));
          list.push(r);
        }
      },
    });
  }
  for (const p of from.keys()) {
    const records = tails.get(p) ?? [];
    const letters = index.deadLettersOf(p);
    if (!records.length && !letters.length) continue;
    const keys = records.map((r) => parseEventKey(r.key));
    const touched = new Set<string>([...keys.flatMap((k) => (k ? [k.planId] : [])), ...letters.map((d) => d.planId)]);
    const projection = new PartitionProjection(p);
    for (const planId of touched) {
      const entry = index.get(planId);
      if (!entry) continue;
      const state = await index.stateOf(entry);
      if (state) projection.seed(state);
    }
    for (const d of letters) projection.stall(d.planId, stallOf(d.cause, d.cause.sourceOffset, d.seq));
    await processEventBatch(projection, deps.codec, records, { logger: deps.logger }, keys);
    projection.settleGaps();
    for (const planId of touched) {
      const view = projection.plans.get(planId);
      overrides.set(planId, view ? summarize(view) : null);
    }
  }
  return { overrides, rebuilt };
}

/**
 * One page of the plans of the ledger, newest first, with the projector's filters, order and keyset
 * cursor. Served from the client's index of the projector's snapshots and archive (see {@link PlanIndex})
 * plus the events after each partition's watermark, so a page costs the same at a thousand or a million
 * plans ever run: the page is walked in order from the cursor, and the total of no filter, a status filter
 * or one label comes from counts (a label with a status, or several labels, is a scan of the index in
 * memory). Needs no projector running; a
 * partition no projector has ever snapshotted is restored from its log.
 */
export async function listPlansFromIndex(deps: ListPlansDeps, filter: PlanFilter = {}): Promise<PlanPage> {
  const query = parseFilter(filter);
  await deps.index.sync();
  const { overrides, rebuilt } = await changesSinceSnapshots(deps);
  const status = new Set(query.status ?? []);
  const labels = query.labels ?? [];
  const limit = query.limit ?? DEFAULT_LIMIT;
  const after = query.cursor ? decodeCursor(query.cursor) : null;
  const matches = (s: PlanSummary) =>
    (status.size === 0 || status.has(s.status) || (status.has('stalled') && s.stalled !== null)) &&
    labels.every(([k, v]) => Object.prototype.hasOwnProperty.call(s.labels, k) && s.labels[k] === v);
  const fromIndex = (e: IndexedPlan) => !overrides.has(e.planId) && !rebuilt.has(e.partition);

  // The page: the index in order and the changed plans in order, merged.
  const changed = [...overrides.values()].filter((s): s is PlanSummary => s !== null && matches(s));
  const key = (s: PlanSummary) => [s.createdAt ?? 0, s.planId] as const;
  changed.sort((a, b) => compareOrder(key(a), key(b)));
  let c = after === null ? 0 : changed.findIndex((s) => compareOrder(key(s), after) > 0);
  if (c < 0) c = changed.length;
  const page: PlanSummary[] = [];
  let more = false;
  const it = deps.index.inOrder(after);
  let next = it.next();
  const nextFromIndex = () => {
    while (!next.done && !(fromIndex(next.value) && matches(next.value.summary))) next = it.next();
    return next.done ? undefined : next.value.summary;
  };
  for (;;) {
    const a = nextFromIndex();
    const b = changed[c];
    if (a === undefined && b === undefined) break;
    const takeChanged = a === undefined || (b !== undefined && compareOrder(key(b), key(a)) < 0);
    if (page.length === limit) {
      more = true;
      break;
    }
    if (takeChanged) {
      page.push(b!);
      c += 1;
    } else {
      page.push(a);
      next = it.next();
    }
  }

  // The total: from the index's counts for no filter, a status filter or one label; a scan otherwise.
  let total = 0;
  if (rebuilt.size === 0 && ((labels.length === 0) || (labels.length === 1 && status.size === 0))) {
    const counts = deps.index.statusCounts();
    if (labels.length === 1) total = deps.index.labelCount(labels[0]![0], labels[0]![1]);
    else if (status.size === 0) total = deps.index.size;
    else for (const s of status) total += counts.get(s) ?? 0;
    for (const id of overrides.keys()) {
      const e = deps.index.get(id);
      if (e && matches(e.summary)) total -= 1;
    }
    total += [...overrides.values()].filter((s) => s !== null && matches(s)).length;
  } else {
    for (const e of deps.index.inOrder(null)) if (fromIndex(e) && matches(e.summary)) total += 1;
    total += changed.length;
  }
  const last = page[page.length - 1];
  return { plans: page, nextCursor: more && last ? encodeCursor(last) : null, total };
}
