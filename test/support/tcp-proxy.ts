import { once } from 'node:events';
import net from 'node:net';

/**
 * A TCP proxy to simulate a dependency outage: `cut()` stops accepting and destroys every open
 * connection (both sides), `restore()` listens again on the same port. `stall()` simulates a
 * dependency that stops answering: connections stay open but nothing is passed on, either way,
 * until `unstall()` drops them.
 */
export class TcpProxy {
  readonly #target: { host: string; port: number };
  readonly #sockets = new Set<net.Socket>();
  #server: net.Server | undefined;
  #port = 0;
  #stalled = false;
  /** Connections accepted so far (both directions count as one). */
  accepted = 0;

  constructor(target: { host: string; port: number }) {
    this.#target = target;
  }

  get port(): number {
    return this.#port;
  }

  get open(): number {
    return this.#sockets.size / 2;
  }

  async start(): Promise<number> {
    const server = net.createServer((client) => {
      this.accepted += 1;
      if (this.#stalled) {
        this.#hold(client);
        return;
      }
      const upstream = net.connect(this.#target.port, this.#target.host);
      for (const socket of [client, upstream]) {
        this.#sockets.add(socket);
        socket.on('close', () => this.#sockets.delete(socket));
        socket.on('error', () => {
          client.destroy();
          upstream.destroy();
        });
      }
      client.pipe(upstream);
      upstream.pipe(client);
    });
    server.listen(this.#port, '127.0.0.1');
    await once(server, 'listening');
    this.#server = server;
    this.#port = (server.address() as net.AddressInfo).port;
    return this.#port;
  }

  /** The dependency goes away: no new connections, and every open one is dropped. */
  async cut(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    const closed = server ? new Promise((resolve) => server.close(resolve)) : Promise.resolve();
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  /** Nothing passes any more; open connections and new ones hang. */
  stall(): void {
    this.#stalled = true;
    for (const socket of this.#sockets) {
      socket.unpipe();
      socket.pause();
    }
  }

  /** Drops every connection held by the stall (they are mid-conversation) and passes traffic again. */
  unstall(): void {
    this.#stalled = false;
    for (const socket of this.#sockets) socket.destroy();
  }

  /**
   * New connections pass again, while those held by the stall stay held: the dependency is back,
   * but what was open during the outage is dead without a word (a blackhole: nothing closes it).
   */
  passNew(): void {
    this.#stalled = false;
  }

  #hold(socket: net.Socket): void {
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.pause();
  }

  async restore(): Promise<void> {
    await this.start();
  }

  async close(): Promise<void> {
    await this.cut();
  }
}

/** A started proxy in front of the database at `url`, and the URL that goes through it. */
export async function proxyDatabase(url: string): Promise<{ proxy: TcpProxy; url: string }> {
  const direct = new URL(url);
  const proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(await proxy.start());
  return { proxy, url: viaProxy.toString() };
}
