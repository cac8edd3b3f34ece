import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FakeNcclMeeting } from './fakeNcclMeeting.js';

/** What the fake vLLM shows while the trainer is asked something: its weight label, and whether it is paused. */
export type VllmView = () => { version: string; paused: boolean };

/** The update_info every step of the fake trainer sends: two tensors of a tiny model. */
export const FAKE_UPDATE_INFO = {
  names: ['model.embed_tokens.weight', 'model.norm.weight'],
  dtype_names: ['bfloat16', 'bfloat16'],
  shapes: [
    [16, 8],
    [8, 0],
  ],
};

/**
 * The trainer's routes of vLLM's native weight transfer, rank 0's side, as a real HTTP server:
 * `POST /v1/weight-transfer/group` joins (meeting vLLM's init), `GET .../checkpoints/{step}/weight-transfer`
 * answers the step's update_info, `POST` of it broadcasts (meeting vLLM's update). `calls` records each
 * request with what vLLM showed at the time; `refuse` answers a call once with a status and message.
 */
export class FakeWeightTransferTrainer {
  readonly calls: { call: 'group' | 'info' | 'send'; body: unknown; vllm: { version: string; paused: boolean } }[] = [];
  /** The group rank 0 is in (null: none; a trainer restart forgets it). */
  group: unknown = null;
  readonly sentSteps: number[] = [];
  readonly refuse = new Map<'group' | 'info' | 'send', { status: number; message: string }>();
  private readonly inFlight = new Set<Promise<unknown>>();

  private constructor(
    private readonly server: Server,
    private readonly meeting: FakeNcclMeeting,
    private readonly vllm: VllmView,
  ) {}

  static async start(meeting: FakeNcclMeeting, vllm: VllmView): Promise<FakeWeightTransferTrainer> {
    let instance: FakeWeightTransferTrainer | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        void instance
          ?.handle(req.method ?? '', req.url ?? '', Buffer.concat(chunks).toString('utf8'))
          .then(([status, body]) => {
            res.writeHead(status, { 'content-type': 'application/json' });
            res.end(JSON.stringify(body));
          });
      });
    });
    instance = new FakeWeightTransferTrainer(server, meeting, vllm);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return instance;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves once the calls still waiting for vLLM's side have answered. */
  async settled(): Promise<void> {
    await Promise.all([...this.inFlight]);
  }

  /** A trainer restart: rank 0 is in no group. */
  restart(): void {
    this.group = null;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(method: string, url: string, text: string): Promise<[number, unknown]> {
    const step = /^\/v1\/runs\/([^/]+)\/checkpoints\/(\d+)\/weight-transfer$/.exec(url);
    const call =
      url === '/v1/weight-transfer/group' && method === 'POST'
        ? 'group'
        : !step
          ? null
          : method === 'GET'
            ? 'info'
            : 'send';
    if (call === null) return [404, { error: { message: `no route ${method} ${url}`, type: 'not_found_error' } }];
    const body: unknown = text ? JSON.parse(text) : null;
    this.calls.push({ call, body, vllm: this.vllm() });
    const refusal = this.refuse.get(call);
    if (refusal) {
      this.refuse.delete(call);
      return [refusal.status, { error: { message: refusal.message, type: 'unavailable_error' } }];
    }
    const error = (status: number, message: string): [number, unknown] => [
      status,
      { error: { message, type: 'server_error' } },
    ];
    if (call === 'group') {
      if (!(await this.meeting.arrive('init', 'trainer')))
        return error(500, 'NCCL rendezvous timed out: no vLLM worker joined');
      this.group = body;
      return [200, { joined: true, rank: 0, world_size: (body as { world_size: number }).world_size }];
    }
    const [, runId, stepText] = step!;
    if (call === 'info') return [200, { run_id: runId, step: Number(stepText), ...FAKE_UPDATE_INFO }];
    if (this.group === null) return error(409, 'rank 0 has not joined an NCCL weight-transfer group');
    if (!(await this.meeting.arrive('update', 'trainer')))
      return error(500, 'NCCL broadcast timed out: no vLLM worker received');
    this.sentSteps.push(Number(stepText));
    return [200, { run_id: runId, step: Number(stepText), tensors: 2, bytes: 256, seconds: 0.01 }];
  }
}
