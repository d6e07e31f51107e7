// The chaos run's network partition: a link forwards to its upstream; a cut closes what it carries and
// swallows what new connections send; a heal forwards new connections again. Real sockets on loopback,
// an echo server standing in for a broker's listener.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openLinks, type ProxiedLink } from '../../chaos/network.js';
import { freePortBlock } from '../../stack/processes.js';

const opened: Array<{ close(): unknown }> = [];
afterEach(async () => {
  for (const x of opened.splice(0)) await x.close();
});

async function echoServers(ports: readonly number[]): Promise<void> {
  for (const port of ports) {
    const server: Server = createServer((s) => s.pipe(s));
    await new Promise<void>((r) => server.listen({ host: '127.0.0.1', port }, r));
    opened.push({ close: () => new Promise((r) => server.close(r)) });
  }
}

/** Connects to `address`, writes `text`, and resolves with what came back once it has `text.length` bytes, or 'closed' / 'silent' after `quietMs`. */
function roundTrip(address: string, text: string, quietMs = 400): Promise<{ reply: string; socket: Socket }> {
  const [host, port] = address.split(':');
  return new Promise((resolve) => {
    const socket = connect({ host: host!, port: Number(port) });
    opened.push({ close: () => socket.destroy() });
    let got = '';
    const timer = setTimeout(() => resolve({ reply: got || 'silent', socket }), quietMs);
    socket.on('error', () => {});
    socket.on('data', (c: Buffer) => {
      got += c.toString();
      if (got.length >= text.length) {
        clearTimeout(timer);
        resolve({ reply: got, socket });
      }
    });
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ reply: got || 'closed', socket });
    });
    socket.write(text);
  });
}

describe('proxied links', () => {
  it('forward, cut (closing what they carry, swallowing new connections) and heal', async () => {
    const links = await openLinks(await freePortBlock(2 * 2 * 3 - 1), 2, 3);
    opened.push(...links);
    // Slot 0: listener ports first, then proxy ports; slot 1 after slot 0.
    expect(links.map((l) => l.listener.name)).toEqual(['CHAOS0', 'CHAOS1']);
    expect(links[0]!.proxyPorts).toEqual(links[0]!.listenerPorts.map((p) => p + 6));
    expect(links[1]!.listenerPorts[0]).toBe(links[0]!.listenerPorts[2]! + 1);
    await echoServers([...links[0]!.listenerPorts, ...links[1]!.listenerPorts]);
    const [a, b] = links as [ProxiedLink, ProxiedLink];

    expect((await roundTrip(a.brokers[1]!, 'hello')).reply).toBe('hello');
    const open = await roundTrip(a.brokers[2]!, 'kept');
    const otherSlot = await roundTrip(b.brokers[0]!, 'other');

    const closed = new Promise((r) => open.socket.once('close', r));
    a.cut();
    expect(a.isCut).toBe(true);
    await closed; // the connection it carried is gone
    expect((await roundTrip(a.brokers[0]!, 'lost')).reply).toBe('silent'); // accepted, nothing comes back
    expect(a.counts).toMatchObject({ held: 1 });
    expect(a.counts.cutSockets).toBeGreaterThanOrEqual(2); // both sides of the open connection
    // The other slot's link is not cut.
    expect(otherSlot.socket.destroyed).toBe(false);
    expect((await roundTrip(b.brokers[0]!, 'still')).reply).toBe('still');

    a.heal();
    expect(a.isCut).toBe(false);
    expect((await roundTrip(a.brokers[0]!, 'again')).reply).toBe('again');
  });
});
