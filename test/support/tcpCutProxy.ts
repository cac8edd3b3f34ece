import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy that can be cut, like a network partition: while `cut` is set, the connections
 * through it are dropped and new ones are held unanswered (as a black hole) until it heals. Put a
 * worker's Temporal frontend behind it to cut the worker off from Temporal alone, while it still
 * reaches its LLM endpoints and the artifact store.
 */
export class TcpCutProxy {
  private readonly open = new Set<Socket>();
  private readonly held = new Set<Socket>();
  private isCut = false;

  private constructor(
    private readonly server: Server,
    private readonly target: { host: string; port: number },
  ) {}

  /** A proxy to `target` (`host:port`) on a free loopback port. */
  static async start(target: string): Promise<TcpCutProxy> {
    const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
    let instance: TcpCutProxy | null = null;
    const server = createServer((socket) => instance?.accept(socket));
    instance = new TcpCutProxy(server, { host: host || '127.0.0.1', port });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return instance;
  }

  /** `host:port` to give the worker as its Temporal address. */
  get address(): string {
    return `127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  get cut(): boolean {
    return this.isCut;
  }

  /** Cuts every connection through the proxy, and holds new ones until `heal`. */
  partition(): void {
    this.isCut = true;
    for (const socket of this.open) socket.destroy();
    this.open.clear();
  }

  /** Lets connections through again (held ones are dropped: their clients connect again). */
  heal(): void {
    this.isCut = false;
    for (const socket of this.held) socket.destroy();
    this.held.clear();
  }

  async close(): Promise<void> {
    this.partition();
    this.heal();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket): void {
    client.on('error', () => {});
    if (this.isCut) {
      this.held.add(client);
      client.on('close', () => this.held.delete(client));
      return;
    }
    const upstream = connect(this.target.port, this.target.host);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    const pair = [client, upstream];
    for (const socket of pair) {
      this.open.add(socket);
      socket.on('close', () => {
        this.open.delete(socket);
        for (const other of pair) other.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
