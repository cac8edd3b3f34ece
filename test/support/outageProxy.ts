import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import type { AddressInfo } from 'node:net';

/** A chat completion the proxy passed on, with what it asked and what came back (for call accounting). */
export interface ProxiedCall {
  /** Hash of the model, messages and seed: a call made again has the same key. */
  key: string;
  status: number;
  messages: { role: string; content: string }[];
  /** The answer's content (200 only). */
  answer: string;
  arrivedAtMs: number;
  answeredAtMs: number;
  /** Whether the answer went to a client still connected. */
  delivered: boolean;
  /** The client's TCP port. */
  remotePort: number;
}

const clock = (): number => performance.timeOrigin + performance.now();

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
  /** Chat completions passed on to the target, with their answers. */
  readonly calls: ProxiedCall[] = [];
  /** Told of each chat completion as it arrives, with the client's TCP port. */
  onArrival: ((remotePort: number) => void) | null = null;

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
    if (req.method === 'POST' && req.url?.endsWith('/chat/completions')) return void this.logged(req, res);
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

  /** A chat completion passed on and recorded, request and answer. */
  private async logged(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const arrivedAtMs = clock();
    const remotePort = req.socket.remotePort ?? 0;
    this.onArrival?.(remotePort);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    let request: { model?: string; messages?: ProxiedCall['messages']; seed?: number } = {};
    try {
      request = JSON.parse(body.toString('utf8')) as typeof request;
    } catch {
      // passed on as it is; the target answers it
    }
    const messages = request.messages ?? [];
    const key = createHash('sha256')
      .update(JSON.stringify(['policy', request.model ?? null, messages, request.seed ?? null]))
      .digest('hex')
      .slice(0, 16);
    const target = new URL(req.url ?? '/', this.target);
    const upstream = request_(target, req, body, (answer, text) => {
      let content = '';
      try {
        content =
          (JSON.parse(text) as { choices?: { message?: { content?: string } }[] }).choices?.[0]?.message?.content ?? '';
      } catch {
        // not JSON: an error page
      }
      const status = answer.statusCode ?? 502;
      this.calls.push({
        key,
        status,
        messages,
        answer: status === 200 ? content : '',
        arrivedAtMs,
        answeredAtMs: clock(),
        delivered: !res.destroyed && !req.socket.destroyed,
        remotePort,
      });
      if (res.destroyed) return;
      res.writeHead(status, answer.headers);
      res.end(text);
    });
    upstream.on('error', (error) => res.destroy(error));
  }
}

/** Sends `body` to `target` with `req`'s method and headers; `done` gets the whole answer. */
function request_(
  target: URL,
  req: IncomingMessage,
  body: Buffer,
  done: (answer: IncomingMessage, text: string) => void,
) {
  const upstream = request(
    target,
    { method: req.method, headers: { ...req.headers, host: target.host, 'content-length': String(body.length) } },
    (answer: IncomingMessage) => {
      const parts: Buffer[] = [];
      answer.on('data', (part: Buffer) => parts.push(part));
      answer.on('end', () => done(answer, Buffer.concat(parts).toString('utf8')));
    },
  );
  upstream.end(body);
  return upstream;
}
