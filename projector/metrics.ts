import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { PlanStatus } from '../src/plan/index.js';

/** The projector's Prometheus metrics, in a registry of its own (several projectors may share a process in tests). */
export function createMetrics(opts: { plansByStatus: () => Map<PlanStatus | 'stalled', number>; defaultMetrics?: boolean }) {
  const registry = new Registry();
  if (opts.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: 'plan_ledger_projector_' });
  const eventsApplied = new Counter({
    name: 'plan_ledger_projector_events_applied_total',
    help: 'Events applied to the projection (restore tails included).',
    labelNames: ['partition'],
    registers: [registry],
  });
  const lag = new Gauge({
    name: 'plan_ledger_projector_lag_events',
    help: 'Offsets between the events partition end (last stable offset) and the projection.',
    labelNames: ['partition'],
    registers: [registry],
  });
  const snapshotWrites = new Counter({
    name: 'plan_ledger_projector_snapshot_writes_total',
    help: 'Snapshot records written: kind=plan (a plan snapshot) or kind=watermark.',
    labelNames: ['kind'],
    registers: [registry],
  });
  const snapshotFailures = new Counter({
    name: 'plan_ledger_projector_snapshot_write_failures_total',
    help: 'Snapshot writes that failed (the plans are snapshotted again before the next watermark).',
    registers: [registry],
  });
  const snapshotSkipped = new Counter({
    name: 'plan_ledger_projector_snapshot_skipped_total',
    help: 'Plan snapshots that could not be written and were skipped: the watermark moves on, listing the plan as an exception (readers replay its events).',
    registers: [registry],
  });
  const snapshotExceptions = new Gauge({
    name: 'plan_ledger_projector_snapshot_exceptions',
    help: 'Plans whose snapshot cannot be written at the moment (listed as exceptions in their partition\'s watermark).',
    labelNames: ['partition'],
    registers: [registry],
  });
  const fenced = new Counter({
    name: 'plan_ledger_projector_fenced_total',
    help: 'Snapshot writes refused because another projector of the group took the partition over (this one stops writing it until the group assigns it again).',
    labelNames: ['partition'],
    registers: [registry],
  });
  const dlqRecords = new Counter({
    name: 'plan_ledger_projector_dlq_records_total',
    help: 'Records sent to the DLQ topic, by error code and reason.',
    labelNames: ['code', 'reason'],
    registers: [registry],
  });
  const heldEvents = new Counter({
    name: 'plan_ledger_projector_held_events_total',
    help: 'Records of stalled plans held back (not applied).',
    registers: [registry],
  });
  const registryRetries = new Counter({
    name: 'plan_ledger_projector_registry_retries_total',
    help: 'Decodes retried because the schema registry was unavailable.',
    registers: [registry],
  });
  new Gauge({
    name: 'plan_ledger_projector_plans',
    help: 'Plans in the projection by status (status="stalled" counts stalled plans of any status).',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [status, n] of opts.plansByStatus()) this.set({ status }, n);
    },
  });
  return { registry, eventsApplied, lag, snapshotWrites, snapshotFailures, snapshotSkipped, snapshotExceptions, fenced, dlqRecords, heldEvents, registryRetries };
}

export type ProjectorMetrics = ReturnType<typeof createMetrics>;
