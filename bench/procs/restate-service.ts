// The peer's side of bench/peer.ts: a Restate TypeScript SDK service, `Chain.run`, that runs `steps`
// no-op steps one after another, each a durable `ctx.run` (journaled by restate-server before the
// next step starts). The SDK is loaded from the cache folder given in BENCH_RESTATE_SDK (it is not a
// dependency of plan-ledger). Listens on BENCH_PORT and prints `{"msg":"ready"}`.
import { pathToFileURL } from 'node:url';

interface RunCtx {
  run<T>(name: string, action: () => T | Promise<T>): Promise<T>;
}
interface Sdk {
  service(def: { name: string; handlers: Record<string, (ctx: RunCtx, input: { steps: number }) => Promise<unknown>> }): unknown;
  endpoint(): { bind(s: unknown): { listen(port: number): Promise<number> } };
}

// The SDK's handler path calls Promise.withResolvers (node >= 22); node 20 lacks it, so define it here
// with the standard semantics before the SDK loads.
const P = Promise as unknown as { withResolvers?: () => unknown };
P.withResolvers ??= () => {
  let resolve!: (v: unknown) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

const sdk = (await import(pathToFileURL(process.env.BENCH_RESTATE_SDK!).href)) as Sdk;
const chain = sdk.service({
  name: 'Chain',
  handlers: {
    run: async (ctx, input) => {
      let done = 0;
      for (let i = 0; i < input.steps; i++) done = await ctx.run(`step-${i}`, () => done + 1);
      return { done };
    },
  },
});
await sdk.endpoint().bind(chain).listen(Number(process.env.BENCH_PORT));
console.log(JSON.stringify({ msg: 'ready', at: Date.now() }));
