import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A pass-through HTTP proxy whose chat-completion route can be taken down: while `down` is set it
 * answers 500 there, like a policy server in an outage, and forwards every other route (a
 * trainer's steps and runs go on). Put it in front of the trainer to take its policy endpoint down.
 * It can also fail a trainer's step posts: each takes the next of `stepErrors` as its 500's message.
 */
export class OutageProxy {
  down = false;
  /** Messages of the 500s the next step posts (`POST /v1/runs/<run>/steps`) are answered with, in order. */
  stepErrors: string[] = [];
  /** Step posts answered from `stepErrors`. */
  failedSteps = 0;
  /** Where requests go; set it once the target is known. */
  target = '';
  /** Chat completions answered 500 while down. */
  refused = 0;

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OutageProxy> {
    let instance: OutageProxy | null = null;
    const server = createServer((req, res) => instance?.handle(req, res));
    server.keepAliveTimeout = 1000;
    instance = new OutageProxy(server);
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
    const stepError = req.method === 'POST' && /\/steps$/.test(req.url ?? '') ? this.stepErrors.shift() : undefined;
    if (stepError !== undefined) {
      this.failedSteps++;
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: stepError, type: 'server_error' } }));
      return;
    }
    if (this.down && req.method === 'POST' && req.url?.endsWith('/chat/completions')) {
      this.refused++;
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'policy endpoint down (test outage)', type: 'server_error' } }));
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
    upstream.on('error', (error) => {
      // The target is down (e.g. a killed trainer): the client sees a dropped connection, as without the proxy.
      res.destroy(error);
    });
    req.pipe(upstream);
  }
}
