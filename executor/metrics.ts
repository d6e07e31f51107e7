import { Counter, Gauge, Registry } from 'prom-client';
import { abandonedWriters } from '../src/kafka/index.js';

/** The executor's Prometheus metrics, in a registry of its own (several executors may share a process in tests). */
export function createExecutorMetrics() {
  const registry = new Registry();
  const partitionResets = new Counter({
    name: 'plan_ledger_partition_resets_total',
    help: 'Owned partitions restarted from the log after a failed command batch or item step (each waits an exponential backoff, capped at 30 s).',
    labelNames: ['partition'],
    registers: [registry],
  });
  const deadLettered = new Counter({
    name: 'plan_ledger_executor_commands_dead_lettered_total',
    help: 'Commands sent to the DLQ by the executor, by reason (undecodable, misrouted, plan_stalled, decide_fault, repeated_failure, ...).',
    labelNames: ['reason'],
    registers: [registry],
  });
  const decideFaults = new Counter({
    name: 'plan_ledger_executor_decide_faults_total',
    help: 'Unexpected exceptions inside decide (defects, never recorded as rejections in a plan).',
    registers: [registry],
  });
  const toolTimeouts = new Counter({
    name: 'plan_ledger_executor_tool_timeouts_total',
    help: 'Tool calls that ran past their timeout and were recorded as failed attempts with code TIMEOUT.',
    labelNames: ['tool'],
    registers: [registry],
  });
  const attempts = new Counter({
    name: 'plan_ledger_executor_attempts_total',
    help: 'Item attempts that ended with a recorded outcome, by outcome and error code.',
    labelNames: ['outcome', 'code'],
    registers: [registry],
  });
  const memberFences = new Counter({
    name: 'plan_ledger_executor_group_fences_total',
    help: 'Times the executor\'s group member was fenced for good (another member joined under its id: its own rejoin after a lapsed session, or a second executor with the same id); each time it joins again.',
    registers: [registry],
  });
  let slots: (() => { inUse: number; waitingCount: number; limit: number }) | undefined;
  new Gauge({
    name: 'plan_ledger_executor_tool_slots',
    help: 'Tool slots (--concurrency) by state: in_use by a running tool, wanted by runs waiting for one, limit. A wait item holds none.',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = slots?.();
      if (s === undefined) return;
      this.set({ state: 'in_use' }, s.inUse);
      this.set({ state: 'wanted' }, s.waitingCount);
      this.set({ state: 'limit' }, s.limit);
    },
  });
  new Gauge({
    name: 'plan_ledger_kafka_writers_left_open',
    help: 'Transactional producers this process holds open because a Kafka call on them has not ended (librdkafka cannot close them before): each holds a libuv thread; restart the process when it grows.',
    registers: [registry],
    collect() {
      this.set(abandonedWriters());
    },
  });
  let skew: (() => number | undefined) | undefined;
  new Gauge({
    name: 'plan_ledger_clock_skew_ms',
    help: 'How far this executor\'s clock is ahead (positive) or behind (negative) the writers of the commands it consumes: the lower quartile of now minus the record timestamp over the latest 64 commands. Absent before the first command. A warning is logged past 30 s.',
    registers: [registry],
    collect() {
      const e = skew?.();
      if (e !== undefined) this.set(e);
    },
  });
  /** Where the clock skew gauge reads the executor's estimate from. */
  const trackSkew = (source: () => number | undefined) => (skew = source);
  /** Where the tool slots gauge reads the executor's slots from. */
  const trackSlots = (source: () => { inUse: number; waitingCount: number; limit: number }) => (slots = source);
  return { registry, partitionResets, deadLettered, decideFaults, toolTimeouts, attempts, memberFences, trackSlots, trackSkew };
}

export type ExecutorMetrics = ReturnType<typeof createExecutorMetrics>;
