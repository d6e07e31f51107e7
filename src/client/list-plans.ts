import type { Admin, Kafka } from 'kafkajs';
import type { LedgerCodec } from '../codec/index.js';
import type { LedgerConfig } from '../config.js';
import { LedgerError } from '../errors.js';
import type { Logger } from '../logging.js';
import type { PlanStatus } from '../plan/index.js';
import { parsePlanQuery, QueryError, queryPlans, type PlanPage, type PlanView } from '../projection/query.js';
import { restorePartition } from '../projection/restore.js';

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

/**
 * One page of the plans of the ledger, newest first, rebuilt from the log the way the projector rebuilds
 * them (every partition restored from its snapshots and the events after them, plans with a poison record
 * stalled) and filtered and paged by the projector's own query. Needs no projector.
 */
export async function listPlansFromLog(
  deps: { kafka: Kafka; admin: Admin; codec: LedgerCodec; config: LedgerConfig; logger: Logger },
  filter: PlanFilter = {},
): Promise<PlanPage> {
  let query;
  try {
    query = parsePlanQuery({
      status: typeof filter.status === 'string' ? filter.status : filter.status && [...filter.status],
      label: typeof filter.label === 'string' ? filter.label : filter.label && [...filter.label],
      limit: filter.limit,
      cursor: filter.cursor,
    });
  } catch (e) {
    if (e instanceof QueryError) throw new LedgerError('VALIDATION', e.message, { field: e.field });
    throw e;
  }
  const partitions = Array.from({ length: deps.config.partitions }, (_, p) => p);
  const restored = await Promise.all(
    partitions.map((partition) => restorePartition({ kafka: deps.kafka, admin: deps.admin, codec: deps.codec, config: deps.config, partition, logger: deps.logger })),
  );
  const views: PlanView[] = restored.flatMap((r) => [...r.projection.plans.values()]);
  return queryPlans(views, query);
}
