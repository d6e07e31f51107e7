/**
 * plan-ledger: an event-sourced plan ledger over Apache Kafka for long-running agent work.
 *
 * The package entry (package.json "exports" ".", built to dist/index.js). It sits above both floors it
 * re-exports: the library (src/) and the two services started from code (executor/, projector/); src/
 * itself imports neither service (docs/design.md, "Floors").
 *
 * @example
 * import { connectLedger, defineTool, startExecutor } from 'plan-ledger';
 */
export * from './src/index.js';
export { startExecutor, type ExecutorHandle, type ExecutorOptions } from './executor/index.js';
export { startProjector, type ProjectorHandle, type ProjectorOptions } from './projector/index.js';
