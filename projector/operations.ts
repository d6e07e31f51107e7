// What an operator needs beyond one plan's view: the problems (stalled plans, failed items, DLQ records
// with their cause and source offset), a plan verified on request, and an overview of the ledger
// (plans by status, recent activity, consumer groups with their members, partitions and lag).
// Reads go through the projection service's own connections; DLQ and group reads are cached briefly so a
// page refresh storm costs one read.
import { verifyFromLog } from '../src/audit/live.js';
import { LedgerLog } from '../src/audit/log.js';
import type { PlanVerification } from '../src/audit/verify.js';
import { readExecutors, type ExecutorList } from '../src/executors/index.js';
import { causeFromHeaders, type DeadLetterCause, type Stall } from '../src/projection/index.js';
import type { ProjectionService } from './projector.js';
import type { ActivityBucket } from './read-model.js';

export interface DeadLetterView {
  readonly partition: number;
  readonly offset: string;
  /** The plan the record belongs to, read from its key (null when the key is unreadable). */
  readonly planId: string | null;
  /** Whether this projector knows the plan (so the page can link it and offer retry / cancel). */
  readonly known: boolean;
  readonly bytes: number;
  readonly cause: DeadLetterCause | null;
}

export interface FailedItemView {
  readonly itemId: string;
  readonly title: string;
  readonly attempts: number;
  readonly reason: string | null;
  readonly error: string | null;
}

export interface Problems {
  readonly stalled: Array<{ planId: string; partition: number; goal: string | null; status: string | null; stall: Pick<Stall, 'code' | 'reason' | 'message' | 'offset' | 'seq' | 'heldEvents'> }>;
  readonly failed: Array<{ planId: string; goal: string; status: string; items: FailedItemView[] }>;
  readonly deadLetters: DeadLetterView[];
  readonly deadLettersTotal: number;
}

export interface GroupView {
  readonly groupId: string;
  readonly state: string;
  readonly members: Array<{ memberId: string; clientId: string; host: string; partitions: Record<string, number[]> }>;
  /** Per topic the group has committed offsets for: end offset minus committed, per partition. */
  readonly lag: Array<{ topic: string; total: number; partitions: Array<{ partition: number; committed: string; end: string; lag: number }> }>;
}

export interface Overview {
  readonly at: number;
  readonly plansByStatus: Record<string, number>;
  readonly activity: { readonly bucketMs: number; readonly buckets: ActivityBucket[] };
  readonly groups: GroupView[];
  readonly partitions: ReturnType<ProjectionService['partitions']>;
}

const MAX_DEAD_LETTERS = 200;
/** Plans verified at once. */
export const MAX_VERIFYING = 4;

function cached<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let at = 0;
  let value: Promise<T> | undefined;
  return () => {
    if (value === undefined || Date.now() - at > ttlMs) {
      at = Date.now();
      value = load().catch((e: unknown) => {
        value = undefined;
        throw e;
      });
    }
    return value;
  };
}

/** The plan id in a DLQ record's key: `planId:seq` for events, `planId` for commands. */
function planOfKey(key: Buffer | null, cause: DeadLetterCause | null): string | null {
  if (!key || key.length === 0 || key.length > 512) return null;
  const k = key.toString('utf8');
  if (cause?.sourceTopic.endsWith('.plan-events')) {
    const i = k.lastIndexOf(':');
    return i > 0 && /^\d+$/.test(k.slice(i + 1)) ? k.slice(0, i) : k;
  }
  return k;
}

export class OperatorViews {
  private readonly deadLetters;
  private readonly groups;
  /** The executors' announcements (src/executors/), read at most once a second. */
  readonly executors: () => Promise<ExecutorList>;
  private readonly verifying = new Map<string, Promise<PlanVerification>>();

  constructor(private readonly service: ProjectionService) {
    this.deadLetters = cached(2000, () => this.readDeadLetters());
    this.groups = cached(2000, () => this.readGroups());
    this.executors = cached(1000, () => {
      const { config, kafka, admin } = this.service.connections();
      return readExecutors(kafka, config, { admin });
    });
  }

