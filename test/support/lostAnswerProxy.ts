import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the proxy passed on, and what became of its answer. */
export interface ProxiedRequest {
  method: string;
  path: string;
  /** It carried If-Match or If-None-Match. */
  conditional: boolean;
  /** The upstream's status; 0 when the upstream did not answer. */
  status: number;
  /** The answer was thrown away and the client's connection closed. */
  lost: boolean;
}

/**
 * An HTTP proxy in front of an S3 server that can lose answers: it passes every request on
 * unchanged (the Host header too, so the SDK's signature still holds), and while `loseConditionalPuts`
 * is above 0 it lets the server carry out the next conditional PUT, then closes the client's
 * connection instead of answering, as a network that dropped the response would. The SDK sees a
 * socket hang-up and retries the same request.
 */
export class LostAnswerProxy {
  /** How many of the next conditional PUTs lose their answer. */
  loseConditionalPuts = 0;
  readonly requests: ProxiedRequest[] = [];

  private constructor(
    private readonly server: Server,
    private readonly target: string,
  ) {}

  static async start(target: string): Promise<LostAnswerProxy> {
    let instance: LostAnswerProxy | null = null;
    const server = createServer((req, res) => instance?.handle(req, res));
    instance = new LostAnswerProxy(server, target);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return instance;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const conditional = req.headers['if-match'] !== undefined || req.headers['if-none-match'] !== undefined;
    const lose = req.method === 'PUT' && conditional && this.loseConditionalPuts > 0;
    if (lose) this.loseConditionalPuts--;
    const seen: ProxiedRequest = { method: req.method ?? '', path: req.url ?? '', conditional, status: 0, lost: lose };
    this.requests.push(seen);
    const target = new URL(req.url ?? '/', this.target);
    const upstream = request(target, { method: req.method, headers: req.headers }, (answer: IncomingMessage) => {
      seen.status = answer.statusCode ?? 0;
      if (lose) {
        // The server has done the write; read its whole answer, then drop it with the connection.
        answer.resume();
        answer.on('end', () => res.socket?.destroy());
        return;
      }
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (error) => res.destroy(error));
    req.pipe(upstream);
  }
}
