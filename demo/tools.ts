// The tools of the demo's refund agent, loaded by `plan-ledger executor --tools demo/tools.ts`.
// DEMO_SHOP_URL points at the demo's shop service (demo/shop-service.ts).
import { setting } from '../src/settings.js';
import { defineTool, RetryableError, TerminalError, type ToolContext } from '../src/tools.js';
import type { Order, Refund } from './shop-service.js';

function shop(path: string): string {
  const base = process.env.DEMO_SHOP_URL;
  if (!base) throw new TerminalError('DEMO_SHOP_URL is not set', 'CONFIG');
  return `${base}${path}`;
}

async function call<T>(ctx: ToolContext, path: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<T> {
  const res = await fetch(shop(path), {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...init.headers },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
    signal: ctx.signal,
  });
  if (res.status === 404 || res.status === 400) throw new TerminalError(`shop answered ${res.status} for ${path}`, `HTTP_${res.status}`);
  if (!res.ok) throw new RetryableError(`shop answered ${res.status} for ${path}`);
  return (await res.json()) as T;
}

/** Looks the order up in the shop. */
export const lookupOrder = defineTool({
  name: 'orders.lookup',
  run: (input: { orderId: string }, ctx) => call<Order>(ctx, `/orders/${encodeURIComponent(input.orderId)}`),
});

/** Pure: the refund for the returned lines of the order the lookup found. */
export const computeRefund = defineTool({
  name: 'refunds.compute',
  run(input: { from: string; refundShipping: boolean }, ctx) {
    const order = ctx.dependencies[input.from] as Order | undefined;
    if (!order) throw new TerminalError(`no output from ${input.from}`, 'MISSING_DEPENDENCY');
    const lines = order.lines.filter((l) => l.returned > 0).map((l) => ({ sku: l.sku, qty: l.returned, cents: l.returned * l.unitCents }));
    const amountCents = lines.reduce((n, l) => n + l.cents, 0) + (input.refundShipping ? order.shippingCents : 0);
    return { orderId: order.orderId, currency: order.currency, amountCents, lines, customer: order.customer };
  },
});

/**
 * The side effect that must happen once: a refund through the payment API, keyed by the attempt's
 * idempotency key. A recovering executor repeats the call with the same key and gets the original refund.
 */
export const refundPayment = defineTool({
  name: 'payments.refund',
  async run(input: { from: string; holdMs?: number }, ctx) {
    const r = ctx.dependencies[input.from] as { orderId: string; amountCents: number; currency: string } | undefined;
    if (!r) throw new TerminalError(`no output from ${input.from}`, 'MISSING_DEPENDENCY');
    const refund = await call<Refund & { replay: boolean }>(ctx, '/refunds', {
      method: 'POST',
      body: { orderId: r.orderId, amountCents: r.amountCents, currency: r.currency },
      headers: {
        'idempotency-key': ctx.idempotencyKey,
        'x-executor-id': setting('PLAN_LEDGER_EXECUTOR_LABEL') ?? String(process.pid),
        'x-executor-pid': String(process.pid),
        'x-hold-ms': String(input.holdMs ?? 2000),
      },
    });
    return { refundId: refund.refundId, amountCents: refund.amountCents, currency: refund.currency, replayedByGateway: refund.replay };
  },
});

/** Tells the customer, once per idempotency key. */
export const notifyCustomer = defineTool({
  name: 'customer.notify',
  async run(input: { refundFrom: string; orderFrom: string }, ctx) {
    const refund = ctx.dependencies[input.refundFrom] as { refundId: string; amountCents: number; currency: string } | undefined;
    const order = ctx.dependencies[input.orderFrom] as { customer: { email: string } } | undefined;
    if (!refund || !order) throw new TerminalError(`needs the outputs of ${input.refundFrom} and ${input.orderFrom} (list both in dependsOn)`, 'MISSING_DEPENDENCY');
    const subject = `Your refund ${refund.refundId}: ${(refund.amountCents / 100).toFixed(2)} ${refund.currency}`;
    await call(ctx, '/notifications', { method: 'POST', body: { to: order.customer.email, subject }, headers: { 'idempotency-key': ctx.idempotencyKey } });
    return { to: order.customer.email, subject };
  },
});

export const tools = [lookupOrder, computeRefund, refundPayment, notifyCustomer];
