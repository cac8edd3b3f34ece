import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A weights file of a checkpoint (src/trainer/adapterFiles.ts filesPath): what a publisher downloads. */
const WEIGHTS_FILE = /^\/v1\/runs\/[^/]+\/checkpoints\/\d+\/weights\/[^/?]+/;

/** A download the gate holds: the client's TCP port, and how to drop it. */
export interface HeldDownload {
  path: string;
  remotePort: number;
  drop(): void;
}

/**
 * A pass-through proxy in front of the trainer that can hold the next weights-file download: armed
 * (`holdNext`), it keeps the first such GET unanswered, so the publisher that made it is mid-download
 * (its `.tmp-*` directory made, a file begun) for as long as the soak needs to kill it there.
 */
export class DownloadGate {
  target = '';
  private waiting: ((held: HeldDownload) => void) | null = null;
  private readonly held = new Set<ServerResponse>();

  private constructor(private readonly server: Server) {}

  static async start(): Promise<DownloadGate> {
    let instance: DownloadGate | null = null;
    const server = createServer((req, res) => instance?.handle(req, res));
    server.keepAliveTimeout = 1000;
    instance = new DownloadGate(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return instance;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves with the next weights-file download, held until its `drop`. */
  holdNext(): Promise<HeldDownload> {
    return new Promise((resolve) => (this.waiting = resolve));
  }

  /** Stops waiting for a download to hold (the run ended first). */
  disarm(): void {
    this.waiting = null;
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const hold = this.waiting;
    if (hold && req.method === 'GET' && WEIGHTS_FILE.test(req.url ?? '')) {
      this.waiting = null;
      this.held.add(res);
      req.resume();
      // Headers and a first byte go out, so the client is inside the file's body when it is killed.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(Buffer.alloc(1));
      hold({
        path: req.url ?? '',
        remotePort: req.socket.remotePort ?? 0,
        drop: () => {
          this.held.delete(res);
          res.destroy();
        },
      });
      return;
    }
    const target = new URL(req.url ?? '/', this.target);
    const upstream = request(
      target,
      { method: req.method, headers: { ...req.headers, host: target.host } },
      (answer: IncomingMessage) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    // The trainer is down (killed): the client sees a dropped connection, as without the gate.
    upstream.on('error', (error) => res.destroy(error));
    req.pipe(upstream);
  }
}
