export { startExecutor, type ExecutorHandle, type ExecutorOptions } from './executor.js';
