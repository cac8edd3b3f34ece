import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FakeFullWeights } from '../../test/support/fakeFullWeights.js';

/**
 * A stand-in for a vLLM policy server in front of the fake OpenAI server: it accepts the runtime
 * LoRA loads that `training.publish.mode: vllm` makes (`POST /v1/load_lora_adapter`), lists the loaded
 * names in `GET /v1/models`, and forwards chat completions to the fake. With it the policy is the
 * fake at its latency and sampling never touches the trainer, as with a separate inference server,
 * so rollouts and optimizer steps can overlap. Full weights: vLLM's RL routes as the tests' fake
 * serves them (`fullWeights`: pause modes, weight labels), a reload taking `fullWeights.reloadMs`,
 * and the forwarded completions held by a pause as vLLM's scheduler holds them. With `slots`, at most
 * that many completions are forwarded at once and the rest wait in arrival order, as vLLM's scheduler
 * runs at most --max-num-seqs sequences: without it the fake answers any number in flight after its
 * latency, which no GPU does.
 */
export class VllmFacade {
  /** The fake's base URL (…/v1) chat completions are forwarded to; set before a run starts. */
  target = '';
  readonly fullWeights = new FakeFullWeights();
  /** Completions forwarded at once (null: no limit); set before a run starts. */
  slots: number | null = null;
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private readonly loaded = new Set<string>();

  private constructor(
    private readonly server: Server,
    private readonly baseModel: string,
  ) {}

  static async start(baseModel: string): Promise<VllmFacade> {
    let facade: VllmFacade | null = null;
    const server = createServer((req, res) => {
      facade?.handle(req, res).catch((error: unknown) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: `facade: ${String(error)}`, type: 'bad_gateway' } }));
      });
    });
    server.keepAliveTimeout = 30_000;
    facade = new VllmFacade(server, baseModel);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return facade;
  }

  /** Completions waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  /** Runs `forward` in a slot, once one is free (first come, first served). */
  private async inSlot<T>(forward: () => Promise<T>): Promise<T> {
    if (this.slots !== null && this.running >= this.slots) await new Promise<void>((go) => this.queue.push(go));
    else this.running++;
    try {
      return await forward();
    } finally {
      // The slot passes straight to the next in line, so a new arrival cannot take it first.
      const next = this.queue.shift();
      if (next) next();
      else this.running--;
    }
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    if (this.fullWeights.handle(req.method ?? '', req.url ?? '', body, res, send)) return;
    if (req.method === 'GET' && req.url === '/v1/models') {
      const ids = [this.baseModel, ...this.loaded];
      return send(res, 200, { object: 'list', data: ids.map((id) => ({ id, object: 'model' })) });
    }
    if (req.method === 'POST' && req.url === '/v1/load_lora_adapter') {
      const name = (JSON.parse(body) as { lora_name?: unknown }).lora_name;
      if (typeof name !== 'string' || name === '')
        return send(res, 400, { error: { message: 'load_lora_adapter: lora_name missing' } });
      this.loaded.add(name);
      return send(res, 200, `Success: LoRA adapter '${name}' added successfully.`);
    }
    if (req.method === 'POST' && req.url === '/v1/chat/completions') {
      if (!this.target) return send(res, 503, { error: { message: 'facade: no target set' } });
      const { value } = await this.inSlot(() =>
        this.fullWeights.generation(async () => {
          const forwarded = await fetch(`${this.target}/chat/completions`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          return { status: forwarded.status, text: await forwarded.text() };
        }),
      );
      res.writeHead(value.status, { 'content-type': 'application/json' });
      res.end(value.text);
      return;
    }
    send(res, 404, { error: { message: `facade: no route ${req.method} ${req.url}` } });
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
}
