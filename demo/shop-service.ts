import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** An order of the demo shop. */
export interface Order {
  orderId: string;
  customer: { name: string; email: string };
  currency: string;
  lines: { sku: string; title: string; qty: number; unitCents: number; returned: number }[];
  shippingCents: number;
}

export interface Refund {
  refundId: string;
  orderId: string;
  amountCents: number;
  currency: string;
  idempotencyKey: string;
  at: number;
}

/** One request to POST /refunds, as the service saw it. */
export interface RefundCall {
  idempotencyKey: string;
  executorId: string;
  executorPid: number;
  /** true when the key was seen before: no new refund, the original is returned. */
  replay: boolean;
  at: number;
}

const ORDERS: Record<string, Order> = {
  'A-1042': {
    orderId: 'A-1042',
    customer: { name: 'Ada Lovelace', email: 'ada@example.com' },
    currency: 'EUR',
    lines: [
      { sku: 'KB-01', title: 'mechanical keyboard', qty: 1, unitCents: 8900, returned: 1 },
      { sku: 'MS-07', title: 'wireless mouse', qty: 2, unitCents: 2450, returned: 1 },
      { sku: 'CB-03', title: 'USB-C cable', qty: 3, unitCents: 900, returned: 0 },
    ],
    shippingCents: 590,
  },
};

/**
 * The demo's external system: a small shop with an idempotent payment API on 127.0.0.1.
 *
 * - `GET /orders/:id` — an order.
 * - `POST /refunds` with `Idempotency-Key`: the first request with a key performs the refund at once and
 *   answers after `X-Hold-Ms` (a slow gateway); a request with a known key performs nothing and returns
 *   the original refund. `X-Executor-Id` / `X-Executor-Pid` say who called (emitted as `refund-call`).
 * - `POST /notifications` with `Idempotency-Key`: sends (records) one customer e-mail per key.
 * - `GET /refunds`: what happened.
 */
export class ShopService extends EventEmitter<{ 'refund-call': [RefundCall] }> {
  readonly refunds = new Map<string, Refund>();
  readonly calls: RefundCall[] = [];
  readonly notifications = new Map<string, { to: string; subject: string }>();
  private server: Server | undefined;
  url = '';

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((e: unknown) => send(res, 500, { error: (e as Error).message }));
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const key = header(req, 'idempotency-key');
    const order = /^\/orders\/([^/]+)$/.exec(req.url ?? '');
    if (req.method === 'GET' && order) {
      const o = ORDERS[decodeURIComponent(order[1]!)];
      return o ? send(res, 200, o) : send(res, 404, { error: 'no such order' });
    }
    if (req.method === 'GET' && req.url === '/refunds') return send(res, 200, { refunds: [...this.refunds.values()], calls: this.calls });
    if (req.method === 'POST' && req.url === '/refunds') {
      if (!key) return send(res, 400, { error: 'Idempotency-Key header required' });
      const b = JSON.parse(body || '{}') as { orderId: string; amountCents: number; currency: string };
      const known = this.refunds.get(key);
      const call: RefundCall = { idempotencyKey: key, executorId: header(req, 'x-executor-id') ?? '?', executorPid: Number(header(req, 'x-executor-pid') ?? 0), replay: known !== undefined, at: Date.now() };
      this.calls.push(call);
      let refund = known;
      if (!refund) {
        refund = { refundId: `rf_${String(this.refunds.size + 1).padStart(4, '0')}`, orderId: b.orderId, amountCents: b.amountCents, currency: b.currency, idempotencyKey: key, at: Date.now() };
        this.refunds.set(key, refund);
      }
      this.emit('refund-call', call);
      if (!known) await sleep(Number(header(req, 'x-hold-ms') ?? 0));
      return send(res, 200, { ...refund, replay: call.replay });
    }
    if (req.method === 'POST' && req.url === '/notifications') {
      if (!key) return send(res, 400, { error: 'Idempotency-Key header required' });
      const b = JSON.parse(body || '{}') as { to: string; subject: string };
      const replay = this.notifications.has(key);
      if (!replay) this.notifications.set(key, { to: b.to, subject: b.subject });
      return send(res, 200, { sent: true, replay });
    }
    send(res, 404, { error: 'not found' });
  }

  async stop(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise((r) => this.server!.close(r));
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let s = '';
    req.on('data', (c: Buffer) => (s += c.toString()));
    req.on('end', () => resolve(s));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
