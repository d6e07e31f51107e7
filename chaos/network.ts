// The network partition of a chaos run: each executor slot reaches the brokers only through TCP proxies
// in the chaos process, one per broker, in front of a listener of its own (`CHAOS<slot>`, advertised at
// the proxies' ports: Kafka hands a client that bootstrapped through a proxy only proxy addresses, so its
// produce, fetch, group coordinator and transaction traffic all goes through them). Cutting a slot's link
// destroys every socket it carries and, until it heals, accepts new connections but forwards nothing: the
// executor's process keeps running, its requests go unanswered. Healing forwards new connections again
// (the ones held during the cut are closed: their first bytes were swallowed).
import { connect, createServer, type Server, type Socket } from 'node:net';
import type { ExtraListener } from '../stack/kafka.js';

const HOST = '127.0.0.1';

/** One broker's proxy: `port` → the broker's listener at `upstreamPort`. */
class TcpProxy {
  private readonly server: Server;
  /** Sockets of forwarded connections, both sides. */
  private readonly forwarded = new Set<Socket>();
  /** Connections accepted during a cut: read and dropped. */
  private readonly held = new Set<Socket>();
  private blackhole = false;
  /** Forwarded connections destroyed by cuts, and connections held during them. */
  readonly counts = { cutSockets: 0, held: 0 };

  constructor(
    readonly port: number,
    private readonly upstreamPort: number,
  ) {
    this.server = createServer((client) => this.accept(client));
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ host: HOST, port: this.port, exclusive: true }, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
  }

  private accept(client: Socket): void {
    client.on('error', () => {});
    if (this.blackhole) {
      this.counts.held++;
      this.held.add(client);
      client.on('data', () => {}); // swallowed: nothing reaches the broker, nothing comes back
      client.once('close', () => this.held.delete(client));
      return;
    }
    client.setNoDelay(true);
    const upstream = connect({ host: HOST, port: this.upstreamPort });
    upstream.setNoDelay(true);
    upstream.on('error', () => {});
    for (const s of [client, upstream]) {
      this.forwarded.add(s);
      // One side gone (the broker killed, the executor gone, a cut): the other goes too.
      s.once('close', () => {
        this.forwarded.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }

  cut(): void {
    this.blackhole = true;
    for (const s of this.forwarded) {
      this.counts.cutSockets++;
      s.destroy();
    }
  }

  heal(): void {
    this.blackhole = false;
    for (const s of this.held) s.destroy();
  }

  close(): Promise<void> {
    for (const s of [...this.forwarded, ...this.held]) s.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** One executor slot's way to the brokers: a listener of its own on every broker and a proxy in front of each. */
export class ProxiedLink {
  private readonly proxies: TcpProxy[];
  private cutSince: number | null = null;

  /**
   * @param listenerPorts the brokers' ports of this link's listener, node 1 first
   * @param proxyPorts the proxies' ports (the listener's advertised ports), node 1 first
   */
  constructor(
    readonly name: string,
    readonly listenerPorts: readonly number[],
    readonly proxyPorts: readonly number[],
  ) {
    this.proxies = proxyPorts.map((p, i) => new TcpProxy(p, listenerPorts[i]!));
  }

  /** The listener the brokers must open for this link. */
  get listener(): ExtraListener {
    return { name: this.name, ports: this.listenerPorts, advertisedPorts: this.proxyPorts };
  }

  /** Bootstrap addresses for a client that must go through this link. */
  get brokers(): string[] {
    return this.proxyPorts.map((p) => `${HOST}:${p}`);
  }

  get isCut(): boolean {
    return this.cutSince !== null;
  }

  /** Sockets destroyed by cuts and connections held (swallowed) during them, over every proxy. */
  get counts(): { cutSockets: number; held: number } {
    return this.proxies.reduce((a, p) => ({ cutSockets: a.cutSockets + p.counts.cutSockets, held: a.held + p.counts.held }), { cutSockets: 0, held: 0 });
  }

  async listen(): Promise<void> {
    await Promise.all(this.proxies.map((p) => p.listen()));
  }

  cut(): void {
    this.cutSince = Date.now();
    for (const p of this.proxies) p.cut();
  }

  heal(): void {
    this.cutSince = null;
    for (const p of this.proxies) p.heal();
  }

  close(): Promise<unknown> {
    return Promise.all(this.proxies.map((p) => p.close()));
  }
}

/**
 * One link per executor slot, their listener and proxy ports taken from one block of free ports starting
 * at `base` (brokers × slots listener ports, then as many proxy ports), all listening.
 */
export async function openLinks(base: number, slots: number, brokers: number): Promise<ProxiedLink[]> {
  const links = Array.from({ length: slots }, (_, s) => {
    const listener = Array.from({ length: brokers }, (_, i) => base + s * brokers + i);
    const proxy = listener.map((p) => p + slots * brokers);
    return new ProxiedLink(`CHAOS${s}`, listener, proxy);
  });
  try {
    for (const l of links) await l.listen();
  } catch (e) {
    await Promise.all(links.map((l) => l.close()));
    throw e;
  }
  return links;
}
