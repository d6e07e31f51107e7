export { connectLedger, type Ledger, type CreatePlanInput, type CommandOutcome, type CommandOptions, type LedgerEventRecord } from './ledger.js';
