#!/usr/bin/env node
// From a source checkout the CLI runs the TypeScript sources through tsx (no stale build can bite);
// from an installed package (no src/) it runs the compiled dist/.
import { existsSync } from 'node:fs';

// librdkafka's Node binding waits for records on libuv's thread pool (4 threads by default); an executor
// or projector runs several readers and a group member at once. Set before the pool's first use.
process.env.UV_THREADPOOL_SIZE ??= '16';

const source = new URL('../src/cli/main.ts', import.meta.url);
if (existsSync(source) && !process.env.PLAN_LEDGER_USE_DIST) {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/src/cli/main.js');
}
