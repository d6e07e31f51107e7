export { connectLedger, type Ledger, type CreatePlanInput, type CommandOutcome, type CommandOptions, type EraseOptions, type EraseOutcome, type LedgerEventRecord } from './ledger.js';