  async problems(): Promise<Problems> {
    const stalled: Problems['stalled'] = [];
    const failed: Problems['failed'] = [];
    for (const v of this.service.model.views()) {
      const s = v.state;
      if (v.stalled) {
        const { code, reason, message, offset, seq, heldEvents } = v.stalled;
        stalled.push({ planId: v.planId, partition: this.service.model.view(v.planId)?.partition ?? -1, goal: s?.goal ?? null, status: s?.status ?? null, stall: { code, reason, message, offset, seq, heldEvents } });
      }
      if (!s) continue;
      const items = s.itemOrder.map((id) => s.items[id]!).filter((it) => it.status === 'failed');
      if (s.status === 'failed' || items.length > 0) {
        failed.push({
          planId: s.planId,
          goal: s.goal,
          status: s.status,
          items: items.map((it) => ({
            itemId: it.id,
            title: it.title,
            attempts: it.attempts.length,
            reason: it.failure?.reason ?? null,
            error: it.failure?.error ? `${it.failure.error.code}: ${it.failure.error.message}` : null,
          })),
        });
      }
    }
    const all = await this.deadLetters();
    const deadLetters = all.slice(-MAX_DEAD_LETTERS).reverse().map((d) => ({ ...d, known: d.planId !== null && this.service.model.view(d.planId) !== undefined }));
    return { stalled, failed, deadLetters, deadLettersTotal: all.length };
  }

  /**
   * The `verify` checks of one plan (chain, determinism, snapshots), read from the log now. Requests for
   * the same plan share one read; past {@link MAX_VERIFYING} plans at once, null (the caller answers 503):
   * each verification reads a partition of the log, so a burst of clicks must not become a burst of reads.
   */
  verify(planId: string): Promise<PlanVerification> | null {
    const running = this.verifying.get(planId);
    if (running) return running;
    if (this.verifying.size >= MAX_VERIFYING) return null;
    const { config, kafka, admin, codec } = this.service.connections();
    const log = LedgerLog.over({ config, kafka, admin, codec });
    const p = verifyFromLog(log, planId).finally(() => this.verifying.delete(planId));
    this.verifying.set(planId, p);
    return p;
  }

  async overview(now = Date.now()): Promise<Overview> {
    return {
      at: now,
      plansByStatus: Object.fromEntries(this.service.model.countByStatus()),
      activity: { bucketMs: 10_000, buckets: this.service.model.activity(now) },
      groups: await this.groups(),
      partitions: this.service.partitions(),
    };
  }

  private async readDeadLetters(): Promise<Array<Omit<DeadLetterView, 'known'>>> {
    const { kafka, admin } = this.service.connections();
    const topic = this.service.names.dlq;
    if (!(await admin.listTopics()).includes(topic)) return [];
    const out: Array<Omit<DeadLetterView, 'known'>> = [];
    await kafka.readToEnd({
      topic,
      onRecords: (records) => {
        for (const r of records) {
          const cause = causeFromHeaders(r.headers);
          out.push({ partition: r.partition, offset: r.offset, planId: planOfKey(r.key, cause), bytes: r.value?.length ?? 0, cause });
        }
      },
    });
    return out.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  }

  /** The ledger's consumer groups (`<prefix>.*`, not readers' ids): members, partitions, lag. */
  private async readGroups(): Promise<GroupView[]> {
    const { config, admin } = this.service.connections();
    const ids = (await admin.listGroups())
      .map((g) => g.groupId)
      .filter((id) => id.startsWith(`${config.topicPrefix}.`) && !/\.reader(-[0-9a-f]+)?$/.test(id))
      .sort();
    if (ids.length === 0) return [];
    const described = await admin.describeGroups(ids);
    const names = this.service.names;
    const ends = new Map<string, Map<number, string>>();
    const endOf = async (topic: string) => {
      let m = ends.get(topic);
      if (!m) {
        m = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, o.high]));
        ends.set(topic, m);
      }
      return m;
    };
    const out: GroupView[] = [];
    for (const g of described) {
      const members = g.members.map((m) => ({
        memberId: m.memberId,
        clientId: m.clientId,
        host: m.clientHost,
        partitions: Object.fromEntries(m.assignment.map((a) => [a.topic, [...a.partitions]])),
      }));
      // The topics the group reads now, and those the ledger's groups read (an empty group has no assignment).
      const topics = new Set([names.commands, names.events, ...g.members.flatMap((m) => m.assignment.map((a) => a.topic))]);
      const lag: GroupView['lag'] = [];
      for (const topic of [...topics].sort()) {
        const offsets = await admin.fetchOffsets(g.groupId, topic).catch(() => []);
        if (offsets.every((p) => p.offset === '-1')) continue; // the group commits nothing on it
        const end = await endOf(topic).catch(() => new Map<number, string>());
        const partitions = offsets
          .map((p) => {
            const e = end.get(p.partition) ?? '0';
            const committed = p.offset;
            const behind = committed === '-1' ? Number(e) : Math.max(0, Number(BigInt(e) - BigInt(committed)));
            return { partition: p.partition, committed, end: e, lag: behind };
          })
          .sort((a, b) => a.partition - b.partition);
        lag.push({ topic, total: partitions.reduce((n, p) => n + p.lag, 0), partitions });
      }
      out.push({ groupId: g.groupId, state: g.state, members, lag });
    }
    return out;
  }
}
