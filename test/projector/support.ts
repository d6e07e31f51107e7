// Shared by the projector's int/e2e tests: a "ledger writer" that turns commands into events with the
// domain's own `decide` and appends them to the real events topic, encoded with the real codec, on the
// plan's partition — what an executor does, minus the tools.
import { onTestFinished } from 'vitest';
import { createCodec, type LedgerCodec } from '../../src/codec/index.js';
import { topicNames, type LedgerConfig } from '../../src/config.js';
import { ensurePlanTopics, ensureTopics, eventKey, partitionFor, planTopicSpecs, type KafkaClient, type LogRecord, type RecordWriter } from '../../src/kafka/index.js';
import {
  decide,
  evolve,
  rejectionEvent,
  stateDigest,
  type AnyCommand,
  type ItemSpec,
  type PlanEvent,
  type PlanState,
} from '../../src/plan/index.js';
import { closeAfter, readAll as readTopic, testAdmin, testKafka, withPromptCompaction, type TestAdmin } from '../support/helpers.js';

export interface TestLedger {
  config: LedgerConfig;
  kafka: KafkaClient;
  admin: TestAdmin;
  codec: LedgerCodec;
  writer: RecordWriter;
  topics: ReturnType<typeof topicNames>;
}

/**
 * Topics (deleted when the test ends), a codec and an idempotent writer on a fresh prefix. The topics
 * named in `compactPromptly` are created first with cleaner settings that compact within a second or so.
 */
export async function testLedger(config: LedgerConfig, opts: { compactPromptly?: ReadonlyArray<keyof ReturnType<typeof topicNames>> } = {}): Promise<TestLedger> {
  const kafka = testKafka(config);
  const admin = await testAdmin(kafka);
  const topics = topicNames(config.topicPrefix);
  const prompt = new Set<string>((opts.compactPromptly ?? []).map((k) => topics[k]));
  if (prompt.size) await ensureTopics(admin, planTopicSpecs(config).filter((s) => prompt.has(s.topic)).map(withPromptCompaction));
  await ensurePlanTopics(admin, config);
  for (const t of await admin.listTopics()) if (t.startsWith(`${config.topicPrefix}.`)) admin.track(t);
  const codec = await createCodec({ registryUrl: config.registryUrl, topicPrefix: config.topicPrefix });
  const writer = closeAfter(kafka.writer());
  await writer.connect();
  return { config, kafka, admin, codec, writer, topics };
}

let n = 0;
function meta(planId: string) {
  n += 1;
  return { commandId: `c-${planId}-${n}`, planId, issuedAt: 0, actor: 'test', correlationId: `corr-${planId}` };
}

export const commands = {
  create: (planId: string, items: ItemSpec[], mode: 'execute' | 'propose' = 'execute', labels: Record<string, string> = {}) =>
    ({ ...meta(planId), type: 'CreatePlan', data: { goal: `goal of ${planId}`, mode, labels, parent: null, items } }) as AnyCommand,
  propose: (planId: string) => ({ ...meta(planId), type: 'ProposePlan', data: { comment: null } }) as AnyCommand,
  approve: (planId: string, digest: string) => ({ ...meta(planId), type: 'ApprovePlan', data: { digest, by: 'ops', comment: null } }) as AnyCommand,
  cancel: (planId: string) => ({ ...meta(planId), type: 'CancelPlan', data: { reason: 'stop' } }) as AnyCommand,
  retry: (planId: string, itemId: string) => ({ ...meta(planId), type: 'RetryItem', data: { itemId } }) as AnyCommand,
  intent: (planId: string, itemId: string) => ({ ...meta(planId), type: 'RecordIntent', data: { itemId, executorId: 'ex-test', fencingToken: 1 } }) as AnyCommand,
  commit: (planId: string, itemId: string, attempt: number, outcome: 'succeeded' | 'failed_retryable' | 'failed_terminal' = 'succeeded') =>
    ({
      ...meta(planId),
      type: 'CommitResult',
      data: {
        itemId,
        attempt,
        outcome,
        outputJson: outcome === 'succeeded' ? `{"ok":${JSON.stringify(itemId)}}` : null,
        error: outcome === 'succeeded' ? null : { code: 'BOOM', message: 'failed on purpose', detailsJson: null },
        durationMs: 7,
        executorId: 'ex-test',
        followUps: [],
      },
    }) as AnyCommand,
  settle: (planId: string, itemId: string) => ({ ...meta(planId), type: 'SettleItem', data: { itemId } }) as AnyCommand,
};

/**
 * The commands of a plan whose one item (`refund`) executor `ex-killed` started and `ex-survivor` re-invoked,
 * committed and settled after taking the plan over: the take-over as the log records it.
 */
