#!/usr/bin/env node
// From a source checkout the CLI runs the TypeScript sources through tsx (no stale build can bite);
// from an installed package (no src/) it runs the compiled dist/.
import { existsSync } from 'node:fs';

// librdkafka's Node binding waits for records on libuv's thread pool (4 threads by default); an executor
// or projector runs several readers and a group member at once, and a transaction call that never
// answers (librdkafka's coordinator lookup, see src/kafka/writers.ts) holds a thread for good: a pool of
// 64, set before its first use.
process.env.UV_THREADPOOL_SIZE ??= '64';

const source = new URL('../cli/main.ts', import.meta.url);
// PLAN_LEDGER_USE_DIST is declared in src/settings.ts (a flag: true, false, 1 or 0) but read here, before any
// module can load; the CLI checks its value again at start, so a bad one fails there like any other.
const useDist = ['1', 'true'].includes((process.env.PLAN_LEDGER_USE_DIST ?? '').trim().toLowerCase());
if (existsSync(source) && !useDist) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/cli/main.js');
}
