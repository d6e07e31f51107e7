// Finished plans the projector keeps out of memory ("cold"): a plan whose archive record holds its state
// may leave its projection when the read model's cache is over budget (`release`); it is read back from
// that record on demand (`readCold`) and loaded back into the projection when an event of it arrives
// (`warm`). A plan's whole history is read from the events topic for the routes that need it (`loadEvents`).
import type { LedgerCodec } from '../src/codec/index.js';
import type { topicNames } from '../src/config.js';
import { LedgerError } from '../src/errors.js';
import { partitionFor, readPlanRecords, readRecordAt, type KafkaClient } from '../src/kafka/index.js';
import type { Logger } from '../src/logging.js';
import { evolveAll, type PlanEvent, type PlanState } from '../src/plan/index.js';
import { isArchivedStatus, stateFromSnapshot, summarize, type PartitionProjection } from '../src/projection/index.js';
import type { PartitionRun, PlanSnapshotGroup } from './partition-run.js';
import type { ColdPlan, ReadModel } from './read-model.js';

/** What cold plans need of the projection service. */
export interface ColdPlansHost {
  readonly runs: ReadonlyMap<number, PartitionRun>;
  readonly partitions: number;
  readonly names: ReturnType<typeof topicNames>;
  readonly log: Logger;
  /** The service's connections, valid once it started. */
  model(): ReadModel;
  kafka(): KafkaClient;
  codec(): LedgerCodec;
}

export class ColdPlans {
  constructor(private readonly host: ColdPlansHost) {}

  /**
   * A finished plan's snapshot landed in the archive: if it holds the plan's state as the projection has
   * it now (one record, same seq, nothing waiting), the plan may go cold when the cache is over budget.
   */
  landedInArchive(p: number, run: PartitionRun, g: PlanSnapshotGroup, offsets: Map<object, string>): void {
    if (g.archive.length !== 1) return; // a chunked snapshot stays hot: reading it back takes its chunks
    const offset = offsets.get(g.archive[0]!);
    const e = run.projection.get(g.id);
    if (offset === undefined || e?.state === undefined || e.state.seq !== g.seq || e.stalled || !isArchivedStatus(e.state.status)) return;
    run.archivedAt.set(g.id, { offset, seq: g.seq });
    this.host.model().archived(g.id, p, g.archive[0]!.value?.length ?? 0);
  }

  /**
   * Takes a finished plan out of its projection (the read model keeps its summary): only if its archive
   * record still holds its state, nothing of it waits, and no snapshot of it is owed.
   */
  release(planId: string): ColdPlan | undefined {
    const p = partitionFor(planId, this.host.partitions);
    const run = this.host.runs.get(p);
    const at = run?.archivedAt.get(planId);
    const e = run?.projection.get(planId);
    if (run === undefined || at === undefined || e?.state === undefined || run.applying === planId) return undefined;
    const ok = e.state.seq === at.seq && isArchivedStatus(e.state.status) && run.projection.canApplyRun(planId, e.state.seq + 1) && !run.exceptions.has(planId) && !run.failing.has(planId);
    if (!ok) {
      run.archivedAt.delete(planId);
      return undefined;
    }
    const summary = summarize(e);
    run.projection.plans.delete(planId);
    run.projection.policy.forget(planId);
    run.archivedAt.delete(planId);
    run.landedSeq.delete(planId);
    run.traceparents.delete(planId);
    return { partition: p, offset: at.offset, summary };
  }

  /**
   * A cold plan's state: its archived snapshot, read at its offset and verified; if that record is gone or
   * does not verify, its events from the partition's start, folded up to the seq it went cold at.
   */
  async readCold(planId: string, cold: ColdPlan): Promise<PlanState> {
    const record = await readRecordAt({ kafka: this.host.kafka(), topic: this.host.names.archive, partition: cold.partition, offset: cold.offset });
    if (record?.value != null && record.key?.toString('utf8') === planId) {
      const check = stateFromSnapshot(await this.host.codec().decodeSnapshot(record.value));
      if (check.ok && check.state.planId === planId && check.state.seq === cold.summary.seq) return check.state;
    }
    this.host.log.warn({ planId, offset: cold.offset }, 'cold plan: its archive record is gone or does not verify; reading its events');
    const state = evolveAll(undefined, (await this.loadEvents(planId)).filter((e) => e.seq <= cold.summary.seq));
    if (state === undefined || state.seq !== cold.summary.seq) throw new LedgerError('UNAVAILABLE', `plan ${planId} could not be read back (seq ${state?.seq ?? 0} of ${cold.summary.seq})`);
    return state;
  }

  /** Loads a cold plan back into its projection before an event of it is applied. */
  async warm(p: number, projection: PartitionProjection, planId: string): Promise<void> {
    const cold = this.host.model().cold.get(planId);
    if (cold === undefined) return;
    const state = await this.readCold(planId, cold);
    if (projection.plans.has(planId) || !this.host.model().cold.has(planId)) return;
    projection.seed(state);
    this.host.model().warmed(planId);
    this.host.log.debug({ partition: p, planId, seq: state.seq }, 'cold plan loaded back for an event');
  }

  /** A plan's history from the events topic (its partition, from the start), for plans memory does not hold. */
  async loadEvents(planId: string): Promise<PlanEvent[]> {
    const p = partitionFor(planId, this.host.partitions);
    const records = await readPlanRecords({ kafka: this.host.kafka(), topic: this.host.names.events, partition: p, planId });
    const byKey = new Map<number, PlanEvent>();
    for (const r of records) {
      try {
        const e = await this.host.codec().decodeEvent(r.value);
        if (e.planId === planId) byKey.set(e.seq, e);
      } catch {
        // a poison record of this plan: it is in the DLQ and the plan is stalled; the history stops before it
      }
    }
    const events = [...byKey.values()].sort((a, b) => a.seq - b.seq);
    const out: PlanEvent[] = [];
    for (const e of events) {
      if (e.seq !== out.length + 1) break;
      out.push(e);
    }
    return out;
  }
}