export function takenOver(planId: string): AnyCommand[][] {
  const create = commands.create(planId, [{ id: 'refund', title: 'Refund the order', why: 'the customer returned it', dependsOn: [], tool: 'payments.refund', inputJson: '{"cents":1299,"orderId":"42"}', retry: null }]);
  const intent = commands.intent(planId, 'refund') as AnyCommand & { data: { executorId: string } };
  intent.data.executorId = 'ex-killed';
  const commit = commands.commit(planId, 'refund', 1) as AnyCommand & { data: { executorId: string } };
  commit.data.executorId = 'ex-survivor';
  return [[create], [intent], [commit], [{ ...commands.settle(planId, 'refund'), actor: 'ex-survivor' } as AnyCommand]];
}

export function items(count: number, prefix = 'it'): ItemSpec[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    title: `step ${i}`,
    why: `because step ${i} is needed`,
    dependsOn: i === 0 ? [] : i % 3 === 0 ? [`${prefix}-${i - 1}`, `${prefix}-${i - 3}`] : [`${prefix}-${i - 1}`],
    tool: 'noop',
    inputJson: `{"i":${i}}`,
    retry: i === 1 ? { maxAttempts: 2, initialBackoffMs: 0, backoffMultiplier: 1, maxBackoffMs: 0 } : null,
  }));
}

/**
 * Decides commands against the states it keeps (rejections become CommandRejected, as the executor does),
 * and appends the resulting events to the events topic.
 */
export class LedgerWriter {
  readonly states = new Map<string, PlanState>();
  readonly events = new Map<string, PlanEvent[]>();
  now = 1_700_000_000_000;

  constructor(private readonly l: TestLedger) {}

  decide(cmds: AnyCommand[]): PlanEvent[] {
    const out: PlanEvent[] = [];
    for (const c of cmds) {
      this.now += 5;
      const state = this.states.get(c.planId);
      const d = decide(state, c, { now: this.now });
      const evs = d.ok ? d.events : [rejectionEvent(state, c, d.rejection, { now: this.now })];
      let s = state;
      for (const e of evs) s = evolve(s, e);
      if (s) this.states.set(c.planId, s);
      const list = this.events.get(c.planId) ?? [];
      list.push(...evs);
      this.events.set(c.planId, list);
      out.push(...evs);
    }
    return out;
  }

  /** decide + append (one send; per partition the order of `cmds` is kept). */
  async run(cmds: AnyCommand[]): Promise<PlanEvent[]> {
    const evs = this.decide(cmds);
    await this.append(evs);
    return evs;
  }

  async append(evs: PlanEvent[]): Promise<void> {
    if (evs.length === 0) return;
    await this.l.writer.send(
      this.l.topics.events,
      evs.map((e) => ({ key: eventKey(e.planId, e.seq), value: this.l.codec.encodeEvent(e), partition: partitionFor(e.planId, this.l.config.partitions) })),
    );
  }

  /** Sends raw bytes as if they were an event of `planId` at `seq`. */
  async appendRaw(planId: string, seq: number, value: Buffer): Promise<void> {
    await this.l.writer.send(this.l.topics.events, [{ key: eventKey(planId, seq), value, partition: partitionFor(planId, this.l.config.partitions) }]);
  }

  /** The commands of a whole run of an execute-mode plan: every item through intent → result → settle. */
  lifecycle(planId: string, count: number, opts: { failFirstTry?: boolean } = {}): AnyCommand[][] {
    const steps: AnyCommand[][] = [[commands.create(planId, items(count), 'execute', { team: planId.endsWith('0') ? 'core' : 'edge' })]];
    for (let i = 0; i < count; i++) {
      const id = `it-${i}`;
      if (opts.failFirstTry && i === 1) {
        steps.push([commands.intent(planId, id), commands.commit(planId, id, 1, 'failed_retryable')], [commands.settle(planId, id)]);
        steps.push([commands.intent(planId, id), commands.commit(planId, id, 2)], [commands.settle(planId, id)]);
      } else {
        steps.push([commands.intent(planId, id)], [commands.commit(planId, id, 1)], [commands.settle(planId, id)]);
      }
    }
    return steps;
  }

  /** From-scratch replay of the events this writer produced: planId -> stateDigest. */
  replayDigests(): Map<string, string> {
    const out = new Map<string, string>();
    for (const [id, evs] of this.events) {
      let s: PlanState | undefined;
      for (const e of evs) s = evolve(s, e);
      if (s) out.set(id, stateDigest(s));
    }
    return out;
  }
}

/** Drives several plans' lifecycles interleaved, round-robin, one step per plan per round. */
export async function interleave(writer: LedgerWriter, lifecycles: AnyCommand[][][]): Promise<number> {
  let appended = 0;
  const rounds = Math.max(...lifecycles.map((l) => l.length));
  for (let r = 0; r < rounds; r++) {
    const cmds = lifecycles.flatMap((l) => l[r] ?? []);
    appended += (await writer.run(cmds)).length;
  }
  return appended;
}

export function readAll(l: TestLedger, topic: string): Promise<LogRecord[]> {
  return readTopic(l.kafka, topic);
}

/** Runs `fn` when the test ends (e.g. stopping a projector). */
export function cleanup(fn: () => Promise<unknown>): void {
  onTestFinished(async () => {
    await fn();
  });
}
