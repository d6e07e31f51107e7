export { connectLedger } from './ledger.js';
export type {
  Ledger,
  CreatePlanInput,
  CommandOutcome,
  CommandOptions,
  CreatePlanOptions,
  CreatePlanOutcome,
  ExecutorsOptions,
  ForkOptions,
  EraseOptions,
  EraseOutcome,
  LedgerEventRecord,
  AuditOptions,
  ReplayOptions,
  AllPlans,
  ConnectOptions,
} from './api.js';
export { newReadStats, type ReadStats } from '../kafka/index.js';
export type { PlanFilter, PlanStatusFilter } from './list-plans.js';
export type { PlanPage, PlanSummary, PlanProgress } from '../projection/query.js';
export type { PlanAudit, PlanReplay, ReplayFailure } from '../audit/live.js';
export type { AuditRow, PlanAsOf, AsOf, AsOfInput } from '../audit/timeline.js';
export type { PlanVerification, Check, CheckName, BrokenAt } from '../audit/verify.js';
export type { ExecutorInfo, ExecutorList, InvalidAnnouncement } from '../executors/index.js';
export type { StreamOptions } from '../streams/reader.js';
export type { StreamChunk, StreamRecord, StreamKind, StreamEnd } from '../streams/records.js';
