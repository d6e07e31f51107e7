export {
  connectLedger,
  type Ledger,
  type CreatePlanInput,
  type CommandOutcome,
  type CommandOptions,
  type CreatePlanOptions,
  type CreatePlanOutcome,
  type ExecutorsOptions,
  type ForkOptions,
  type EraseOptions,
  type EraseOutcome,
  type LedgerEventRecord,
  type AuditOptions,
  type ReplayOptions,
  type AllPlans,
  type ConnectOptions,
} from './ledger.js';
export { newReadStats, type ReadStats } from '../kafka/index.js';
export type { PlanFilter, PlanStatusFilter } from './list-plans.js';
export type { PlanPage, PlanSummary, PlanProgress } from '../projection/query.js';
export type { PlanAudit, PlanReplay, ReplayFailure } from '../audit/live.js';
export type { AuditRow, PlanAsOf, AsOf, AsOfInput } from '../audit/timeline.js';
export type { PlanVerification, Check, CheckName, BrokenAt } from '../audit/verify.js';
export type { ExecutorInfo, ExecutorList, InvalidAnnouncement } from '../executors/index.js';
export type { StreamOptions } from '../streams/reader.js';
export type { StreamChunk, StreamRecord, StreamKind, StreamEnd } from '../streams/records.js';
